package anthropic_test

import (
	"testing"

	"github.com/impactbench/impactbench/internal/llm"
	"github.com/impactbench/impactbench/internal/llm/llmtest"
)

// Messages has no seed parameter and the real API refuses unknown fields
// (so does llmtest): a seeded request must go out without one and its
// answer must say why.
func TestNoSeedOnTheWire(t *testing.T) {
	srv := llmtest.NewAnthropic(t)
	resp, err := newClient(t, srv, nil).Complete(t.Context(), llm.Request{Messages: []llm.Message{U("Hi")}, Seed: 42})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := srv.Last().Body["seed"]; ok {
		t.Error("seed sent to Anthropic")
	}
	if resp.SentSeed != nil || resp.NoSeed != llm.NoSeedParameter {
		t.Errorf("response reports %v, %q; want none, %q", resp.SentSeed, resp.NoSeed, llm.NoSeedParameter)
	}
}
