package adaptrun

import (
	"reflect"
	"testing"

	"github.com/impactbench/impactbench/internal/adaptive"
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

// TestMetricReason: why a metric stands where it does at the last look.
func TestMetricReason(t *testing.T) {
	open := &adaptive.Round{Look: 2, Looks: 6, Open: 3}
	stop := &adaptive.Round{Look: 6, Looks: 6, Open: 2, Stop: true}
	done := &adaptive.Round{Look: 6, Looks: 6, Stop: true}
	for _, c := range []struct {
		r       *adaptive.Round
		t       adaptive.Target
		stopped string
		want    string
	}{
		{open, adaptive.Target{Have: 2, Want: 3}, StoppedCost, MetricCost},
		{done, adaptive.Target{Have: 6, Want: 6}, StoppedDecided, MetricDecided},
		{stop, adaptive.Target{Have: 6, Want: 6}, StoppedMax, MetricMax},
		{stop, adaptive.Target{Have: 3, Want: 3}, StoppedMax, MetricOutOfReach},
		{open, adaptive.Target{Have: 2, Want: 3}, "", MetricGrowing},
		{open, adaptive.Target{Have: 2, Want: 2}, "", MetricHeld},
	} {
		if got := MetricReason(c.r, c.t, c.stopped, 6); got != c.want {
			t.Errorf("MetricReason(%+v, %+v, %q) = %q, want %q", c.r, c.t, c.stopped, got, c.want)
		}
	}
}
