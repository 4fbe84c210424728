package stats

import (
	"fmt"
	"math"
)

// Method names recorded in Interval.Method, so that a report can say how
// each interval was obtained.
const (
	MethodWilson           = "wilson"
	MethodClusterBootstrap = "cluster-bootstrap-percentile"
	MethodPairedBootstrap  = "paired-bootstrap-percentile"
)

// Interval is a point estimate with a two-sided confidence interval and the
// provenance needed to reproduce it.
type Interval struct {
	Estimate float64 `json:"estimate"` // point estimate (NaN when there is no data)
	Lo       float64 `json:"lo"`       // lower confidence limit
	Hi       float64 `json:"hi"`       // upper confidence limit
	N        int     `json:"n"`        // number of trials (conversations, or items for paired statistics)
	Clusters int     `json:"clusters"` // number of independent units resampled
	Reps     int     `json:"reps"`     // bootstrap replicates (0 for closed-form intervals)
	Seed     uint64  `json:"seed"`     // bootstrap seed (0 for closed-form intervals)
	Method   string  `json:"method"`   // one of the Method* constants
}

// Wilson returns the Wilson score interval for k successes in n independent
// trials at two-sided confidence level conf (e.g. 0.95).
//
// Wilson is preferred over the textbook "p ± z·SE" (Wald) interval because it
// stays inside [0, 1] and keeps close to nominal coverage for small n and for
// pass rates near 0% or 100%, which are common in behavioural benchmarks
// (Newcombe 1998, Statistics in Medicine 17:857-872).
//
// With n = 0 there is no information, so the interval is the whole range:
// lo = 0, hi = 1. Wilson panics if k < 0, n < 0, k > n or conf is not in
// (0, 1).
func Wilson(k, n int, conf float64) (lo, hi float64) {
	checkConf("Wilson", conf)
	if k < 0 || n < 0 || k > n {
		panic(fmt.Sprintf("stats: Wilson: invalid counts k=%d n=%d", k, n))
	}
	if n == 0 {
		return 0, 1
	}
	z := ZQuantile((1 + conf) / 2)
	nf := float64(n)
	p := float64(k) / nf
	z2n := z * z / nf
	denom := 1 + z2n
	center := (p + z2n/2) / denom
	half := z / denom * math.Sqrt(p*(1-p)/nf+z2n/(4*nf))
	lo, hi = center-half, center+half
	// At k = 0 or k = n the exact limit is 0 or 1; pin it so rounding noise
	// (≈1e-17) never shows up as "0.0000001%" in a report.
	if k == 0 {
		lo = 0
	}
	if k == n {
		hi = 1
	}
	return math.Max(lo, 0), math.Min(hi, 1)
}

// WilsonInterval is Wilson packaged as an Interval, so that reports can mix
// closed-form and bootstrap intervals. Estimate is k/n (NaN when n = 0) and
// Clusters equals N, because Wilson treats every trial as independent.
func WilsonInterval(k, n int, conf float64) Interval {
	lo, hi := Wilson(k, n, conf)
	est := math.NaN()
	if n > 0 {
		est = float64(k) / float64(n)
	}
	return Interval{Estimate: est, Lo: lo, Hi: hi, N: n, Clusters: n, Method: MethodWilson}
}
