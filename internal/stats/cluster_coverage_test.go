package stats

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestClusterRateCoverage is the acceptance check of issue 12: with 3, 5, 10
// and 30 base scenarios and ICC 0, 0.3 and 0.6, ClusterRate's 95% interval
// must cover the true rate in at least 93% of simulated studies, in every
// cell. Studies are beta-binomial (exact mean and ICC), at true rates
// 0.1, 0.3, 0.5 and 0.9, with 4 conversations per scenario (2 variants × 2
// samples) or an unequal 2–12. Seeded, so the table below is reproducible;
// the README quotes it.
func TestClusterRateCoverage(t *testing.T) {
	const reps = 1000
	gs := []int{3, 5, 10, 30}
	rhos := []float64{0, 0.3, 0.6}
	ps := []float64{0.1, 0.3, 0.5, 0.9}
	schemes := []sizeScheme{{"m=4", 4, 4}, {"m=2..12", 2, 12}}
	rng := newRand(20260712)
	cs := make([]ClusterSum, 30)
	var table strings.Builder
	fmt.Fprintf(&table, "%-8s %4s %4s", "sizes", "G", "ICC")
	for _, p := range ps {
		fmt.Fprintf(&table, "  p=%.1f", p)
	}
	table.WriteString("\n")
	worst := 1.0
	for _, sc := range schemes {
		for _, g := range gs {
			for _, rho := range rhos {
				fmt.Fprintf(&table, "%-8s %4d %4.1f", sc.name, g, rho)
				for _, p := range ps {
					covered := 0
					for range reps {
						fillClusters(rng, cs[:g], p, rho, sc)
						iv := ClusterRate(cs[:g], 0.95)
						if iv.Lo <= p && p <= iv.Hi {
							covered++
						}
						if !(iv.Hi > iv.Lo) {
							t.Fatalf("zero-width interval %+v from %v", iv, cs[:g])
						}
					}
					cov := float64(covered) / reps
					worst = min(worst, cov)
					fmt.Fprintf(&table, "  %5.1f", 100*cov)
					if cov < 0.93 {
						t.Errorf("%s G=%d ICC=%.1f p=%.1f: coverage %.3f < 0.93", sc.name, g, rho, p, cov)
					}
				}
				table.WriteString("\n")
			}
		}
	}
	t.Logf("95%% interval coverage (%%), %d studies per cell, worst %.1f%%:\n%s", reps, 100*worst, table.String())
}

func TestClusterRateDoesNotAllocate(t *testing.T) {
	cs := []ClusterSum{Binary(3, 4), Binary(1, 4), Binary(4, 4)}
	if n := testing.AllocsPerRun(100, func() { ClusterRate(cs, 0.95) }); n != 0 {
		t.Errorf("ClusterRate allocates %v times per call", n)
	}
}

// TestPanelRateCoverage checks ClusterRate on a judge panel's verdicts, the
// way results.json's judges.panel uses it: each row is judged by two
// imperfect judges (sensitivity/specificity 0.9/0.95 and 0.7/0.8), every
// verdict is one observation, and the target is the expected share of
// "present" verdicts, Σ_j [p·Se_j + (1−p)(1−Sp_j)] / 2. Rows share their
// scenario's rate (beta-binomial ICC), and both verdicts share the row.
func TestPanelRateCoverage(t *testing.T) {
	const reps, m = 1000, 4
	judges := [2][2]float64{{0.9, 0.95}, {0.7, 0.8}}
	rng := newRand(20260714)
	cs := make([]ClusterSum, 30)
	var log strings.Builder
	for _, g := range []int{3, 5, 10, 30} {
		for _, rho := range []float64{0.3, 0.6} {
			for _, p := range []float64{0.1, 0.5} {
				truth := 0.0
				for _, j := range judges {
					truth += (p*j[0] + (1-p)*(1-j[1])) / 2
				}
				covered := 0
				for range reps {
					for c := range cs[:g] {
						pi := clusterRateDraw(rng, p, rho)
						k := 0
						for range m {
							present := rng.Float64() < pi
							for _, j := range judges {
								says := rng.Float64() < j[0]
								if !present {
									says = rng.Float64() >= j[1]
								}
								if says {
									k++
								}
							}
						}
						cs[c] = Binary(k, 2*m)
					}
					if iv := ClusterRate(cs[:g], 0.95); iv.Lo <= truth && truth <= iv.Hi {
						covered++
					}
				}
				cov := float64(covered) / reps
				fmt.Fprintf(&log, "G=%2d ICC=%.1f p=%.1f: %.1f%%\n", g, rho, p, 100*cov)
				if cov < 0.93 {
					t.Errorf("panel G=%d ICC=%.1f p=%.1f: coverage %.3f < 0.93", g, rho, p, cov)
				}
			}
		}
	}
	t.Logf("panel rate coverage, %d studies per cell:\n%s", reps, log.String())
}

// TestMeanOfRatesCoverage checks the leaderboard's interval: the mean of
// two independent tracks' limits must cover the mean of their true rates.
func TestMeanOfRatesCoverage(t *testing.T) {
	const reps = 500
	rng := newRand(20260715)
	pos, neg := make([]ClusterSum, 30), make([]ClusterSum, 30)
	sizes := sizeScheme{"m=2..12", 2, 12}
	worst := 1.0
	for _, g := range []int{3, 5, 10, 30} {
		for _, rho := range []float64{0, 0.3, 0.6} {
			covered := 0
			for range reps {
				fillClusters(rng, pos[:g], 0.8, rho, sizes)
				fillClusters(rng, neg[:g], 0.3, rho, sizes)
				_, lo, hi := MeanOfRates(ClusterRate(pos[:g], 0.95), ClusterRate(neg[:g], 0.95))
				if lo <= 0.55 && 0.55 <= hi {
					covered++
				}
			}
			cov := float64(covered) / reps
			worst = min(worst, cov)
			if cov < 0.93 {
				t.Errorf("G=%d ICC=%.1f: coverage %.3f < 0.93", g, rho, cov)
			}
		}
	}
	t.Logf("mean of two tracks: worst coverage %.1f%% (%d studies per cell)", 100*worst, reps)
	if _, lo, _ := MeanOfRates(RateInterval{}, RateInterval{}); !math.IsNaN(lo) {
		t.Error("no observations: want NaN")
	}
}

// anyMixPopulations are the scenario-rate distributions of
// TestClusterRateAnyMixCoverage: beta-binomial at rates 0.02–0.5, and
// hot/cold mixtures where a few scenarios carry the behaviour (plus one
// mirrored: a few cold scenarios among hot ones).
var anyMixPopulations = []population{
	betaBinomial(0.02, 0.3), betaBinomial(0.1, 0.3), betaBinomial(0.3, 0.3), betaBinomial(0.5, 0.3),
	betaBinomial(0.02, 0.6), betaBinomial(0.1, 0.6), betaBinomial(0.3, 0.6), betaBinomial(0.5, 0.6),
	betaBinomial(0.02, 0), betaBinomial(0.5, 0),
	hotCold(0.02, 0.9, 0.01), hotCold(0.05, 0.95, 0.02), hotCold(0.1, 0.95, 0.02),
	hotCold(0.2, 0.95, 0.02), hotCold(0.5, 0.95, 0.05), hotCold(0.1, 0.05, 0.98),
}

// anyMixSizes are the conversations per scenario: equal (1, 4, 12, 24) and
// unequal (uniform 1–24 and 2–12).
var anyMixSizes = []sizeScheme{{"m=1", 1, 1}, {"m=4", 4, 4}, {"m=12", 12, 12}, {"m=24", 24, 24}, {"m=1..24", 1, 24}, {"m=2..12", 2, 12}}

// coverageCell runs reps studies of g scenarios and returns the coverage
// and mean width of ClusterRate's interval and of the interval it replaced
// (the hull of its t and Wilson parts, still in the result).
func coverageCell(rng *rand.Rand, cs []ClusterSum, pop population, sizes sizeScheme, reps int) (cov, width, oldCov, oldWidth float64) {
	for range reps {
		fillFrom(rng, cs, pop, sizes)
		iv := ClusterRate(cs, 0.95)
		oldLo, oldHi := iv.WilsonLo, iv.WilsonHi
		if iv.DF > 0 {
			oldLo, oldHi = min(oldLo, iv.TLo), max(oldHi, iv.THi)
		}
		if iv.Lo <= pop.mean && pop.mean <= iv.Hi {
			cov++
		}
		if oldLo <= pop.mean && pop.mean <= oldHi {
			oldCov++
		}
		width += iv.Hi - iv.Lo
		oldWidth += oldHi - oldLo
	}
	r := float64(reps)
	return cov / r, width / r, oldCov / r, oldWidth / r
}

// TestClusterRateAnyMixCoverage is the acceptance check of issue 27: the
// 95% interval must cover the true rate in at least 93% of simulated
// studies in every cell of 3–50 base scenarios × 1–24 conversations per
// scenario (equal and unequal) × beta-binomial and hot/cold populations at
// rates 0.02–0.5 (576 cells, 400 seeded studies each; the standard error of
// a coverage near 95% is 1.1 points, and the betting part's guarantee does
// not depend on the population). The table it logs (new and old coverage
// and mean width) is the one docs/statistics.md quotes.
func TestClusterRateAnyMixCoverage(t *testing.T) {
	const reps = 400
	gs := []int{3, 5, 10, 20, 30, 50}
	type row struct {
		line  string
		worst float64
	}
	rows := make([][]row, len(gs))
	for gi, g := range gs {
		t.Run(fmt.Sprintf("G=%d", g), func(t *testing.T) {
			t.Parallel()
			rng := newRand(20261127 + uint64(g))
			cs := make([]ClusterSum, g)
			for _, pop := range anyMixPopulations {
				for _, sz := range anyMixSizes {
					cov, w, oldCov, oldW := coverageCell(rng, cs, pop, sz, reps)
					if cov < 0.93 {
						t.Errorf("G=%d %s %s (rate %.3f): coverage %.3f < 0.93", g, pop.name, sz.name, pop.mean, cov)
					}
					rows[gi] = append(rows[gi], row{fmt.Sprintf("%3d %-22s %-8s %6.1f %6.3f   %6.1f %6.3f", g, pop.name, sz.name, 100*cov, w, 100*oldCov, oldW), cov})
				}
			}
		})
	}
	t.Cleanup(func() {
		var b strings.Builder
		worst := 1.0
		fmt.Fprintf(&b, "%3s %-22s %-8s %6s %6s   %6s %6s\n", "G", "population", "sizes", "cov%", "width", "old%", "oldw")
		for _, rs := range rows {
			for _, r := range rs {
				b.WriteString(r.line + "\n")
				worst = min(worst, r.worst)
			}
		}
		t.Logf("coverage of the 95%% interval, %d studies per cell, worst %.1f%%:\n%s", reps, 100*worst, b.String())
	})
}

// TestClusterRateHotColdCells are issue 27's two cells, with more studies:
// 10 base scenarios × 12 conversations, each scenario hot (0.95) with
// probability 10% and otherwise at 0.02, where the interval without its
// betting part covered 75.5%; and 30 scenarios with 5% hot (84.4%). The
// old interval must still fail here (the cells can tell), the new one not.
func TestClusterRateHotColdCells(t *testing.T) {
	const reps = 2000
	m12 := sizeScheme{"m=12", 12, 12}
	for _, c := range []struct {
		g      int
		pop    population
		oldMax float64
	}{
		{10, hotCold(0.1, 0.95, 0.02), 0.85},
		{30, hotCold(0.05, 0.95, 0.02), 0.9},
	} {
		rng := newRand(20261128 + uint64(c.g))
		cov, w, oldCov, oldW := coverageCell(rng, make([]ClusterSum, c.g), c.pop, m12, reps)
		t.Logf("G=%d %s m=12: coverage %.1f%% (width %.3f); without the betting part %.1f%% (width %.3f)", c.g, c.pop.name, 100*cov, w, 100*oldCov, oldW)
		if cov < 0.93 {
			t.Errorf("G=%d %s: coverage %.3f < 0.93", c.g, c.pop.name, cov)
		}
		if oldCov > c.oldMax {
			t.Errorf("G=%d %s: the old interval covered %.3f; the cell no longer shows its failure", c.g, c.pop.name, oldCov)
		}
	}
}
