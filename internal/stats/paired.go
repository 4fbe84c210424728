package stats

import (
	"fmt"

	"gonum.org/v1/gonum/stat/distuv"
)

// McNemarExact is the exact (conditional) McNemar test for paired pass/fail
// outcomes, e.g. the same scenario answered under two demographic variants.
// Only discordant pairs carry information: b pairs where the first variant
// passed and the second failed, c pairs the other way round. Under "no
// difference" each discordant pair is a fair coin flip, so the two-sided
// p-value is min(1, 2·P(X ≤ min(b, c))) with X ~ Binomial(b+c, 1/2)
// (see Fagerland, Lydersen & Laake 2013, BMC Med Res Methodol 13:91).
//
// With no discordant pairs (b + c = 0) there is no evidence of a difference
// and the p-value is 1. It panics if b or c is negative.
func McNemarExact(b, c int) float64 {
	if b < 0 || c < 0 {
		panic(fmt.Sprintf("stats: McNemarExact: negative count b=%d c=%d", b, c))
	}
	n := b + c
	if n == 0 {
		return 1
	}
	tail := distuv.Binomial{N: float64(n), P: 0.5}.CDF(float64(min(b, c)))
	return min(1, 2*tail)
}

// SignTest is the two-sided exact sign test: pos and neg are the numbers of
// positive and negative paired differences (ties dropped). It is the same
// computation as McNemarExact and exists so call sites read naturally.
func SignTest(pos, neg int) float64 { return McNemarExact(pos, neg) }

// PairTest is one pairwise McNemar comparison between variants I and J.
type PairTest struct {
	I, J int     // column indices of the two variants, I < J
	B    int     // rows where I passed and J failed
	C    int     // rows where I failed and J passed
	P    float64 // unadjusted exact McNemar p-value
	PAdj float64 // Holm-adjusted p-value across all pairs
}

// PairwiseMcNemar compares every pair of variants (e.g. demographic values)
// with McNemarExact and adjusts the p-values with Holm, so that testing many
// pairs does not inflate the chance of a false alarm. outcomes[r][v] is the
// pass/fail result of variant v on matched unit r (e.g. one base scenario);
// every row must have the same number of variants, at least 2.
//
// McNemar assumes the rows are independent. If several rows come from the
// same base scenario (repeated samples), collapse them first (e.g. one row
// per scenario) or the p-values will be too small.
//
// Results are ordered (0,1), (0,2), …, (1,2), …
func PairwiseMcNemar(outcomes [][]bool) ([]PairTest, error) {
	if len(outcomes) == 0 {
		return nil, fmt.Errorf("PairwiseMcNemar: %w", ErrEmpty)
	}
	v := len(outcomes[0])
	if v < 2 {
		return nil, fmt.Errorf("PairwiseMcNemar: %w: %d variants, need at least 2", ErrBadCounts, v)
	}
	for r, row := range outcomes {
		if len(row) != v {
			return nil, fmt.Errorf("PairwiseMcNemar: %w: row %d has %d variants, row 0 has %d", ErrLengthMismatch, r, len(row), v)
		}
	}
	var tests []PairTest
	for i := 0; i < v; i++ {
		for j := i + 1; j < v; j++ {
			t := PairTest{I: i, J: j}
			for _, row := range outcomes {
				switch {
				case row[i] && !row[j]:
					t.B++
				case !row[i] && row[j]:
					t.C++
				}
			}
			t.P = McNemarExact(t.B, t.C)
			tests = append(tests, t)
		}
	}
	ps := make([]float64, len(tests))
	for i, t := range tests {
		ps[i] = t.P
	}
	for i, p := range Holm(ps) {
		tests[i].PAdj = p
	}
	return tests, nil
}
