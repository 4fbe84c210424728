package stats

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// What no interval can do: a lower bound, for every cell of an interval
// grid, on how many of its cells any interval whatsoever — not only the
// grid's methods — must leave outside the target (coverage at least 94 %,
// and mean width at most 1.15× the narrowest grid method that covers 94 %
// in the cell).
//
// Two cells A and B of one column (same scenario count G and conversation
// counts) have true rates θ_A ≠ θ_B. An interval that covers θ_B in at
// least 94 % of B's studies must contain θ_B in many of A's studies too
// when the two studies' distributions are alike: for any event E and any
// k > 0, P_B(E) ≤ k·P_A(E) + P_B(L > k), L = dP_B/dP_A the likelihood
// ratio of a study, so P_A(θ_B ∈ I) ≥ (0.94 − P_B(L > k)) / k. If the
// interval also covers θ_A in 94 % of A's studies, it holds both rates in
// at least 0.94 + P_A(θ_B ∈ I) − 1 of them, and its mean width in A is at
// least that times |θ_A − θ_B|. When that exceeds 1.15× A's narrowest
// covering width, A and B cannot both meet the target: they conflict.
// (A study's log L is a sum over its scenarios; its distribution under B
// is simulated, and the Dvoretzky–Kiefer–Wolfowitz inequality widens the
// simulated tail so that every pair's bound holds at once with
// probability boundConfidence.) The fewest cells of a column that meet
// every conflict — its minimum vertex cover — must miss the target
// whatever the interval.

const (
	boundStudies    = 20000 // simulated studies of B per column
	boundConfidence = 0.99  // all pairs' tails at once (DKW, Bonferroni)
)

// scenarioAtoms is a column's scenario outcomes: every (m, k) a scenario
// can show, m drawn uniformly from sizes.
type scenarioAtom struct{ m, k int }

func scenarioAtoms(sizes sizeScheme) []scenarioAtom {
	var out []scenarioAtom
	for m := sizes.lo; m <= sizes.hi; m++ {
		for k := 0; k <= m; k++ {
			out = append(out, scenarioAtom{m, k})
		}
	}
	return out
}

// atomLogProbs is log P(atom) under pop for each atom.
func atomLogProbs(pop population, atoms []scenarioAtom, sizes sizeScheme) []float64 {
	lm := -math.Log(float64(sizes.hi - sizes.lo + 1))
	out := make([]float64, len(atoms))
	for i, a := range atoms {
		out[i] = lm + pop.lpmf(a.k, a.m)
	}
	return out
}

// gridConflict is what a column's cells force on each other.
type gridConflict struct {
	// need[a][b]: the mean width any interval covering 94 % in both a and b
	// must have in a (0: none forced).
	need [][]float64
	// conflict[a][b]: a and b cannot both meet the target.
	conflict [][]bool
}

// columnConflicts bounds, for the cells of one column (same G and sizes,
// populations pops, narrowest covering widths best; NaN where no grid
// method covers 94 %), the width each pair forces.
func columnConflicts(rng *rand.Rand, pops []population, g int, sizes sizeScheme, best []float64, pairs int) gridConflict {
	atoms := scenarioAtoms(sizes)
	logp := make([][]float64, len(pops))
	cdf := make([][]float64, len(pops))
	for i, p := range pops {
		logp[i] = atomLogProbs(p, atoms, sizes)
		c, run := make([]float64, len(atoms)), 0.0
		for j, l := range logp[i] {
			run += math.Exp(l)
			c[j] = run
		}
		cdf[i] = c
	}
	// DKW: sup |F_n − F| ≤ eps with probability 1 − α, here for every pair.
	alpha := (1 - boundConfidence) / float64(pairs)
	eps := math.Sqrt(math.Log(2/alpha) / (2 * boundStudies))
	n := len(pops)
	gc := gridConflict{need: make([][]float64, n), conflict: make([][]bool, n)}
	for a := range n {
		gc.need[a] = make([]float64, n)
		gc.conflict[a] = make([]bool, n)
	}
	study := make([]int, g*boundStudies)
	logL := make([]float64, boundStudies)
	for b := range n {
		last := cdf[b][len(atoms)-1]
		for i := range study {
			u := rng.Float64() * last
			study[i], _ = slices.BinarySearch(cdf[b], u)
			study[i] = min(study[i], len(atoms)-1)
		}
		for a := range n {
			if a == b || pops[a].mean == pops[b].mean {
				continue
			}
			for s := range boundStudies {
				l := 0.0
				for _, j := range study[s*g : (s+1)*g] {
					l += logp[b][j] - logp[a][j]
				}
				logL[s] = l
			}
			slices.Sort(logL)
			// P_A(θ_B ∈ I) ≥ max over k of (0.94 − P_B(log L > log k)) / k,
			// taken at each simulated value (where the tail steps down).
			inA := 0.0
			for s := range boundStudies {
				if s+1 < boundStudies && logL[s+1] == logL[s] {
					continue
				}
				tail := float64(boundStudies-1-s)/boundStudies + eps
				inA = max(inA, (0.94-tail)*math.Exp(-logL[s]))
			}
			gc.need[a][b] = max(0, 0.94+min(inA, 1)-1) * math.Abs(pops[a].mean-pops[b].mean)
		}
	}
	for a := range n {
		for b := range n {
			if gc.need[a][b] > 1.15*best[a] { // false where best is NaN
				gc.conflict[a][b], gc.conflict[b][a] = true, true
			}
		}
	}
	return gc
}

// minVertexCover is the fewest cells that meet every conflict (n is small:
// every subset is tried, smallest first).
func minVertexCover(conflict [][]bool) int {
	n := len(conflict)
	best := n
	for mask := 0; mask < 1<<n; mask++ {
		size := popcount(mask)
		if size >= best {
			continue
		}
		ok := true
		for a := 0; a < n && ok; a++ {
			for b := a + 1; b < n && ok; b++ {
				if conflict[a][b] && mask&(1<<a) == 0 && mask&(1<<b) == 0 {
					ok = false
				}
			}
		}
		if ok {
			best = size
		}
	}
	return best
}

func popcount(x int) int {
	n := 0
	for ; x != 0; x &= x - 1 {
		n++
	}
	return n
}

// gridBound is what the conflicts of a whole grid say about its cells.
type gridBound struct {
	forced   []float64 // per cell: the largest width another cell forces, over its narrowest covering width (0: none)
	forcedBy []string  // the population that forces it
	mustMiss int       // cells that miss the target whatever the interval: the columns' minimum vertex covers
	anyMix   []float64 // per cell: the width every interval holding for every scenario mix must have (anyMixWidth)
	mixMiss  int       // cells where that width is above 1.15× the narrowest covering width
	missed   int       // cells the new interval misses
}

// boundGrid computes the conflicts of every column of a grid whose cells
// are listed population by population, each over scenarios × sizes.
func boundGrid(set gridSet, pops []population, cells []gridCell) gridBound {
	gb := gridBound{forced: make([]float64, len(cells)), forcedBy: make([]string, len(cells))}
	cols := len(set.scenarios) * len(set.sizes)
	pairs := cols * len(pops) * (len(pops) - 1)
	rng := newRand(set.seed + 1000)
	for col := range cols {
		idx := make([]int, len(pops))
		best := make([]float64, len(pops))
		for p := range pops {
			idx[p] = p*cols + col
			best[p] = math.NaN()
			if c := cells[idx[p]]; c.best >= 0 {
				best[p] = c.width[c.best]
			}
		}
		c0 := cells[idx[0]]
		gc := columnConflicts(rng, pops, c0.g, c0.sizes, best, pairs)
		for a := range pops {
			for b := range pops {
				if r := gc.need[a][b] / best[a]; r > gb.forced[idx[a]] {
					gb.forced[idx[a]], gb.forcedBy[idx[a]] = r, pops[b].name
				}
			}
		}
		gb.mustMiss += minVertexCover(gc.conflict)
	}
	gb.anyMix = make([]float64, len(cells))
	for i, c := range cells {
		if !c.meetsTarget() {
			gb.missed++
		}
		gb.anyMix[i] = anyMixWidth(c.g, 0.94, c.pop.mean)
		if c.best >= 0 && gb.anyMix[i] > 1.15*c.width[c.best] {
			gb.mixMiss++
		}
	}
	return gb
}

// meetsTarget: coverage 94–97 % (up to the discreteness floor where one
// conversation per scenario forces more), and mean width at most 1.15×
// the narrowest grid method covering 94 % (when one does).
func (c gridCell) meetsTarget() bool {
	hi := 0.97
	if !math.IsNaN(c.floor) {
		hi = max(hi, c.floor+0.005)
	}
	return c.cov[0] >= 0.94 && c.cov[0] <= hi && !(c.ratio() > 1.15)
}

// TestPopulationProbabilities: every population's scenario outcomes sum to
// one and average its mean rate, and simulated scenarios follow them.
func TestPopulationProbabilities(t *testing.T) {
	pops := append(slices.Clone(gridPopulations), gridSets[1].pops...)
	rng := newRand(7)
	for _, p := range pops {
		for _, m := range []int{1, 4, 16} {
			total, mean := 0.0, 0.0
			probs := make([]float64, m+1)
			for k := 0; k <= m; k++ {
				probs[k] = math.Exp(p.lpmf(k, m))
				total += probs[k]
				mean += float64(k) * probs[k]
			}
			if math.Abs(total-1) > 1e-9 || math.Abs(mean/float64(m)-p.mean) > 1e-9 {
				t.Errorf("%s m=%d: probabilities sum to %.12f, mean rate %.6f (want %.4f)", p.name, m, total, mean/float64(m), p.mean)
			}
			const draws = 40000
			counts := make([]float64, m+1)
			cs := make([]ClusterSum, 1)
			for range draws {
				fillFrom(rng, cs, p, sizeScheme{"", m, m})
				counts[int(cs[0].Sum)]++
			}
			for k, c := range counts {
				if se := math.Sqrt(probs[k] * (1 - probs[k]) / draws); math.Abs(c/draws-probs[k]) > 5*se+1e-3 {
					t.Errorf("%s m=%d k=%d: simulated %.4f, probability %.4f", p.name, m, k, c/draws, probs[k])
				}
			}
		}
	}
}

// TestConflictsOfInvisibleHotScenarios: the bound finds the conflict the
// docs argue by hand — a study of 10 scenarios from the 10 % hot mixture
// has no hot scenario 35 % of the time and then looks exactly like one of
// the homogeneous 0.02 population, so an interval covering the mixture
// must reach its rate 0.113 in most homogeneous studies — and finds none
// between two populations no study confuses.
func TestConflictsOfInvisibleHotScenarios(t *testing.T) {
	hot, flat, far := hotCold(0.1, 0.95, 0.02), betaBinomial(0.02, 0), betaBinomial(0.5, 0)
	sizes := sizeScheme{"16", 16, 16}
	// The narrowest covering widths of the grid's cells (docs/interval-grid.md).
	gc := columnConflicts(newRand(11), []population{hot, flat, far}, 10, sizes, []float64{0.493, 0.042, 0.153}, 3)
	// Both rates held in ≥ 0.94 + 0.83 − 1 of flat's studies: ≥ 0.07 wide.
	t.Logf("forced widths: %.3f", gc.need)
	if need := gc.need[1][0]; need < 0.06 {
		t.Errorf("width forced on the homogeneous cell by the mixture: %.3f, want about 0.07", need)
	}
	if !gc.conflict[0][1] || gc.conflict[1][2] || gc.conflict[0][2] {
		t.Errorf("conflicts %v, want hot–flat only", gc.conflict)
	}
	if k := minVertexCover(gc.conflict); k != 1 {
		t.Errorf("cells that must miss: %d, want 1", k)
	}
}

// What no interval that holds for every scenario mix can do. Item 1 of the
// issue asks for intervals at their nominal level "for any scenario mix";
// that alone fixes a width in every cell, whatever the cell's population.
//
// Mix a cell's population A with a share h of scenarios at rate r (the
// rest drawn from A, sizes drawn as before): a study of the mix B has no
// scenario at r with probability (1−h)^G, and then it is exactly a study
// of A. So for any event E, P_B(E) ≤ (1−h)^G·P_A(E) + 1 − (1−h)^G, and an
// interval I covering B's rate θ_B = (1−h)θ_A + h·r in a share c of B's
// studies holds it in at least 1 − (1−c)/(1−h)^G of A's. A's mean width
// is ∫ P_A(θ ∈ I) dθ (Fubini), so with r above θ_A for the rates above
// and below it for the rates below, every interval covering c of every
// such mix has mean width in A of at least
//
//	J·(|r_hi − θ_A| + |θ_A − r_lo|),  J = ∫₀¹ (1 − (1−c)/(1−h)^G)⁺ dh,
//
// an exact bound (no simulation), whatever the conversation counts.
// Taking r at the grid's own extreme scenario rates, 0.98 and 0.02, keeps
// the mixes of the kind the grid already holds.
const mixLo, mixHi = 0.02, 0.98

// anyMixWidth is that bound for a cell of g base scenarios with true rate
// theta and coverage cov.
func anyMixWidth(g int, cov, theta float64) float64 {
	a := 1 - cov
	hs := 1 - math.Pow(a, 1/float64(g)) // where the integrand reaches 0
	// ∫₀^hs (1−h)^−G dh: −ln(1−hs) for G = 1, else ((1−hs)^{1−G} − 1)/(G−1).
	var tail float64
	if g == 1 {
		tail = -math.Log1p(-hs)
	} else {
		tail = (math.Pow(1-hs, float64(1-g)) - 1) / float64(g-1)
	}
	return (hs - a*tail) * (max(0, mixHi-theta) + max(0, theta-mixLo))
}

// contaminated is pop with a share h of its scenarios at rate r instead.
func contaminated(pop population, h, r float64) population {
	return population{fmt.Sprintf("%s + %g%% at %.2f", pop.name, 100*h, r), (1-h)*pop.mean + h*r,
		func(rng *rand.Rand) float64 {
			if rng.Float64() < h {
				return r
			}
			return pop.draw(rng)
		},
		func(k, m int) float64 {
			x, y := math.Log(h)+lbinom(k, m, r), math.Log1p(-h)+pop.lpmf(k, m)
			return max(x, y) + math.Log1p(math.Exp(min(x, y)-max(x, y)))
		}}
}

// TestAnyMixWidth: the closed form is the integral it stands for, the
// betting interval — the one interval here that holds for every mix —
// is never narrower than the bound, and an interval narrower than the
// bound (Wilson on conversations) is below 94 % on one of the mixes the
// bound is built from.
func TestAnyMixWidth(t *testing.T) {
	for _, g := range []int{1, 3, 10, 30} {
		const steps = 200000
		j := 0.0
		for i := range steps {
			h := (float64(i) + 0.5) / steps
			j += max(0, 1-0.06/math.Pow(1-h, float64(g))) / steps
		}
		if got := anyMixWidth(g, 0.94, 0.5) / (mixHi - mixLo); math.Abs(got-j) > 1e-6 {
			t.Errorf("G=%d: closed form %.6f, integral %.6f", g, got, j)
		}
	}
	// The widths docs/statistics.md quotes.
	for g, want := range map[int]float64{3: 0.425, 5: 0.291, 10: 0.161, 20: 0.085, 30: 0.058, 4: 0.346, 8: 0.196, 15: 0.111, 25: 0.069} {
		if got := anyMixWidth(g, 0.94, 0.3); math.Abs(got-want) > 0.0005 {
			t.Errorf("G=%d: any-mix width %.4f, docs say %.3f", g, got, want)
		}
	}
	sixteen := sizeScheme{"16", 16, 16}
	for i, c := range []struct {
		pop population
		g   int
	}{
		{betaBinomial(0.02, 0), 3}, {betaBinomial(0.02, 0), 10}, {betaBinomial(0.5, 0), 10},
		{betaBinomial(0.02, 0), 30}, {betaBinomial(0.3, 0.3), 30},
	} {
		cell := runGridCell(newRand(20261130+uint64(i)), c.pop, c.g, sixteen, 400, gridMethods[2:3])
		bound := anyMixWidth(c.g, 0.94, c.pop.mean)
		t.Logf("%s G=%d: betting width %.3f, any-mix bound %.3f", c.pop.name, c.g, cell.width[0], bound)
		if cell.width[0] < bound {
			t.Errorf("%s G=%d: the betting interval (width %.3f) is narrower than the any-mix bound %.3f", c.pop.name, c.g, cell.width[0], bound)
		}
	}
	// Wilson on conversations is 0.07 wide at 0.02 with 10 × 16, the bound
	// 0.155: some mix of the bound's family must defeat it.
	flat := betaBinomial(0.02, 0)
	wilson := gridMethods[slices.IndexFunc(gridMethods, func(m gridMethod) bool { return m.name == "wilson" })]
	worst := 1.0
	for i, h := range []float64{0.02, 0.05, 0.1, 0.2} {
		cell := runGridCell(newRand(20261140+uint64(i)), contaminated(flat, h, mixHi), 10, sixteen, 400, []gridMethod{wilson})
		worst = min(worst, cell.cov[0])
	}
	t.Logf("Wilson on conversations, 10 × 16 at 0.02 mixed with scenarios at %.2f: worst coverage %.3f", mixHi, worst)
	if worst >= 0.94 {
		t.Errorf("Wilson on conversations covers ≥ 94 %% of every mix tried (worst %.3f), yet it is narrower than the any-mix bound", worst)
	}
}
