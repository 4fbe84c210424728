package artifacts

import (
	"math"
	"strconv"
	"strings"
)

// Round rounds x to nd decimal places the way Python's round(x, nd) does:
// correctly rounded on the exact binary value (half-to-even only on exact
// ties), so 2.675 → 2.67 and 2/3 → 0.6667. strconv's 'f' formatting has the
// same semantics, so we round through it.
func Round(x float64, nd int) float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return x
	}
	v, err := strconv.ParseFloat(strconv.FormatFloat(x, 'f', nd, 64), 64)
	if err != nil {
		return x
	}
	return v
}

// Display: every printed number is rounded once, from the unrounded value
// (study.json stores them unrounded for that reason: a value rounded to 4
// places and printed with 3 is rounded twice, 0.190476 → 0.1905 → 0.191).

// Fixed is x with nd decimals, rounded once from x (strconv rounds the
// exact binary value, as JavaScript's toFixed does). signed adds a "+" to
// positive values.
func Fixed(x float64, nd int, signed bool) string {
	s := strconv.FormatFloat(x, 'f', nd, 64)
	if signed && x >= 0 && !math.Signbit(x) {
		s = "+" + s
	}
	return s
}

// Limit is an interval limit with nd decimals, except that a limit that
// is not 0 never prints as 0: it keeps two significant digits (0.00003),
// so an interval that excludes 0 visibly does.
func Limit(x float64, nd int, signed bool) string {
	s := Fixed(x, nd, signed)
	if x == 0 || math.IsNaN(x) || strings.Trim(s, "+-0.") != "" {
		return s
	}
	digits := nd + 1
	for strings.Trim(Fixed(x, digits, false), "-0.") == "" {
		digits++
	}
	return Fixed(x, digits+1, signed)
}

// PValue is p with nd decimals ("< 0.001" below 10^-nd), never printed on
// the other side of alpha from its value: 0.049996 is "0.049996", not
// "0.050", and 0.05 is "0.050".
func PValue(p, alpha float64, nd int) string {
	if math.IsNaN(p) {
		return "n/a"
	}
	if floor := math.Pow(10, -float64(nd)); p < floor && floor <= alpha {
		return "< " + Fixed(floor, nd, false)
	}
	for digits := nd; digits <= 17; digits++ {
		s := Fixed(p, digits, false)
		if v, err := strconv.ParseFloat(s, 64); err == nil && (v < alpha) == (p < alpha) {
			return s
		}
	}
	return strconv.FormatFloat(p, 'g', -1, 64)
}
