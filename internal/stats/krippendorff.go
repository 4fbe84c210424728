package stats

import "math"

// KrippendorffAlpha is Krippendorff's α for nominal data (Krippendorff
// 2011, "Computing Krippendorff's Alpha-Reliability", §C): 1 − D_o/D_e, the
// observed disagreement between any two values given to the same unit over
// the disagreement expected from the values' overall frequencies. It
// handles any number of raters and missing ratings: units[u] lists only the
// values unit u actually received (a null verdict is simply left out), and
// units with fewer than two values cannot be paired and are ignored.
//
// Values are arbitrary category codes (e.g. 1 = present, 0 = absent).
// pairable is the number of values in units with at least two. α is NaN
// when it is undefined: no pairable unit, or every pairable value in one
// category (no disagreement is possible, D_e = 0). Like κ, 1 is perfect
// agreement and 0 chance level; unlike κ it does not need every rater on
// every unit.
func KrippendorffAlpha(units [][]int) (alpha float64, pairable int) {
	// The coincidence matrix: o[c][k] = Σ_u (pairs c–k in u)/(m_u − 1).
	// Only its diagonal and margins are needed for nominal data.
	margin := map[int]float64{}
	var agree float64 // Σ_c o[c][c]
	for _, u := range units {
		m := len(u)
		if m < 2 {
			continue
		}
		pairable += m
		counts := map[int]int{}
		for _, v := range u {
			counts[v]++
		}
		for c, n := range counts {
			margin[c] += float64(n)
			agree += float64(n*(n-1)) / float64(m-1)
		}
	}
	if pairable == 0 {
		return math.NaN(), 0
	}
	n := float64(pairable)
	observed := n - agree // Σ_{c≠k} o[c][k]
	var sumSq float64
	for _, nc := range margin {
		sumSq += nc * nc
	}
	expected := (n*n - sumSq) / (n - 1) // Σ_{c≠k} n_c·n_k / (n − 1)
	if expected == 0 {
		return math.NaN(), pairable
	}
	return 1 - observed/expected, pairable
}
