package stats

import (
	"errors"
	"fmt"
	"math"
)

// Errors returned for malformed agreement input. They are wrapped with
// details (row index, lengths); test with errors.Is.
var (
	ErrEmpty          = errors.New("stats: no data")
	ErrLengthMismatch = errors.New("stats: inputs have different lengths")
	ErrBadCounts      = errors.New("stats: invalid count table")
)

// FleissKappa measures agreement among a fixed number of raters who each put
// every subject into one of several categories, corrected for the agreement
// expected by chance (Fleiss 1971, Psychological Bulletin 76(5):378-382).
// counts[i][j] is how many raters put subject i in category j; every row must
// have the same length and the same sum n ≥ 2 (the number of raters).
//
// κ = 1 is perfect agreement, 0 is what chance alone would give, negative
// values are worse than chance.
//
// Single-category convention: if every rating of every subject falls in the
// same category, chance agreement is already 100% and κ = 0/0 is undefined;
// FleissKappa then returns NaN with a nil error. Report RawAgreement-style
// figures (here: 100%) instead of a kappa in that case.
func FleissKappa(counts [][]int) (float64, error) {
	if len(counts) == 0 {
		return math.NaN(), fmt.Errorf("FleissKappa: %w", ErrEmpty)
	}
	k := len(counts[0])
	if k == 0 {
		return math.NaN(), fmt.Errorf("FleissKappa: %w: no categories", ErrBadCounts)
	}
	raters := 0
	for _, c := range counts[0] {
		raters += c
	}
	if raters < 2 {
		return math.NaN(), fmt.Errorf("FleissKappa: %w: %d raters per subject, need at least 2", ErrBadCounts, raters)
	}

	colSum := make([]int, k)
	sumSq := 0 // Σ_i Σ_j counts[i][j]², the raw material of observed agreement
	for i, row := range counts {
		if len(row) != k {
			return math.NaN(), fmt.Errorf("FleissKappa: %w: row %d has %d categories, row 0 has %d", ErrBadCounts, i, len(row), k)
		}
		rowSum := 0
		for j, c := range row {
			if c < 0 {
				return math.NaN(), fmt.Errorf("FleissKappa: %w: negative count at row %d, column %d", ErrBadCounts, i, j)
			}
			rowSum += c
			colSum[j] += c
			sumSq += c * c
		}
		if rowSum != raters {
			return math.NaN(), fmt.Errorf("FleissKappa: %w: row %d sums to %d raters, row 0 to %d", ErrBadCounts, i, rowSum, raters)
		}
	}

	used := 0
	for _, s := range colSum {
		if s > 0 {
			used++
		}
	}
	if used == 1 {
		return math.NaN(), nil // single-category convention, see doc comment
	}

	subjects := float64(len(counts))
	n := float64(raters)
	total := subjects * n
	// Mean over subjects of P_i = (Σ_j n_ij² − n) / (n(n−1)): the share of
	// rater pairs that agree on subject i.
	pBar := (float64(sumSq) - total) / (subjects * n * (n - 1))
	pE := 0.0
	for _, s := range colSum {
		p := float64(s) / total
		pE += p * p
	}
	return (pBar - pE) / (1 - pE), nil
}

// CohenKappa measures agreement between two raters who labelled the same
// items (a[i] and b[i] are their labels for item i; labels are arbitrary
// category codes), corrected for chance using each rater's own label
// frequencies (Cohen 1960, Educational and Psychological Measurement 20:37-46).
//
// Errors: ErrEmpty for no items, ErrLengthMismatch if len(a) != len(b).
// If both raters used one and the same label for every item, chance
// agreement is 100% and κ is undefined: NaN with a nil error, as in
// FleissKappa.
func CohenKappa(a, b []int) (float64, error) {
	po, err := RawAgreement(a, b)
	if err != nil {
		return math.NaN(), fmt.Errorf("CohenKappa: %w", err)
	}
	n := float64(len(a))
	countA, countB := labelCounts(a), labelCounts(b)
	pe := 0.0
	for label, ca := range countA {
		pe += float64(ca) / n * float64(countB[label]) / n
	}
	if len(countA) == 1 && len(countB) == 1 && pe == 1 {
		return math.NaN(), nil
	}
	return (po - pe) / (1 - pe), nil
}

// RawAgreement is the share of items on which two raters gave the same label,
// with no correction for chance. Errors as for CohenKappa.
func RawAgreement(a, b []int) (float64, error) {
	if len(a) != len(b) {
		return math.NaN(), fmt.Errorf("%w: %d vs %d", ErrLengthMismatch, len(a), len(b))
	}
	if len(a) == 0 {
		return math.NaN(), ErrEmpty
	}
	same := 0
	for i := range a {
		if a[i] == b[i] {
			same++
		}
	}
	return float64(same) / float64(len(a)), nil
}

// labelCounts tallies how often each label occurs.
func labelCounts(xs []int) map[int]int {
	m := make(map[int]int)
	for _, x := range xs {
		m[x]++
	}
	return m
}

// Unanimity reports how many groups are unanimous, i.e. all members have the
// same outcome (all pass or all fail). A group is typically the demographic
// variants of one base scenario: a non-unanimous group is one where the
// demographic change flipped the outcome.
//
// Groups with fewer than two members cannot disagree and are skipped, so they
// count towards neither unanimous nor total. If no group has two members,
// share is NaN.
func Unanimity(groups [][]bool) (share float64, unanimous, total int) {
	for _, g := range groups {
		if len(g) < 2 {
			continue
		}
		total++
		if allEqual(g) {
			unanimous++
		}
	}
	if total == 0 {
		return math.NaN(), 0, 0
	}
	return float64(unanimous) / float64(total), unanimous, total
}

// allEqual reports whether every element of non-empty g equals g[0].
func allEqual(g []bool) bool {
	for _, v := range g[1:] {
		if v != g[0] {
			return false
		}
	}
	return true
}
