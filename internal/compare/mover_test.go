package compare

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/impactbench/impactbench/internal/racemode"
	"github.com/impactbench/impactbench/internal/stats"
)

// TestMOVERCoverage checks compare's interval for a difference of two
// rates (moverDiff over two stats.ClusterRate intervals) by simulation with
// known truth: 3, 5, 10 and 30 base scenarios of 4 conversations, ICC 0,
// 0.3 and 0.6, 1,000 seeded studies per cell. "independent": two runs on
// different scenarios, true rates 0.5 and 0.7. "shared": two runs of the
// same model on the same scenarios (each scenario's pass probability is
// drawn once and used by both), true difference 0 — the positive
// correlation that makes MOVER conservative. Every cell must cover the
// true difference in at least 93% of studies (nominal 95%).
func TestMOVERCoverage(t *testing.T) {
	racemode.SkipHeavy(t)
	const reps, m = 1000, 4
	rng := rand.New(rand.NewPCG(12, 2026))
	var table strings.Builder
	fmt.Fprintf(&table, "%-12s %4s %6s %8s\n", "design", "G", "ICC", "coverage")
	for _, design := range []string{"independent", "shared"} {
		for _, g := range []int{3, 5, 10, 30} {
			for _, rho := range []float64{0, 0.3, 0.6} {
				pa, pb := 0.5, 0.7
				if design == "shared" {
					pb = pa
				}
				covered := 0
				a, b := make([]stats.ClusterSum, g), make([]stats.ClusterSum, g)
				for range reps {
					for s := range g {
						ta := scenarioRate(rng, pa, rho)
						tb := scenarioRate(rng, pb, rho)
						if design == "shared" {
							tb = ta
						}
						a[s], b[s] = binomial(rng, m, ta), binomial(rng, m, tb)
					}
					_, lo, hi := moverDiff(stats.ClusterRate(b, 0.95), stats.ClusterRate(a, 0.95))
					if !(hi > lo) {
						t.Fatalf("zero-width interval [%v, %v]", lo, hi)
					}
					if lo <= pb-pa && pb-pa <= hi {
						covered++
					}
				}
				cov := float64(covered) / reps
				fmt.Fprintf(&table, "%-12s %4d %6.1f %7.1f%%\n", design, g, rho, 100*cov)
				if cov < 0.93 {
					t.Errorf("%s G=%d ICC=%.1f: coverage %.3f < 0.93", design, g, rho, cov)
				}
			}
		}
	}
	t.Logf("MOVER 95%% interval coverage, %d studies per cell:\n%s", reps, table.String())
}

// scenarioRate draws a scenario's pass probability with mean p and
// intra-class correlation rho (beta with α+β = 1/rho − 1); rho 0 is p.
func scenarioRate(rng *rand.Rand, p, rho float64) float64 {
	if rho == 0 {
		return p
	}
	k := 1/rho - 1
	return distuv.Beta{Alpha: p * k, Beta: (1 - p) * k, Src: rng}.Rand()
}

func binomial(rng *rand.Rand, n int, p float64) stats.ClusterSum {
	k := 0
	for range n {
		if rng.Float64() < p {
			k++
		}
	}
	return stats.Binary(k, n)
}
