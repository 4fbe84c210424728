package stats

import (
	"math"
	"testing"
)

func TestRanks(t *testing.T) {
	tests := []struct {
		name string
		x    []float64
		want []float64
	}{
		{"distinct", []float64{30, 10, 20}, []float64{3, 1, 2}},
		// Ties get the mean of the ranks they span ("fractional ranking").
		{"ties", []float64{10, 20, 20, 30}, []float64{1, 2.5, 2.5, 4}},
		{"scipy rankdata example", []float64{0, 2, 3, 2}, []float64{1, 2.5, 4, 2.5}},
		{"all tied", []float64{5, 5, 5}, []float64{2, 2, 2}},
		{"NaN left out", []float64{3, math.NaN(), 1}, []float64{2, math.NaN(), 1}},
		{"empty", []float64{}, []float64{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assertFloats(t, "Ranks", Ranks(tt.x), tt.want)
		})
	}
}

func TestSpearman(t *testing.T) {
	tests := []struct {
		name string
		x, y []float64
		want float64
	}{
		// SciPy scipy.stats.spearmanr documentation example (tie in y):
		// x = [1,2,3,4,5], y = [5,6,7,8,7] → 0.8207826816681233.
		{"scipy example with ties", []float64{1, 2, 3, 4, 5}, []float64{5, 6, 7, 8, 7}, 0.8207826816681233},
		// English Wikipedia "Spearman's rank correlation coefficient",
		// IQ vs hours of TV per week: ρ = −29/165 ≈ −0.175757575.
		{"Wikipedia IQ vs TV", []float64{106, 100, 86, 101, 99, 103, 97, 113, 112, 110},
			[]float64{7, 27, 2, 50, 28, 29, 20, 12, 6, 17}, -29.0 / 165},
		{"perfect", []float64{1, 2, 3}, []float64{10, 100, 1000}, 1},
		{"reversed", []float64{1, 2, 3}, []float64{3, 2, 1}, -1},
		{"constant x is undefined", []float64{1, 1, 1}, []float64{1, 2, 3}, math.NaN()},
		{"one item is undefined", []float64{1}, []float64{2}, math.NaN()},
		{"NaN input", []float64{1, math.NaN(), 3}, []float64{1, 2, 3}, math.NaN()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Spearman(tt.x, tt.y); !approx(got, tt.want, 1e-12) {
				t.Errorf("Spearman = %.17g, want %.17g", got, tt.want)
			}
		})
	}
	mustPanic(t, "length mismatch", func() { Spearman([]float64{1, 2}, []float64{1}) })
}

func TestKendallTauB(t *testing.T) {
	tests := []struct {
		name string
		x, y []float64
		want float64
	}{
		// SciPy scipy.stats.kendalltau documentation example (ties in both
		// x and y): τ-b = −0.47140452079103173. By hand: 2 concordant,
		// 6 discordant, 2 pairs tied in x, 1 in y, of 10 →
		// (2 − 6)/√(8·9) = −√2/3.
		{"scipy example with ties", []float64{12, 2, 1, 12, 2}, []float64{1, 4, 7, 1, 0}, -0.47140452079103173},
		// No ties: τ-b reduces to τ-a. Hand count for the permutation
		// (1 3 2 4 5): 1 discordant pair of 10 → (9 − 1)/10.
		{"one swap", []float64{1, 2, 3, 4, 5}, []float64{1, 3, 2, 4, 5}, 0.8},
		{"perfect", []float64{1, 2, 3, 4}, []float64{2, 4, 6, 8}, 1},
		{"reversed", []float64{1, 2, 3, 4}, []float64{4, 3, 2, 1}, -1},
		{"constant y is undefined", []float64{1, 2, 3}, []float64{5, 5, 5}, math.NaN()},
		{"empty is undefined", []float64{}, []float64{}, math.NaN()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := KendallTauB(tt.x, tt.y); !approx(got, tt.want, 1e-12) {
				t.Errorf("KendallTauB = %.17g, want %.17g", got, tt.want)
			}
		})
	}
	mustPanic(t, "length mismatch", func() { KendallTauB([]float64{1, 2}, []float64{1}) })
}
