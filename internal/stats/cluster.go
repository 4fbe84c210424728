package stats

import (
	"fmt"
	"math"
	"sync"
	"sync/atomic"

	"gonum.org/v1/gonum/stat/distuv"
)

// MethodClusterBetting names ClusterRate's interval before the cluster-score
// method (files written then): the hull of a betting interval on the
// clusters' rates (BettingCI), a t interval on cluster means and a Wilson
// interval on the effective sample size.
const MethodClusterBetting = "cluster-betting+t+wilson-eff"

// MethodClusterTWilson names ClusterRate's interval before the betting part
// (files written before it): the hull of the t and the Wilson interval.
const MethodClusterTWilson = "cluster-t+wilson-eff"

// FewClusters is the number of clusters below which ClusterRate attaches a
// warning. Coverage is checked by simulation from 3 clusters up, but below
// 10 the interval is wide (t with 2 degrees of freedom multiplies the
// standard error by 4.3 instead of 2), and the ICC behind the Wilson floor is
// a rough guess.
const FewClusters = 10

// MinCheckedClusters is the smallest number of clusters at which the
// interval's coverage was checked by simulation.
const MinCheckedClusters = 3

// ICCUpperLevel is the one-sided confidence level of the ICC bound behind
// ClusterRate's Wilson floor. The ICC cannot be pinned down from a handful
// of clusters, so the design effect uses the largest ICC the data make
// plausible rather than the point estimate; 0.9 is the lowest level at which
// the simulation in TestClusterRateCoverage keeps every cell at ≥ 93%
// (0.8 gives 92.0% with 5 clusters of 4 at ICC 0.6).
const ICCUpperLevel = 0.9

// ClusterSum is one cluster's observations in [0, 1] (usually pass = 1,
// fail = 0): how many there are, their sum and their sum of squares. For
// pass/fail data SumSq equals Sum; a fractional value (e.g. the share of a
// judge panel that says "pass") has SumSq < Sum.
type ClusterSum struct {
	N     int
	Sum   float64
	SumSq float64
}

// Binary returns the ClusterSum of passed passes out of total trials.
func Binary(passed, total int) ClusterSum {
	return ClusterSum{N: total, Sum: float64(passed), SumSq: float64(passed)}
}

// RateInterval is ClusterRate's result: the pooled rate, its interval, and
// everything needed to judge it.
type RateInterval struct {
	Estimate float64 // ΣSum / ΣN (NaN with no observations)
	Lo, Hi   float64 // the reported interval, within [0, 1]
	N        int     // observations
	Sum      float64 // their sum (passes)
	Clusters int     // clusters with at least one observation
	// ICC is the ANOVA intra-class correlation, bounded to [0, 1]; NaN when
	// it cannot be estimated (one cluster, one observation per cluster, or
	// every value equal).
	ICC float64
	// ICCUpper is the ICC's one-sided ICCUpperLevel upper confidence bound
	// (never below ICC), which sets the design effect.
	ICCUpper float64
	// DesignEffect is 1 + (m̃ − 1)·ICCUpper with m̃ = ΣN_i²/N, the
	// size-weighted mean cluster size; EffectiveN is N / DesignEffect.
	DesignEffect, EffectiveN float64
	// TLo, THi: the t interval on cluster means (NaN with fewer than 2
	// clusters); WilsonLo, WilsonHi: Wilson on EffectiveN; BettingLo,
	// BettingHi: BettingCI.
	TLo, THi, WilsonLo, WilsonHi float64
	BettingLo, BettingHi         float64
	DF                           int // t degrees of freedom, Clusters − 1
	// Phi is the design effect Lo..Hi rests on (the cluster-robust variance
	// over the binomial one, at least 1; see ScoreInterval) and Nu the
	// degrees of freedom of its quantile (+Inf: normal).
	Phi, Nu float64
	// Strata is the number of fixed strata behind Lo..Hi (StratifiedRate;
	// 1 for ClusterRate).
	Strata  int
	Method  string
	Warning string // "" unless 0 < Clusters < FewClusters
}

// ClusterRate estimates a rate from clustered observations and gives its
// interval, Lo..Hi: the cluster-score interval (ScoreInterval), sized for
// its nominal level in simulation (TestIntervalGrid, where it covers at
// least 94 % in 344 of 420 cells, 94–97 % in 152; where it falls short is
// listed in docs/statistics.md). Beside it, for reference and for planning:
//
//   - BettingLo..BettingHi, the betting interval of Waudby-Smith & Ramdas
//     on the clusters' rates (BettingCI): valid for any distribution of
//     rates in [0, 1] with a finite-sample guarantee, including a few
//     "hot" clusters among many cold ones that a study may not even
//     contain — the any-mix bound, a median 1.4× the width and up to
//     5.7× (Lo..Hi holds it at 60 % where the scenarios clearly differ);
//   - TLo..THi, a t interval on the pooled (ratio) estimate with Clusters −
//     1 degrees of freedom and the linearised cluster-robust variance
//     G/(G−1)·Σ(Sum_i − p̂·N_i)² / N² (CR1);
//   - WilsonLo..WilsonHi, a Wilson interval on the effective sample size
//     N / DEFF, with DEFF from the ICC's upper confidence bound (ICCUpper,
//     DesignEffect, EffectiveN feed planning and the calibration).
//
// Clusters with N = 0 are dropped. With no observations the interval is
// [0, 1]. It panics on a confidence level outside (0, 1), a negative N, or
// Sum/SumSq inconsistent with values in [0, 1]. It does not allocate up to
// bettingStack clusters.
func ClusterRate(cs []ClusterSum, conf float64) RateInterval {
	checkConf("ClusterRate", conf)
	r, _ := clusterBasics("ClusterRate", cs)
	r.Method = MethodClusterScore
	if r.N == 0 {
		return r
	}
	n, p := float64(r.N), r.Estimate
	r.WilsonLo, r.WilsonHi = WilsonReal(p, r.EffectiveN, conf)
	r.BettingLo, r.BettingHi = BettingCI(cs, conf)
	part, _ := scorePartOf(cs, 1)
	sr := oneStratumScore(cs, part, conf, p)
	r.Lo, r.Hi, r.Phi, r.Nu = sr.lo, sr.hi, sr.phi, sr.nu
	if r.Clusters >= 2 {
		r.DF = r.Clusters - 1
		g := float64(r.Clusters)
		ss := 0.0
		for _, c := range cs {
			if c.N > 0 {
				e := c.Sum - p*float64(c.N)
				ss += e * e
			}
		}
		half := TQuantile((1+conf)/2, float64(r.DF)) * math.Sqrt(g/(g-1)*ss) / n
		r.TLo, r.THi = max(0, p-half), min(1, p+half)
	}
	return r
}

// clusterBasics is what every clustered statistic needs from the clusters
// (fn names the caller in panics): the counts, the pooled rate, the ICC and
// its ICCUpperLevel bound, the design effect and effective sample size,
// and the few-clusters warning; the intervals are NaN (t) or [0, 1]. The
// stratified statistics take this alone, not ClusterRate's intervals.
func clusterBasics(fn string, cs []ClusterSum) (r RateInterval, sumN2 float64) {
	r = RateInterval{TLo: math.NaN(), THi: math.NaN(), Phi: math.NaN(), Nu: math.NaN(), Lo: 0, Hi: 1, WilsonLo: 0, WilsonHi: 1, BettingLo: 0, BettingHi: 1}
	for i, c := range cs {
		checkClusterSum(fn, i, c)
		if c.N == 0 {
			continue
		}
		r.Clusters++
		r.N += c.N
		r.Sum += c.Sum
		sumN2 += float64(c.N) * float64(c.N)
	}
	r.Warning = ClusterWarning(r.Clusters)
	if r.N == 0 {
		r.Estimate, r.ICC, r.DesignEffect = math.NaN(), math.NaN(), math.NaN()
		return r, 0
	}
	n := float64(r.N)
	r.Estimate = r.Sum / n
	r.Strata = 1
	r.ICC, r.ICCUpper = anovaICC(cs, r.Clusters, n, r.Sum, sumN2, ICCUpperLevel)
	r.DesignEffect = 1 + (sumN2/n-1)*r.ICCUpper
	r.EffectiveN = n / r.DesignEffect
	return r, sumN2
}

// fewClusterWarnings holds ClusterWarning's texts, so ClusterRate can
// attach them without allocating.
var fewClusterWarnings = func() (w [FewClusters]string) {
	for g := range w {
		w[g] = clusterWarning(g)
	}
	return w
}()

// ClusterWarning is the warning ClusterRate attaches for a given number of
// clusters: "" without clusters (nothing to warn about: there is no
// estimate) and from FewClusters up.
func ClusterWarning(clusters int) string {
	if clusters > 0 && clusters < FewClusters {
		return fewClusterWarnings[clusters]
	}
	return ""
}

func clusterWarning(clusters int) string {
	switch {
	case clusters < MinCheckedClusters:
		return fmt.Sprintf("only %d base scenario(s): too few for a trustworthy interval (coverage is checked from %d; %d+ recommended)", clusters, MinCheckedClusters, FewClusters)
	default:
		return fmt.Sprintf("only %d base scenarios: the interval is wide and rests on few independent scenarios (%d+ recommended)", clusters, FewClusters)
	}
}

// anovaICC is the one-way ANOVA estimator of the intra-class correlation
// for unequal cluster sizes (e.g. Donner 1986, Int Stat Rev 54:67-82):
// (MSB − MSW) / (MSB + (m₀ − 1)·MSW), m₀ = (N − ΣN_i²/N)/(G − 1), bounded to
// [0, 1], and, when level > 0, its one-sided upper confidence bound from
// F = MSB/MSW ~ F(G−1, N−G)·(1 + (m₀−1)ρ)/(1 − ρ) (Searle 1971, exact for
// equal sizes and normal effects): (F/F_q − 1)/(F/F_q + m₀ − 1) with F_q the
// (1 − level)-quantile. When the ICC cannot be estimated (one cluster,
// one observation per cluster, or every value equal) the estimate is NaN
// and the bound 1, because assuming full correlation is the cautious
// choice; with one observation per cluster the design effect is 1 whatever
// the ICC. Clusters that differ with no spread within are fully clustered:
// both are 1.
func anovaICC(cs []ClusterSum, g int, n, sum, sumN2, level float64) (est, upper float64) {
	if g < 2 {
		return math.NaN(), 1
	}
	var ssb, ssw float64
	for _, c := range cs {
		if c.N == 0 {
			continue
		}
		ni := float64(c.N)
		ssb += c.Sum * c.Sum / ni
		ssw += c.SumSq - c.Sum*c.Sum/ni
	}
	ssb -= sum * sum / n
	dfw := n - float64(g)
	if dfw <= 0 {
		return math.NaN(), 1
	}
	msb := max(0, ssb) / float64(g-1)
	msw := max(0, ssw) / dfw
	switch {
	case msw <= 1e-15 && msb <= 1e-15:
		return math.NaN(), 1 // every value equal: nothing to estimate from
	case msw <= 1e-15:
		return 1, 1 // clusters differ, nothing varies within: fully clustered
	}
	m0 := (n - sumN2/n) / float64(g-1)
	est = max(0, min(1, (msb-msw)/(msb+(m0-1)*msw)))
	if level == 0 {
		return est, est
	}
	f := msb / msw / fQuantile(1-level, g-1, dfw)
	upper = max(est, min(1, (f-1)/(f+m0-1)))
	return est, upper
}

// ICC is the ANOVA intra-class correlation of clustered observations,
// bounded to [0, 1]; NaN when it cannot be estimated (fewer than two
// clusters with observations, one observation per cluster, or every value
// equal). A pilot run's ICC feeds ExpectedHalfWidth and ScenariosNeeded.
func ICC(cs []ClusterSum) float64 {
	var g int
	var n, sum, sumN2 float64
	for _, c := range cs {
		if c.N > 0 {
			g++
			n += float64(c.N)
			sum += c.Sum
			sumN2 += float64(c.N) * float64(c.N)
		}
	}
	if g == 0 {
		return math.NaN()
	}
	est, _ := anovaICC(cs, g, n, sum, sumN2, 0)
	return est
}

// WilsonReal is the Wilson score interval for an observed rate p from an
// effective sample size n that need not be a whole number (n / design
// effect). With n ≤ 0 it returns [0, 1]. It panics if p is outside [0, 1]
// or conf outside (0, 1).
func WilsonReal(p, n, conf float64) (lo, hi float64) {
	checkConf("WilsonReal", conf)
	if !(p >= -1e-12 && p <= 1+1e-12) {
		panic(fmt.Sprintf("stats: WilsonReal: rate %v is outside [0, 1]", p))
	}
	p = max(0, min(1, p))
	if !(n > 0) {
		return 0, 1
	}
	z := ZQuantile((1 + conf) / 2)
	z2n := z * z / n
	denom := 1 + z2n
	center := (p + z2n/2) / denom
	half := z / denom * math.Sqrt(p*(1-p)/n+z2n/(4*n))
	lo, hi = center-half, center+half
	if p == 0 {
		lo = 0
	}
	if p == 1 {
		hi = 1
	}
	return max(lo, 0), min(hi, 1)
}

// TQuantile is the p-quantile of Student's t distribution with df degrees
// of freedom (df > 0; NaN otherwise).
func TQuantile(p, df float64) float64 {
	if !(df > 0) {
		return math.NaN()
	}
	if r := math.Round(df); math.Abs(df-r) < 1e-9 {
		df = r // Welch–Satterthwaite with one stratum lands a hair off g−1
	}
	if p == 0.975 && df == math.Trunc(df) && df <= float64(len(t975)) {
		t975Once.Do(fillT975)
		return t975[int(df)-1]
	}
	return distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}.Quantile(p)
}

// fQuantile is the p-quantile of the F(d1, d2) distribution, cached for
// ClusterRate's level and small degrees of freedom (lock-free: a value is
// computed at most a few times over and stored as its bits).
func fQuantile(p float64, d1 int, d2 float64) float64 {
	cacheable := p == 1-ICCUpperLevel && d2 == math.Trunc(d2) && d1 <= len(fCache) && d2 <= float64(len(fCache[0]))
	if !cacheable {
		return distuv.F{D1: float64(d1), D2: d2}.Quantile(p)
	}
	slot := &fCache[d1-1][int(d2)-1]
	if bits := slot.Load(); bits != 0 {
		return math.Float64frombits(bits)
	}
	q := distuv.F{D1: float64(d1), D2: d2}.Quantile(p)
	slot.Store(math.Float64bits(q))
	return q
}

var fCache [64][1024]atomic.Uint64

// t975 caches the 0.975 quantiles (95% intervals) for 1–256 degrees of
// freedom: the inverse incomplete beta behind them costs microseconds, and
// the Monte Carlo tests ask for them hundreds of thousands of times.
var (
	t975     [256]float64
	t975Once sync.Once
)

func fillT975() {
	for i := range t975 {
		t975[i] = distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(i + 1)}.Quantile(0.975)
	}
}

// MeanOfRates averages the estimates and the interval limits of rates
// from independent sets of clusters (e.g. the positive and the negative
// track, which never share a base scenario), skipping rates without
// observations; NaN when none has any. Averaging the limits is
// conservative — the exact interval of a mean of independent estimates is
// narrower — and keeps every guarantee of the parts: never zero-width,
// inside [0, 1]. TestMeanOfRatesCoverage checks it.
func MeanOfRates(rates ...RateInterval) (est, lo, hi float64) {
	k := 0
	for _, r := range rates {
		if r.N == 0 {
			continue
		}
		est += r.Estimate
		lo += r.Lo
		hi += r.Hi
		k++
	}
	if k == 0 {
		return math.NaN(), math.NaN(), math.NaN()
	}
	n := float64(k)
	return est / n, lo / n, hi / n
}
