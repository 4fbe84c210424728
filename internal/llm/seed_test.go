package llm_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/impactbench/impactbench/internal/llm"
)

// Every seed must fit the narrowest wire type (Gemini's int32, llama.cpp's
// uint32), and different request seeds must stay different seeds on the
// wire: samples are told apart only by it.
func TestWireSeedFitsEveryProvider(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	seen := make(map[int64]uint64, 5000)
	for i := range 5000 {
		s := r.Uint64()
		if i < 3 {
			s = []uint64{1, math.MaxUint64, 1 << 63}[i]
		}
		w := llm.WireSeed(s)
		if w < 0 || w > math.MaxInt32 {
			t.Fatalf("WireSeed(%#x) = %d, outside 0..2^31-1", s, w)
		}
		if prev, ok := seen[w]; ok && prev != s {
			t.Errorf("WireSeed(%#x) = WireSeed(%#x) = %d", s, prev, w)
		}
		seen[w] = s
	}
	// High bits matter: seeds differing only above bit 31 differ on the wire.
	if llm.WireSeed(1) == llm.WireSeed(1|1<<40) {
		t.Error("WireSeed drops the high half")
	}
}
