package compare

import (
	"math"

	"github.com/impactbench/impactbench/internal/stats"
)

// MethodMOVER names the interval of a difference of two rates.
const MethodMOVER = "MOVER"

// moverDiff is x − y with the MOVER interval ("method of variance
// estimates recovery": Newcombe 1998, Stat Med 17:873; Zou & Donner 2008,
// Stat Med 27:1693), built from each rate's own interval:
//
//	L = d − √((x − lₓ)² + (u_y − y)²),  U = d + √((uₓ − x)² + (y − l_y)²)
//
// With Wilson intervals for the parts this is Newcombe's hybrid score
// interval; here the parts are stats.ClusterRate intervals, so the
// difference inherits their honesty with few base scenarios and is never
// zero-width when either part has data. It assumes the two rates are
// independent; rates measured on the same scenarios are positively
// correlated, which makes it conservative (TestMOVERCoverage). Clipped to
// [−1, 1].
func moverDiff(x, y stats.RateInterval) (est, lo, hi float64) {
	est = x.Estimate - y.Estimate
	lo = est - math.Hypot(x.Estimate-x.Lo, y.Hi-y.Estimate)
	hi = est + math.Hypot(x.Hi-x.Estimate, y.Estimate-y.Lo)
	return est, max(-1, lo), min(1, hi)
}
