package stats

import (
	"fmt"
	"math"
	"math/bits"
)

// Method names of ClusterDiff's test.
const (
	MethodSignFlipExact      = "sign-flip-exact"
	MethodSignFlipMonteCarlo = "sign-flip-monte-carlo"
)

// MaxExactSignFlip is the largest number of clusters for which SignFlipP
// enumerates all 2^G sign patterns; above it, it draws DefaultSignFlipReps
// random patterns.
const MaxExactSignFlip = 16

// DefaultSignFlipReps is the number of random sign patterns of the Monte
// Carlo sign-flip test (p-values resolve to 1/10,000).
const DefaultSignFlipReps = 9999

// SignFlipP is the two-sided sign-flip (randomisation) test of "the mean of
// d is 0", where d holds one difference per independent cluster (e.g. per
// base scenario: pass rate of variant A minus that of variant B). Under the
// null each d_s is symmetric about 0, so every pattern of signs is equally
// likely; the p-value is the share of patterns whose |Σ ± d_s| is at least
// the observed |Σ d_s| (Fisher 1935; Good 2005, Permutation Tests §3).
//
// With G ≤ MaxExactSignFlip clusters all 2^G patterns are enumerated (exact;
// the smallest possible p is 2/2^G, so with 3 clusters nothing can reach
// 0.05 — which is the honest answer). Otherwise reps random patterns are
// drawn from seed and p = (1 + hits)/(1 + reps), which never understates
// the exact value on average. With no clusters, or all d_s = 0, p = 1.
// NaN entries are not allowed (it panics), nor is reps < 1 when needed.
func SignFlipP(d []float64, reps int, seed uint64) (p float64, exact bool) {
	var obs, scale float64
	for i, v := range d {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			panic(fmt.Sprintf("stats: SignFlipP: difference %d is %v", i, v))
		}
		obs += v
		scale += math.Abs(v)
	}
	if len(d) == 0 || scale == 0 {
		return 1, true
	}
	// Sums equal to the observed one up to rounding count as "as extreme".
	target := math.Abs(obs) - 1e-9*scale
	if len(d) <= MaxExactSignFlip {
		return signFlipExact(d, obs, target), true
	}
	if reps < 1 {
		panic(fmt.Sprintf("stats: SignFlipP: reps = %d, need at least 1", reps))
	}
	rng := newRand(seed)
	hits := 0
	for range reps {
		var s float64
		var word uint64
		for i, v := range d {
			if i%64 == 0 {
				word = rng.Uint64()
			}
			if word&1 == 1 {
				s -= v
			} else {
				s += v
			}
			word >>= 1
		}
		if math.Abs(s) >= target {
			hits++
		}
	}
	return float64(1+hits) / float64(1+reps), false
}

// signFlipExact walks all sign patterns in Gray-code order, so each step
// flips one sign and updates the sum in O(1).
func signFlipExact(d []float64, obs, target float64) float64 {
	g := len(d)
	sign := make([]bool, g) // true: flipped
	s := obs
	hits := 1 // the observed pattern itself
	total := uint64(1) << g
	for k := uint64(1); k < total; k++ {
		j := bits.TrailingZeros64(k)
		if sign[j] {
			s += 2 * d[j]
		} else {
			s -= 2 * d[j]
		}
		sign[j] = !sign[j]
		if math.Abs(s) >= target {
			hits++
		}
	}
	return float64(hits) / float64(total)
}

// PairedCluster is one cluster's two arms: NA observations summing to SumA
// under condition A, NB summing to SumB under B (e.g. one base scenario's
// matched child and adult variants, or two models on the same scenario).
type PairedCluster struct {
	NA, NB     int
	SumA, SumB float64
}

// DiffResult is ClusterDiff's answer.
type DiffResult struct {
	Mean     float64 // mean over clusters of d_s = SumA/NA − SumB/NB
	Lo, Hi   float64 // t interval for the mean (NaN with fewer than 2 clusters)
	P        float64 // two-sided sign-flip p-value
	Method   string  // MethodSignFlipExact or MethodSignFlipMonteCarlo
	Clusters int     // clusters with both arms observed
	DF       int     // Clusters − 1
}

// ClusterDiff compares two conditions on the same clusters with the cluster
// as the unit: each cluster with both arms observed gives one difference
// d_s, the estimate is their plain mean, the interval is a t interval with
// G − 1 degrees of freedom (the cluster-level paired analysis, Donner &
// Klar 2000, Design and Analysis of Cluster Randomization Trials, ch. 6),
// clipped to [−1, 1], and the p-value is SignFlipP's (reps and seed are
// used above MaxExactSignFlip clusters). Conversations within a cluster are
// never treated as independent pairs, so a difference carried by 2
// scenarios out of 12 is not "significant" however many conversations they
// hold.
//
// The interval's standard error is at least the one that binomial sampling
// within the clusters alone would give (each arm's rate shrunk to
// (k+½)/(n+1)), so it is never zero-width when every cluster happens to show
// the same difference. Clusters missing an arm are skipped. It panics on
// counts that describe no possible data or conf outside (0, 1).
func ClusterDiff(cs []PairedCluster, conf float64, reps int, seed uint64) DiffResult {
	return StratifiedDiff([][]PairedCluster{cs}, conf, reps, seed)
}

// StratifiedDiff is ClusterDiff over several strata of clusters (e.g. the
// positive and the negative track, which never share a base scenario),
// each stratum weighted equally: the estimate is the mean of the strata's
// mean differences. The sign-flip test flips every cluster's weighted
// difference d_s/(K·G_k); the t interval uses the Welch–Satterthwaite
// degrees of freedom (DF is their floor). Empty strata are left out; a
// stratum with a single cluster leaves the interval undefined (NaN).
func StratifiedDiff(strata [][]PairedCluster, conf float64, reps int, seed uint64) DiffResult {
	checkConf("ClusterDiff", conf)
	type stratum struct {
		d        []float64
		floorVar float64
	}
	var kept []stratum
	total := 0
	for _, cs := range strata {
		var st stratum
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
	r := DiffResult{Mean: math.NaN(), Lo: math.NaN(), Hi: math.NaN(), P: 1, Clusters: total, Method: MethodSignFlipExact}
	if total > MaxExactSignFlip {
		r.Method = MethodSignFlipMonteCarlo
	}
	if total == 0 {
		return r
	}
	k := float64(len(kept))
	weighted := make([]float64, 0, total)
	var mean, variance, satDen float64
	definedVar := true
	for _, st := range kept {
		g := float64(len(st.d))
		m := 0.0
		for _, v := range st.d {
			m += v
			weighted = append(weighted, v/(k*g))
		}
		m /= g
		mean += m / k
		if len(st.d) < 2 {
			definedVar = false
			continue
		}
		ss := 0.0
		for _, v := range st.d {
			ss += (v - m) * (v - m)
		}
		// Variance of this stratum's share of the estimate.
		v := math.Max(ss/(g-1)/g, st.floorVar/(g*g)) / (k * k)
		variance += v
		satDen += v * v / (g - 1)
	}
	r.Mean = mean
	r.P, _ = SignFlipP(weighted, reps, seed)
	if !definedVar {
		return r
	}
	df := variance * variance / satDen
	r.DF = int(df)
	half := TQuantile((1+conf)/2, df) * math.Sqrt(variance)
	r.Lo, r.Hi = max(-1, mean-half), min(1, mean+half)
	return r
}
