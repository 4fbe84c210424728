package stats

import "math"

// RoganGladen is the corrected prevalence (p + Sp − 1)/(Se + Sp − 1),
// clipped to [0, 1], for an observed "present" share p; NaN unless
// Se + Sp > 1 (an informative judge).
func RoganGladen(p, se, sp float64) float64 {
	j := se + sp - 1
	if !(j > 0) {
		return math.NaN()
	}
	return max(0, min(1, (p+sp-1)/j))
}

// RoganGladenUnclipped is (p + Sp − 1)/(Se + Sp − 1) before clipping to
// [0, 1]: outside it when the observed share is beyond what a judge with
// that Se and Sp can report (NaN unless Se + Sp > 1).
func RoganGladenUnclipped(p, se, sp float64) float64 {
	j := se + sp - 1
	if !(j > 0) {
		return math.NaN()
	}
	return (p + sp - 1) / j
}

// Corrected is a judge-error-corrected prevalence and its interval.
// Unclipped is the estimate before clipping to [0, 1] (equal to Estimate
// unless the correction left the unit interval): a clipped 1.00 that was
// 1.116 says the judge's sensitivity was underestimated, or the rate is at
// its bound, and must not be read as an exact 100 %.
type Corrected struct {
	Estimate, Lo, Hi float64
	Unclipped        float64
	Method           string
}

// RoganGladenInterval corrects an observed "present" share p (with its
// interval pLo..pHi, e.g. a cluster interval over base scenarios) for a
// judge of sensitivity se and specificity sp (with their intervals and the
// correlation corr of the two estimates, from Calibrate).
//
// The interval is Fieller's for the ratio π = (p + Sp − 1)/(Se + Sp − 1):
// the prevalences π at which f(π) = p − [π·Se + (1 − π)(1 − Sp)], the
// observed share minus the share a judge with that Se and Sp would report,
// is within its own uncertainty of 0. f is linear in each input, so its
// uncertainty at π is MOVER's: each input's distance to its own limit on
// the side that moves f towards 0, weighted by its coefficient (1, π,
// 1 − π), added in quadrature with the Se/Sp correlation. Unlike a delta
// interval it is asymmetric where Se + Sp − 1 is uncertain, as it must be:
// the correction then divides by a small and uncertain number. It is
// bounded only when Se + Sp − 1 is clearly above 0 (see
// Calibration.YoudenLo); with se + sp ≤ 1 the result is NaN.
func RoganGladenInterval(p, pLo, pHi float64, se, sp Share, corr float64) Corrected {
	out := Corrected{Estimate: math.NaN(), Lo: math.NaN(), Hi: math.NaN(), Unclipped: math.NaN(), Method: MethodRoganGladenFieller}
	if math.IsNaN(p) || math.IsNaN(se.Estimate) || math.IsNaN(sp.Estimate) || !(se.Estimate+sp.Estimate > 1) {
		return out
	}
	f := func(pi float64) float64 { return p - (pi*se.Estimate + (1-pi)*(1-sp.Estimate)) }
	d := func(pi, dp, dse, dsp float64) float64 {
		v := dp*dp + pi*pi*dse*dse + (1-pi)*(1-pi)*dsp*dsp - 2*corr*pi*(1-pi)*dse*dsp
		return math.Sqrt(max(0, v))
	}
	// Lower limit: could π be this small? Only if p is lower, Se higher
	// or Sp lower than estimated.
	lowOK := func(pi float64) bool { return f(pi) <= d(pi, p-pLo, se.Hi-se.Estimate, sp.Estimate-sp.Lo) }
	// Upper limit: p higher, Se lower or Sp higher.
	highOK := func(pi float64) bool { return f(pi) >= -d(pi, pHi-p, se.Estimate-se.Lo, sp.Hi-sp.Estimate) }
	est := RoganGladen(p, se.Estimate, sp.Estimate)
	out.Unclipped = RoganGladenUnclipped(p, se.Estimate, sp.Estimate)
	lo, hi := boundary(lowOK, true), boundary(highOK, false)
	if math.IsNaN(lo) { // even π = 1 is too small for p: the estimate is clipped at 1
		lo = est
	}
	if math.IsNaN(hi) {
		hi = est
	}
	out.Estimate, out.Lo, out.Hi = est, min(lo, est), max(hi, est)
	return out
}

// boundary finds, on [0, 1], the smallest π where ok holds (first) or the
// largest (!first): a grid of 1,000 steps, then bisection to 1e-9.
func boundary(ok func(float64) bool, first bool) float64 {
	const steps = 1000
	at := func(i int) float64 {
		if first {
			return float64(i) / steps
		}
		return 1 - float64(i)/steps
	}
	if ok(at(0)) {
		return at(0)
	}
	for i := 1; i <= steps; i++ {
		if !ok(at(i)) {
			continue
		}
		a, b := at(i-1), at(i) // ok fails at a, holds at b
		for range 40 {
			m := (a + b) / 2
			if ok(m) {
				b = m
			} else {
				a = m
			}
		}
		return b
	}
	// Nowhere: the data contradict every prevalence at this level (p far
	// outside what the judge could report); the estimate is clipped.
	return math.NaN()
}

// CorrectedPart is one metric's corrected rate within a track.
type CorrectedPart struct {
	// Weight is the metric's share of the track's rows.
	Weight           float64
	Estimate, Lo, Hi float64
	// Group names the calibration the correction used: parts that share
	// one (a sensitivity and specificity pooled over several metrics) err
	// together, so their distances add, while independent groups add in
	// quadrature.
	Group string
}

// CombineCorrected is Σ Weight·Estimate with a MOVER interval: within a
// group the distances to the limits add linearly (the parts share one
// calibration: perfectly correlated, the conservative bound), across
// groups in quadrature (independent labels and base scenarios). NaN when a
// part is.
func CombineCorrected(parts []CorrectedPart) Corrected {
	out := Corrected{Method: "weighted mean of the metrics' corrected rates; mover (linear within a shared calibration, quadrature across)"}
	byGroup := map[string]*[2]float64{}
	var groups []string
	var est float64
	for _, pt := range parts {
		if math.IsNaN(pt.Estimate) || math.IsNaN(pt.Lo) || math.IsNaN(pt.Hi) {
			out.Estimate, out.Lo, out.Hi, out.Unclipped = math.NaN(), math.NaN(), math.NaN(), math.NaN()
			return out
		}
		est += pt.Weight * pt.Estimate
		g := byGroup[pt.Group]
		if g == nil {
			g = &[2]float64{}
			byGroup[pt.Group] = g
			groups = append(groups, pt.Group)
		}
		g[0] += pt.Weight * (pt.Estimate - pt.Lo)
		g[1] += pt.Weight * (pt.Hi - pt.Estimate)
	}
	var lo2, hi2 float64
	for _, k := range groups {
		lo2 += sq(byGroup[k][0])
		hi2 += sq(byGroup[k][1])
	}
	out.Estimate, out.Unclipped = max(0, min(1, est)), est
	out.Lo = max(0, min(1, est-math.Sqrt(lo2)))
	out.Hi = max(0, min(1, est+math.Sqrt(hi2)))
	return out
}
