package stats

import (
	"fmt"
	"math"
	"math/bits"

	"gonum.org/v1/gonum/stat/distuv"
)

// Method names of SignFlipP's test.
const (
	MethodSignFlipExact      = "sign-flip-exact"
	MethodSignFlipMonteCarlo = "sign-flip-monte-carlo"
)

// Method names of ClusterDiff's procedure: the sign-flip test combined with
// the binomial-noise floor (see StratifiedDiff).
const (
	MethodDiffExact      = MethodSignFlipExact + "+binomial-floor"
	MethodDiffMonteCarlo = MethodSignFlipMonteCarlo + "+binomial-floor"
)

// MaxExactSignFlip is the largest number of clusters for which the
// sign-flip test enumerates all 2^G sign patterns; above it, it draws
// DefaultSignFlipReps random patterns.
const MaxExactSignFlip = 16

// DefaultSignFlipReps is the number of random sign patterns of the Monte
// Carlo sign-flip test (p-values resolve to 1/10,000).
const DefaultSignFlipReps = 9999

// SignFlipP is the two-sided sign-flip (randomisation) test of "the mean of
// d is 0", where d holds one difference per independent cluster (e.g. per
// base scenario: pass rate of variant A minus that of variant B). Under the
// null each d_s is symmetric about 0, so every pattern of signs is equally
// likely; the p-value is twice the share of patterns whose sum is at least
// as far out, on the observed side, as the observed sum (Fisher 1935; Good
// 2005, Permutation Tests §3) — for all 2^G patterns the same as the share
// with |Σ ± d_s| ≥ |Σ d_s|, since the patterns come in mirror pairs.
//
// With G ≤ MaxExactSignFlip clusters all 2^G patterns are enumerated (exact;
// the smallest possible p is 2/2^G, so with 3 clusters nothing can reach
// 0.05 — which is the honest answer). Otherwise reps random patterns are
// drawn from seed and the observed pattern counts as one more. With no
// clusters, or all d_s = 0, p = 1. NaN entries are not allowed (it
// panics), nor is reps < 1 when needed.
func SignFlipP(d []float64, reps int, seed uint64) (p float64, exact bool) {
	w := make([]float64, len(d))
	for i := range w {
		w[i] = 1
	}
	sf := newSignFlip(d, w, reps, seed)
	return sf.p(0), sf.exact
}

// signFlip is the sign-flip test of "the weighted differences are
// symmetric about δ", for every δ at once. Flipping the signs of a set F of
// clusters turns the statistic T(δ) = Σ w_s·(d_s − δ) into a sum at least as
// large exactly when Σ_F w_s·(d_s − δ) ≤ 0, i.e. when δ is at least the
// weighted mean of d over F. So the whole test is the sorted list of those
// subset means (Hartigan 1969, JASA 64:1303, "Using subsample values as
// typical values"): the p-value at δ counts the means on either side of
// δ, and the interval of every δ the test does not reject is an order
// statistic of the list on each side. Test and interval come from the same
// numbers, so the interval excludes 0 exactly when the p-value at 0 says so.
type signFlip struct {
	means []float64 // subset means over non-empty flipped sets (any order)
	// always counts the patterns that equal the observed one whatever δ:
	// the observed pattern itself, plus (Monte Carlo) draws that flip
	// nothing.
	always int
	n      int // all patterns: 2^G, or reps + 1
	exact  bool
}

// newSignFlip enumerates (G ≤ MaxExactSignFlip) or draws the sign
// patterns of d with weights w (> 0).
func newSignFlip(d, w []float64, reps int, seed uint64) signFlip {
	for i, v := range d {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			panic(fmt.Sprintf("stats: sign-flip test: difference %d is %v", i, v))
		}
	}
	g := len(d)
	if g <= MaxExactSignFlip {
		sf := signFlip{means: make([]float64, 0, (1<<g)-1), always: 1, n: 1 << g, exact: true}
		// Gray-code order: each step moves one cluster in or out of F.
		in := make([]bool, g)
		var num, den float64
		for k := uint64(1); k < uint64(1)<<g; k++ {
			j := bits.TrailingZeros64(k)
			if in[j] {
				num -= w[j] * d[j]
				den -= w[j]
			} else {
				num += w[j] * d[j]
				den += w[j]
			}
			in[j] = !in[j]
			sf.means = append(sf.means, snapMean(num, den))
		}
		return sf
	}
	if reps < 1 {
		panic(fmt.Sprintf("stats: sign-flip test: reps = %d, need at least 1", reps))
	}
	sf := signFlip{means: make([]float64, 0, reps), always: 1, n: reps + 1}
	rng := newRand(seed)
	// Each pattern draws one word per 64 clusters and adds the clusters
	// whose bit is set, in index order. Walking only the set bits, with
	// w·d computed once, adds the same terms in the same order (so the
	// same floating-point sums) with half the steps: aggregate runs this
	// for every pair of targets on every question.
	wd := make([]float64, len(d))
	for i := range d {
		wd[i] = w[i] * d[i]
	}
	for range reps {
		var num, den float64
		for base := 0; base < len(d); base += 64 {
			word := rng.Uint64()
			if rest := len(d) - base; rest < 64 {
				word &= 1<<rest - 1
			}
			for ; word != 0; word &= word - 1 {
				i := base + bits.TrailingZeros64(word)
				num += wd[i]
				den += w[i]
			}
		}
		if den == 0 {
			sf.always++
			continue
		}
		sf.means = append(sf.means, snapMean(num, den))
	}
	return sf
}

// snapMean is num/den rounded to 1e-12, so that subset means equal in exact
// arithmetic (differences of pass rates are ratios of small integers) are
// equal here, and a mean that is 0 is exactly 0.
func snapMean(num, den float64) float64 {
	return math.Round(num/den*1e12) / 1e12
}

// counts returns how many patterns give a sum at least as large as the
// observed one at δ (ge: flipped-set means ≤ δ) and at most as large (le:
// means ≥ δ).
func (s signFlip) counts(delta float64) (ge, le int) {
	ge, le = s.always, s.always
	for _, m := range s.means {
		if m <= delta {
			ge++
		}
		if m >= delta {
			le++
		}
	}
	return ge, le
}

// p is the two-sided p-value of "symmetric about δ": twice the smaller
// tail, capped at 1.
func (s signFlip) p(delta float64) float64 {
	if len(s.means) == 0 {
		return 1
	}
	ge, le := s.counts(delta)
	return min(1, 2*float64(min(ge, le))/float64(s.n))
}

// interval is every δ with p(δ) ≥ alpha: [k-th smallest mean, k-th largest
// mean] with k the fewest means on a side that keeps 2·(always + k)/n ≥
// alpha — the same comparison p makes. ±Inf when every δ that far out is
// kept. It reorders s.means.
func (s signFlip) interval(alpha float64) (lo, hi float64) {
	k := 0
	for 2*float64(s.always+k)/float64(s.n) < alpha {
		k++
	}
	if k == 0 || k > len(s.means) {
		return math.Inf(-1), math.Inf(1)
	}
	lo = selectKth(s.means, k-1)
	hi = selectKth(s.means, len(s.means)-k)
	return lo, hi
}

// selectKth returns the k-th smallest (0-based) of a, reordering a
// (Hoare's quickselect with a median-of-three pivot: linear on average,
// where sorting 65,536 subset means per test was most of aggregate's time).
func selectKth(a []float64, k int) float64 {
	lo, hi := 0, len(a)-1
	for lo < hi {
		mid := lo + (hi-lo)/2
		if a[mid] < a[lo] {
			a[mid], a[lo] = a[lo], a[mid]
		}
		if a[hi] < a[lo] {
			a[hi], a[lo] = a[lo], a[hi]
		}
		if a[hi] < a[mid] {
			a[hi], a[mid] = a[mid], a[hi]
		}
		pivot := a[mid]
		i, j := lo, hi
		for i <= j {
			for a[i] < pivot {
				i++
			}
			for a[j] > pivot {
				j--
			}
			if i <= j {
				a[i], a[j] = a[j], a[i]
				i++
				j--
			}
		}
		switch {
		case k <= j:
			hi = j
		case k >= i:
			lo = i
		default:
			return a[k]
		}
	}
	return a[k]
}

// PairedCluster is one cluster's two arms: NA observations summing to SumA
// under condition A, NB summing to SumB under B (e.g. one base scenario's
// matched child and adult variants, or two models on the same scenario).
type PairedCluster struct {
	NA, NB     int
	SumA, SumB float64
}

// DiffResult is ClusterDiff's answer. Lo and Hi are every δ at which the
// procedure's p-value is at least 1 − conf, so the interval excludes 0
// exactly when P < 1 − conf: the test and the interval are one procedure.
type DiffResult struct {
	Mean   float64 // the (stratum-weighted) mean over clusters of d_s = SumA/NA − SumB/NB
	Lo, Hi float64 // the interval (NaN with fewer than 2 clusters), within [−1, 1]
	// P is the two-sided p-value of "no difference": the larger of
	// PSignFlip and PFloor.
	P float64
	// PSignFlip is the sign-flip test's, PFloor the binomial floor's (a t
	// test whose standard error is what binomial noise within the clusters
	// alone would give).
	PSignFlip, PFloor float64
	// SignFlipLo..Hi and FloorLo..Hi are the two parts' intervals; [Lo, Hi]
	// is their hull (both contain Mean).
	SignFlipLo, SignFlipHi, FloorLo, FloorHi float64
	Method                                   string // MethodDiffExact or MethodDiffMonteCarlo
	Clusters                                 int    // clusters with both arms observed
	DF                                       int    // the floor's t degrees of freedom (floor)
}

// ClusterDiff compares two conditions on the same clusters with the cluster
// as the unit: each cluster with both arms observed gives one difference
// d_s, the estimate is their plain mean, and test and interval come from
// one procedure (see StratifiedDiff; reps and seed are used above
// MaxExactSignFlip clusters). Conversations within a cluster are never
// treated as independent pairs, so a difference carried by 2 scenarios out
// of 12 is not "significant" however many conversations they hold.
// Clusters missing an arm are skipped. It panics on counts that describe no
// possible data or conf outside (0, 1).
func ClusterDiff(cs []PairedCluster, conf float64, reps int, seed uint64) DiffResult {
	return StratifiedDiff([][]PairedCluster{cs}, conf, reps, seed)
}

// StratifiedDiff is ClusterDiff over several strata of clusters (e.g. the
// positive and the negative track, which never share a base scenario),
// each stratum weighted equally: the estimate is the mean of the strata's
// mean differences, i.e. Σ w_s·d_s with w_s = 1/(K·G_k).
//
// The procedure rejects "no difference" (and excludes δ from the interval)
// only when both of these do:
//
//   - the sign-flip test of "every d_s is symmetric about δ", on the
//     weighted differences (signFlip: exact up to MaxExactSignFlip
//     clusters), inverted into an interval;
//   - the binomial floor: a t test with the standard error that binomial
//     sampling within the clusters alone would give (each arm's rate shrunk
//     to (k+½)/(n+1)) and Welch–Satterthwaite degrees of freedom over the
//     strata (G_k − 1 each; a stratum with one cluster counts 1). It keeps
//     the interval from collapsing when every cluster happens to show the
//     same difference — two models that both pass everything on 12
//     scenarios of 4 conversations are not shown to be identical.
//
// So P = max(PSignFlip, PFloor) and the interval is the hull of the two
// parts' intervals, clipped to [−1, 1]. With fewer than two clusters there
// is nothing to test: P = 1 and the interval is NaN. Empty strata are left
// out.
func StratifiedDiff(strata [][]PairedCluster, conf float64, reps int, seed uint64) DiffResult {
	checkConf("ClusterDiff", conf)
	kept, total := diffStrata(strata)
	nan := math.NaN()
	r := DiffResult{Mean: nan, Lo: nan, Hi: nan, P: 1, PSignFlip: 1, PFloor: 1,
		SignFlipLo: nan, SignFlipHi: nan, FloorLo: nan, FloorHi: nan, Clusters: total, Method: MethodDiffExact}
	if total > MaxExactSignFlip {
		r.Method = MethodDiffMonteCarlo
	}
	if total == 0 {
		return r
	}
	k := float64(len(kept))
	d := make([]float64, 0, total)
	w := make([]float64, 0, total)
	var mean, variance, satDen float64
	for _, st := range kept {
		g := float64(len(st.d))
		m := 0.0
		for _, v := range st.d {
			m += v
			d = append(d, v)
			w = append(w, 1/(k*g))
		}
		mean += m / g / k
		v := st.floorVar / (g * g) / (k * k) // this stratum's share of the floor variance
		variance += v
		satDen += v * v / max(1, g-1)
	}
	r.Mean = mean
	if total < 2 {
		return r
	}
	alpha := alphaOf(conf)
	sf := newSignFlip(d, w, reps, seed)
	r.PSignFlip = sf.p(0)
	r.SignFlipLo, r.SignFlipHi = sf.interval(alpha)

	df := variance * variance / satDen
	r.DF = int(df)
	se := math.Sqrt(variance)
	half := TQuantile((1+conf)/2, df) * se
	r.FloorLo, r.FloorHi = mean-half, mean+half
	r.PFloor = tTwoSided(math.Abs(mean)/se, df)
	// The quantile and the CDF agree to ~1e-12; at a mean that sits on the
	// floor interval's edge, let the interval decide, so that "excludes 0"
	// and "P < α" can never disagree.
	if excludes := r.FloorLo > 0 || r.FloorHi < 0; excludes != (r.PFloor < alpha) {
		if excludes {
			r.PFloor = math.Nextafter(alpha, 0)
		} else {
			r.PFloor = alpha
		}
	}

	r.P = max(r.PSignFlip, r.PFloor)
	r.Lo = max(-1, min(r.SignFlipLo, r.FloorLo))
	r.Hi = min(1, max(r.SignFlipHi, r.FloorHi))
	return r
}

// diffStratum is one stratum's per-cluster differences of pass rates (A −
// B) and the sum of their floor variances.
type diffStratum struct {
	d        []float64
	floorVar float64
}

// diffStrata reduces each stratum's clusters to their differences, leaving
// out clusters with no conversation on a side and strata left empty, and
// counts the clusters kept. It panics on a cluster with impossible sums.
func diffStrata(strata [][]PairedCluster) (kept []diffStratum, total int) {
	for _, cs := range strata {
		var st diffStratum
		for i, c := range cs {
			if c.NA < 0 || c.NB < 0 || c.SumA < 0 || c.SumB < 0 || c.SumA > float64(c.NA)+1e-9 || c.SumB > float64(c.NB)+1e-9 {
				panic(fmt.Sprintf("stats: ClusterDiff: cluster %d has invalid sums %+v", i, c))
			}
			if c.NA == 0 || c.NB == 0 {
				continue
			}
			na, nb := float64(c.NA), float64(c.NB)
			st.d = append(st.d, c.SumA/na-c.SumB/nb)
			pa, pb := (c.SumA+0.5)/(na+1), (c.SumB+0.5)/(nb+1)
			st.floorVar += pa*(1-pa)/na + pb*(1-pb)/nb
		}
		if len(st.d) > 0 {
			kept = append(kept, st)
			total += len(st.d)
		}
	}
	return kept, total
}

// tTwoSided is the two-sided p-value of a t statistic with df degrees of
// freedom (1 when t is NaN, i.e. a zero standard error with a zero mean).
func tTwoSided(t, df float64) float64 {
	if math.IsNaN(t) {
		return 1
	}
	return min(1, 2*distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}.Survival(t))
}
