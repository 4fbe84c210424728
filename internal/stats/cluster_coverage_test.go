package stats

import (
	"fmt"
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
