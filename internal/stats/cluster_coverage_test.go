package stats

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/impactbench/impactbench/internal/racemode"
)

// TestClusterRateCoverage is the acceptance check of issue 12: with 3, 5, 10
// and 30 base scenarios and ICC 0, 0.3 and 0.6, ClusterRate's 95% interval
// must cover the true rate in at least 92% of simulated studies (1000 per
// cell: 2.5 standard errors below 94%), in every cell but the strongly
// skewed ones — ICC 0.6 at rates 0.1 and 0.9, where a sample of scenarios
// misses the far tail too often for any interval sized for the other cells
// (docs/statistics.md): there at least 85%, and the betting part, the
// any-mix bound, at least 93% everywhere. (The hull this replaced covered
// ≥ 99% here at 1.3–4× the width.) Studies are beta-binomial (exact mean
// and ICC), at true rates 0.1, 0.3, 0.5 and 0.9, with 4 conversations per
// scenario (2 variants × 2 samples) or an unequal 2–12. Seeded, so the
// table below is reproducible.
func TestClusterRateCoverage(t *testing.T) {
	racemode.SkipHeavy(t)
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
					covered, betCovered := 0, 0
					for range reps {
						fillClusters(rng, cs[:g], p, rho, sc)
						iv := ClusterRate(cs[:g], 0.95)
						if iv.Lo <= p && p <= iv.Hi {
							covered++
						}
						if iv.BettingLo <= p && p <= iv.BettingHi {
							betCovered++
						}
						if !(iv.Hi > iv.Lo) {
							t.Fatalf("zero-width interval %+v from %v", iv, cs[:g])
						}
					}
					cov, bet := float64(covered)/reps, float64(betCovered)/reps
					worst = min(worst, cov)
					fmt.Fprintf(&table, "  %5.1f", 100*cov)
					floor := 0.92
					if rho == 0.6 && (p == 0.1 || p == 0.9) {
						floor = 0.85
					}
					if cov < floor {
						t.Errorf("%s G=%d ICC=%.1f p=%.1f: coverage %.3f < %.2f", sc.name, g, rho, p, cov, floor)
					}
					if bet < 0.93 {
						t.Errorf("%s G=%d ICC=%.1f p=%.1f: betting part covers %.3f < 0.93", sc.name, g, rho, p, bet)
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
				floor := 0.92 // as TestClusterRateCoverage: 1000 studies, 2.5 SE below 94%
				if rho == 0.6 && p == 0.1 {
					floor = 0.85 // strongly skewed scenario rates (docs/statistics.md)
				}
				if cov < floor {
					t.Errorf("panel G=%d ICC=%.1f p=%.1f: coverage %.3f < %.2f", g, rho, p, cov, floor)
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
// and mean width of ClusterRate's interval (the cluster-score Lo..Hi), of
// its betting part (the any-mix bound) and of the hull it replaced
// (betting, t and Wilson parts, still in the result).
func coverageCell(rng *rand.Rand, cs []ClusterSum, pop population, sizes sizeScheme, reps int) (cov, width, betCov, betWidth, oldCov, oldWidth float64) {
	for range reps {
		fillFrom(rng, cs, pop, sizes)
		iv := ClusterRate(cs, 0.95)
		oldLo, oldHi := min(iv.WilsonLo, iv.BettingLo), max(iv.WilsonHi, iv.BettingHi)
		if iv.DF > 0 {
			oldLo, oldHi = min(oldLo, iv.TLo), max(oldHi, iv.THi)
		}
		if iv.Lo <= pop.mean && pop.mean <= iv.Hi {
			cov++
		}
		if iv.BettingLo <= pop.mean && pop.mean <= iv.BettingHi {
			betCov++
		}
		if oldLo <= pop.mean && pop.mean <= oldHi {
			oldCov++
		}
		width += iv.Hi - iv.Lo
		betWidth += iv.BettingHi - iv.BettingLo
		oldWidth += oldHi - oldLo
	}
	r := float64(reps)
	return cov / r, width / r, betCov / r, betWidth / r, oldCov / r, oldWidth / r
}

// TestClusterRateAnyMixCoverage is the acceptance check of issue 27, now
// for the any-mix bound: the betting part of the 95% interval must cover
// the true rate in at least 93% of simulated studies in every cell of 3–50
// base scenarios × 1–24 conversations per scenario (equal and unequal) ×
// beta-binomial and hot/cold populations at rates 0.02–0.5 (576 cells, 400
// seeded studies each; the standard error of a coverage near 95% is 1.1
// points, and the betting interval's guarantee does not depend on the
// population). The cluster-score interval Lo..Hi is logged beside it; its
// coverage is checked by TestIntervalGrid, and it falls short here where
// hot scenarios are missing from many studies (documented).
func TestClusterRateAnyMixCoverage(t *testing.T) {
	racemode.SkipHeavy(t) // a pure Monte Carlo: .ci/run runs it without -race
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
					cov, w, betCov, betW, oldCov, oldW := coverageCell(rng, cs, pop, sz, reps)
					if betCov < 0.93 {
						t.Errorf("G=%d %s %s (rate %.3f): betting part covers %.3f < 0.93", g, pop.name, sz.name, pop.mean, betCov)
					}
					rows[gi] = append(rows[gi], row{fmt.Sprintf("%3d %-22s %-8s %6.1f %6.3f   %6.1f %6.3f   %6.1f %6.3f", g, pop.name, sz.name, 100*cov, w, 100*betCov, betW, 100*oldCov, oldW), betCov})
				}
			}
		})
	}
	t.Cleanup(func() {
		var b strings.Builder
		worst := 1.0
		fmt.Fprintf(&b, "%3s %-22s %-8s %6s %6s   %6s %6s   %6s %6s\n", "G", "population", "sizes", "cov%", "width", "bet%", "betw", "old%", "oldw")
		for _, rs := range rows {
			for _, r := range rs {
				b.WriteString(r.line + "\n")
				worst = min(worst, r.worst)
			}
		}
		t.Logf("coverage of the 95%% intervals, %d studies per cell, betting part worst %.1f%%:\n%s", reps, 100*worst, b.String())
	})
}

// TestClusterRateHotColdCells are issue 27's two cells, with more studies:
// 10 base scenarios × 12 conversations, each scenario hot (0.95) with
// probability 10% and otherwise at 0.02 (35% of the studies have no hot
// scenario), and 30 scenarios with 5% hot (21%). Such a study looks like a
// homogeneous one at 0.02, so the cluster-score interval, sized for those,
// misses (documented: below 85%); the betting part, the any-mix bound, must
// cover ≥ 95%.
func TestClusterRateHotColdCells(t *testing.T) {
	const reps = 2000
	m12 := sizeScheme{"m=12", 12, 12}
	for _, c := range []struct {
		g   int
		pop population
	}{
		{10, hotCold(0.1, 0.95, 0.02)},
		{30, hotCold(0.05, 0.95, 0.02)},
	} {
		rng := newRand(20261128 + uint64(c.g))
		cov, w, betCov, betW, oldCov, oldW := coverageCell(rng, make([]ClusterSum, c.g), c.pop, m12, reps)
		t.Logf("G=%d %s m=12: cluster-score %.1f%% (width %.3f); betting part %.1f%% (width %.3f); the hull before %.1f%% (width %.3f)", c.g, c.pop.name, 100*cov, w, 100*betCov, betW, 100*oldCov, oldW)
		if betCov < 0.95 {
			t.Errorf("G=%d %s: the betting part covers %.3f < 0.95", c.g, c.pop.name, betCov)
		}
		if cov > 0.85 {
			t.Errorf("G=%d %s: the cluster-score interval covers %.3f; docs/statistics.md says it misses these cells (below 0.85)", c.g, c.pop.name, cov)
		}
	}
}
