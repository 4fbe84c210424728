package stats

import (
	"cmp"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/impactbench/impactbench/internal/racemode"
)

func TestRanks(t *testing.T) {
	tests := []struct {
		name string
		x    []float64
		want []float64
	}{
		{"distinct", []float64{30, 10, 20}, []float64{3, 1, 2}},
		// Ties get the mean of the ranks they span ("fractional ranking").
		{"ties", []float64{10, 20, 20, 30}, []float64{1, 2.5, 2.5, 4}},
		{"scipy rankdata example", []float64{0, 2, 3, 2}, []float64{1, 2.5, 4, 2.5}},
		{"all tied", []float64{5, 5, 5}, []float64{2, 2, 2}},
		{"NaN left out", []float64{3, math.NaN(), 1}, []float64{2, math.NaN(), 1}},
		{"empty", []float64{}, []float64{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assertFloats(t, "Ranks", Ranks(tt.x), tt.want)
		})
	}
}

func TestSpearman(t *testing.T) {
	tests := []struct {
		name string
		x, y []float64
		want float64
	}{
		// SciPy scipy.stats.spearmanr documentation example (tie in y):
		// x = [1,2,3,4,5], y = [5,6,7,8,7] → 0.8207826816681233.
		{"scipy example with ties", []float64{1, 2, 3, 4, 5}, []float64{5, 6, 7, 8, 7}, 0.8207826816681233},
		// English Wikipedia "Spearman's rank correlation coefficient",
		// IQ vs hours of TV per week: ρ = −29/165 ≈ −0.175757575.
		{"Wikipedia IQ vs TV", []float64{106, 100, 86, 101, 99, 103, 97, 113, 112, 110},
			[]float64{7, 27, 2, 50, 28, 29, 20, 12, 6, 17}, -29.0 / 165},
		{"perfect", []float64{1, 2, 3}, []float64{10, 100, 1000}, 1},
		{"reversed", []float64{1, 2, 3}, []float64{3, 2, 1}, -1},
		{"constant x is undefined", []float64{1, 1, 1}, []float64{1, 2, 3}, math.NaN()},
		{"one item is undefined", []float64{1}, []float64{2}, math.NaN()},
		{"NaN input", []float64{1, math.NaN(), 3}, []float64{1, 2, 3}, math.NaN()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Spearman(tt.x, tt.y); !approx(got, tt.want, 1e-12) {
				t.Errorf("Spearman = %.17g, want %.17g", got, tt.want)
			}
		})
	}
	mustPanic(t, "length mismatch", func() { Spearman([]float64{1, 2}, []float64{1}) })
}

func TestKendallTauB(t *testing.T) {
	tests := []struct {
		name string
		x, y []float64
		want float64
	}{
		// SciPy scipy.stats.kendalltau documentation example (ties in both
		// x and y): τ-b = −0.47140452079103173. By hand: 2 concordant,
		// 6 discordant, 2 pairs tied in x, 1 in y, of 10 →
		// (2 − 6)/√(8·9) = −√2/3.
		{"scipy example with ties", []float64{12, 2, 1, 12, 2}, []float64{1, 4, 7, 1, 0}, -0.47140452079103173},
		// No ties: τ-b reduces to τ-a. Hand count for the permutation
		// (1 3 2 4 5): 1 discordant pair of 10 → (9 − 1)/10.
		{"one swap", []float64{1, 2, 3, 4, 5}, []float64{1, 3, 2, 4, 5}, 0.8},
		{"perfect", []float64{1, 2, 3, 4}, []float64{2, 4, 6, 8}, 1},
		{"reversed", []float64{1, 2, 3, 4}, []float64{4, 3, 2, 1}, -1},
		{"constant y is undefined", []float64{1, 2, 3}, []float64{5, 5, 5}, math.NaN()},
		{"empty is undefined", []float64{}, []float64{}, math.NaN()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := KendallTauB(tt.x, tt.y); !approx(got, tt.want, 1e-12) {
				t.Errorf("KendallTauB = %.17g, want %.17g", got, tt.want)
			}
		})
	}
	mustPanic(t, "length mismatch", func() { KendallTauB([]float64{1, 2}, []float64{1}) })
}

func TestRankIntervals(t *testing.T) {
	// Three items over 20 clusters in one stratum: item 0 always scores
	// 0.9, item 1 0.5, item 2 alternates 0.1/0.9 by cluster (mean 0.5):
	// items 1 and 2 can swap, item 0 is clearly first.
	vals := [3][20]float64{}
	for c := range 20 {
		vals[0][c], vals[1][c] = 0.9, 0.5
		vals[2][c] = 0.1 + 0.8*float64(c%2)
	}
	score := func(idx [][]int, out []float64) {
		for i := range out {
			s := 0.0
			for _, c := range idx[0] {
				s += vals[i][c]
			}
			out[i] = s / float64(len(idx[0]))
		}
	}
	lo, hi := RankIntervals([]int{20}, 3, 500, 0.95, 1, score)
	want := [][2]float64{{1, 1}, {2, 3}, {2, 3}}
	for i, w := range want {
		if lo[i] != w[0] || hi[i] != w[1] {
			t.Errorf("item %d rank interval [%v, %v], want %v", i, lo[i], hi[i], w)
		}
	}
	// Deterministic in the seed; an item never scored has no interval.
	lo2, _ := RankIntervals([]int{20}, 3, 500, 0.95, 1, score)
	if lo2[1] != lo[1] {
		t.Error("same seed, different intervals")
	}
	lo, _ = RankIntervals([]int{20, 0}, 1, 10, 0.95, 1, func(_ [][]int, out []float64) {})
	if !math.IsNaN(lo[0]) {
		t.Errorf("never-scored item got rank %v", lo[0])
	}
}

func TestTestedRanksCounts(t *testing.T) {
	// Three items: 0 shown above 1 and 2; 1 and 2 not told apart; 1 and 2
	// have equal estimates and share the better rank.
	est := []float64{0.9, 0.4, 0.4}
	rank, lo, hi := TestedRanks(3, func(i, j int) int { return cmp.Compare(est[i], est[j]) }, func(i, j int) int {
		if i == 0 {
			return 1
		}
		return 0
	})
	want := [][3]int{{1, 1, 1}, {2, 2, 3}, {2, 2, 3}}
	for i, w := range want {
		if rank[i] != w[0] || lo[i] != w[1] || hi[i] != w[2] {
			t.Errorf("item %d: rank %d [%d, %d], want %v", i, rank[i], lo[i], hi[i], w)
		}
	}
	// Nothing decided: every interval is the whole range.
	_, lo, hi = TestedRanks(2, func(i, j int) int { return cmp.Compare(j, i) }, func(int, int) int { return 0 })
	if lo[0] != 1 || hi[0] != 2 || lo[1] != 1 || hi[1] != 2 {
		t.Errorf("undecided: %v %v", lo, hi)
	}
}

// TestTestedRanksCoverage: simulation with known truth (8 models, 60
// metrics of 3 base scenarios, shared scenario difficulty, true gaps small
// to large), the decisions Holm over all 28 pairs of StratifiedPairedDiff's
// p-values: all 8 rank intervals hold the true ranks together in at least
// 93 % of 400 studies per spacing (nominal ≥ 95 %; 93 % allows for the
// simulation's own error).
func TestTestedRanksCoverage(t *testing.T) {
	racemode.SkipHeavy(t)
	if testing.Short() {
		t.Skip("Monte Carlo")
	}
	const k, m, reps = 8, 60, 400
	w := pairedWorld{sigma: 1}
	rng := newRand(20261129)
	for _, spacing := range []float64{0, 0.05, 0.15, 0.3} {
		alpha := make([][]float64, k)
		truth := make([]float64, k)
		for i := range k {
			alpha[i] = make([]float64, m)
			for j := range m {
				alpha[i][j] = -1 + 3*float64((j*37)%101)/100 - spacing*float64(i)
				truth[i] += w.trueRate(alpha[i][j]) / m
			}
		}
		joint, widths, bonf := 0, 0.0, 0.0
		for range reps {
			out := simulateRanked(rng, w, alpha, m)
			est := make([]float64, k)
			for i := range k {
				for j := range m {
					est[i] += (out[i][j][0] + out[i][j][1] + out[i][j][2]) / 3 / m
				}
			}
			var ps []float64
			var diffs []StratifiedInterval
			for a := range k {
				for b := a + 1; b < k; b++ {
					d := StratifiedPairedDiff(pairedStrata(out, a, b, m), 0.95)
					diffs = append(diffs, d)
					ps = append(ps, d.P)
				}
			}
			adj := Holm(ps)
			index := func(a, b int) int { return a*k - a*(a+1)/2 + b - a - 1 }
			_, lo, hi := TestedRanks(k, func(i, j int) int { return cmp.Compare(est[i], est[j]) }, func(a, b int) int {
				n := index(a, b)
				if adj[n] >= 0.05 {
					return 0
				}
				if diffs[n].Estimate > 0 {
					return 1
				}
				return -1
			})
			// The per-model Bonferroni rule (each of a model's k − 1
			// comparisons at 0.05/(k − 1), marginal coverage only), for
			// the width it is logged beside.
			_, blo, bhi := TestedRanks(k, func(i, j int) int { return cmp.Compare(est[i], est[j]) }, func(a, b int) int {
				n := index(a, b)
				if ps[n] >= 0.05/(k-1) {
					return 0
				}
				if diffs[n].Estimate > 0 {
					return 1
				}
				return -1
			})
			for i := range k {
				bonf += float64(bhi[i]-blo[i]) / k
			}
			ok := true
			for i := range k {
				// Truth is in decreasing order; with equal truths (spacing
				// 0) every rank is a true rank.
				tlo, thi := i+1, i+1
				if spacing == 0 {
					tlo, thi = 1, k
				}
				ok = ok && lo[i] <= thi && tlo <= hi[i]
				widths += float64(hi[i]-lo[i]) / k
			}
			if ok {
				joint++
			}
		}
		cov := float64(joint) / reps
		if cov < 0.93 {
			t.Errorf("spacing %.2f: all 8 rank intervals held together in %.3f of studies < 0.93", spacing, cov)
		}
		t.Logf("spacing %.2f (true scores %.3f…%.3f): joint coverage %.3f of %d, mean width %.2f ranks (per-model Bonferroni: %.2f)", spacing, truth[0], truth[k-1], cov, reps, widths/reps, bonf/reps)
	}
}

// simulateRanked draws one study: out[i][j][s] is model i's verdict on
// base scenario s of metric j, the scenario's difficulty shared by the
// models.
func simulateRanked(rng *rand.Rand, w pairedWorld, alpha [][]float64, m int) [][][3]float64 {
	k := len(alpha)
	out := make([][][3]float64, k)
	for i := range k {
		out[i] = make([][3]float64, m)
	}
	for j := range m {
		for s := range 3 {
			b := w.sigma * rng.NormFloat64()
			for i := range k {
				if rng.Float64() < logistic(alpha[i][j]+b) {
					out[i][j][s] = 1
				}
			}
		}
	}
	return out
}

func pairedStrata(out [][][3]float64, a, b, m int) []PairedStratum {
	strata := make([]PairedStratum, m)
	for j := range m {
		cs := make([]PairedCluster, 3)
		for s := range 3 {
			cs[s] = PairedCluster{NA: 1, NB: 1, SumA: out[a][j][s], SumB: out[b][j][s]}
		}
		strata[j] = PairedStratum{Weight: 1, Clusters: cs}
	}
	return strata
}
