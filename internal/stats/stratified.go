package stats

import (
	"fmt"
	"math"
	"sync"

	"gonum.org/v1/gonum/stat/distuv"
)

// MethodStratifiedCluster names StratifiedMean's and StratifiedPairedDiff's
// interval: a t interval on a weighted mean of fixed strata (metrics), each
// stratum's variance from its clusters (base scenarios) with a small-sample
// correction and a floor, Welch–Satterthwaite degrees of freedom.
const MethodStratifiedCluster = "stratified-cluster-t (linearised cluster variance per stratum, G/(G-1) correction, binomial floor on the effective n, Satterthwaite df)"

// Stratum is one fixed stratum of a stratified mean — in a study, one metric
// of a model at one age — with its weight and its clusters (base
// scenarios). Weights need not sum to 1: they are renormalised over the
// strata that have observations.
type Stratum struct {
	Weight   float64
	Clusters []ClusterSum
}

// PairedStratum is one stratum of a paired comparison: the same clusters
// observed under two conditions (two models on the same base scenarios).
type PairedStratum struct {
	Weight   float64
	Clusters []PairedCluster
}

// StratifiedInterval is StratifiedMean's or StratifiedPairedDiff's answer.
type StratifiedInterval struct {
	Estimate float64 // Σ w_m·est_m over strata with data, weights renormalised (NaN: none)
	Lo, Hi   float64 // the interval at the requested level (NaN without data)
	SE       float64 // √Σ w_m²·v_m
	DF       float64 // Welch–Satterthwaite degrees of freedom (+Inf: no variance)
	// P is the two-sided p-value of "the estimate is 0" from the same t
	// (paired differences only; NaN for StratifiedMean).
	P float64
	// Strata counts strata with data; Missing those without (left out).
	Strata, Missing int
	// Clusters counts clusters with data over all strata; MinClusters is
	// the fewest in any stratum with data (0 without data).
	Clusters, MinClusters int
	N                     int // observations (for a paired difference: both arms)
	Method                string
}

// Interval returns the interval at another two-sided level (e.g. a
// Bonferroni-adjusted one), from the same estimate, SE and DF; the limits
// are clipped to [lo, hi] = [0, 1] for a mean and [−1, 1] for a difference.
func (s StratifiedInterval) Interval(conf, lo, hi float64) (float64, float64) {
	checkConf("StratifiedInterval.Interval", conf)
	if math.IsNaN(s.Estimate) {
		return math.NaN(), math.NaN()
	}
	half := tHalf(conf, s.DF, s.SE)
	return max(lo, s.Estimate-half), min(hi, s.Estimate+half)
}

// tHalf is the half-width t_{(1+conf)/2, ⌊df⌋}·se. The Satterthwaite
// degrees of freedom are rounded down (a slightly wider interval), so the
// quantiles can be cached: a study asks for ~100,000 of them.
func tHalf(conf, df, se float64) float64 {
	if se == 0 {
		return 0
	}
	return tQuantileCached((1+conf)/2, df) * se
}

// tQuantileCached is TQuantile at ⌊df⌋ (at least 1), memoised; the normal
// quantile for infinite df.
func tQuantileCached(p, df float64) float64 {
	if math.IsInf(df, 1) {
		return ZQuantile(p)
	}
	key := tKey{p, max(1, math.Floor(df))}
	if v, ok := tCache.Load(key); ok {
		return v.(float64)
	}
	q := TQuantile(key.p, key.df)
	tCache.Store(key, q)
	return q
}

type tKey struct{ p, df float64 }

var tCache sync.Map

// stratumPart is one stratum's contribution: its estimate, the variance of
// that estimate, and the degrees of freedom of the variance.
type stratumPart struct {
	w, est, v, df float64
}

// StratifiedMean estimates Σ_m w_m·p_m, a weighted mean of the pooled rates
// p_m of fixed strata (in a study: the mean of a node's metric pass rates,
// the metrics fixed and the base scenarios within each metric sampled). The
// interval treats the clusters within each stratum as the sampled units,
// strata independent:
//
//   - each stratum's rate is its ratio estimate ΣSum/ΣN, with the
//     linearised cluster variance G/(G−1)·Σ(Sum_i − p̂·N_i)²/N² (the
//     small-sample correction of the cluster-robust variance; unbiased for
//     equal cluster sizes), and G − 1 degrees of freedom;
//   - that variance is floored at the binomial variance of the stratum's
//     shrunk rate p̃ = (p̂·n_eff + ½)/(n_eff + 1) on its effective sample size
//     n_eff = N/DEFF (ClusterRate's design effect from the ICC's upper bound;
//     n_eff = G with one observation per cluster), so a stratum whose 3
//     scenarios all happen to agree still carries the uncertainty 3 draws
//     leave — the variance estimate is then never below what the data could
//     show, which makes the interval conservative rather than zero-width;
//   - the total variance is Σ w_m²·v_m, and the interval is a t interval
//     with Welch–Satterthwaite degrees of freedom (Σ w²v)²/Σ (w²v)²/df_m,
//     rounded down, clipped to [0, 1].
//
// A stratum with a single cluster gets its floor and 1 degree of freedom.
// Coverage is checked by TestStratifiedMeanCoverage (3 clusters per stratum,
// 1 to 360 strata). It panics on conf outside (0, 1) or invalid sums.
func StratifiedMean(strata []Stratum, conf float64) StratifiedInterval {
	checkConf("StratifiedMean", conf)
	out := StratifiedInterval{Method: MethodStratifiedCluster, P: math.NaN()}
	parts := make([]stratumPart, 0, len(strata))
	for _, st := range strata {
		r, _ := clusterBasics("StratifiedMean", st.Clusters)
		if r.N == 0 {
			out.Missing++
			continue
		}
		v, df := stratumVariance(st.Clusters, r)
		parts = append(parts, stratumPart{w: st.Weight, est: r.Estimate, v: v, df: df})
		out.add(r.Clusters, r.N)
	}
	out.combine(parts, conf, 0, 1)
	return out
}

func (out *StratifiedInterval) add(clusters, n int) {
	if out.Strata == 0 || clusters < out.MinClusters {
		out.MinClusters = clusters
	}
	out.Strata++
	out.Clusters += clusters
	out.N += n
}

// stratumVariance is the floored linearised variance of one stratum's
// ratio estimate and its degrees of freedom (see StratifiedMean).
func stratumVariance(cs []ClusterSum, r RateInterval) (v, df float64) {
	n := float64(r.N)
	p := r.Estimate
	if r.Clusters >= 2 {
		ss := 0.0
		for _, c := range cs {
			if c.N > 0 {
				e := c.Sum - p*float64(c.N)
				ss += e * e
			}
		}
		g := float64(r.Clusters)
		v = g / (g - 1) * ss / (n * n)
	}
	return max(v, binomialFloor(p, r.EffectiveN)), float64(max(r.Clusters-1, 1))
}

// binomialFloor is p̃(1−p̃)/n with p̃ = (p·n + ½)/(n + 1): the variance of a
// rate seen on n independent draws, shrunk away from 0 and 1 so it is never 0.
func binomialFloor(p, n float64) float64 {
	if !(n > 0) {
		return 0.25
	}
	pt := (p*n + 0.5) / (n + 1)
	return pt * (1 - pt) / n
}

// combine renormalises the weights, sums the parts and sets the interval
// (clipped to [lo, hi]) and, for a difference, the p-value.
func (out *StratifiedInterval) combine(parts []stratumPart, conf, lo, hi float64) {
	out.Estimate, out.Lo, out.Hi, out.DF = math.NaN(), math.NaN(), math.NaN(), math.NaN()
	wsum := 0.0
	for _, p := range parts {
		if p.w < 0 || math.IsNaN(p.w) {
			panic(fmt.Sprintf("stats: stratified: invalid weight %v", p.w))
		}
		wsum += p.w
	}
	if len(parts) == 0 || wsum == 0 {
		return
	}
	var est, variance, satDen float64
	for _, p := range parts {
		w := p.w / wsum
		est += w * p.est
		c := w * w * p.v
		variance += c
		satDen += c * c / p.df
	}
	out.Estimate = est
	out.SE = math.Sqrt(variance)
	out.DF = math.Inf(1)
	if satDen > 0 {
		out.DF = variance * variance / satDen
	}
	out.Lo, out.Hi = out.Interval(conf, lo, hi)
}

// StratifiedPairedDiff estimates Σ_m w_m·(pA_m − pB_m), the difference of
// two stratified means measured on the same clusters (two models on the
// same base scenarios of the same metrics), with the cluster as the unit:
// per stratum, only clusters with both arms observed count; its variance is
// G/(G−1)·Σ e_s² with e_s the difference of the two arms' linearised
// residuals, (SumA_s − p̂A·NA_s)/NA − (SumB_s − p̂B·NB_s)/NB, so what the
// scenarios share (their difficulty) cancels; it is floored at the sum of
// the two arms' binomial floors (as StratifiedMean), which ignores that
// sharing and so errs wide. Interval and p-value come from one t with
// Satterthwaite degrees of freedom, so "tied" (the interval holds 0) and
// "not significant" always agree. Clipped to [−1, 1]. Coverage and the
// false-positive rate are checked by TestStratifiedPairedDiffCoverage.
func StratifiedPairedDiff(strata []PairedStratum, conf float64) StratifiedInterval {
	checkConf("StratifiedPairedDiff", conf)
	out := StratifiedInterval{Method: MethodStratifiedCluster, P: math.NaN()}
	parts := make([]stratumPart, 0, len(strata))
	a := make([]ClusterSum, 0, 8)
	b := make([]ClusterSum, 0, 8)
	for _, st := range strata {
		a, b = a[:0], b[:0]
		for i, c := range st.Clusters {
			if c.NA < 0 || c.NB < 0 || c.SumA < -1e-9 || c.SumB < -1e-9 || c.SumA > float64(c.NA)+1e-9 || c.SumB > float64(c.NB)+1e-9 {
				panic(fmt.Sprintf("stats: StratifiedPairedDiff: cluster %d has invalid sums %+v", i, c))
			}
			if c.NA == 0 || c.NB == 0 {
				continue
			}
			a = append(a, ClusterSum{N: c.NA, Sum: c.SumA, SumSq: c.SumA})
			b = append(b, ClusterSum{N: c.NB, Sum: c.SumB, SumSq: c.SumB})
		}
		if len(a) == 0 {
			out.Missing++
			continue
		}
		ra, _ := clusterBasics("StratifiedPairedDiff", a)
		rb, _ := clusterBasics("StratifiedPairedDiff", b)
		v := 0.0
		if len(a) >= 2 {
			na, nb := float64(ra.N), float64(rb.N)
			ss := 0.0
			for i := range a {
				e := (a[i].Sum-ra.Estimate*float64(a[i].N))/na - (b[i].Sum-rb.Estimate*float64(b[i].N))/nb
				ss += e * e
			}
			g := float64(len(a))
			v = g / (g - 1) * ss
		}
		v = max(v, binomialFloor(ra.Estimate, ra.EffectiveN)+binomialFloor(rb.Estimate, rb.EffectiveN))
		parts = append(parts, stratumPart{w: st.Weight, est: ra.Estimate - rb.Estimate, v: v, df: float64(max(len(a)-1, 1))})
		out.add(len(a), ra.N+rb.N)
	}
	out.combine(parts, conf, -1, 1)
	if !math.IsNaN(out.Estimate) {
		out.P = tTwoSidedP(out.Estimate, out.SE, out.DF)
	}
	return out
}

// tTwoSidedP is the two-sided p-value of est/se under t(df).
func tTwoSidedP(est, se, df float64) float64 {
	if se == 0 {
		if est == 0 {
			return 1
		}
		return 0
	}
	t := math.Abs(est) / se
	if math.IsInf(df, 1) {
		return 2 * distuv.UnitNormal.Survival(t)
	}
	return 2 * distuv.StudentsT{Mu: 0, Sigma: 1, Nu: max(1, math.Floor(df))}.Survival(t)
}
