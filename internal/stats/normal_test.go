package stats

import (
	"math"
	"testing"
)

func TestZQuantile(t *testing.T) {
	// Reference values: standard normal critical values (NIST/SEMATECH
	// e-Handbook of Statistical Methods §1.3.6.7.1: 1.282, 1.645, 1.960,
	// 2.576), given to full precision as computed by Wichura's AS241 in
	// Python's statistics.NormalDist().inv_cdf.
	tests := []struct {
		p, want float64
	}{
		{0.5, 0},
		{0.9, 1.2815515655446008},
		{0.95, 1.6448536269514715},
		{0.975, 1.9599639845400536},
		{0.995, 2.5758293035489},
		{0.025, -1.9599639845400538},
	}
	for _, tt := range tests {
		if got := ZQuantile(tt.p); !approx(got, tt.want, 1e-12) {
			t.Errorf("ZQuantile(%v) = %.17g, want %.17g", tt.p, got, tt.want)
		}
	}
	if got := ZQuantile(0); !math.IsInf(got, -1) {
		t.Errorf("ZQuantile(0) = %v, want -Inf", got)
	}
	if got := ZQuantile(1); !math.IsInf(got, 1) {
		t.Errorf("ZQuantile(1) = %v, want +Inf", got)
	}
	for _, p := range []float64{-0.1, 1.1, math.NaN()} {
		mustPanic(t, "ZQuantile", func() { ZQuantile(p) })
	}
}
