package stats

import (
	"errors"
	"math"
	"testing"
)

// wikipediaFleiss is the worked example of the English Wikipedia article
// "Fleiss' kappa": 10 subjects, 14 raters, 5 categories. The article reports
// p_j = 0.143, 0.200, 0.279, 0.150, 0.229, P̄ = 0.378, P̄e = 0.213 and
// κ = 0.210. In exact arithmetic κ = 4211/20059 = 0.20993…
var wikipediaFleiss = [][]int{
	{0, 0, 0, 0, 14},
	{0, 2, 6, 4, 2},
	{0, 0, 3, 5, 6},
	{0, 3, 9, 2, 0},
	{2, 2, 8, 1, 1},
	{7, 7, 0, 0, 0},
	{3, 2, 6, 3, 0},
	{2, 5, 3, 2, 2},
	{6, 5, 2, 1, 0},
	{0, 2, 2, 3, 7},
}

func TestFleissKappa(t *testing.T) {
	tests := []struct {
		name   string
		counts [][]int
		want   float64
		tol    float64
	}{
		{"Wikipedia worked example (published 0.210)", wikipediaFleiss, 0.210, 5e-4},
		{"Wikipedia worked example, exact 4211/20059", wikipediaFleiss, 4211.0 / 20059, 1e-12},
		// Perfect agreement with two categories in use: P̄ = 1, P̄e = 0.5 → κ = 1.
		{"perfect agreement", [][]int{{3, 0}, {0, 3}, {3, 0}, {0, 3}}, 1, 1e-12},
		// Hand-computed: 2 raters who always split on 2 subjects:
		// P̄ = 0, p = (0.5, 0.5), P̄e = 0.5 → κ = (0 − 0.5)/(1 − 0.5) = −1.
		{"systematic disagreement", [][]int{{1, 1}, {1, 1}}, -1, 1e-12},
		// Convention: only one category ever used → undefined → NaN.
		{"single category", [][]int{{4, 0, 0}, {4, 0, 0}}, math.NaN(), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := FleissKappa(tt.counts)
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if !approx(got, tt.want, tt.tol) {
				t.Errorf("FleissKappa = %.17g, want %.17g ±%g", got, tt.want, tt.tol)
			}
		})
	}
}

func TestFleissKappaErrors(t *testing.T) {
	tests := []struct {
		name   string
		counts [][]int
		want   error
	}{
		{"no subjects", nil, ErrEmpty},
		{"no categories", [][]int{{}}, ErrBadCounts},
		{"one rater", [][]int{{1, 0}, {0, 1}}, ErrBadCounts},
		{"unequal raters", [][]int{{2, 1}, {1, 1}}, ErrBadCounts},
		{"ragged rows", [][]int{{2, 1}, {3}}, ErrBadCounts},
		{"negative count", [][]int{{4, -1}, {3, 0}}, ErrBadCounts},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := FleissKappa(tt.counts)
			if !errors.Is(err, tt.want) {
				t.Errorf("error = %v, want %v", err, tt.want)
			}
			if !math.IsNaN(got) {
				t.Errorf("value = %v alongside an error, want NaN", got)
			}
		})
	}
}

// pairs expands a 2×2 agreement table into label slices: yy items labelled
// 1 by both raters, yn items 1 by a and 0 by b, ny 0 by a and 1 by b, nn 0 by
// both.
func pairs(yy, yn, ny, nn int) (a, b []int) {
	add := func(n, la, lb int) {
		for range n {
			a, b = append(a, la), append(b, lb)
		}
	}
	add(yy, 1, 1)
	add(yn, 1, 0)
	add(ny, 0, 1)
	add(nn, 0, 0)
	return a, b
}

func TestCohenKappa(t *testing.T) {
	tests := []struct {
		name           string
		yy, yn, ny, nn int
		wantK, wantRaw float64
		tolK           float64
	}{
		// English Wikipedia "Cohen's kappa", simple example: 50 proposals,
		// 20 yes/yes, 5 and 10 disagreements, 15 no/no → p_o = 0.7,
		// p_e = 0.5, κ = 0.4.
		{"Wikipedia 50 proposals", 20, 5, 10, 15, 0.4, 0.7, 1e-12},
		// Same article, "same percentages but different numbers": both
		// tables have 60% raw agreement but κ = 0.1304 and κ = 0.2593.
		{"Wikipedia 45/15/25/15", 45, 15, 25, 15, 0.1304, 0.6, 5e-5},
		{"Wikipedia 25/35/5/35", 25, 35, 5, 35, 0.2593, 0.6, 5e-5},
		// Hand-computed: total disagreement with balanced labels: p_o = 0,
		// p_e = 0.5 → κ = −1.
		{"always disagree", 0, 2, 2, 0, -1, 0, 1e-12},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, b := pairs(tt.yy, tt.yn, tt.ny, tt.nn)
			k, err := CohenKappa(a, b)
			if err != nil || !approx(k, tt.wantK, tt.tolK) {
				t.Errorf("CohenKappa = %.6g, %v; want %.6g", k, err, tt.wantK)
			}
			raw, err := RawAgreement(a, b)
			if err != nil || !approx(raw, tt.wantRaw, 1e-12) {
				t.Errorf("RawAgreement = %v, %v; want %v", raw, err, tt.wantRaw)
			}
		})
	}
}

func TestCohenKappaMulticategoryAndEdges(t *testing.T) {
	// Three arbitrary label codes, hand-computed. Agreement on 5 of 6 items
	// → p_o = 5/6. Rater a uses 7, 8, 9 twice each; rater b uses 7 three
	// times, 8 once, 9 twice. p_e = (2·3 + 2·1 + 2·2)/36 = 1/3, so
	// κ = (5/6 − 1/3)/(1 − 1/3) = 0.75.
	a := []int{7, 7, 8, 8, 9, 9}
	b := []int{7, 7, 7, 8, 9, 9}
	if k, err := CohenKappa(a, b); err != nil || !approx(k, 0.75, 1e-12) {
		t.Errorf("CohenKappa three labels = %v, %v; want 0.75", k, err)
	}

	// Convention: both raters constant on the same label → NaN, no error.
	if k, err := CohenKappa([]int{1, 1, 1}, []int{1, 1, 1}); err != nil || !math.IsNaN(k) {
		t.Errorf("constant identical raters: %v, %v; want NaN, nil", k, err)
	}
	// Both constant but on different labels: p_o = 0, p_e = 0 → κ = 0.
	if k, err := CohenKappa([]int{1, 1}, []int{2, 2}); err != nil || k != 0 {
		t.Errorf("constant different raters: %v, %v; want 0, nil", k, err)
	}
	if _, err := CohenKappa([]int{1}, []int{1, 2}); !errors.Is(err, ErrLengthMismatch) {
		t.Errorf("length mismatch error = %v", err)
	}
	if _, err := CohenKappa(nil, nil); !errors.Is(err, ErrEmpty) {
		t.Errorf("empty error = %v", err)
	}
	if _, err := RawAgreement(nil, []int{1}); !errors.Is(err, ErrLengthMismatch) {
		t.Errorf("RawAgreement mismatch error = %v", err)
	}
}

func TestUnanimity(t *testing.T) {
	groups := [][]bool{
		{true, true, true},   // unanimous pass
		{false, false},       // unanimous fail
		{true, false, true},  // demographic flip
		{true},               // too small: skipped
		{},                   // empty: skipped
		{false, true, false}, // flip
	}
	share, unanimous, total := Unanimity(groups)
	if unanimous != 2 || total != 4 || share != 0.5 {
		t.Errorf("Unanimity = %v, %d, %d; want 0.5, 2, 4", share, unanimous, total)
	}
	share, unanimous, total = Unanimity([][]bool{{true}, nil})
	if !math.IsNaN(share) || unanimous != 0 || total != 0 {
		t.Errorf("no comparable groups: %v, %d, %d; want NaN, 0, 0", share, unanimous, total)
	}
}
