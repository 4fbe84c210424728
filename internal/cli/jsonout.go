package cli

import (
	"errors"
	"slices"

	"github.com/impactbench/impactbench/internal/fault"
	"github.com/impactbench/impactbench/internal/llm"
	"github.com/impactbench/impactbench/internal/merge"
	"github.com/impactbench/impactbench/internal/phase"
	"github.com/impactbench/impactbench/internal/plan"
	"github.com/impactbench/impactbench/internal/results"
	"github.com/impactbench/impactbench/internal/runner"
	"github.com/impactbench/impactbench/internal/summary"
)

// The --json shapes, one per command. docs/json.md documents every field
// and TestJSONDocMatchesCode keeps the page and these types in step; fields
// are never omitted (null when there is nothing), so a reader can rely on
// every documented key being there.

// runJSON is the output of run and of each stage command (gen-metrics,
// gen-scenarios, simulate, evaluate, aggregate) and of merge.
type runJSON struct {
	Command   string                `json:"command"`
	Benchmark string                `json:"benchmark"`
	DryRun    bool                  `json:"dry_run"`
	ExitCode  int                   `json:"exit_code"`
	Error     *string               `json:"error"`
	Phases    []summary.PhaseReport `json:"phases"`
	Spent     llm.Usage             `json:"spent"`
	Reused    llm.Usage             `json:"reused"`
	Budget    *summary.BudgetReport `json:"budget"`
	Plan      []plan.Row            `json:"plan"`
	Results   []modelJSON           `json:"results"`
	Report    *string               `json:"report"`
	Merged    []merge.Report        `json:"merged"`
	Precision *plan.PrecisionPlan   `json:"precision"`
	Limits    []summary.PoolLimit   `json:"limits"`
}

// modelJSON is one model's pass rates from results.json, with the
// intervals and leaderboard block our aggregate adds (null in an
// --upstream-only file).
type modelJSON = results.Headline

// invocation is what one benchmark's run adds to its runJSON besides the
// runner's summary; the command's steps fill it in.
type invocation struct {
	report string         // report.html written
	merged []merge.Report // merge only
}

// newRunJSON builds the output of one benchmark's run; runErr is the
// command's final error.
func newRunJSON(command string, r *runner.Runner, inv invocation, runErr error) runJSON {
	s := r.Report
	out := runJSON{
		Command: command, Benchmark: s.Benchmark, DryRun: s.DryRun, ExitCode: exitCode(runErr),
		Phases: s.Phases, Spent: s.Spent, Reused: s.Reused, Budget: s.Budget, Plan: s.Plan,
		Merged: inv.merged, Precision: s.Precision, Limits: s.Limits,
	}
	if out.Phases == nil {
		out.Phases = []summary.PhaseReport{}
	}
	if runErr != nil {
		msg := runErr.Error()
		out.Error = &msg
	}
	if inv.report != "" {
		out.Report = &inv.report
	}
	if !s.DryRun && s.Ran(phase.StageAggregate) {
		out.Results = s.Results
	}
	return out
}

// readModels reads the pass rates of results.json.
func readModels(path string) ([]modelJSON, error) {
	rs, err := results.ReadResults(path)
	if err != nil {
		return nil, fault.AsInput(err)
	}
	out := make([]modelJSON, len(rs))
	for i, m := range rs {
		out[i] = m.Headline()
	}
	return out, nil
}

// runStudyJSON is the output of `run` over several benchmarks (`run all`,
// `run b1 b2 …`): each benchmark's run object and the study's totals.
type runStudyJSON struct {
	Command    string                `json:"command"`
	DryRun     bool                  `json:"dry_run"`
	ExitCode   int                   `json:"exit_code"`
	Error      *string               `json:"error"`
	Benchmarks []runJSON             `json:"benchmarks"`
	Spent      llm.Usage             `json:"spent"`
	Reused     llm.Usage             `json:"reused"`
	Budget     *summary.BudgetReport `json:"budget"`
	Plan       *plan.Total           `json:"plan"`
	Limits     []summary.PoolLimit   `json:"limits"`
}

func newRunStudyJSON(s *runner.Study, sum *summary.StudySummary, invs []invocation, runErr error) runStudyJSON {
	out := runStudyJSON{Command: "run", DryRun: sum.DryRun, ExitCode: exitCode(runErr),
		Spent: sum.Spent, Reused: sum.Reused, Budget: sum.Budget, Plan: sum.Plan, Limits: sum.Limits}
	if runErr != nil {
		msg := runErr.Error()
		out.Error = &msg
	}
	for i, r := range s.Benchmarks() {
		var err error
		for _, e := range flatten(runErr) {
			var be *runner.BenchError
			if errors.As(e, &be) && slices.Contains(be.Benches, r.Bench().Slug) {
				err = be.Err
			}
		}
		out.Benchmarks = append(out.Benchmarks, newRunJSON("run", r, invs[i], err))
	}
	return out
}

// flatten lists the errors joined in err.
func flatten(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	if err == nil {
		return nil
	}
	return []error{err}
}
