package stats

import (
	"fmt"
	"math"
)

// DesignEffect is Kish's design effect 1 + (m − 1)·ρ for clusters of m
// conversations with intra-class correlation ρ: how many times more
// conversations a clustered study needs than one of independent
// conversations for the same precision.
func DesignEffect(m, icc float64) float64 { return 1 + (m-1)*icc }

// ExpectedHalfWidth is the planning half-width of a conf interval for a
// rate near p from g base scenarios of m conversations each with ICC icc:
// z · sqrt(p(1−p)·DEFF/(g·m)), the mean half-width of the cluster-score
// interval (ClusterRate) on studies of that design — its t quantile is
// wider than z, but its estimated design effect is below the true one
// more often than above, and the two cancel to within 3% from 5 scenarios
// up (TestExpectedHalfWidthAgainstSimulation). At p = 0 or 1,
// where the formula says 0, it is half the width of the interval of a study
// in which every conversation fails (or passes): ScoreInterval's Wilson
// interval on g·m/φ conversations, φ the design effect it assumes then.
// It is +Inf for
// g < 2. It panics on arguments that describe no study (m < 1, p or icc
// outside [0, 1], conf outside (0, 1)).
func ExpectedHalfWidth(g int, m, p, icc, conf float64) float64 {
	checkPlan("ExpectedHalfWidth", m, p, icc, conf)
	if g < 2 {
		return math.Inf(1)
	}
	if p == 0 || p == 1 {
		return allEqualHalfWidth(g, m, conf)
	}
	return ZQuantile((1+conf)/2) * math.Sqrt(p*(1-p)*DesignEffect(m, icc)/(float64(g)*m))
}

// allEqualHalfWidth is half the width of ScoreInterval's interval on g
// scenarios of m conversations that all fail.
func allEqualHalfWidth(g int, m, conf float64) float64 {
	phi := 1 + (m-1)*scoreAllEqualICC
	z := ZQuantile((1 + conf) / 2)
	q := tQuantileCached((1+conf)/2, satterthwaiteExcess(phi, float64(g)))
	_, hi := WilsonReal(0, float64(g)*m/phi*(z/q)*(z/q), conf)
	return hi / 2
}

// ScenariosNeeded is the smallest number of base scenarios g (≥ 2) whose
// ExpectedHalfWidth is at most halfWidth, or 0 when none up to maxScenarios
// is enough. Adding scenarios beats adding samples when icc is high: the
// design effect grows with m, so more conversations per scenario buy less.
func ScenariosNeeded(halfWidth, m, p, icc, conf float64) int {
	checkPlan("ScenariosNeeded", m, p, icc, conf)
	if !(halfWidth > 0) {
		panic(fmt.Sprintf("stats: ScenariosNeeded: half-width %v must be positive", halfWidth))
	}
	enough := func(g int) bool { return ExpectedHalfWidth(g, m, p, icc, conf) <= halfWidth }
	if !enough(maxScenarios) {
		return 0
	}
	// The half-width shrinks as scenarios are added: bisect for the first
	// g that is enough.
	lo, hi := 1, maxScenarios // enough(lo) false (g < 2 is +Inf), enough(hi) true
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if enough(mid) {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi
}

// maxScenarios bounds ScenariosNeeded's search.
const maxScenarios = 1_000_000

func checkPlan(fn string, m, p, icc, conf float64) {
	checkConf(fn, conf)
	if !(m >= 1) || !(p >= 0 && p <= 1) || !(icc >= 0 && icc <= 1) {
		panic(fmt.Sprintf("stats: %s: need m ≥ 1, p and icc in [0, 1]; got m=%v p=%v icc=%v", fn, m, p, icc))
	}
}
