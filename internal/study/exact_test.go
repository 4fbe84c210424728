package study

import (
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/impactbench/impactbench/internal/racemode"
)

// TestWeightedMeanIsExact: the int64 fast path and its big.Rat fallback
// give the exact weighted mean, also when the sums outgrow int64 (random
// fractions with denominators up to 10^6 force the fallback).
func TestWeightedMeanIsExact(t *testing.T) {
	racemode.SkipHeavy(t)
	rng := rand.New(rand.NewPCG(36, 1))
	for _, maxDen := range []int64{4, 30, 1_000_000} {
		fell := false
		for range 200 {
			var m weightedMean
			num, den := new(big.Rat), new(big.Rat)
			for range 1 + rng.IntN(400) {
				wd := 1 + rng.Int64N(maxDen)
				xd := 1 + rng.Int64N(maxDen)
				w := reduce(1+rng.Int64N(wd), wd)
				x := reduce(rng.Int64N(xd+1)-xd/2, xd)
				m.add(w, x)
				num.Add(num, new(big.Rat).Mul(w.rat(), x.rat()))
				den.Add(den, w.rat())
			}
			want := new(big.Rat).Quo(num, den)
			if got := m.value(); got.Cmp(want) != 0 {
				t.Fatalf("max denominator %d: %v, want %v", maxDen, got, want)
			}
			fell = fell || m.big != nil
		}
		if maxDen == 1_000_000 && !fell {
			t.Error("the test never reached the big.Rat fallback")
		}
	}
}
