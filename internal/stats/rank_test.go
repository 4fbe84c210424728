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

func TestRankIntervals(t *testing.T) {
	// Three items over 20 clusters in one stratum: item 0 always scores
	// 0.9, item 1 0.5, item 2 alternates 0.1/0.9 by cluster (mean 0.5):
	// items 1 and 2 can swap, item 0 is clearly first.
	vals := [3][20]float64{}
	for c := range 20 {
		vals[0][c], vals[1][c] = 0.9, 0.5
		vals[2][c] = 0.1 + 0.8*float64(c%2)
	}
	score := func(idx [][]int, out []float64) {
		for i := range out {
			s := 0.0
			for _, c := range idx[0] {
				s += vals[i][c]
			}
			out[i] = s / float64(len(idx[0]))
		}
	}
	lo, hi := RankIntervals([]int{20}, 3, 500, 0.95, 1, score)
	want := [][2]float64{{1, 1}, {2, 3}, {2, 3}}
	for i, w := range want {
		if lo[i] != w[0] || hi[i] != w[1] {
			t.Errorf("item %d rank interval [%v, %v], want %v", i, lo[i], hi[i], w)
		}
	}
	// Deterministic in the seed; an item never scored has no interval.
	lo2, _ := RankIntervals([]int{20}, 3, 500, 0.95, 1, score)
	if lo2[1] != lo[1] {
		t.Error("same seed, different intervals")
	}
	lo, _ = RankIntervals([]int{20, 0}, 1, 10, 0.95, 1, func(_ [][]int, out []float64) {})
	if !math.IsNaN(lo[0]) {
		t.Errorf("never-scored item got rank %v", lo[0])
	}
}
