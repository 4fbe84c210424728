package stats

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestDesignEffect(t *testing.T) {
	// statistics.md §1: ρ = 0.3, m = 8 → DEFF = 3.1.
	if got := DesignEffect(8, 0.3); !approx(got, 3.1, 1e-12) {
		t.Errorf("DesignEffect(8, 0.3) = %v, want 3.1", got)
	}
}

func TestExpectedHalfWidth(t *testing.T) {
	// By hand: DEFF = 1 + 3·0.3 = 1.9; √(0.25·1.9/40) = 0.108972…;
	// × z (1.959964…) = 0.213582…
	want := 1.959963985 * math.Sqrt(0.25*1.9/40)
	if got := ExpectedHalfWidth(10, 4, 0.5, 0.3, 0.95); !approx(got, want, 1e-8) {
		t.Errorf("ExpectedHalfWidth = %v, want %v", got, want)
	}
	// No spread at all (p = 0): the t formula says 0, but a study that
	// never passes gets [0, U] — half of it is the plan.
	cs := make([]ClusterSum, 10)
	for i := range cs {
		cs[i] = Binary(0, 4)
	}
	_, _, hi := ScoreInterval(cs, 0.95)
	if got := ExpectedHalfWidth(10, 4, 0, 0.3, 0.95); !approx(got, hi/2, 1e-9) || !(got > 0.02) {
		t.Errorf("p = 0: half-width %v, want half of the all-fail interval's %v", got, hi)
	}
	if !math.IsInf(ExpectedHalfWidth(1, 4, 0.5, 0.3, 0.95), 1) {
		t.Error("one scenario has a finite half-width")
	}
	mustPanic(t, "icc > 1", func() { ExpectedHalfWidth(5, 4, 0.5, 1.5, 0.95) })
	mustPanic(t, "m < 1", func() { ExpectedHalfWidth(5, 0, 0.5, 0.1, 0.95) })
}

func TestScenariosNeeded(t *testing.T) {
	for _, tc := range []struct{ h, m, p, icc float64 }{
		{0.1, 4, 0.5, 0.3}, {0.05, 8, 0.7, 0.3}, {0.2, 2, 0.5, 0.6}, {0.1, 4, 0.5, 0}, {0.01, 4, 0.5, 0.3},
	} {
		g := ScenariosNeeded(tc.h, tc.m, tc.p, tc.icc, 0.95)
		if g < 2 || ExpectedHalfWidth(g, tc.m, tc.p, tc.icc, 0.95) > tc.h ||
			(g > 2 && ExpectedHalfWidth(g-1, tc.m, tc.p, tc.icc, 0.95) <= tc.h) {
			t.Errorf("%+v: ScenariosNeeded = %d is not the smallest sufficient number", tc, g)
		}
	}
	// More samples per scenario help less when the ICC is high: with
	// ρ = 0.6, going from 4 to 16 conversations per scenario saves fewer
	// scenarios than with ρ = 0.
	saved := func(icc float64) int {
		return ScenariosNeeded(0.1, 4, 0.5, icc, 0.95) - ScenariosNeeded(0.1, 16, 0.5, icc, 0.95)
	}
	if saved(0.6) >= saved(0) {
		t.Errorf("extra samples saved %d scenarios at ICC 0.6, %d at ICC 0", saved(0.6), saved(0))
	}
	// The README's example: ±10 % at rate 0.5, ICC 0.3, 4 per scenario:
	// 1.96² · 0.25 · 1.9 / (4 · 0.01) = 45.6 (87 with the betting hull the
	// interval was before the cluster-score method).
	if g := ScenariosNeeded(0.1, 4, 0.5, 0.3, 0.95); g != 46 {
		t.Errorf("README example: %d scenarios, want 46", g)
	}
	// p = 0 is not free: an all-fail study's interval [0, U] must shrink
	// to ±10 %, which takes several scenarios.
	if g := ScenariosNeeded(0.1, 4, 0, 0.3, 0.95); g < 4 || g > 12 {
		t.Errorf("p = 0: %d scenarios", g)
	}
	mustPanic(t, "h = 0", func() { ScenariosNeeded(0, 4, 0.5, 0.3, 0.95) })
}

// TestExpectedHalfWidthAgainstSimulation compares the planning formula with
// the mean half-width ClusterRate actually reports on simulated studies of
// that design (beta-binomial, equal sizes). From 10 scenarios up the plan
// must be within 10% of what users will see; below, it may overstate by up
// to 30% (intervals clipped at 0 or 1 are narrower) or understate by 20%.
// (Measured: ×0.94–1.02 at 5, 10 and 30 scenarios.)
func TestExpectedHalfWidthAgainstSimulation(t *testing.T) {
	rng := newRand(99)
	cs := make([]ClusterSum, 30)
	var log strings.Builder
	for _, g := range []int{5, 10, 30} {
		for _, icc := range []float64{0.1, 0.3, 0.6} {
			const p, m = 0.5, 4
			sim := simulatedHalfWidth(rng, cs[:g], p, icc, m)
			plan := ExpectedHalfWidth(g, m, p, icc, 0.95)
			ratio := sim / plan
			fmt.Fprintf(&log, "G=%2d ICC=%.1f plan %.3f simulated %.3f (×%.2f)\n", g, icc, plan, sim, ratio)
			lo, hi := 0.9, 1.1
			if g < 10 {
				lo, hi = 0.7, 1.2
			}
			if ratio < lo || ratio > hi {
				t.Errorf("G=%d ICC=%.1f: simulated half-width %.3f is %.2f× the plan %.3f", g, icc, sim, ratio, plan)
			}
		}
	}
	t.Logf("p = 0.5, 4 conversations per scenario:\n%s", log.String())
}

// The plan leaves out a single metric's betting join (scoreJoinPhi): at a
// rare rate with many conversations per scenario the interval comes out
// wider than planned, by as much as docs/statistics.md says (1.10–1.51×
// at rate 0.1, 16 per scenario, ICC 0.1–0.3, 10–30 scenarios).
func TestExpectedHalfWidthRareRateShortfall(t *testing.T) {
	rng := newRand(99)
	cs := make([]ClusterSum, 30)
	var log strings.Builder
	for _, g := range []int{10, 30} {
		for _, icc := range []float64{0.1, 0.3} {
			const p, m = 0.1, 16
			ratio := simulatedHalfWidth(rng, cs[:g], p, icc, m) / ExpectedHalfWidth(g, m, p, icc, 0.95)
			fmt.Fprintf(&log, "G=%2d ICC=%.1f: ×%.2f\n", g, icc, ratio)
			if ratio < 1.05 || ratio > 1.6 {
				t.Errorf("G=%d ICC=%.1f: the interval is %.2f× the plan; docs/statistics.md says 1.10–1.51×", g, icc, ratio)
			}
		}
	}
	t.Logf("p = 0.1, 16 conversations per scenario, simulated half-width over the plan:\n%s", log.String())
}

// simulatedHalfWidth is ClusterRate's mean 95 % half-width over 400
// studies of len(cs) scenarios × m conversations at rate p and ICC icc.
func simulatedHalfWidth(rng *rand.Rand, cs []ClusterSum, p, icc float64, m int) float64 {
	const reps = 400
	sum := 0.0
	for range reps {
		fillClusters(rng, cs, p, icc, sizeScheme{"", m, m})
		iv := ClusterRate(cs, 0.95)
		sum += (iv.Hi - iv.Lo) / 2
	}
	return sum / reps
}
