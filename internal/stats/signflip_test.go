package stats

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestSignFlipP(t *testing.T) {
	twoOf12 := make([]float64, 12)
	twoOf12[0], twoOf12[1] = 1, 1
	tests := []struct {
		name string
		d    []float64
		want float64
	}{
		// Issue 12: 2 of 12 base scenarios treat children differently. Only
		// those two can change sign; 2 of their 4 patterns are as extreme.
		{"2 of 12 scenarios differ", twoOf12, 0.5},
		// 3 scenarios all the same way: 2 of 8 patterns (all +, all −).
		{"3 agreeing", []float64{1, 1, 1}, 0.25},
		// By hand, S = 0.5: the 8 sums are ±1, ±0.5 (twice each), 0 (twice);
		// |S| ≥ 0.5 in 6.
		{"mixed", []float64{0.5, 0.25, -0.25}, 0.75},
		{"no difference", []float64{0, 0, 0}, 1},
		{"empty", nil, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, exact := SignFlipP(tt.d, 999, 1)
			if !approx(p, tt.want, 1e-12) || !exact {
				t.Errorf("p = %v (exact %v), want %v exact", p, exact, tt.want)
			}
		})
	}
	// Above MaxExactSignFlip the Monte Carlo p must agree with full
	// enumeration (3 binomial SEs of 9999 draws).
	rng := rand.New(rand.NewPCG(3, 4))
	d := make([]float64, 20)
	for i := range d {
		d[i] = rng.NormFloat64() + 0.3
	}
	var obs, scale float64
	for _, v := range d {
		obs += v
		scale += math.Abs(v)
	}
	exactP := signFlipExact(d, obs, math.Abs(obs)-1e-9*scale)
	p, exact := SignFlipP(d, DefaultSignFlipReps, 7)
	if exact || math.Abs(p-exactP) > 3*math.Sqrt(exactP*(1-exactP)/DefaultSignFlipReps)+1e-4 {
		t.Errorf("Monte Carlo p = %v (exact flag %v), enumeration %v", p, exact, exactP)
	}
	if p2, _ := SignFlipP(d, DefaultSignFlipReps, 7); p2 != p {
		t.Error("same seed, different p")
	}
	mustPanic(t, "NaN", func() { SignFlipP([]float64{math.NaN()}, 9, 1) })
}

func TestClusterDiff(t *testing.T) {
	// 3 scenarios, A passes 2/2 everywhere, B 0/2, 1/2, 0/2: d = 1, 0.5, 1.
	cs := []PairedCluster{{2, 2, 2, 0}, {2, 2, 2, 1}, {2, 2, 2, 0}, {0, 2, 0, 1}}
	r := ClusterDiff(cs, 0.95, 999, 1)
	// By hand: mean 5/6, sd = √((1/36+4/36+1/36)/2) = √(1/12), se = 1/6.
	// The within-scenario floor is larger here: shrunk rates 5/6 and 1/6
	// (n = 2) give 2·(5/36)/2 per scenario with B at 0/2, and
	// 5/72 + 1/8 with B at 1/2 → Σ = 5/36·2 + 5/72 + 1/8 = 17/36,
	// se = √(17/36)/3. Sign flip: all 8 patterns, |S| = 2.5 only for all-+
	// and all-− → 0.25. The missing-arm cluster is skipped.
	half := TQuantile(0.975, 2) * math.Max(1.0/6, math.Sqrt(17.0/36)/3)
	if !approx(r.Mean, 5.0/6, 1e-12) || !approx(r.Lo, 5.0/6-half, 1e-12) || r.Hi != 1 ||
		r.P != 0.25 || r.Clusters != 3 || r.DF != 2 || r.Method != MethodSignFlipExact {
		t.Errorf("ClusterDiff = %+v", r)
	}
	// Every scenario shows the same difference: never zero-width.
	same := []PairedCluster{{4, 4, 3, 1}, {4, 4, 3, 1}, {4, 4, 3, 1}, {4, 4, 3, 1}}
	if r := ClusterDiff(same, 0.95, 999, 1); !(r.Lo < 0.5 && r.Hi > 0.5) {
		t.Errorf("identical differences gave [%v, %v]", r.Lo, r.Hi)
	}
	// One cluster: an estimate, no interval.
	if r := ClusterDiff(cs[:1], 0.95, 999, 1); r.Mean != 1 || !math.IsNaN(r.Lo) || r.P != 1 {
		t.Errorf("one cluster: %+v", r)
	}
	mustPanic(t, "sum > n", func() { ClusterDiff([]PairedCluster{{1, 1, 2, 0}}, 0.95, 9, 1) })
}

func TestStratifiedDiff(t *testing.T) {
	// Two strata with mean differences 0.5 and 0.1 → 0.3, each weighted ½.
	pos := []PairedCluster{{2, 2, 2, 1}, {2, 2, 1, 0}, {2, 2, 2, 1}}
	neg := []PairedCluster{{10, 10, 5, 4}, {10, 10, 6, 5}}
	r := StratifiedDiff([][]PairedCluster{pos, neg}, 0.95, 999, 1)
	if !approx(r.Mean, 0.3, 1e-12) || r.Clusters != 5 || !(r.Lo < 0.3 && r.Hi > 0.3) {
		t.Errorf("StratifiedDiff = %+v", r)
	}
	// One stratum is ClusterDiff.
	if a, b := StratifiedDiff([][]PairedCluster{pos}, 0.95, 999, 1), ClusterDiff(pos, 0.95, 999, 1); a != b {
		t.Errorf("one stratum %+v != ClusterDiff %+v", a, b)
	}
}

// demographicWorld simulates one study of G base scenarios, each with m
// matched conversations per demographic value. Scenario difficulty is
// beta-binomial (rate p, ICC rho). effect decides each scenario's two arm
// rates from its base rate π: null worlds make the effect symmetric around
// 0, so the sign-flip null holds exactly.
type demographicWorld struct {
	name   string
	p, rho float64
	m      int
	// arms returns the two arms' rates for a scenario of base rate pi.
	arms  func(rng *rand.Rand, pi float64) (a, b float64)
	truth float64 // E[a − b]
}

func (w demographicWorld) draw(rng *rand.Rand, cs []PairedCluster) (b, c int) {
	for i := range cs {
		pa, pb := w.arms(rng, clusterRateDraw(rng, w.p, w.rho))
		ka, kb := 0, 0
		for range w.m {
			xa, xb := rng.Float64() < pa, rng.Float64() < pb
			ka += b2i(xa)
			kb += b2i(xb)
			switch { // conversation-level McNemar counts, for contrast
			case xa && !xb:
				b++
			case !xa && xb:
				c++
			}
		}
		cs[i] = PairedCluster{NA: w.m, NB: w.m, SumA: float64(ka), SumB: float64(kb)}
	}
	return b, c
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestClusterDiffMonteCarlo is issue 12's demographic acceptance test: under
// a clustered null (12 base scenarios, ICC 0.6, each scenario favouring one
// value or the other at random) the sign-flip test's false-positive rate
// must be ≤ 5% — McNemar over conversation pairs is logged for contrast —
// and its power for a large true effect is reported. The t interval for the
// mean difference must cover the truth in ≥ 93% of studies at 3–30
// scenarios.
func TestClusterDiffMonteCarlo(t *testing.T) {
	const reps = 1000
	null := demographicWorld{name: "null: random ±effect", p: 0.5, rho: 0.6, m: 4, truth: 0,
		arms: func(rng *rand.Rand, pi float64) (float64, float64) {
			if rng.IntN(2) == 0 {
				return pi, 0.3 * pi
			}
			return 0.3 * pi, pi
		}}
	effect := demographicWorld{name: "B at 30% of A's rate", p: 0.5, rho: 0.6, m: 4, truth: 0.7 * 0.5,
		arms: func(_ *rand.Rand, pi float64) (float64, float64) { return pi, 0.3 * pi }}
	// A smaller effect, near the edge: B at 80% of A from a low rate.
	small := demographicWorld{name: "B at 80% of A, p=0.2", p: 0.2, rho: 0.3, m: 4, truth: 0.2 * 0.2,
		arms: func(_ *rand.Rand, pi float64) (float64, float64) { return pi, 0.8 * pi }}

	rng := newRand(20260713)
	cs := make([]PairedCluster, 30)
	var log strings.Builder
	for _, w := range []demographicWorld{null, effect, small} {
		for _, g := range []int{3, 5, 12, 30} {
			signReps := 199 // the p-value only matters at 12 scenarios below
			if g == 12 {
				signReps = DefaultSignFlipReps
			}
			rejected, mcnemar, covered := 0, 0, 0
			for range reps {
				b, c := w.draw(rng, cs[:g])
				r := ClusterDiff(cs[:g], 0.95, signReps, rng.Uint64())
				if r.P < 0.05 {
					rejected++
				}
				if McNemarExact(b, c) < 0.05 {
					mcnemar++
				}
				if r.Lo <= w.truth && w.truth <= r.Hi {
					covered++
				}
			}
			rate, cov := float64(rejected)/reps, float64(covered)/reps
			fmt.Fprintf(&log, "%-24s G=%2d  sign-flip rejects %5.1f%%  McNemar rejects %5.1f%%  CI coverage %5.1f%%\n",
				w.name, g, 100*rate, 100*float64(mcnemar)/reps, 100*cov)
			if cov < 0.93 {
				t.Errorf("%s G=%d: difference CI coverage %.3f < 0.93", w.name, g, cov)
			}
			if w.truth == 0 && g == 12 && rate > 0.05 {
				t.Errorf("%s G=12: false-positive rate %.3f > 0.05", w.name, rate)
			}
			if w.name == effect.name && g == 12 && rate < 0.8 {
				t.Errorf("%s G=12: power %.3f, expected a large effect to be found (≥ 0.8)", w.name, rate)
			}
		}
	}
	t.Logf("%d studies per row:\n%s", reps, log.String())
}
