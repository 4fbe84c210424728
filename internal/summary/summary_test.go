package summary

import (
	"testing"

	"github.com/impactbench/impactbench/internal/llm"
	"github.com/impactbench/impactbench/internal/phase"
	"github.com/impactbench/impactbench/internal/schedule"
)

// Rows that end after their phase was reported (a judge still at work
// when simulate stopped) are this run's spending too: settling counts
// them, once, however often it runs.
func TestRowsThatEndAfterTheirReportAreCounted(t *testing.T) {
	s := &Summary{}
	paid := func(n int) llm.Usage { return llm.Usage{Requests: n, Cost: 0.01 * float64(n), CostKnown: true} }
	s.Count(phase.StageEvaluate, "t1", "r1", schedule.Done, "", paid(2), llm.Usage{})
	s.Add(PhaseReport{Phase: phase.StageEvaluate, Target: "t1", Status: phase.StatusStopped})
	s.Count(phase.StageEvaluate, "t1", "r2", schedule.Done, "", paid(3), llm.Usage{}) // a judge still at work
	s.Count(phase.StageSimulate, "t1", "r1", schedule.Done, "", paid(4), llm.Usage{}) // a phase that never reported
	s.Settle()
	s.Settle()
	if got := s.Spent.Requests; got != 9 {
		t.Errorf("the summary counts %d calls, want all 9", got)
	}
	var eval, sim *PhaseReport
	for i, p := range s.Phases {
		switch p.Phase {
		case phase.StageEvaluate:
			if eval != nil {
				t.Errorf("evaluate reported twice")
			}
			eval = &s.Phases[i]
		case phase.StageSimulate:
			if sim != nil {
				t.Errorf("simulate reported twice")
			}
			sim = &s.Phases[i]
		}
	}
	if eval == nil || eval.Calls != 5 || eval.Status != phase.StatusStopped {
		t.Errorf("evaluate reported as %+v, want stopped with 5 calls", eval)
	}
	if sim == nil || sim.Calls != 4 || sim.Status != phase.StatusStopped || sim.Rows != 1 {
		t.Errorf("simulate reported as %+v, want stopped with 1 row and 4 calls", sim)
	}
}

// A stage command runs its targets concurrently and each settles the
// summary when it ends: a target whose rows are still at work when another
// settles gets a stopped report then, which its own report must replace
// once it is written (it was not stopped: its output was written).
func TestSettleBeforeAnotherTargetReportsDoesNotMarkItStopped(t *testing.T) {
	s := &Summary{}
	s.Count(phase.StageEvaluate, "a", "r1", schedule.Done, "", llm.Usage{Requests: 1}, llm.Usage{})
	s.Add(PhaseReport{Phase: phase.StageEvaluate, Target: "a", Status: phase.StatusRan})
	s.Count(phase.StageEvaluate, "b", "r1", schedule.Done, "", llm.Usage{Requests: 1}, llm.Usage{}) // b still at work
	s.Settle()                                                                                      // a ends first
	s.Count(phase.StageEvaluate, "b", "r2", schedule.Done, "", llm.Usage{Requests: 1}, llm.Usage{})
	s.Add(PhaseReport{Phase: phase.StageEvaluate, Target: "b", Status: phase.StatusRan})
	s.Settle() // b ends
	var got []string
	for _, p := range s.Phases {
		got = append(got, p.Target+":"+string(p.Status))
	}
	if len(s.Phases) != 2 {
		t.Fatalf("phases = %v, want one report per target, neither stopped", got)
	}
	for _, p := range s.Phases {
		if p.Status != phase.StatusRan || p.Reason != "" {
			t.Errorf("%s reported %s (%q), want ran", p.Target, p.Status, p.Reason)
		}
	}
	if s.Spent.Requests != 3 {
		t.Errorf("spent %d calls, want 3", s.Spent.Requests)
	}
}
