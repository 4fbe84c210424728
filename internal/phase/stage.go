package phase

import (
	"fmt"

	"github.com/impactbench/impactbench/internal/layout"
)

// Stage is one stage of the pipeline. It names phases in summaries, plans,
// phase records and progress; its text form is the name upstream uses.
type Stage int

// The stages, in pipeline order, and the judge-consistency pass of
// `evaluate --repeats`.
const (
	StageGenMetrics Stage = iota
	StageGenScenarios
	StageSimulate
	StageEvaluate
	StageAggregate
	StageRepeats
)

var stageNames = [...]string{"gen_metrics", "gen_scenarios", "simulate", "evaluate", "aggregate", "evaluate-repeats"}

func (s Stage) String() string {
	if s < 0 || int(s) >= len(stageNames) {
		return fmt.Sprintf("Stage(%d)", int(s))
	}
	return stageNames[s]
}

// MarshalText writes the stage's name ("simulate"), as --json shows it.
func (s Stage) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText reads a stage's name.
func (s *Stage) UnmarshalText(b []byte) error {
	for i, n := range stageNames {
		if n == string(b) {
			*s = Stage(i)
			return nil
		}
	}
	return fmt.Errorf("unknown stage %q", b)
}

// Status is how a phase (one output file) ended in an invocation.
type Status string

// The phase statuses of a summary.
const (
	StatusRan     Status = "ran"     // the output was written
	StatusSkipped Status = "skipped" // the output was up to date
	StatusFailed  Status = "failed"  // written, with failed rows (exit 1; rerun retries them)
	StatusStopped Status = "stopped" // not written: interrupted, cost ceiling, a provider error
	StatusRefused Status = "refused" // not written: it would have been worse than the old one
)

// Tallied reports whether the stage's rows count themselves into a
// summary (simulate, evaluate, repeats); the other stages report what
// they spent as a whole.
func (s Stage) Tallied() bool {
	return s == StageSimulate || s == StageEvaluate || s == StageRepeats
}

// OutputName is the file a stage's rows are written to.
func (s Stage) OutputName() string {
	switch s {
	case StageSimulate:
		return layout.ConversationsFile
	case StageEvaluate:
		return layout.ScoresFile
	case StageRepeats:
		return layout.RepeatsFile
	case StageGenScenarios:
		return layout.ScenariosFile
	}
	return s.String()
}
