package stages

import (
	"context"
	"slices"
	"testing"

	"github.com/impactbench/impactbench/internal/llm"
)

// TestSimulateRecordsTruncatedReplies: a message made from a reply the
// client cut short is listed in the conversation's truncated field by its
// transcript index; a dropped unanswered user message takes its entry
// along.
func TestSimulateRecordsTruncatedReplies(t *testing.T) {
	cutTurn := func(turn string) *fake {
		return &fake{answer: func(req llm.Request, call int) (llm.Response, error) {
			r, err := ok("Message: msg " + req.Meta[llm.MetaTurn])
			r.Truncated = req.Meta[llm.MetaTurn] == turn
			return r, err
		}}
	}
	cutTarget := &fake{answer: func(_ llm.Request, call int) (llm.Response, error) {
		r, err := ok("reply " + itoa(call+1))
		r.Truncated = call == 0
		return r, err
	}}
	conv, err := Simulate(context.Background(), cutTurn("2"), cutTarget, loadPrompts(t), simSpec())
	if err != nil {
		t.Fatal(err)
	}
	// Turn 1's target reply is message 1, turn 2's user message is message 2.
	if want := []int{1, 2}; !slices.Equal(conv.Truncated, want) {
		t.Errorf("truncated %v, want %v (transcript of %d)", conv.Truncated, want, len(conv.Transcript))
	}

	conv, err = Simulate(context.Background(), script("Message: hi"), simTarget(), loadPrompts(t), simSpec())
	if err != nil || conv.Truncated != nil {
		t.Errorf("truncated %v (err %v), want none", conv.Truncated, err)
	}

	failSecond := &fake{answer: func(_ llm.Request, call int) (llm.Response, error) {
		if call == 1 {
			return llm.Response{}, &llm.Error{Kind: llm.KindServer, Message: "down"}
		}
		return ok("reply")
	}}
	conv, _ = Simulate(context.Background(), cutTurn("2"), failSecond, loadPrompts(t), simSpec())
	if len(conv.Transcript) != 2 || len(conv.Truncated) != 0 {
		t.Errorf("after a failed target turn: transcript %d, truncated %v; want 2 messages, none truncated", len(conv.Transcript), conv.Truncated)
	}
}
