package stats

import (
	"errors"
	"testing"
)

func TestMcNemarExact(t *testing.T) {
	tests := []struct {
		name string
		b, c int
		want float64
	}{
		// Fagerland, Lydersen & Laake (2013), BMC Med Res Methodol 13:91,
		// Table 1 (Bentur et al. airway hyper-responsiveness data): 1 and 7
		// discordant pairs; exact conditional p = 2·9/256 = 0.0703 (reported
		// as 0.070).
		{"Fagerland 2013 Bentur data", 1, 7, 0.0703125},
		{"Fagerland 2013 Bentur data, swapped", 7, 1, 0.0703125},
		// Hand-computed 2·(C(10,0)+C(10,1))/2¹⁰ = 22/1024.
		{"b=1 c=9", 1, 9, 0.021484375},
		// 2·1/2⁵ and 2·1/2⁶.
		{"b=0 c=5", 0, 5, 0.0625},
		{"b=0 c=6", 6, 0, 0.03125},
		// 2·P(X ≤ 10), X ~ Bin(30, ½), exact value 2·53009102/2³⁰.
		{"b=10 c=20", 10, 20, 2 * 53009102.0 / (1 << 30)},
		// No evidence of a difference: capped at 1.
		{"b=c", 4, 4, 1},
		{"b=c=0", 0, 0, 1},
		{"b=1 c=2", 1, 2, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := McNemarExact(tt.b, tt.c); !approx(got, tt.want, 1e-12) {
				t.Errorf("McNemarExact(%d, %d) = %.17g, want %.17g", tt.b, tt.c, got, tt.want)
			}
			if got := SignTest(tt.b, tt.c); !approx(got, tt.want, 1e-12) {
				t.Errorf("SignTest(%d, %d) = %.17g, want %.17g", tt.b, tt.c, got, tt.want)
			}
		})
	}
	mustPanic(t, "negative", func() { McNemarExact(-1, 3) })
}

func TestPairwiseMcNemar(t *testing.T) {
	// Three variants over 12 scenarios. Variant 0 passes everything,
	// variant 1 fails rows 0-9, variant 2 fails rows 0-1.
	rows := make([][]bool, 12)
	for r := range rows {
		rows[r] = []bool{true, r >= 10, r >= 2}
	}
	got, err := PairwiseMcNemar(rows)
	if err != nil {
		t.Fatal(err)
	}
	// Hand-computed:
	//   (0,1): b=10, c=0 → p = 2/2¹⁰        = 0.001953125
	//   (0,2): b=2,  c=0 → p = min(1, 2/4)  = 0.5
	//   (1,2): b=0,  c=8 → p = 2/2⁸         = 0.0078125
	// Holm (m = 3): sorted 0.001953125·3 = 0.005859375,
	// 0.0078125·2 = 0.015625, 0.5·1 = 0.5.
	want := []PairTest{
		{I: 0, J: 1, B: 10, C: 0, P: 0.001953125, PAdj: 0.005859375},
		{I: 0, J: 2, B: 2, C: 0, P: 0.5, PAdj: 0.5},
		{I: 1, J: 2, B: 0, C: 8, P: 0.0078125, PAdj: 0.015625},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d tests, want %d", len(got), len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.I != w.I || g.J != w.J || g.B != w.B || g.C != w.C ||
			!approx(g.P, w.P, 1e-12) || !approx(g.PAdj, w.PAdj, 1e-12) {
			t.Errorf("pair %d = %+v, want %+v", i, g, w)
		}
	}

	if _, err := PairwiseMcNemar(nil); !errors.Is(err, ErrEmpty) {
		t.Errorf("empty: %v", err)
	}
	if _, err := PairwiseMcNemar([][]bool{{true}}); !errors.Is(err, ErrBadCounts) {
		t.Errorf("one variant: %v", err)
	}
	if _, err := PairwiseMcNemar([][]bool{{true, false}, {true}}); !errors.Is(err, ErrLengthMismatch) {
		t.Errorf("ragged: %v", err)
	}
}
