package gemini_test

import (
	"math"
	"testing"

	"github.com/impactbench/impactbench/internal/llm"
	"github.com/impactbench/impactbench/internal/llm/llmtest"
)

func TestSeedOnTheWire(t *testing.T) {
	msgs := []llm.Message{{Role: llm.RoleUser, Content: "Hi"}}
	for _, seed := range []uint64{1, 0xdeadbeefcafef00d, math.MaxUint64} {
		srv := llmtest.NewGemini(t)
		c := newClient(t, srv, nil)
		resp, err := c.Complete(t.Context(), llm.Request{Messages: msgs, Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		gc, _ := srv.Last().Body["generationConfig"].(map[string]any)
		want := llm.WireSeed(seed)
		// llmtest refuses a seed outside int32; check the value too.
		if got := srv.Last().Chat.Seed; got == nil || *got != want || gc["seed"] != float64(want) {
			t.Errorf("seed %#x: generationConfig.seed = %v, want %d", seed, gc["seed"], want)
		}
		if resp.SentSeed == nil || *resp.SentSeed != want {
			t.Errorf("seed %#x: response reports %v, want %d", seed, resp.SentSeed, want)
		}
	}

	srv := llmtest.NewGemini(t)
	resp, err := newClient(t, srv, nil).Complete(t.Context(), llm.Request{Messages: msgs})
	if err != nil {
		t.Fatal(err)
	}
	if gc, _ := srv.Last().Body["generationConfig"].(map[string]any); gc["seed"] != nil {
		t.Errorf("seed %v sent for a request without one", gc["seed"])
	}
	if resp.SentSeed != nil || resp.NoSeed != llm.NoSeedInRequest {
		t.Errorf("response reports %v, %q for a request without a seed", resp.SentSeed, resp.NoSeed)
	}
}
