package stats

import (
	"math"
	"testing"
)

func TestKrippendorffAlpha(t *testing.T) {
	// Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability",
	// example C (nominal, 4 observers, 12 units, missing values; published
	// α = 0.743). Columns are units, rows observers A–D, 0 = missing.
	obs := [4][12]int{
		{1, 2, 3, 3, 2, 1, 4, 1, 2, 0, 0, 0},
		{1, 2, 3, 3, 2, 2, 4, 1, 2, 5, 0, 3},
		{0, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, 0},
		{1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, 0},
	}
	var units [][]int
	for u := range 12 {
		var vals []int
		for o := range 4 {
			if obs[o][u] != 0 {
				vals = append(vals, obs[o][u])
			}
		}
		units = append(units, vals)
	}
	// By hand: unit 12 has one value and is dropped, leaving n = 40
	// pairable values; exactly α = 1 − 40·(40−1)… = 0.74342…
	alpha, n := KrippendorffAlpha(units)
	if !approx(alpha, 0.743, 5e-4) || n != 40 {
		t.Errorf("example C: α = %v over %d values, want 0.743 over 40", alpha, n)
	}

	// Example A (binary, two observers, no missing data): published α = 0.095.
	// By hand: o₀₀ = 10, o₁₁ = 2, o₀₁ = o₁₀ = 4, n₀ = 14, n₁ = 6:
	// α = 1 − 19·8/(2·14·6) = 1 − 76/84 = 0.0952…
	a := []int{0, 1, 0, 0, 0, 0, 0, 0, 1, 0}
	b := []int{1, 1, 1, 0, 0, 1, 0, 0, 0, 0}
	units = nil
	for i := range a {
		units = append(units, []int{a[i], b[i]})
	}
	if alpha, _ := KrippendorffAlpha(units); !approx(alpha, 1-76.0/84, 1e-12) {
		t.Errorf("example A: α = %v, want 8/84 = 0.0952", alpha)
	}

	tests := []struct {
		name  string
		units [][]int
		want  float64
	}{
		{"perfect agreement", [][]int{{1, 1, 1}, {0, 0}, {1, 1}}, 1},
		// Two raters always split on two units: D_o = 4 (each unit's two
		// pairs), n = 4 with n₀ = n₁ = 2 → D_e = (16 − 8)/3 = 8/3,
		// α = 1 − 4/(8/3) = −0.5.
		{"systematic disagreement", [][]int{{1, 0}, {0, 1}}, -0.5},
		{"one category only is undefined", [][]int{{1, 1}, {1, 1, 1}}, math.NaN()},
		{"no pairable unit is undefined", [][]int{{1}, {0}, {}}, math.NaN()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got, _ := KrippendorffAlpha(tt.units); !approx(got, tt.want, 1e-12) {
				t.Errorf("α = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestKrippendorffAlphaMatchesScottPi: with two raters and no missing data,
// α = 1 − (1 − π)·(n−1)/n, where π is Scott's pi and n the number of
// values (Krippendorff 2011: α corrects π for small samples).
func TestKrippendorffAlphaMatchesScottPi(t *testing.T) {
	a, b := pairs(20, 5, 10, 15) // 50 items
	var units [][]int
	for i := range a {
		units = append(units, []int{a[i], b[i]})
	}
	// Scott's π: po = 35/50 = 0.7; pooled share of 1s = (25 + 30)/100 =
	// 0.55 → pe = 0.55² + 0.45² = 0.505; π = 0.195/0.495.
	pi := (0.7 - 0.505) / (1 - 0.505)
	n := 100.0
	want := 1 - (n-1)/n*(1-pi)
	if got, _ := KrippendorffAlpha(units); !approx(got, want, 1e-12) {
		t.Errorf("α = %v, Scott's π-based value %v", got, want)
	}
}
