package stats

import (
	"math"
	"testing"
)

func TestWilson(t *testing.T) {
	tests := []struct {
		name         string
		k, n         int
		conf         float64
		wantLo, want float64
		tol          float64
	}{
		// Newcombe (1998), "Two-sided confidence intervals for the single
		// proportion: comparison of seven methods", Statistics in Medicine
		// 17:857-872, Table II, method 3 (score, no continuity correction);
		// published to 4 decimals.
		{"Newcombe 81/263", 81, 263, 0.95, 0.2553, 0.3662, 5e-5},
		{"Newcombe 15/148", 15, 148, 0.95, 0.0624, 0.1605, 5e-5},
		{"Newcombe 0/20", 0, 20, 0.95, 0, 0.1611, 5e-5},
		{"Newcombe 1/29", 1, 29, 0.95, 0.0061, 0.1718, 5e-5},
		// Below: Wilson (1927) closed form
		//   (p + z²/2n ± z·sqrt(p(1-p)/n + z²/4n²)) / (1 + z²/n),
		// z = 1.9599639845400536, evaluated in float64 by hand (Python) for
		// this test; the first line matches the brief's 0.5520 / 0.9530.
		{"10/12", 10, 12, 0.95, 0.55196913774702672, 0.95303485781614616, 1e-12},
		{"0/10 lower limit pinned to 0", 0, 10, 0.95, 0, 0.27753279986288915, 1e-12},
		{"10/10 upper limit pinned to 1", 10, 10, 0.95, 0.72246720013711085, 1, 1e-12},
		{"1/1", 1, 1, 0.95, 0.20654931437723745, 1, 1e-12},
		// Convention: no trials → the whole range.
		{"n=0", 0, 0, 0.95, 0, 1, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lo, hi := Wilson(tt.k, tt.n, tt.conf)
			if !approx(lo, tt.wantLo, tt.tol) || !approx(hi, tt.want, tt.tol) {
				t.Errorf("Wilson(%d, %d, %v) = [%.17g, %.17g], want [%.17g, %.17g] ±%g",
					tt.k, tt.n, tt.conf, lo, hi, tt.wantLo, tt.want, tt.tol)
			}
		})
	}
}

func TestWilsonProperties(t *testing.T) {
	// A higher confidence level must give a wider interval, and the interval
	// must contain the observed proportion.
	for n := 1; n <= 40; n++ {
		for k := 0; k <= n; k++ {
			lo90, hi90 := Wilson(k, n, 0.90)
			lo99, hi99 := Wilson(k, n, 0.99)
			p := float64(k) / float64(n)
			if lo99 > lo90 || hi99 < hi90 {
				t.Fatalf("k=%d n=%d: 99%% interval [%v,%v] not wider than 90%% [%v,%v]", k, n, lo99, hi99, lo90, hi90)
			}
			if p < lo90 || p > hi90 || lo90 < 0 || hi90 > 1 {
				t.Fatalf("k=%d n=%d: interval [%v,%v] misses p=%v or leaves [0,1]", k, n, lo90, hi90, p)
			}
		}
	}
}

func TestWilsonPanics(t *testing.T) {
	mustPanic(t, "k>n", func() { Wilson(3, 2, 0.95) })
	mustPanic(t, "k<0", func() { Wilson(-1, 2, 0.95) })
	mustPanic(t, "conf=1", func() { Wilson(1, 2, 1) })
	mustPanic(t, "conf=0", func() { Wilson(1, 2, 0) })
	mustPanic(t, "conf=NaN", func() { Wilson(1, 2, math.NaN()) })
}

func TestWilsonInterval(t *testing.T) {
	iv := WilsonInterval(10, 12, 0.95)
	lo, hi := Wilson(10, 12, 0.95)
	want := Interval{Estimate: 10.0 / 12, Lo: lo, Hi: hi, N: 12, Clusters: 12, Method: MethodWilson}
	if iv != want {
		t.Errorf("WilsonInterval = %+v, want %+v", iv, want)
	}
	if iv := WilsonInterval(0, 0, 0.95); !math.IsNaN(iv.Estimate) || iv.Lo != 0 || iv.Hi != 1 {
		t.Errorf("WilsonInterval(0,0) = %+v, want NaN estimate in [0,1]", iv)
	}
}
