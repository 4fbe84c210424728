package stats

import (
	"math"
	"strings"
	"testing"
)

func TestTQuantile(t *testing.T) {
	// Student's t table, two-sided 95% (three decimals, as printed in
	// standard tables).
	for _, tc := range []struct{ df, want float64 }{
		{1, 12.706}, {2, 4.303}, {4, 2.776}, {9, 2.262}, {29, 2.045}, {120, 1.980},
	} {
		if got := TQuantile(0.975, tc.df); !approx(got, tc.want, 5e-4) {
			t.Errorf("TQuantile(0.975, %v) = %.15g, want %.15g", tc.df, got, tc.want)
		}
	}
	// The cache must agree with the direct computation (df 256 is its last entry).
	if a, b := TQuantile(0.975, 256), TQuantile(0.975, 256.5); !(a > b) {
		t.Errorf("t quantiles not decreasing in df: %v, %v", a, b)
	}
	if !math.IsNaN(TQuantile(0.975, 0)) {
		t.Error("TQuantile with 0 df is defined")
	}
	// F(1, ν) is t(ν)²: an independent check of the cached F quantile.
	tq := TQuantile(0.55, 6)
	if got := fQuantile(1-ICCUpperLevel, 1, 6); !approx(got, tq*tq, 1e-9) {
		t.Errorf("F(1,6) 0.1-quantile = %v, want t(6) 0.55-quantile² = %v", got, tq*tq)
	}
}

func TestICC(t *testing.T) {
	tests := []struct {
		name string
		cs   []ClusterSum
		want float64
	}{
		// By hand: p̂ = 0.5, SSB = 9/4 + 1/4 − 16/8 = 0.5 (MSB 0.5),
		// SSW = 0.75 + 0.75 = 1.5 over 6 df (MSW 0.25), m₀ = 4:
		// (0.5 − 0.25)/(0.5 + 3·0.25) = 0.2.
		{"two clusters", []ClusterSum{Binary(3, 4), Binary(1, 4)}, 0.2},
		// No spread within clusters: perfectly clustered.
		{"all-or-nothing clusters", []ClusterSum{Binary(4, 4), Binary(0, 4)}, 1},
		// Identical clusters: MSB = 0 → negative estimate, bounded to 0.
		{"identical clusters", []ClusterSum{Binary(6, 8), Binary(6, 8)}, 0},
		// Nothing varies at all, or one cluster: cannot be estimated.
		{"constant", []ClusterSum{Binary(4, 4), Binary(4, 4)}, math.NaN()},
		{"one cluster", []ClusterSum{Binary(2, 4)}, math.NaN()},
		{"one observation per cluster", []ClusterSum{Binary(1, 1), Binary(0, 1)}, math.NaN()},
		// Unequal sizes, by hand: N = 8, S = 4, SSB = 4/2 + 0 + 4/4 − 2 = 1
		// (MSB 0.5), SSW = 0 + 0 + (2 − 1) = 1 over 5 df (MSW 0.2),
		// m₀ = (8 − (4+4+16)/8)/2 = 2.5: (0.5 − 0.2)/(0.5 + 1.5·0.2) = 0.375.
		{"unequal sizes", []ClusterSum{Binary(2, 2), Binary(0, 2), Binary(2, 4)}, 0.375},
		{"empty", nil, math.NaN()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ICC(tt.cs); !approx(got, tt.want, 1e-12) {
				t.Errorf("ICC = %.17g, want %v", got, tt.want)
			}
		})
	}
}

func TestClusterRate(t *testing.T) {
	t.Run("issue 12: two identical clusters are not zero-width", func(t *testing.T) {
		// 2 clusters of 8 at 75% (12/16 in total): the bootstrap gave
		// [75, 75]. The t interval collapses (no spread between clusters);
		// the ICC bound is 0 (F = 0), so the Wilson part on all 16 gives
		// 50.5–89.8; two scenarios cannot rule out a population whose other
		// scenarios look nothing like these: the betting part spans nearly
		// everything, and the cluster-score interval takes a t quantile
		// with one degree of freedom (12.7 instead of 1.96) on Wilson's
		// 16 conversations: 0.38 effective conversations, whose limits are
		// the exact Poisson ones — about [0, 1].
		iv := ClusterRate([]ClusterSum{Binary(6, 8), Binary(6, 8)}, 0.95)
		if !approx(iv.WilsonLo, 0.5050, 1e-4) || !approx(iv.WilsonHi, 0.8982, 1e-4) || iv.TLo != 0.75 || iv.THi != 0.75 {
			t.Errorf("interval %+v, want Wilson 16 [0.5050, 0.8982] and a t interval [0.75, 0.75]", iv)
		}
		z, q := ZQuantile(0.975), TQuantile(0.975, 1)
		neff := 16 * (z / q) * (z / q)
		lo, hi := WilsonReal(0.75, neff, 0.95)
		lo, hi = poissonLimits(0.75, neff, 0.95, lo, hi)
		if iv.BettingLo > 0.05 || iv.BettingHi < 0.95 || iv.Nu != 1 || iv.Phi != 1 || !approx(iv.Lo, lo, 1e-12) || !approx(iv.Hi, hi, 1e-12) || iv.Lo > 0.2 || iv.Hi < 0.95 {
			t.Errorf("interval %+v, want betting near [0, 1] and Poisson limits on 16·(z/t₁)² [%v, %v]", iv, lo, hi)
		}
		if !strings.Contains(iv.Warning, "only 2 base scenario(s)") || iv.Clusters != 2 || iv.N != 16 || iv.DF != 1 {
			t.Errorf("warning/counts: %+v", iv)
		}
	})
	t.Run("3 agreeing clusters: the ICC bound sets the degrees of freedom", func(t *testing.T) {
		// 4/4, 4/4, 3/4: the ICC estimate is 0 (MSB = MSW = 1/12), but with
		// F = 1 its 90% upper bound is (1/F_q − 1)/(1/F_q + 3) with F_q
		// the 0.1-quantile of F(2, 9); DEFF = 1 + 3·bound.
		cs := []ClusterSum{Binary(4, 4), Binary(4, 4), Binary(3, 4)}
		iv := ClusterRate(cs, 0.95)
		fq := fQuantile(0.1, 2, 9)
		bound := (1/fq - 1) / (1/fq + 3)
		deff := 1 + 3*bound
		if !approx(iv.ICC, 0, 1e-12) || !approx(iv.ICCUpper, bound, 1e-12) || !approx(iv.DesignEffect, deff, 1e-12) {
			t.Errorf("ICC %v / %v / DEFF %v, want 0 / %v / %v", iv.ICC, iv.ICCUpper, iv.DesignEffect, bound, deff)
		}
		// t part by hand: residuals 4−11/3, 4−11/3, 3−11/3 → Σe² = 2/3;
		// V = 3/2 · (2/3) / 144; half = t₂ · √V.
		half := TQuantile(0.975, 2) * math.Sqrt(1.5*(2.0/3)/144)
		if !approx(iv.THi, 1, 1e-12) || !approx(iv.TLo, 11.0/12-half, 1e-12) {
			t.Errorf("t interval [%v, %v], want [%v, 1]", iv.TLo, iv.THi, 11.0/12-half)
		}
		// Cluster-score by hand: φ̂ = 3/2 · (2/3) / (12 · 11/12 · 1/12) =
		// 12/11 > 1, so the logit form; ν = φ_U²·2/(φ_U − 1)² with φ_U the
		// larger of φ̂ and DEFF.
		p, phi := 11.0/12, 12.0/11
		phiU := max(phi, deff)
		nu := phiU * phiU * 2 / ((phiU - 1) * (phiU - 1))
		h := tQuantileCached(0.975, nu) * math.Sqrt(phi*p*(1-p)/12) / (p * (1 - p))
		l := math.Log(p / (1 - p))
		lo, hi := 1/(1+math.Exp(h-l)), 1/(1+math.Exp(-l-h))
		if !approx(iv.Phi, phi, 1e-12) || !approx(iv.Nu, nu, 1e-9) || !approx(iv.Lo, lo, 1e-12) || !approx(iv.Hi, hi, 1e-12) || iv.Lo > 0.6 {
			t.Errorf("interval [%v, %v] φ %v ν %v, want [%v, %v] φ %v ν %v reaching below 0.6", iv.Lo, iv.Hi, iv.Phi, iv.Nu, lo, hi, phi, nu)
		}
	})
	t.Run("all pass over many clusters: never zero-width, no warning", func(t *testing.T) {
		cs := make([]ClusterSum, 12)
		for i := range cs {
			cs[i] = Binary(4, 4)
		}
		iv := ClusterRate(cs, 0.95)
		// Nothing varies: the ICC is unknown and its bound taken as 1, so
		// the Wilson part is Wilson on 12 scenarios. The cluster-score
		// interval assumes ICC 0.1 (φ = 1.3) and is Wilson on 48/1.3
		// conversations at a t quantile. The betting part reaches lower:
		// any interval valid for every mix of scenario rates must reach
		// down to 0.025^(1/12) = 0.736 for 12 draws that all came out 1 (a
		// two-point population with that share of 1s produces such a
		// sample 2.5% of the time).
		lo, _ := Wilson(12, 12, 0.95)
		if iv.Hi != 1 || !approx(iv.WilsonLo, lo, 1e-12) || iv.Warning != "" || !math.IsNaN(iv.ICC) || iv.ICCUpper != 1 {
			t.Errorf("interval %+v, want Wilson [%v, 1] and no warning", iv, lo)
		}
		z, q := ZQuantile(0.975), TQuantile(0.975, math.Floor(1.3*1.3*11/0.09))
		slo, _ := WilsonReal(1, 48/1.3*(z/q)*(z/q), 0.95)
		if !approx(iv.Phi, 1.3, 1e-12) || !approx(iv.Lo, slo, 1e-12) || !(iv.Lo < 1) {
			t.Errorf("interval %+v, want [%v, 1]", iv, slo)
		}
		if floor := math.Pow(0.025, 1.0/12); iv.BettingLo > floor {
			t.Errorf("betting part %v, want it reaching below %v", iv.BettingLo, floor)
		}
	})
	t.Run("fractional values (panel shares)", func(t *testing.T) {
		// Two rows of 0.5 and two of 1 in each of 3 clusters: same means,
		// no spread between clusters.
		c := ClusterSum{N: 4, Sum: 3, SumSq: 2*0.25 + 2}
		iv := ClusterRate([]ClusterSum{c, c, c}, 0.95)
		if iv.Estimate != 0.75 || !(iv.Hi > iv.Lo) || iv.Lo > 0.75 || iv.Hi < 0.75 {
			t.Errorf("interval %+v", iv)
		}
	})
	t.Run("no data", func(t *testing.T) {
		iv := ClusterRate([]ClusterSum{{}, {}}, 0.95)
		if !math.IsNaN(iv.Estimate) || iv.Lo != 0 || iv.Hi != 1 || iv.Clusters != 0 {
			t.Errorf("interval %+v, want NaN in [0, 1]", iv)
		}
	})
	mustPanic(t, "passes > total", func() { ClusterRate([]ClusterSum{Binary(3, 2)}, 0.95) })
	mustPanic(t, "sumsq > sum", func() { ClusterRate([]ClusterSum{{N: 2, Sum: 1, SumSq: 2}}, 0.95) })
	mustPanic(t, "conf", func() { ClusterRate(nil, 1) })
}

func TestClusterWarning(t *testing.T) {
	if ClusterWarning(FewClusters) != "" || ClusterWarning(50) != "" || ClusterWarning(0) != "" {
		t.Error("warning at or above FewClusters")
	}
	if w := ClusterWarning(5); !strings.Contains(w, "only 5 base scenarios") {
		t.Errorf("warning for 5: %q", w)
	}
	if w := ClusterWarning(1); !strings.Contains(w, "too few") {
		t.Errorf("warning for 1: %q", w)
	}
}

func TestWilsonReal(t *testing.T) {
	// Whole numbers must reproduce Wilson.
	for _, kn := range [][2]int{{10, 12}, {0, 10}, {10, 10}, {81, 263}} {
		lo, hi := Wilson(kn[0], kn[1], 0.95)
		rl, rh := WilsonReal(float64(kn[0])/float64(kn[1]), float64(kn[1]), 0.95)
		if !approx(lo, rl, 1e-12) || !approx(hi, rh, 1e-12) {
			t.Errorf("WilsonReal(%d/%d) = [%v, %v], Wilson [%v, %v]", kn[0], kn[1], rl, rh, lo, hi)
		}
	}
	// Fewer effective observations: wider.
	lo1, hi1 := WilsonReal(0.75, 16, 0.95)
	lo2, hi2 := WilsonReal(0.75, 5.3, 0.95)
	if !(lo2 < lo1 && hi2 > hi1) {
		t.Errorf("n=5.3 [%v,%v] not wider than n=16 [%v,%v]", lo2, hi2, lo1, hi1)
	}
	if lo, hi := WilsonReal(0.5, 0, 0.95); lo != 0 || hi != 1 {
		t.Errorf("n=0: [%v, %v]", lo, hi)
	}
	mustPanic(t, "p > 1", func() { WilsonReal(1.5, 3, 0.95) })
}
