package stages

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/impactbench/impactbench/internal/llm"
)

// TestSimulateKeepsUserThoughtsApart: the simulated user's reasoning is
// kept beside the transcript, one per user message, and never reaches the
// target.
func TestSimulateKeepsUserThoughtsApart(t *testing.T) {
	user := &fake{answer: func(req llm.Request, _ int) (llm.Response, error) {
		return ok("Thought: SECRET-PLAN " + req.Meta[llm.MetaTurn] + "\nMessage: msg " + req.Meta[llm.MetaTurn])
	}}
	target := simTarget()
	conv, err := Simulate(context.Background(), user, target, loadPrompts(t), simSpec())
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for i := range len(conv.Transcript) / 2 {
		want = append(want, "SECRET-PLAN "+itoa(i+1))
	}
	if !slices.Equal(conv.UserThoughts, want) {
		t.Errorf("user thoughts %q, want %q", conv.UserThoughts, want)
	}
	for _, turn := range conv.Transcript {
		if strings.Contains(turn.Content, "SECRET-PLAN") {
			t.Errorf("a thought is in the transcript: %q", turn.Content)
		}
	}
	for _, req := range target.reqs {
		for _, m := range req.Messages {
			if strings.Contains(m.Content, "SECRET-PLAN") {
				t.Fatalf("the target saw the user's reasoning: %q", m.Content)
			}
		}
	}

	// No thoughts: nothing is written.
	conv, err = Simulate(context.Background(), script("Message: hi"), simTarget(), loadPrompts(t), simSpec())
	if err != nil || conv.UserThoughts != nil {
		t.Errorf("user thoughts %q (err %v), want none", conv.UserThoughts, err)
	}

	// A failed target turn drops its user message and its thought together.
	failSecond := &fake{answer: func(_ llm.Request, call int) (llm.Response, error) {
		if call == 1 {
			return llm.Response{}, &llm.Error{Kind: llm.KindServer, Message: "down"}
		}
		return ok("reply")
	}}
	conv, _ = Simulate(context.Background(), user, failSecond, loadPrompts(t), simSpec())
	if len(conv.Transcript) != 2 || len(conv.UserThoughts) != 1 {
		t.Errorf("%d thoughts for %d user messages", len(conv.UserThoughts), len(conv.Transcript)/2)
	}
}
