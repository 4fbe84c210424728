package stats

import (
	"cmp"
	"fmt"
	"math"
	"slices"
)

// Holm returns Holm–Bonferroni adjusted p-values (Holm 1979, Scand J Statist
// 6:65-70), in the input order. Rejecting every hypothesis whose adjusted
// p-value is ≤ α keeps the chance of even one false alarm across the whole
// family at most α, with more power than plain Bonferroni. Adjusted values
// are monotone in the raw p-values and capped at 1 (as R's p.adjust "holm").
//
// NaN entries are treated as missing: they stay NaN and do not count towards
// the number of tests. It panics on p-values outside [0, 1].
func Holm(ps []float64) []float64 {
	out, order := prepareAdjust("Holm", ps)
	m := float64(len(order))
	running := 0.0
	// Step down from the smallest p: multiply the r-th smallest by m−r and
	// carry the running maximum so a larger raw p never gets a smaller
	// adjusted one.
	for r, i := range order {
		running = math.Max(running, math.Min(1, (m-float64(r))*ps[i]))
		out[i] = running
	}
	return out
}

// BenjaminiHochberg returns Benjamini–Hochberg adjusted p-values ("q-values",
// Benjamini & Hochberg 1995, JRSS B 57:289-300), in the input order.
// Rejecting every hypothesis with adjusted p ≤ q keeps the expected share of
// false discoveries among the rejections at most q. It is less strict than
// Holm and suits screening many comparisons. Conventions as for Holm
// (R's p.adjust "BH").
func BenjaminiHochberg(ps []float64) []float64 {
	out, order := prepareAdjust("BenjaminiHochberg", ps)
	m := float64(len(order))
	running := 1.0
	// Step up from the largest p: scale the r-th smallest (1-based) by m/r and
	// carry the running minimum.
	for r := len(order) - 1; r >= 0; r-- {
		i := order[r]
		running = math.Min(running, math.Min(1, m/float64(r+1)*ps[i]))
		out[i] = running
	}
	return out
}

// prepareAdjust validates ps, returns an output slice pre-filled with NaN and
// the indices of the non-NaN p-values sorted by increasing p.
func prepareAdjust(fn string, ps []float64) (out []float64, order []int) {
	out = make([]float64, len(ps))
	order = make([]int, 0, len(ps))
	for i, p := range ps {
		out[i] = math.NaN()
		if math.IsNaN(p) {
			continue
		}
		if p < 0 || p > 1 {
			panic(fmt.Sprintf("stats: %s: p-value %v at index %d is outside [0, 1]", fn, p, i))
		}
		order = append(order, i)
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(ps[a], ps[b]) })
	return out, order
}
