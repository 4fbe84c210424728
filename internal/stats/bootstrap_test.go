package stats

import (
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// perfectlyCorrelated returns nPass clusters that all pass and nFail that all
// fail, each of the given size: the extreme case of within-scenario
// correlation.
func perfectlyCorrelated(nPass, nFail, size int) []Cluster {
	var cs []Cluster
	for range nPass {
		cs = append(cs, Cluster{Passed: size, Total: size})
	}
	for range nFail {
		cs = append(cs, Cluster{Passed: 0, Total: size})
	}
	return cs
}

func TestClusterBootstrapDeterministic(t *testing.T) {
	cs := []Cluster{{3, 5}, {5, 5}, {0, 4}, {2, 6}, {4, 4}, {1, 5}}
	a := ClusterBootstrap(cs, 2000, 0.95, 42)
	b := ClusterBootstrap(cs, 2000, 0.95, 42)
	if diff := cmp.Diff(a, b); diff != "" {
		t.Errorf("same seed gave different intervals (-first +second):\n%s", diff)
	}
	// A different seed must change the draws (guards against the seed being
	// ignored). Limits of a discrete statistic can coincide by chance, so
	// compare the resampled indices themselves.
	draws := func(seed uint64) [][]int {
		var out [][]int
		BootstrapStat(len(cs), 5, 0.95, seed, func(idx []int) float64 {
			out = append(out, append([]int(nil), idx...))
			return 0
		})
		return out
	}
	if cmp.Equal(draws(42), draws(43)) {
		t.Errorf("seeds 42 and 43 drew identical resamples; is the seed used?")
	}
	if !cmp.Equal(draws(42), draws(42)) {
		t.Errorf("seed 42 drew different resamples on two calls")
	}
	want := Interval{Estimate: 15.0 / 29, N: 29, Clusters: 6, Reps: 2000, Seed: 42, Method: MethodClusterBootstrap}
	if diff := cmp.Diff(want, a, cmpopts.IgnoreFields(Interval{}, "Lo", "Hi")); diff != "" {
		t.Errorf("metadata mismatch (-want +got):\n%s", diff)
	}
	if !(a.Lo <= a.Estimate && a.Estimate <= a.Hi) {
		t.Errorf("interval [%v, %v] does not contain estimate %v", a.Lo, a.Hi, a.Estimate)
	}
}

func TestClusterBootstrapEdgeCases(t *testing.T) {
	tests := []struct {
		name                    string
		clusters                []Cluster
		wantEst, wantLo, wantHi float64
		wantN, wantClusters     int
	}{
		{"all pass → [1,1]", perfectlyCorrelated(8, 0, 3), 1, 1, 1, 24, 8},
		{"all fail → [0,0]", perfectlyCorrelated(0, 8, 3), 0, 0, 0, 24, 8},
		{"no clusters → [0,1], NaN estimate", nil, math.NaN(), 0, 1, 0, 0},
		{"only empty clusters dropped", []Cluster{{0, 0}, {0, 0}}, math.NaN(), 0, 1, 0, 0},
		{"empty clusters do not count", []Cluster{{2, 2}, {0, 0}, {3, 3}}, 1, 1, 1, 5, 2},
		{"single cluster collapses to the point", []Cluster{{3, 4}}, 0.75, 0.75, 0.75, 4, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			iv := ClusterBootstrap(tt.clusters, 500, 0.95, 1)
			if !approx(iv.Estimate, tt.wantEst, 0) || iv.Lo != tt.wantLo || iv.Hi != tt.wantHi ||
				iv.N != tt.wantN || iv.Clusters != tt.wantClusters {
				t.Errorf("got %+v, want estimate %v in [%v, %v], N=%d, Clusters=%d",
					iv, tt.wantEst, tt.wantLo, tt.wantHi, tt.wantN, tt.wantClusters)
			}
		})
	}
}

func TestClusterBootstrapMatchesBinomialTheory(t *testing.T) {
	// 10 all-pass and 10 all-fail clusters of 10. A resample of 20 clusters
	// contains X ~ Binomial(20, 1/2) passing clusters, so the replicate pass
	// rate is X/20. Binomial(20, 1/2): P(X ≤ 5) = 0.0207 < 0.025 < P(X ≤ 6) =
	// 0.0577, hence the 2.5% and 97.5% quantiles are 6/20 and 14/20. With
	// 20000 replicates the empirical quantiles land there with overwhelming
	// probability (SD of the empirical CDF at 5 is ≈ 0.001).
	iv := ClusterBootstrap(perfectlyCorrelated(10, 10, 10), 20000, 0.95, 7)
	if !approx(iv.Lo, 0.3, 1e-12) || !approx(iv.Hi, 0.7, 1e-12) {
		t.Errorf("got [%v, %v], want [0.3, 0.7]", iv.Lo, iv.Hi)
	}
}

func TestClusterBootstrapWiderThanWilsonWhenCorrelated(t *testing.T) {
	// Same 100/200 passes, Wilson treats them as 200 independent trials;
	// the bootstrap sees only 20 independent scenarios.
	cs := perfectlyCorrelated(10, 10, 10)
	iv := ClusterBootstrap(cs, 4000, 0.95, 3)
	wlo, whi := Wilson(100, 200, 0.95)
	if bw, ww := iv.Hi-iv.Lo, whi-wlo; bw < 2*ww {
		t.Errorf("cluster bootstrap width %.3f not > 2× Wilson width %.3f on perfectly correlated clusters", bw, ww)
	}

	// Control: with singleton clusters (independent trials) the two methods
	// should agree closely; otherwise the comparison above proves nothing.
	single := perfectlyCorrelated(100, 100, 1)
	iv = ClusterBootstrap(single, 4000, 0.95, 3)
	if ratio := (iv.Hi - iv.Lo) / (whi - wlo); ratio < 0.85 || ratio > 1.15 {
		t.Errorf("singleton clusters: bootstrap/Wilson width ratio %.3f, want ≈ 1", ratio)
	}
}

func TestClusterBootstrapCoverage(t *testing.T) {
	// Simulation: 30 scenarios of 10 perfectly correlated conversations, each
	// scenario passing with probability 0.7. The cluster bootstrap should
	// cover 0.7 close to 95% of the time; Wilson, which believes it has 300
	// independent trials, should cover far less (theory: ≈ 45%).
	const sims, scenarios, size, p = 300, 30, 10, 0.7
	rng := newRand(2024)
	var bootHits, wilsonHits int
	for s := range sims {
		cs := make([]Cluster, scenarios)
		passed := 0
		for i := range cs {
			cs[i].Total = size
			if rng.Float64() < p {
				cs[i].Passed = size
				passed += size
			}
		}
		iv := ClusterBootstrap(cs, 400, 0.95, uint64(s))
		if iv.Lo <= p && p <= iv.Hi {
			bootHits++
		}
		if lo, hi := Wilson(passed, scenarios*size, 0.95); lo <= p && p <= hi {
			wilsonHits++
		}
	}
	boot, wil := float64(bootHits)/sims, float64(wilsonHits)/sims
	if boot < 0.85 {
		t.Errorf("cluster bootstrap coverage %.2f, want ≥ 0.85", boot)
	}
	if wil > 0.70 {
		t.Errorf("Wilson coverage %.2f on correlated data, want well below nominal (≤ 0.70)", wil)
	}
	t.Logf("coverage: cluster bootstrap %.2f, Wilson %.2f", boot, wil)
}

func TestClusterBootstrapPanics(t *testing.T) {
	mustPanic(t, "Passed > Total", func() { ClusterBootstrap([]Cluster{{3, 2}}, 10, 0.95, 1) })
	mustPanic(t, "negative", func() { ClusterBootstrap([]Cluster{{-1, 2}}, 10, 0.95, 1) })
	mustPanic(t, "reps=0", func() { ClusterBootstrap([]Cluster{{1, 2}}, 0, 0.95, 1) })
	mustPanic(t, "reps=0 without data", func() { ClusterBootstrap(nil, 0, 0.95, 1) })
	mustPanic(t, "conf=1", func() { ClusterBootstrap([]Cluster{{1, 2}}, 10, 1, 1) })
}

func TestBootstrapStat(t *testing.T) {
	data := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	mean := func(idx []int) float64 {
		s := 0.0
		for _, i := range idx {
			s += data[i]
		}
		return s / float64(len(idx))
	}
	lo1, hi1 := BootstrapStat(len(data), 3000, 0.9, 99, mean)
	lo2, hi2 := BootstrapStat(len(data), 3000, 0.9, 99, mean)
	if lo1 != lo2 || hi1 != hi2 {
		t.Errorf("not deterministic: [%v,%v] vs [%v,%v]", lo1, hi1, lo2, hi2)
	}
	// The bootstrap SD of a mean of 10 values with population SD 2.87 is
	// ≈ 0.91, so a 90% interval should be roughly 5.5 ± 1.5.
	if !(lo1 > 3.5 && lo1 < 5 && hi1 > 6 && hi1 < 7.5) {
		t.Errorf("90%% interval for mean of 1..10 = [%v, %v], want ≈ [4.0, 7.0]", lo1, hi1)
	}

	// NaN replicates are discarded; all NaN → NaN limits; n = 0 → NaN.
	calls := 0
	lo, hi := BootstrapStat(3, 100, 0.95, 1, func([]int) float64 {
		calls++
		if calls%2 == 0 {
			return math.NaN()
		}
		return 0.5
	})
	if lo != 0.5 || hi != 0.5 {
		t.Errorf("with half NaN replicates got [%v, %v], want [0.5, 0.5]", lo, hi)
	}
	lo, hi = BootstrapStat(3, 10, 0.95, 1, func([]int) float64 { return math.NaN() })
	if !math.IsNaN(lo) || !math.IsNaN(hi) {
		t.Errorf("all-NaN replicates gave [%v, %v], want NaN", lo, hi)
	}
	lo, hi = BootstrapStat(0, 10, 0.95, 1, func([]int) float64 { return 1 })
	if !math.IsNaN(lo) || !math.IsNaN(hi) {
		t.Errorf("n=0 gave [%v, %v], want NaN", lo, hi)
	}
}

func TestQuantileSorted(t *testing.T) {
	// Hyndman & Fan (1996) type 7, as numpy.quantile default "linear":
	// numpy.quantile([1, 2, 3, 4], [0, 0.25, 0.5, 0.9, 1]) =
	// [1, 1.75, 2.5, 3.7, 4] (h = 3p; interpolate between order statistics).
	s := []float64{1, 2, 3, 4}
	for _, tt := range []struct{ p, want float64 }{{0, 1}, {0.25, 1.75}, {0.5, 2.5}, {0.9, 3.7}, {1, 4}} {
		if got := quantileSorted(s, tt.p); !approx(got, tt.want, 1e-12) {
			t.Errorf("quantileSorted(%v, %v) = %v, want %v", s, tt.p, got, tt.want)
		}
	}
}

func TestPairedBootstrap(t *testing.T) {
	x := []float64{1, 2, 3, 4, 5, 6, 7, 8}
	y := []float64{2, 1, 4, 3, 6, 5, 8, 7}
	iv := PairedBootstrap(x, y, KendallTauB, 2000, 0.95, 5)
	if again := PairedBootstrap(x, y, KendallTauB, 2000, 0.95, 5); again != iv {
		t.Errorf("not deterministic: %+v vs %+v", iv, again)
	}
	// Hand count: of the 28 pairs only the 4 adjacent swaps are discordant,
	// so τ = (24 − 4)/28 = 5/7.
	if !approx(iv.Estimate, 5.0/7, 1e-12) {
		t.Errorf("estimate %v, want 5/7", iv.Estimate)
	}
	if !(iv.Lo <= iv.Estimate && iv.Estimate <= iv.Hi && iv.Hi <= 1 && iv.Lo >= -1) {
		t.Errorf("interval %+v does not bracket the estimate inside [-1, 1]", iv)
	}
	if iv.N != 8 || iv.Clusters != 8 || iv.Method != MethodPairedBootstrap {
		t.Errorf("metadata %+v", iv)
	}

	// A perfectly monotone relation has ρ = 1 in every resample that is
	// defined (resamples of a single repeated item give NaN and are dropped).
	mono := PairedBootstrap([]float64{1, 2, 3}, []float64{10, 20, 30}, Spearman, 500, 0.95, 1)
	if mono.Lo != 1 || mono.Hi != 1 || mono.Estimate != 1 {
		t.Errorf("monotone data gave %+v, want [1, 1]", mono)
	}
	mustPanic(t, "length mismatch", func() { PairedBootstrap(x, y[:3], Spearman, 10, 0.95, 1) })
}

// ResamplingDefaults fills zeros with the defaults and refuses what no
// interval can use (aggregate's and compare's options go through it).
func TestResamplingDefaults(t *testing.T) {
	for _, c := range []struct {
		reps     int
		conf     float64
		wantReps int
		wantConf float64
		bad      string
	}{
		{0, 0, 2000, 0.95, ""},
		{500, 0.9, 500, 0.9, ""},
		{-1, 0.95, 0, 0, "bootstrap replicates must be positive, got -1"},
		{100, 1, 0, 0, "confidence level must be between 0 and 1 (e.g. 0.95), got 1"},
		{100, -0.5, 0, 0, "got -0.5"},
	} {
		reps, conf := c.reps, c.conf
		err := ResamplingDefaults(&reps, &conf, 2000, 0.95)
		switch {
		case c.bad != "" && (err == nil || !strings.Contains(err.Error(), c.bad)):
			t.Errorf("reps %d, conf %v: %v, want an error with %q", c.reps, c.conf, err, c.bad)
		case c.bad == "" && (err != nil || reps != c.wantReps || conf != c.wantConf):
			t.Errorf("reps %d, conf %v: %d, %v, %v; want %d, %v", c.reps, c.conf, reps, conf, err, c.wantReps, c.wantConf)
		}
	}
}
