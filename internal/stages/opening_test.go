package stages

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/callstore"
	"github.com/impactbench/impactbench/internal/llm"
)

// TestSharedOpening: with SharedOpening, two targets' conversations of one
// row send the simulated user the same first-turn request (seed included,
// so the call store keys them alike) and the targets the same opening
// message, perturbation included; every later call still differs by
// target, and so does each redo's; without it the first turn differs by
// target as before.
func TestSharedOpening(t *testing.T) {
	p := loadPrompts(t)
	long := strings.Repeat("The Quick Brown Fox Jumps Over The Lazy Dog. ", 10)
	run := func(target string, shared bool, redo int) (*fake, artifacts.Conversation) {
		user := &fake{answer: func(req llm.Request, _ int) (llm.Response, error) {
			return ok("Message: " + long + req.Meta[llm.MetaTurn])
		}}
		spec := simSpec()
		spec.TargetID, spec.Perfunctory, spec.SharedOpening, spec.Redo = target, true, shared, redo
		conv, err := Simulate(context.Background(), user, simTarget(), p, spec)
		if err != nil {
			t.Fatal(err)
		}
		return user, conv
	}
	for _, tc := range []struct {
		name         string
		shared       bool
		redo         int
		sameOpenings bool
	}{
		{"shared", true, 0, true},
		{"shared redo", true, 1, true},
		{"independent", false, 0, false},
		{"independent redo", false, 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ua, ca := run("target-a", tc.shared, tc.redo)
			ub, cb := run("target-b", tc.shared, tc.redo)
			id := callstore.Identity{Provider: "p", Model: "user"}
			sameKey := callstore.Key(id, ua.reqs[0]) == callstore.Key(id, ub.reqs[0])
			sameMsg := ca.Transcript[0].Content == cb.Transcript[0].Content
			if sameKey != tc.sameOpenings || sameMsg != tc.sameOpenings {
				t.Errorf("first-turn requests alike %v, opening messages alike %v; want %v", sameKey, sameMsg, tc.sameOpenings)
			}
			for i := 1; i < len(ua.reqs); i++ {
				if ua.reqs[i].Seed == ub.reqs[i].Seed {
					t.Errorf("user call %d has the same seed for both targets", i)
				}
			}
			if ca.Transcript[2].Content == cb.Transcript[2].Content {
				t.Error("turn 2's perturbation is the same for both targets")
			}
		})
	}
	// Shared, a redo's opening is another draw than the first attempt's.
	u0, _ := run("target-a", true, 0)
	u1, _ := run("target-a", true, 1)
	if u0.reqs[0].Seed == u1.reqs[0].Seed {
		t.Error("a redo reuses the first attempt's opening seed")
	}
	// Off, the first turn's seed is what it was before the option.
	ui, _ := run("target-a", false, 0)
	spec := simSpec()
	spec.TargetID = "target-a"
	want := seedOf(seedOf(spec.Seed, "conversation", spec.Scenario.ID, "target-a", "0"), "user", "1")
	if ui.reqs[0].Seed != want || reflect.DeepEqual(ui.reqs[0].Seed, u0.reqs[0].Seed) {
		t.Errorf("independent opening seed %d, want %d (shared %d)", ui.reqs[0].Seed, want, u0.reqs[0].Seed)
	}
}
