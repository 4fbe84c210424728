package stats

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/stat/distuv"
)

// DesignEffect is Kish's design effect 1 + (m − 1)·ρ for clusters of m
// conversations with intra-class correlation ρ: how many times more
// conversations a clustered study needs than one of independent
// conversations for the same precision.
func DesignEffect(m, icc float64) float64 { return 1 + (m-1)*icc }

// ExpectedHalfWidth is the planning half-width of a conf interval for a
// rate near p from g base scenarios of m conversations each with ICC icc:
// the larger of
//
//   - the t formula t_{g−1} · sqrt(p(1−p)·DEFF/(g·m)), which sets the
//     width when few scenarios disagree, and
//   - half the width of BettingCI on a typical study of that design: g
//     scenario rates at the quantiles (i − ½)/g of the beta distribution
//     with the scenario rates' mean p and variance p(1−p)·DEFF/m (two
//     points 0 and 1 when that variance is p(1−p) or more).
//
// ClusterRate reports the hull of both (and a Wilson part that is rarely
// the widest), so this is what a user will see. In simulation
// (TestExpectedHalfWidthAgainstSimulation) it is within 10% of ClusterRate's
// mean half-width from 10 scenarios up. It is +Inf for g < 2. It panics on
// arguments that describe no study (m < 1, p or icc outside [0, 1], conf
// outside (0, 1)).
func ExpectedHalfWidth(g int, m, p, icc, conf float64) float64 {
	checkPlan("ExpectedHalfWidth", m, p, icc, conf)
	if g < 2 {
		return math.Inf(1)
	}
	return max(tHalfWidth(g, m, p, icc, conf), typicalBettingHalfWidth(g, m, p, icc, conf))
}

// tHalfWidth is the t formula of ExpectedHalfWidth.
func tHalfWidth(g int, m, p, icc, conf float64) float64 {
	gf := float64(g)
	return TQuantile((1+conf)/2, gf-1) * math.Sqrt(p*(1-p)*DesignEffect(m, icc)/(gf*m))
}

// maxTypicalStudy bounds the typical study BettingCI is run on: beyond it,
// the betting part is the t formula times the ratio of the two at
// maxTypicalStudy scenarios (the ratio shrinks slowly towards 1 as
// scenarios are added, so this overstates a little).
const maxTypicalStudy = 256

// typicalBettingHalfWidth is half of BettingCI's width on a typical study
// of the design (see ExpectedHalfWidth).
func typicalBettingHalfWidth(g int, m, p, icc, conf float64) float64 {
	if g > maxTypicalStudy {
		at := typicalBettingHalfWidth(maxTypicalStudy, m, p, icc, conf)
		if t := tHalfWidth(maxTypicalStudy, m, p, icc, conf); t > 0 {
			return at / t * tHalfWidth(g, m, p, icc, conf)
		}
		// p = 0 or 1: no spread, the betting width shrinks like 1/g.
		return at * maxTypicalStudy / float64(g)
	}
	cs := make([]ClusterSum, g)
	v := p * (1 - p) * DesignEffect(m, icc) / m
	for i := range cs {
		q := (float64(i) + 0.5) / float64(g)
		var x float64
		switch {
		case p == 0 || p == 1 || v == 0:
			x = p
		case v >= p*(1-p): // no beta has this variance: all or nothing
			if q > 1-p {
				x = 1
			}
		default:
			s := p*(1-p)/v - 1
			x = distuv.Beta{Alpha: p * s, Beta: (1 - p) * s}.Quantile(q)
		}
		cs[i] = ClusterSum{N: 1, Sum: x, SumSq: x * x}
	}
	// Interleave low and high quantiles, so the typical study does not
	// arrive sorted (BettingCI reorders it anyway).
	for i, j := 1, len(cs)-1; i < j; i, j = i+2, j-2 {
		cs[i], cs[j] = cs[j], cs[i]
	}
	lo, hi := BettingCI(cs, conf)
	return (hi - lo) / 2
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
