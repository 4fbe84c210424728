package adaptrun

import (
	"reflect"
	"testing"

	"github.com/impactbench/impactbench/internal/plan"
)

// TestTargetCosts: a target's conversations are its simulate rows' count
// (each role's row counts the same conversations, so not their sum), its
// cost the simulate and evaluate rows'; rows without a target
// (generation) and other phases are left out.
func TestTargetCosts(t *testing.T) {
	rows := []plan.Row{
		{Phase: "gen_scenarios", Rows: 8, Cost: 5},
		{Phase: "simulate", Target: "a", Rows: 16, Cost: 1},
		{Phase: "simulate", Target: "a", Rows: 16, Cost: 2},
		{Phase: "evaluate", Target: "a", Rows: 16, Cost: 0.5},
		{Phase: "repeats", Target: "a", Rows: 16, Cost: 9},
		{Phase: "simulate", Target: "b", Rows: 8, Cost: 4},
	}
	want := map[string]targetCost{"a": {cost: 3.5, convs: 16}, "b": {cost: 4, convs: 8}}
	if got := targetCosts(rows); !reflect.DeepEqual(got, want) {
		t.Errorf("targetCosts = %v, want %v", got, want)
	}
}
