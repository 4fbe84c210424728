package stats

import (
	"fmt"
	"math"
)

// MethodSampledAudit names SampledValidRate's interval.
const MethodSampledAudit = "stratified: flagged and suspect strata audited in full, the rest sampled, exact hypergeometric interval"

// SampledRate is a valid-rollout rate whose audit read every flagged
// conversation and a random sample of the others.
type SampledRate struct {
	// Estimate, Lo and Hi are the share of the N conversations that are
	// valid: its estimate and its interval at Conf.
	Estimate, Lo, Hi, Conf float64
	N                      int
	// Known conversations have a known verdict (flagged, or sampled),
	// KnownValid of them valid. Sampled is the unflagged conversations
	// drawn, SampledPass those whose first attempt passed the audit;
	// Unsampled the unflagged ones not drawn (valid by the turn checks).
	Known, KnownValid, Sampled, SampledPass, Unsampled int
	Method                                             string
}

// SampledValidRate estimates the share of N = known + unsampled
// conversations that are valid when the flagged ones and a random sample
// of the unflagged ones were audited. The unflagged stratum is U = sampled
// + unsampled conversations, K of whose first attempts would pass the
// audit; an unsampled conversation is kept as its first attempt, so the
// valid count is knownValid + K − sampledPass, and only K is unknown. The
// sample, drawn independently per conversation, is given its size a simple
// random sample of U, so sampledPass is hypergeometric(U, K, sampled): the
// interval is the exact one for K (every K whose two one-sided tail
// probabilities exceed (1 − conf)/2), which covers at least conf for every
// K. The estimate puts the sample's pass share on the unsampled rows. With
// no sample the interval is every count the unsampled rows allow.
func SampledValidRate(known, knownValid, sampled, sampledPass, unsampled int, conf float64) SampledRate {
	checkConf("SampledValidRate", conf)
	if known < 0 || knownValid < 0 || knownValid > known || sampledPass < 0 || sampledPass > sampled || sampled > known || unsampled < 0 {
		panic(fmt.Sprintf("stats: SampledValidRate: invalid counts known=%d valid=%d sampled=%d pass=%d unsampled=%d", known, knownValid, sampled, sampledPass, unsampled))
	}
	r := SampledRate{Conf: conf, N: known + unsampled, Known: known, KnownValid: knownValid, Sampled: sampled,
		SampledPass: sampledPass, Unsampled: unsampled, Method: MethodSampledAudit}
	if r.N == 0 {
		r.Estimate, r.Lo, r.Hi = math.NaN(), 0, 1
		return r
	}
	n := float64(r.N)
	if sampled == 0 {
		r.Lo, r.Hi = float64(knownValid)/n, float64(knownValid+unsampled)/n
		r.Estimate = (r.Lo + r.Hi) / 2
		return r
	}
	kLo, kHi := hypergeometricInterval(sampled+unsampled, sampled, sampledPass, (1-conf)/2)
	r.Estimate = (float64(knownValid) + float64(unsampled)*float64(sampledPass)/float64(sampled)) / n
	r.Lo = float64(knownValid+kLo-sampledPass) / n
	r.Hi = float64(knownValid+kHi-sampledPass) / n
	return r
}

// hypergeometricInterval is the exact interval for K, the successes in a
// population of u, from x successes in a simple random sample of n: the
// smallest K with P(X ≥ x) > a and the largest with P(X ≤ x) > a. Both
// tails are monotone in K, so each end is a bisection. gonum has no
// hypergeometric distribution; the tails are summed from log-gamma terms.
func hypergeometricInterval(u, n, x int, a float64) (lo, hi int) {
	// K ranges over [x, u − (n − x)]: K ≥ x successes were seen and n − x
	// failures.
	minK, maxK := x, u-(n-x)
	lo = minK + searchFirst(maxK-minK+1, func(i int) bool { return hyperUpper(u, n, minK+i, x) > a })
	hi = maxK - searchFirst(maxK-minK+1, func(i int) bool { return hyperLower(u, n, maxK-i, x) > a })
	return lo, hi
}

// searchFirst is the first i in [0, n) with ok(i) (ok monotone false→true),
// n when none; the last index always holds here (a tail at its extreme K
// is 1).
func searchFirst(n int, ok func(int) bool) int {
	i, j := 0, n
	for i < j {
		h := int(uint(i+j) >> 1)
		if !ok(h) {
			i = h + 1
		} else {
			j = h
		}
	}
	return i
}

// hyperUpper is P(X ≥ x) and hyperLower P(X ≤ x) for X ~
// hypergeometric(population u, successes k, draws n).
func hyperUpper(u, n, k, x int) float64 {
	s := 0.0
	for j := x; j <= min(n, k); j++ {
		s += hyperPMF(u, n, k, j)
	}
	return s
}

func hyperLower(u, n, k, x int) float64 {
	s := 0.0
	for j := max(0, n-(u-k)); j <= x; j++ {
		s += hyperPMF(u, n, k, j)
	}
	return s
}

func hyperPMF(u, n, k, j int) float64 {
	if j < 0 || j > k || n-j > u-k || j > n {
		return 0
	}
	return math.Exp(logChoose(k, j) + logChoose(u-k, n-j) - logChoose(u, n))
}

func logChoose(n, k int) float64 {
	a, _ := math.Lgamma(float64(n + 1))
	b, _ := math.Lgamma(float64(k + 1))
	c, _ := math.Lgamma(float64(n - k + 1))
	return a - b - c
}
