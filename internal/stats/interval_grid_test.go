package stats

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/impactbench/impactbench/internal/racemode"
)

// The interval grid: every candidate interval for a pooled rate over
// clustered pass/fail data, on the same seeded studies, with the true rate
// known. It is the evidence behind docs/interval-grid.md and the summary in
// docs/statistics.md:
//
//	IMPACTBENCH_INTERVAL_GRID=full go test -run TestIntervalGrid -v -timeout 60m ./internal/stats/
//
// prints the table (about 45 seconds on two cores), and with
// IMPACTBENCH_INTERVAL_GRID_OUT=docs/interval-grid.md also writes it as
// Markdown. IMPACTBENCH_INTERVAL_GRID=second runs the second grid
// (docs/interval-grid-second.md): other populations, scenario counts,
// conversation counts and seeds, on which settings chosen on the first
// are checked unchanged. Without the variable, CI runs a few seeded cells
// and asserts the coverage band (TestIntervalGridCI).

// gridMethod is one candidate interval.
type gridMethod struct {
	name, about string
	f           func(cs []ClusterSum) (lo, hi float64)
}

// gridMethods are the candidates. "new" is ClusterRate's interval; the
// others are what it is compared with: the interval it replaced, its parts
// and the usual textbook choices.
var gridMethods = []gridMethod{
	{"new", "cluster-score (ClusterRate's Lo..Hi)", func(cs []ClusterSum) (float64, float64) {
		_, lo, hi := ScoreInterval(cs, 0.95)
		return lo, hi
	}},
	{"old", "the replaced hull of betting, t and Wilson-eff", func(cs []ClusterSum) (float64, float64) {
		r := ClusterRate(cs, 0.95)
		lo, hi := min(r.WilsonLo, r.BettingLo), max(r.WilsonHi, r.BettingHi)
		if r.DF > 0 {
			lo, hi = min(lo, r.TLo), max(hi, r.THi)
		}
		return lo, hi
	}},
	{"betting", "betting interval on scenario rates (any-mix bound)", func(cs []ClusterSum) (float64, float64) { return BettingCI(cs, 0.95) }},
	{"t-CR1", "t on the pooled rate, CR1 variance, G-1 df", func(cs []ClusterSum) (float64, float64) {
		r := ClusterRate(cs, 0.95)
		if r.DF == 0 {
			return 0, 1
		}
		return r.TLo, r.THi
	}},
	{"wilson-eff", "Wilson on N / design effect at the ICC's 90% bound", func(cs []ClusterSum) (float64, float64) {
		r := ClusterRate(cs, 0.95)
		return r.WilsonLo, r.WilsonHi
	}},
	{"wilson", "Wilson on conversations (ignores clustering)", func(cs []ClusterSum) (float64, float64) {
		var n, s float64
		for _, c := range cs {
			n += float64(c.N)
			s += c.Sum
		}
		return WilsonReal(s/n, n, 0.95)
	}},
	{"strat-t", "study.json's t with binomial floor (StratifiedMean, one stratum)", func(cs []ClusterSum) (float64, float64) {
		s := StratifiedMean([]Stratum{{Weight: 1, Clusters: cs}}, 0.95)
		return s.Lo, s.Hi
	}},
	{"quasi", "Wilson on N/max(1, design effect), Satterthwaite t", gridQuasiScore},
}

// gridQuasiScore is the score interval without the logit form, the
// Poisson limits or the ICC bound: Wilson on N/φ, φ = max(1, φ̂) from the
// CR1 variance at the shrunk rate, quantile t with φ²(G−1)/(φ−1)² degrees
// of freedom.
func gridQuasiScore(cs []ClusterSum) (float64, float64) {
	var n, s float64
	g := 0
	for _, c := range cs {
		if c.N > 0 {
			g++
			n += float64(c.N)
			s += c.Sum
		}
	}
	pt := (s + 0.5) / (n + 1)
	ss := 0.0
	for _, c := range cs {
		e := c.Sum - pt*float64(c.N)
		ss += e * e
	}
	gf := float64(g)
	phi := gf / (gf - 1) * ss / (n * pt * (1 - pt))
	z := ZQuantile(0.975)
	q := z
	if phi > 1 {
		q = TQuantile(0.975, satterthwaiteExcess(phi, gf))
	}
	return WilsonReal(s/n, n/max(1, phi)*(z/q)*(z/q), 0.95)
}

// gridPopulations: homogeneous rates (ICC 0; 0.02 is the cold rate of the
// hot/cold mixture below), beta populations from mild to strongly skewed
// (rate 0.05 at ICC 0.3 has a scenario-rate skewness of 3.5), and hot/cold
// mixtures: one whose hot scenarios are too rare to show up in most small
// studies (10 % at 0.95 among 0.02), visible ones, and the mirror.
var gridPopulations = []population{
	betaBinomial(0.02, 0), betaBinomial(0.05, 0), betaBinomial(0.3, 0), betaBinomial(0.5, 0),
	betaBinomial(0.02, 0.1), betaBinomial(0.05, 0.3), betaBinomial(0.2, 0.3), betaBinomial(0.5, 0.3),
	betaBinomial(0.1, 0.6), betaBinomial(0.5, 0.6),
	hotCold(0.1, 0.95, 0.02), hotCold(0.3, 0.9, 0.05), hotCold(0.5, 0.95, 0.05), hotCold(0.1, 0.05, 0.98),
}

var (
	gridScenarios = []int{3, 5, 10, 20, 30}
	gridSizes     = []sizeScheme{{"1", 1, 1}, {"2", 2, 2}, {"4", 4, 4}, {"8", 8, 8}, {"16", 16, 16}, {"1-16", 1, 16}}
)

// gridSet is one grid: its populations, scenario and conversation counts,
// the seed of its first population's studies and how it is reproduced.
type gridSet struct {
	env, out   string
	title      string
	pops       []population
	scenarios  []int
	sizes      []sizeScheme
	seed       uint64
	sizesAbout string
}

var gridSets = []gridSet{
	{"full", "docs/interval-grid.md", "The interval grid", gridPopulations, gridScenarios, gridSizes, 20260901, "`1-16`: a different m per scenario, uniform"},
	// The second grid shares no population, scenario count, conversation
	// count or seed with the first: other homogeneous and beta rates
	// (including high ones), a rarer invisible hot share (5 % at 0.90
	// among 0.01) and uneven sizes of two kinds.
	{"second", "docs/interval-grid-second.md", "The second interval grid", []population{
		betaBinomial(0.03, 0), betaBinomial(0.1, 0), betaBinomial(0.4, 0),
		betaBinomial(0.03, 0.2), betaBinomial(0.1, 0.3), betaBinomial(0.15, 0.5), betaBinomial(0.3, 0.2),
		betaBinomial(0.35, 0.5), betaBinomial(0.7, 0.3), betaBinomial(0.9, 0.2),
		hotCold(0.2, 0.9, 0.03), hotCold(0.4, 0.85, 0.1), hotCold(0.05, 0.9, 0.01), hotCold(0.15, 0.1, 0.95),
	}, []int{4, 8, 15, 25},
		[]sizeScheme{{"1", 1, 1}, {"3", 3, 3}, {"6", 6, 6}, {"12", 12, 12}, {"2-8", 2, 8}, {"1-24", 1, 24}},
		20261129, "`2-8`, `1-24`: a different m per scenario, uniform"},
}

// gridCell is one cell's result.
type gridCell struct {
	pop        population
	g          int
	sizes      sizeScheme
	cov, width []float64 // per method
	oracle     float64   // 2.5–97.5 % range of the pooled rate's sampling distribution
	best       int       // narrowest method with coverage ≥ 94 % (−1: none)
	floor      float64   // smallest coverage ≥ 95 % any interval on p̂ can have (NaN: not computed)
	reps       int
}

// runGridCell simulates reps studies of one cell with every method.
func runGridCell(rng *rand.Rand, pop population, g int, sizes sizeScheme, reps int, methods []gridMethod) gridCell {
	c := gridCell{pop: pop, g: g, sizes: sizes, reps: reps, cov: make([]float64, len(methods)), width: make([]float64, len(methods)), best: -1}
	cs := make([]ClusterSum, g)
	ests := make([]float64, reps)
	for r := range reps {
		fillFrom(rng, cs, pop, sizes)
		var n, s float64
		for _, x := range cs {
			n += float64(x.N)
			s += x.Sum
		}
		ests[r] = s / n
		for i, m := range methods {
			lo, hi := m.f(cs)
			if lo <= pop.mean && pop.mean <= hi {
				c.cov[i]++
			}
			c.width[i] += hi - lo
		}
	}
	for i := range methods {
		c.cov[i] /= float64(reps)
		c.width[i] /= float64(reps)
		if c.cov[i] >= 0.94 && (c.best < 0 || c.width[i] < c.width[c.best]) {
			c.best = i
		}
	}
	slices.Sort(ests)
	c.oracle = quantileSorted(ests, 0.975) - quantileSorted(ests, 0.025)
	c.floor = math.NaN()
	if sizes.lo == 1 && sizes.hi == 1 && pop.name == betaBinomial(pop.mean, 0).name {
		c.floor = binomialCoverageFloor(g, pop.mean, 0.95)
	}
	return c
}

// binomialCoverageFloor is the smallest coverage at rate p, at least conf,
// that any interval computed from k passes of n independent trials can
// have: the smallest total probability of a set of outcomes (those whose
// interval holds p) that reaches conf — with 3 trials at p = 0.05 the
// outcomes 0 and 1 (99.3 %) or all of them, so nothing can cover 95–97 %.
// (Choosing outcomes by probability, largest first, gives the smallest
// such total once no smaller subset of the tail reaches it; for these n
// the greedy set is checked against every subset.)
func binomialCoverageFloor(n int, p, conf float64) float64 {
	probs := make([]float64, n+1)
	for k := range probs {
		probs[k] = math.Exp(lchoose(n, k) + float64(k)*math.Log(p) + float64(n-k)*math.Log1p(-p))
	}
	best := 1.0
	if n <= 20 {
		for mask := 1; mask < 1<<(n+1); mask++ {
			t := 0.0
			for k, q := range probs {
				if mask&(1<<k) != 0 {
					t += q
				}
			}
			if t >= conf-1e-12 && t < best {
				best = t
			}
		}
		return best
	}
	slices.SortFunc(probs, func(a, b float64) int {
		switch {
		case a > b:
			return -1
		case a < b:
			return 1
		}
		return 0
	})
	t := 0.0
	for _, q := range probs {
		t += q
		if t >= conf {
			return t
		}
	}
	return 1
}

func lchoose(n, k int) float64 {
	a, _ := math.Lgamma(float64(n + 1))
	b, _ := math.Lgamma(float64(k + 1))
	c, _ := math.Lgamma(float64(n - k + 1))
	return a - b - c
}

// ratio is the new method's mean width over the narrowest method that
// covers ≥ 94 % (NaN when none does).
func (c gridCell) ratio() float64 {
	if c.best < 0 {
		return math.NaN()
	}
	return c.width[0] / c.width[c.best]
}

func TestIntervalGrid(t *testing.T) {
	i := slices.IndexFunc(gridSets, func(s gridSet) bool { return s.env == os.Getenv("IMPACTBENCH_INTERVAL_GRID") })
	if i < 0 {
		t.Skip("set IMPACTBENCH_INTERVAL_GRID=full (or =second) to run a whole grid (about 45 seconds); TestIntervalGridCI runs a few cells")
	}
	set := gridSets[i]
	const reps = 2000
	pops := set.pops
	if sel := os.Getenv("IMPACTBENCH_INTERVAL_GRID_POPS"); sel != "" { // e.g. "0,5,9": a quicker look at a few rows
		pops = nil
		for _, f := range strings.Split(sel, ",") {
			var i int
			if _, err := fmt.Sscan(f, &i); err == nil && i >= 0 && i < len(set.pops) {
				pops = append(pops, set.pops[i])
			}
		}
	}
	cells := make([][]gridCell, len(pops))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 2)
	for pi, pop := range pops {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			rng := newRand(set.seed + uint64(slices.IndexFunc(set.pops, func(p population) bool { return p.name == pop.name })))
			for _, g := range set.scenarios {
				for _, sz := range set.sizes {
					cells[pi] = append(cells[pi], runGridCell(rng, pop, g, sz, reps, gridMethods))
				}
			}
		}()
	}
	wg.Wait()
	var flat []gridCell
	for _, cs := range cells {
		flat = append(flat, cs...)
	}
	var bound *gridBound
	if len(pops) == len(set.pops) {
		b := boundGrid(set, pops, flat)
		bound = &b
	}
	md := gridMarkdown(set, flat, reps, bound)
	t.Log("\n" + md)
	if out := os.Getenv("IMPACTBENCH_INTERVAL_GRID_OUT"); out != "" {
		if !filepath.IsAbs(out) {
			// go test runs in this package's directory; the documented
			// command names the file from the repository's root.
			out = filepath.Join("..", "..", out)
		}
		if err := os.WriteFile(out, []byte(md), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// gridMarkdown renders the grid: a summary per population and scenario
// count, then every cell.
func gridMarkdown(set gridSet, cells []gridCell, reps int, bound *gridBound) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n\n[Back to the numbers, explained](statistics.md#the-numbers-explained)\n\n", set.title)
	fmt.Fprintf(&b, "Produced by `IMPACTBENCH_INTERVAL_GRID=%s IMPACTBENCH_INTERVAL_GRID_OUT=%s go test -run TestIntervalGrid -v -timeout 60m ./internal/stats/` (seeded: the same numbers every run). ", set.env, set.out)
	fmt.Fprintf(&b, "%d simulated studies per cell; the standard error of a coverage near 95 %% is %.1f points. ", reps, 100*math.Sqrt(0.95*0.05/float64(reps)))
	b.WriteString("Each study draws G base scenarios from the population (a scenario's pass rate), then m conversations per scenario (" + set.sizesAbout + "); the true rate is the population's mean. ")
	b.WriteString("Methods, all at 95 %:\n\n")
	for _, m := range gridMethods {
		fmt.Fprintf(&b, "- `%s`: %s\n", m.name, m.about)
	}
	b.WriteString("\nColumns: `new` coverage and mean width; `best`: the narrowest method whose coverage is at least 94 % in that cell, and its width; `ratio`: `new`'s width over `best`'s (— when no method covers 94 %); `oracle`: the middle 95 % of the pooled rate's own sampling distribution (the width an interval that knew the population would need); `betting`: the any-mix bound's coverage and width; `floor`: with one conversation per scenario at a fixed rate, the smallest coverage of at least 95 % that any interval can have (discreteness); `no hot`: the share of studies of a hot/cold mixture without a hot scenario, which no interval that fits the homogeneous cells can cover.\n\n")
	if bound != nil {
		fmt.Fprintf(&b, "**What no interval can do.** Of the %d cells, this interval misses the target (coverage 94–97 %%, or up to the `floor` where discreteness forces more, and mean width at most 1.15× `best`) in %d. **Any interval whatsoever misses it in at least %d** (with probability %.0f %% over this simulation): two cells of one column (same G and m) whose studies look alike force each other's intervals wide. An interval covering 94 %% of cell B's studies must hold B's rate in at least (0.94 − P_B(L > k))/k of cell A's, for every k (L: a study's likelihood ratio of B to A), so covering 94 %% in both makes its mean width in A at least that share, minus 6 %%, times the distance between their rates; where that exceeds 1.15× A's narrowest covering width, A and B cannot both meet the target, and the fewest cells of a column that break every such pair must miss it. Column `forced`: the largest width another cell of its column forces on this one, over its narrowest covering width, and that cell (each pair's bound from %d simulated studies, its tail widened by the Dvoretzky–Kiefer–Wolfowitz inequality so that all hold at once; the narrowest covering widths are this grid's estimates).\n\n",
			len(cells), bound.missed, bound.mustMiss, 100*boundConfidence, boundStudies)
		var widths []string
		for k, g := range set.scenarios {
			w := fmt.Sprintf("%.3f with %d", anyMixWidth(g, 0.94, 0.5), g)
			if k > 0 && k == len(set.scenarios)-1 {
				w = "and " + w
			}
			widths = append(widths, w)
		}
		lo, hi := math.Inf(1), 0.0
		for i, c := range cells {
			lo, hi = min(lo, c.width[2]/bound.anyMix[i]), max(hi, c.width[2]/bound.anyMix[i])
		}
		fmt.Fprintf(&b, "**What no interval that holds for every scenario mix can do.** The issue asks for intervals at their nominal level for any scenario mix. Mix a cell's population with a share h of scenarios at %.2f (or at %.2f), the kind of mix this grid already holds: with probability (1−h)^G a study of the mix has none of them and is exactly a study of the cell, so an interval covering 94 %% of the mix's studies holds the mix's rate in at least 1 − 0.06/(1−h)^G of the cell's. Summed over every h, above the cell's rate and below it (the mean width is the integral over rates of the chance of holding each), **every interval that covers 94 %% of every such mix has a mean width of at least %s scenarios** in every cell whose rate lies between %.2f and %.2f — exact, whatever the conversation counts. That is more than 1.15× the narrowest covering width in **%d of the %d cells** (column `any-mix`: that width, and in brackets its ratio to `best`): there the issue's width target and its \"any scenario mix\" cannot both hold. The betting interval, which does hold for every mix, is %.1f–%.1f× the bound.\n\n",
			mixHi, mixLo, strings.Join(widths, ", "), mixLo, mixHi, bound.mixMiss, len(cells), lo, hi)
	}
	b.WriteString("| population | G | m | new cov % | new width | best | best width | ratio | oracle | betting cov % / width | floor % | no hot % | forced | any-mix |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for i, c := range cells {
		best, bw, ratio := "—", "—", "—"
		if c.best >= 0 {
			best, bw, ratio = gridMethods[c.best].name, fmt.Sprintf("%.3f", c.width[c.best]), fmt.Sprintf("%.2f", c.ratio())
		}
		floor := ""
		if !math.IsNaN(c.floor) {
			floor = fmt.Sprintf("%.1f", 100*c.floor)
		}
		noHot := ""
		if h := hotShare(c.pop); h > 0 {
			noHot = fmt.Sprintf("%.1f", 100*math.Pow(1-h, float64(c.g)))
		}
		forced := ""
		if bound != nil && bound.forced[i] > 0 {
			forced = fmt.Sprintf("%.2f (%s)", bound.forced[i], bound.forcedBy[i])
		}
		anyMix := ""
		if bound != nil {
			anyMix = fmt.Sprintf("%.3f", bound.anyMix[i])
			if c.best >= 0 {
				anyMix += fmt.Sprintf(" (%.2f)", bound.anyMix[i]/c.width[c.best])
			}
		}
		fmt.Fprintf(&b, "| %s | %d | %s | %.1f | %.3f | %s | %s | %s | %.3f | %.1f / %.3f | %s | %s | %s | %s |\n",
			c.pop.name, c.g, c.sizes.name, 100*c.cov[0], c.width[0], best, bw, ratio, c.oracle, 100*c.cov[2], c.width[2], floor, noHot, forced, anyMix)
	}
	return b.String()
}

// hotShare is the hot share of a hot/cold population (0 for the others):
// the one whose hot scenarios are rare enough to be missing from studies.
func hotShare(p population) float64 {
	switch p.name {
	case hotCold(0.1, 0.95, 0.02).name:
		return 0.1
	case hotCold(0.05, 0.9, 0.01).name:
		return 0.05
	}
	return 0
}

// TestIntervalGridCI is the reduced grid CI runs: seven seeded cells where the
// new interval must cover 94–97 % and be no wider than 1.15× the
// narrowest method that covers 94 %, plus the two documented shortfalls:
// in a hot/cold mix whose hot scenarios are missing from a third of the
// studies, the new interval misses and the betting interval (the any-mix
// bound) covers.
func TestIntervalGridCI(t *testing.T) {
	racemode.SkipHeavy(t)
	const reps = 1500
	cells := []struct {
		pop   population
		g     int
		sizes sizeScheme
	}{
		{betaBinomial(0.3, 0.3), 10, sizeScheme{"4", 4, 4}},
		{betaBinomial(0.05, 0), 30, sizeScheme{"8", 8, 8}},
		{betaBinomial(0.5, 0.6), 30, sizeScheme{"16", 16, 16}},
		{hotCold(0.3, 0.9, 0.05), 20, sizeScheme{"4", 4, 4}},
		{betaBinomial(0.2, 0.3), 20, sizeScheme{"1-16", 1, 16}},
		// Two skewed cells the betting part lifts into the band (93 % and
		// 90 % without it).
		{betaBinomial(0.2, 0.3), 10, sizeScheme{"16", 16, 16}},
		{betaBinomial(0.05, 0.3), 30, sizeScheme{"16", 16, 16}},
	}
	for i, c := range cells {
		cell := runGridCell(newRand(20260950+uint64(i)), c.pop, c.g, c.sizes, reps, gridMethods)
		t.Logf("%s G=%d m=%s: new %.1f%% width %.3f; best %s %.3f; ratio %.2f; oracle %.3f", c.pop.name, c.g, c.sizes.name,
			100*cell.cov[0], cell.width[0], gridMethods[max(cell.best, 0)].name, cell.width[max(cell.best, 0)], cell.ratio(), cell.oracle)
		if cell.cov[0] < 0.94 || cell.cov[0] > 0.97 {
			t.Errorf("%s G=%d m=%s: coverage %.3f outside 0.94–0.97", c.pop.name, c.g, c.sizes.name, cell.cov[0])
		}
		if r := cell.ratio(); !(r <= 1.15) {
			t.Errorf("%s G=%d m=%s: width %.2f× the narrowest covering method (%s)", c.pop.name, c.g, c.sizes.name, r, gridMethods[max(cell.best, 0)].name)
		}
	}
	hot := runGridCell(newRand(20260960), hotCold(0.1, 0.95, 0.02), 10, sizeScheme{"8", 8, 8}, reps, gridMethods[:3])
	t.Logf("hot 10%% G=10 m=8: new %.1f%%, betting %.1f%%", 100*hot.cov[0], 100*hot.cov[2])
	if hot.cov[0] > 0.85 || hot.cov[2] < 0.95 {
		t.Errorf("invisible hot scenarios: new covers %.3f (documented: below 0.85), betting %.3f (documented: ≥ 0.95)", hot.cov[0], hot.cov[2])
	}
}
