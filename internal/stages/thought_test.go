package stages

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/impactbench/impactbench/internal/llm"
)

func TestUserThought(t *testing.T) {
	cases := []struct{ raw, want string }{
		{"Thought: plan A\nMessage: hi", "plan A"},
		{"Thought: line one\nline two\n\nMessage: hi", "line one\nline two"},
		{"**Thought:** weigh it\n**Message:** hi\nThought: after", "weigh it\nafter"},
		{"Message: hi", ""},
		{"just a message", ""},
		// Without a Message label the leading Thought paragraph is the
		// thought and the rest the message, as ParseUserReply reads it.
		{"Thought: only this\n\nthe message itself", "only this"},
	}
	for _, c := range cases {
		if got := UserThought(c.raw); got != c.want {
			t.Errorf("UserThought(%q) = %q, want %q", c.raw, got, c.want)
		}
		msg, _ := ParseUserReply(c.raw)
		if got := UserThought(c.raw); got != "" && strings.Contains(msg, got) {
			t.Errorf("%q: the thought %q is also in the message %q", c.raw, got, msg)
		}
	}
}

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
