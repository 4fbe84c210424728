package stats

import "math"

// PlanStratum is one judge verdict of a metric, as a labelling plan sees
// it: the study's rows with that verdict, how many are labelled (or would
// be), and the share of them the humans call present (PPV for the
// "present" verdict, the false omission rate for "absent").
type PlanStratum struct {
	Judge        bool
	Rows         int
	Labelled     int
	HumanPresent float64
}

// ExpectedCalibration is the variance Calibrate would give the judge's
// sensitivity and specificity (the same linearisation), and their
// covariance, if each stratum had Labelled labels with the humans saying
// present at the rate HumanPresent; se and sp are the values those rates
// imply. A stratum with rows but no labels makes the variances +Inf.
func ExpectedCalibration(strata []PlanStratum, deff float64) (se, sp, vSe, vSp, cov float64) {
	if deff < 1 {
		deff = 1
	}
	var total float64
	for _, s := range strata {
		total += float64(s.Rows)
	}
	cells := make([]stratumCells, 0, len(strata))
	for _, s := range strata {
		if s.Rows == 0 {
			continue
		}
		if s.Labelled <= 0 {
			return math.NaN(), math.NaN(), math.Inf(1), math.Inf(1), 0
		}
		c := stratumCells{share: float64(s.Rows) / total, n: float64(s.Labelled)}
		h := min(1, max(0, s.HumanPresent))
		c.p[1][b2int(s.Judge)], c.p[0][b2int(s.Judge)] = h, 1-h
		cells = append(cells, c)
	}
	g1, v1, r1 := ratioParts(cells, true)
	g0, v0, r0 := ratioParts(cells, false)
	if g1 == nil || g0 == nil {
		return r1, r0, math.Inf(1), math.Inf(1), 0
	}
	vSe, vSp = ratioVar(cells, g1, v1, total, deff), ratioVar(cells, g0, v0, total, deff)
	var lab, a, b, ab float64
	for k, s := range cells {
		lab += s.share * s.share * (-g1[k] * g0[k]) / s.n
		a += s.share * g1[k]
		b += s.share * g0[k]
		ab += s.share * g1[k] * g0[k]
	}
	cov = lab + deff*(ab-a*b)/total
	return r1, r0, vSe, vSp, cov
}

// RoganGladenHalfWidth is the expected 95 % (conf) half-width of a
// Rogan–Gladen correction of an observed share p whose own interval has
// half-width pHalf, by the delta method: Var π ≈ [Var p + π²·Var Se +
// (1 − π)²·Var Sp − 2π(1 − π)·Cov] / (Se + Sp − 1)². Planning only: the
// reported interval (RoganGladenInterval) is asymmetric and somewhat wider.
func RoganGladenHalfWidth(p, pHalf, se, sp, vSe, vSp, cov, conf float64) float64 {
	checkConf("RoganGladenHalfWidth", conf)
	j := se + sp - 1
	if !(j > 0) || math.IsInf(vSe, 1) || math.IsInf(vSp, 1) {
		return math.Inf(1)
	}
	z := ZQuantile((1 + conf) / 2)
	pi := RoganGladen(p, se, sp)
	v := sq(pHalf/z) + pi*pi*vSe + (1-pi)*(1-pi)*vSp - 2*pi*(1-pi)*cov
	return z * math.Sqrt(max(0, v)) / j
}
