package stats

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/impactbench/impactbench/internal/racemode"
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
	// Full enumeration by brute force: twice the share of the 2^20
	// patterns whose sum is at least the observed one.
	var obs float64
	for _, v := range d {
		obs += v
	}
	atLeast := 0
	for mask := range uint64(1) << len(d) {
		s := 0.0
		for i, v := range d {
			if mask>>i&1 == 1 {
				s -= v
			} else {
				s += v
			}
		}
		if s >= obs-1e-9 {
			atLeast++
		}
	}
	exactP := 2 * float64(atLeast) / float64(uint64(1)<<len(d))
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
	// By hand: mean 5/6. Sign flip: all 8 patterns, only all-+ has a sum
	// as large as the observed 2.5 → p = 2/8 = 0.25, and 3 scenarios can
	// never reject at 0.05 (smallest p 0.25), so the inverted interval is
	// everything: [−1, 1]. Binomial floor: shrunk rates 5/6 and 1/6 (n = 2)
	// give 2·(5/36)/2 per scenario with B at 0/2, and 5/72 + 1/8 with B at
	// 1/2 → Σ = 5/36·2 + 5/72 + 1/8 = 17/36, se = √(17/36)/3, df = 2. The
	// missing-arm cluster is skipped.
	se := math.Sqrt(17.0/36) / 3
	half := TQuantile(0.975, 2) * se
	pFloor := 2 * distuv.StudentsT{Mu: 0, Sigma: 1, Nu: 2}.Survival(5.0/6/se)
	if !approx(r.Mean, 5.0/6, 1e-12) || r.Lo != -1 || r.Hi != 1 || !approx(r.FloorLo, 5.0/6-half, 1e-12) ||
		!approx(r.PFloor, pFloor, 1e-12) || r.PSignFlip != 0.25 || r.P != 0.25 ||
		r.Clusters != 3 || r.DF != 2 || r.Method != MethodDiffExact {
		t.Errorf("ClusterDiff = %+v", r)
	}
	// Every scenario shows the same difference: never zero-width.
	same := []PairedCluster{{4, 4, 3, 1}, {4, 4, 3, 1}, {4, 4, 3, 1}, {4, 4, 3, 1}}
	if r := ClusterDiff(same, 0.95, 999, 1); !(r.Lo < 0.5 && r.Hi > 0.5) {
		t.Errorf("identical differences gave [%v, %v]", r.Lo, r.Hi)
	}
	// One cluster: an estimate, no test, no interval.
	if r := ClusterDiff(cs[:1], 0.95, 999, 1); r.Mean != 1 || !math.IsNaN(r.Lo) || r.P != 1 {
		t.Errorf("one cluster: %+v", r)
	}
	mustPanic(t, "sum > n", func() { ClusterDiff([]PairedCluster{{1, 1, 2, 0}}, 0.95, 9, 1) })
}

// TestSignFlipInversion checks the inverted test against Hartigan's
// construction by hand: d = 1…6 (64 patterns). The interval is [k-th
// smallest, k-th largest] subset mean with 2·(1 + k)/64 ≥ 0.05, k = 1: the
// smallest subset mean is 1 ({1}), the largest 6 ({6}); p at 0 counts only
// the observed pattern: 2/64.
func TestSignFlipInversion(t *testing.T) {
	d := []float64{1, 2, 3, 4, 5, 6}
	w := []float64{1, 1, 1, 1, 1, 1}
	sf := newSignFlip(d, w, 0, 0)
	if lo, hi := sf.interval(0.05); lo != 1 || hi != 6 {
		t.Errorf("interval [%v, %v], want [1, 6]", lo, hi)
	}
	if p := sf.p(0); p != 2.0/64 {
		t.Errorf("p(0) = %v, want 1/32", p)
	}
	// At 90%: 2·(1 + k)/64 ≥ 0.1 → k = 3. The smallest subset means are
	// 1 ({1}), 1.5 ({1, 2}), then 2 ({2}, {1, 3}, {1, 2, 3}): the third is
	// 2, and by symmetry the third largest is 5.
	if lo, hi := sf.interval(0.1); lo != 2 || hi != 5 {
		t.Errorf("90%% interval [%v, %v], want [2, 5]", lo, hi)
	}
	// The interval's ends are where p crosses α: kept at the end, rejected
	// just outside.
	lo, hi := sf.interval(0.05)
	if sf.p(lo) < 0.05 || sf.p(hi) < 0.05 || sf.p(lo-1e-9) >= 0.05 || sf.p(hi+1e-9) >= 0.05 {
		t.Errorf("p at the ends: %v %v, just outside %v %v", sf.p(lo), sf.p(hi), sf.p(lo-1e-9), sf.p(hi+1e-9))
	}
}

// TestDiffIntervalIsTheTest: over random paired studies (2–40 clusters,
// one or two strata, exact and Monte Carlo), the interval excludes 0
// exactly when P < 0.05, and contains the estimate.
func TestDiffIntervalIsTheTest(t *testing.T) {
	racemode.SkipHeavy(t) // a pure Monte Carlo: .ci/run runs it without -race
	rng := newRand(27)
	agree, excluded := 0, 0
	for trial := range 2000 {
		k := 1 + rng.IntN(2)
		strata := make([][]PairedCluster, k)
		for s := range strata {
			g := 1 + rng.IntN(20)
			shift := rng.Float64()*0.6 - 0.3
			for range g {
				n := 1 + rng.IntN(6)
				pa := rng.Float64()
				pb := clamp01(pa - shift + 0.2*rng.NormFloat64())
				var ka, kb int
				for range n {
					ka += b2i(rng.Float64() < pa)
					kb += b2i(rng.Float64() < pb)
				}
				strata[s] = append(strata[s], PairedCluster{NA: n, NB: n, SumA: float64(ka), SumB: float64(kb)})
			}
		}
		r := StratifiedDiff(strata, 0.95, 499, uint64(trial))
		if r.Clusters < 2 {
			continue
		}
		excl := r.Lo > 0 || r.Hi < 0
		if excl != (r.P < 0.05) || !(r.Lo <= r.Mean && r.Mean <= r.Hi) {
			t.Fatalf("trial %d: %+v: interval excludes 0 = %v, P = %v", trial, r, excl, r.P)
		}
		agree++
		if excl {
			excluded++
		}
	}
	t.Logf("%d studies, %d with an interval excluding 0", agree, excluded)
	if excluded < 100 || excluded > agree-100 {
		t.Errorf("only %d of %d studies excluded 0: the check hardly ran both ways", excluded, agree)
	}
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
	racemode.SkipHeavy(t) // a pure Monte Carlo: .ci/run runs it without -race
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

func TestSelectKth(t *testing.T) {
	rng := newRand(9)
	for n := 1; n < 200; n += 7 {
		a := make([]float64, n)
		for i := range a {
			a[i] = float64(rng.IntN(20)) // many ties
		}
		sorted := slices.Clone(a)
		slices.Sort(sorted)
		for _, k := range []int{0, n / 3, n - 1} {
			b := slices.Clone(a)
			if got := selectKth(b, k); got != sorted[k] {
				t.Fatalf("n=%d k=%d: %v, want %v", n, k, got, sorted[k])
			}
		}
	}
}

// TestSignFlipMonteCarloPatterns pins the Monte Carlo patterns to the
// plain reading of their definition: one word per 64 clusters, the
// clusters whose bit is set summed in index order. The set-bit walk must
// give bit-identical means (results.json's intervals depend on them).
func TestSignFlipMonteCarloPatterns(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	for _, g := range []int{17, 63, 64, 65, 100, 128, 130, 300} {
		d, w := make([]float64, g), make([]float64, g)
		for i := range d {
			d[i] = float64(rng.IntN(9)-4) / float64(1+rng.IntN(6))
			w[i] = 1 / float64(3*(1+rng.IntN(5)))
		}
		const reps, seed = 500, 99
		got := newSignFlip(d, w, reps, seed)
		want := signFlip{always: 1, n: reps + 1}
		r := newRand(seed)
		for range reps {
			var num, den float64
			var word uint64
			for i := range d {
				if i%64 == 0 {
					word = r.Uint64()
				}
				if word&1 == 1 {
					num += w[i] * d[i]
					den += w[i]
				}
				word >>= 1
			}
			if den == 0 {
				want.always++
				continue
			}
			want.means = append(want.means, snapMean(num, den))
		}
		if got.always != want.always || !slices.Equal(got.means, want.means) {
			t.Fatalf("%d clusters: the patterns' means differ from the definition's (always %d vs %d)", g, got.always, want.always)
		}
	}
}

// BenchmarkSignFlipMonteCarlo is one pairwise test of results.json: 120
// paired scenarios (a 17-benchmark study's 360 metrics over 3 base
// scenarios have 6–90 per benchmark; a track can hold more).
func BenchmarkSignFlipMonteCarlo(b *testing.B) {
	d, w := make([]float64, 120), make([]float64, 120)
	for i := range d {
		d[i], w[i] = float64(i%5-2)/3, 1.0/120
	}
	for b.Loop() {
		newSignFlip(d, w, 9999, 1)
	}
}
