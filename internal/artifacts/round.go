package artifacts

import (
	"math"
	"strconv"
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
