package stats

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/stat/distuv"
)

// ZQuantile returns the p-quantile of the standard normal distribution, e.g.
// ZQuantile(0.975) ≈ 1.959964. It delegates to gonum (Wichura's AS241
// algorithm) rather than a hand-rolled approximation so that every interval
// in this package shares one well-tested source of z values.
//
// ZQuantile(0) is -Inf and ZQuantile(1) is +Inf; it panics if p is outside
// [0, 1] or NaN.
func ZQuantile(p float64) float64 {
	if math.IsNaN(p) || p < 0 || p > 1 {
		panic(fmt.Sprintf("stats: ZQuantile: p = %v is outside [0, 1]", p))
	}
	return distuv.UnitNormal.Quantile(p)
}

// checkConf panics unless conf is a usable two-sided confidence level.
// A level of 0 or 1 would give an empty or unbounded interval, which is
// always a caller bug rather than a property of the data.
func checkConf(fn string, conf float64) {
	if !(conf > 0 && conf < 1) {
		panic(fmt.Sprintf("stats: %s: confidence level %v is outside (0, 1)", fn, conf))
	}
}
