package stats

import "strconv"

// alphaOf is the significance level 1 − conf as it is written: 1 − 0.95
// is 0.050000000000000044 in floating point, and a test at that level
// calls p = 0.05 significant while "p < 0.05" does not. Rounding to 12
// significant digits gives back the level the caller meant (0.05).
func alphaOf(conf float64) float64 {
	a, err := strconv.ParseFloat(strconv.FormatFloat(1-conf, 'g', 12, 64), 64)
	if err != nil {
		return 1 - conf
	}
	return a
}
