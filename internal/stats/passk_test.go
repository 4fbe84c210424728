package stats

import (
	"math/big"
	"testing"
)

func TestPassAtKAll(t *testing.T) {
	// Expected values are C(c,k)/C(n,k) evaluated by hand (τ-bench pass^k,
	// Yao et al. 2024, arXiv:2406.12045, §3).
	tests := []struct {
		c, n, k int
		want    float64
	}{
		{3, 4, 2, 3.0 / 6},              // C(3,2)/C(4,2): the brief's example
		{3, 4, 1, 0.75},                 // pass^1 is the plain pass rate
		{3, 4, 3, 1.0 / 4},              // C(3,3)/C(4,3)
		{3, 4, 4, 0},                    // c < k: impossible for all to pass
		{4, 4, 4, 1},                    // every trial passed
		{0, 5, 1, 0},                    // nothing passed
		{2, 5, 0, 1},                    // k = 0: empty draw vacuously passes
		{5, 8, 3, 10.0 / 56},            // C(5,3)=10, C(8,3)=56
		{7, 10, 5, 21.0 / 252},          // C(7,5)=21, C(10,5)=252
		{16, 32, 8, 12870.0 / 10518300}, // C(16,8)=12870, C(32,8)=10518300
	}
	for _, tt := range tests {
		if got := PassAtKAll(tt.c, tt.n, tt.k); !approx(got, tt.want, 1e-15) {
			t.Errorf("PassAtKAll(%d,%d,%d) = %.17g, want %.17g", tt.c, tt.n, tt.k, got, tt.want)
		}
	}
}

func TestPassAtKAllLargeN(t *testing.T) {
	// C(n,k) overflows float64 near n = 1030; the exact path must still
	// agree with the product formula Π (c−i)/(n−i) computed in big.Rat.
	c, n, k := 1500, 2000, 300
	want := new(big.Rat).SetInt64(1)
	for i := range k {
		want.Mul(want, big.NewRat(int64(c-i), int64(n-i)))
	}
	w, _ := want.Float64()
	if got := PassAtKAll(c, n, k); got != w || got <= 0 {
		t.Errorf("PassAtKAll(%d,%d,%d) = %g, want %g", c, n, k, got, w)
	}
}

func TestPassAtK(t *testing.T) {
	// pass@k = 1 − C(n−c,k)/C(n,k) (Chen et al. 2021, arXiv:2107.03374,
	// eq. 1), hand-evaluated.
	tests := []struct {
		c, n, k int
		want    float64
	}{
		{3, 4, 2, 1},             // C(1,2) = 0: any 2 of 4 include a pass
		{1, 4, 2, 1 - 3.0/6},     // 1 − C(3,2)/C(4,2)
		{1, 4, 1, 0.25},          // pass@1 is the plain pass rate
		{0, 4, 4, 0},             // nothing passed
		{2, 10, 3, 1 - 56.0/120}, // 1 − C(8,3)/C(10,3)
	}
	for _, tt := range tests {
		if got := PassAtK(tt.c, tt.n, tt.k); !approx(got, tt.want, 1e-15) {
			t.Errorf("PassAtK(%d,%d,%d) = %.17g, want %.17g", tt.c, tt.n, tt.k, got, tt.want)
		}
	}
}

func TestPassAtKMonotone(t *testing.T) {
	// More draws can only make "all pass" less likely and "any pass" more.
	for k := 1; k <= 10; k++ {
		if PassAtKAll(7, 10, k) > PassAtKAll(7, 10, k-1) {
			t.Errorf("pass^k increased from k=%d to k=%d", k-1, k)
		}
		if PassAtK(3, 10, k) < PassAtK(3, 10, k-1) {
			t.Errorf("pass@k decreased from k=%d to k=%d", k-1, k)
		}
	}
}

func TestPassAtKPanics(t *testing.T) {
	mustPanic(t, "k > n", func() { PassAtKAll(2, 4, 5) })
	mustPanic(t, "c > n", func() { PassAtKAll(5, 4, 1) })
	mustPanic(t, "negative k", func() { PassAtK(1, 4, -1) })
	mustPanic(t, "negative c", func() { PassAtK(-1, 4, 1) })
}
