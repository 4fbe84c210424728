package stages

import (
	"context"
	"reflect"
	"testing"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/llm"
)

// TestTargetReplySendsWhatSimulateSends: for the dialogue of a simulated
// conversation, TargetReply sends the target the very messages Simulate
// sent it at each turn (its system prompt and the dialogue, no Meta, no
// scenario), differing only in the seed, which is a person's own.
func TestTargetReplySendsWhatSimulateSends(t *testing.T) {
	target := simTarget()
	spec := simSpec()
	conv, err := Simulate(context.Background(), simUser(), target, loadPrompts(t), spec)
	if err != nil {
		t.Fatal(err)
	}
	played := &fake{answer: func(req llm.Request, call int) (llm.Response, error) { return ok("person's reply " + itoa(call+1)) }}
	for turn := 1; turn <= spec.Turns; turn++ {
		reply, _, u, err := TargetReply(context.Background(), played, spec, conv.Transcript[:2*turn-1])
		if err != nil {
			t.Fatalf("turn %d: %v", turn, err)
		}
		if reply.Role != "assistant" || reply.Content != "person's reply "+itoa(turn) || u.Requests != 1 {
			t.Errorf("turn %d: reply %+v, usage %+v", turn, reply, u)
		}
		got, want := played.reqs[turn-1], target.reqs[turn-1]
		if !reflect.DeepEqual(got.Messages, want.Messages) || got.Purpose != want.Purpose || got.MaxTokens != want.MaxTokens ||
			got.Cache != want.Cache || len(got.Meta) != 0 {
			t.Errorf("turn %d: TargetReply sent %+v, Simulate sent %+v", turn, got, want)
		}
		if got.Seed == want.Seed {
			t.Errorf("turn %d: a person's conversation shares the simulated sample's seed %d", turn, got.Seed)
		}
	}
	other := spec
	other.Sample = 1
	if _, _, _, err := TargetReply(context.Background(), played, other, conv.Transcript[:1]); err != nil {
		t.Fatal(err)
	}
	if played.reqs[len(played.reqs)-1].Seed == played.reqs[0].Seed {
		t.Error("two people's conversations of one scenario share a seed")
	}
}

func TestTargetReplyRefusesMalformedDialogues(t *testing.T) {
	spec := simSpec()
	u := artifacts.Turn{Role: "user", Content: "hi"}
	a := artifacts.Turn{Role: "assistant", Content: "hello"}
	for name, tr := range map[string][]artifacts.Turn{
		"empty":                 nil,
		"ends with reply":       {u, a},
		"starts with assistant": {a, u, a},
		"two users":             {u, u, u},
		"empty message":         {{Role: "user", Content: ""}},
		"past the turns":        {u, a, u, a, u, a, u, a, u},
	} {
		c := never(t)
		if _, _, _, err := TargetReply(context.Background(), c, spec, tr); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}
