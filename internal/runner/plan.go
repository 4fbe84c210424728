package runner

import (
	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/phase"
	"github.com/impactbench/impactbench/internal/plan"
)

// estimator prices this run's phases (package plan).
func (e *env) estimator() plan.Estimator {
	return plan.Estimator{Cfg: e.cfg, Prices: e.models.Prices()}
}

// planRow adds a generation phase's estimate.
func (r *Runner) planRow(stage phase.Stage, role, target string, m config.ModelConfig, rows, calls, inPerCall, outPerCall int) {
	r.Report.AddPlan(r.estimator().Generation(stage, role, target, m, rows, calls, inPerCall, outPerCall))
}

// planSimulate adds a target's simulate estimate for rows conversations.
func (r *Runner) planSimulate(target string, t config.ModelConfig, rows int) {
	r.Report.AddPlan(r.estimator().Simulate(target, t, rows)...)
}

// planEvaluate adds a target's evaluate estimate for rows verdicts.
func (r *Runner) planEvaluate(target string, judges []config.ModelConfig, rows int) {
	r.Report.AddPlan(r.estimator().Evaluate(target, judges, rows)...)
}

// planNote marks the plan rows of a phase that would be skipped.
func (r *Runner) planNote(stage phase.Stage, target, note string) {
	r.Report.EditPlan(stage, target, func(p *plan.Row) {
		p.Note, p.RowsNow, p.CostNow = note, 0, 0
	})
}
