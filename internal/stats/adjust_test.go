package stats

import (
	"math"
	"testing"
)

// bh1995 are the 15 p-values of the worked example in Benjamini & Hochberg
// (1995), JRSS B 57:289-300, §4 (Neuhaus et al. thrombolysis trial). The
// paper reports that the BH procedure at q = 0.05 rejects the four smallest,
// whereas Bonferroni-type procedures reject only three.
var bh1995 = []float64{0.0001, 0.0004, 0.0019, 0.0095, 0.0201, 0.0278, 0.0298,
	0.0344, 0.0459, 0.3240, 0.4262, 0.5719, 0.6528, 0.7590, 1.000}

func TestHolm(t *testing.T) {
	tests := []struct {
		name string
		ps   []float64
		want []float64
	}{
		// English Wikipedia "Holm–Bonferroni method" example: p = 0.01,
		// 0.04, 0.03, 0.005 at α = 0.05 rejects H1 and H4. Adjusted values
		// by hand: sorted 0.005·4 = 0.02, 0.01·3 = 0.03, 0.03·2 = 0.06,
		// 0.04·1 = 0.04 → running max 0.06.
		{"Wikipedia", []float64{0.01, 0.04, 0.03, 0.005}, []float64{0.03, 0.06, 0.06, 0.02}},
		// B&H 1995 data, hand-evaluated (m−r+1)·p(r) with running max:
		// 15·0.0001, 14·0.0004, 13·0.0019, 12·0.0095, 11·0.0201, 10·0.0278,
		// then 9·0.0298 = 0.2682 < 0.278 and 8·0.0344 = 0.2752 < 0.278 so the
		// running max holds, 7·0.0459 = 0.3213, then 6·0.324 ≥ 1 → capped.
		{"B&H 1995 data", bh1995, []float64{0.0015, 0.0056, 0.0247, 0.114, 0.2211, 0.278,
			0.278, 0.278, 0.3213, 1, 1, 1, 1, 1, 1}},
		// Missing values are skipped and do not count towards m.
		{"NaN skipped", []float64{0.01, math.NaN(), 0.04}, []float64{0.02, math.NaN(), 0.04}},
		{"empty", []float64{}, []float64{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assertFloats(t, "Holm", Holm(tt.ps), tt.want)
		})
	}
	if n := countAtMost(Holm(bh1995), 0.05); n != 3 {
		t.Errorf("Holm rejects %d of the B&H 1995 hypotheses at 0.05, want 3", n)
	}
	mustPanic(t, "p > 1", func() { Holm([]float64{0.5, 1.5}) })
}

func TestBenjaminiHochberg(t *testing.T) {
	tests := []struct {
		name string
		ps   []float64
		want []float64
	}{
		// Hand-evaluated p(r)·m/r with running minimum from the top:
		// sorted 0.005·4/1 = 0.02, 0.01·4/2 = 0.02, 0.03·4/3 = 0.04,
		// 0.04·4/4 = 0.04.
		{"Wikipedia Holm data", []float64{0.01, 0.04, 0.03, 0.005}, []float64{0.02, 0.04, 0.04, 0.02}},
		// B&H 1995 data, hand-evaluated the same way (e.g. the 4th:
		// 0.0095·15/4 = 0.035625; the 6th and 7th share
		// min(0.0278·15/6, 0.0298·15/7) = 0.0638571…).
		{"B&H 1995 data", bh1995, []float64{0.0015, 0.003, 0.0095, 0.035625, 0.0603,
			0.0298 * 15 / 7, 0.0298 * 15 / 7, 0.0645, 0.0765, 0.486, 0.4262 * 15 / 11,
			0.5719 * 15 / 12, 0.6528 * 15 / 13, 0.7590 * 15 / 14, 1}},
		{"ties", []float64{0.01, 0.01}, []float64{0.01, 0.01}},
		{"NaN skipped", []float64{math.NaN(), 0.02, 0.04}, []float64{math.NaN(), 0.04, 0.04}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assertFloats(t, "BenjaminiHochberg", BenjaminiHochberg(tt.ps), tt.want)
		})
	}
	// The paper's headline result.
	if n := countAtMost(BenjaminiHochberg(bh1995), 0.05); n != 4 {
		t.Errorf("BH rejects %d of the B&H 1995 hypotheses at q = 0.05, want 4", n)
	}
	mustPanic(t, "p < 0", func() { BenjaminiHochberg([]float64{-0.1}) })
}

func TestAdjustmentsAreMonotoneAndBounded(t *testing.T) {
	ps := []float64{0.3, 0.001, 0.02, 0.02, 0.8, 0.049, 0.5, 0.0001, 1, 0.04}
	for name, adj := range map[string]func([]float64) []float64{"Holm": Holm, "BH": BenjaminiHochberg} {
		out := adj(ps)
		for i := range ps {
			if out[i] < ps[i] || out[i] > 1 {
				t.Errorf("%s: adjusted %v for raw %v is not in [raw, 1]", name, out[i], ps[i])
			}
			for j := range ps {
				if ps[i] < ps[j] && out[i] > out[j] {
					t.Errorf("%s: raw %v < %v but adjusted %v > %v", name, ps[i], ps[j], out[i], out[j])
				}
			}
		}
		// Holm controls the family-wise error, BH only the FDR, so BH is
		// never stricter.
		if name == "BH" {
			for i, h := range Holm(ps) {
				if out[i] > h+1e-15 {
					t.Errorf("BH %v > Holm %v at %d", out[i], h, i)
				}
			}
		}
	}
}

func assertFloats(t *testing.T, fn string, got, want []float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: got %d values, want %d", fn, len(got), len(want))
	}
	for i := range want {
		if !approx(got[i], want[i], 1e-12) {
			t.Errorf("%s[%d] = %.17g, want %.17g", fn, i, got[i], want[i])
		}
	}
}

func countAtMost(ps []float64, alpha float64) int {
	n := 0
	for _, p := range ps {
		if p <= alpha {
			n++
		}
	}
	return n
}
