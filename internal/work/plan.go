package work

import (
	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/phase"
	"github.com/impactbench/impactbench/internal/plan"
)

// PlanRow adds a generation phase's estimate.
func (b *Bench) PlanRow(stage phase.Stage, role, target string, m config.ModelConfig, rows, calls, inPerCall, outPerCall int) {
	b.Report.AddPlan(b.Estimator().Generation(stage, role, target, m, rows, calls, inPerCall, outPerCall))
}

// PlanSimulate adds a target's simulate estimate for rows conversations.
func (b *Bench) PlanSimulate(target string, t config.ModelConfig, rows int) {
	b.Report.AddPlan(b.Estimator().Simulate(target, t, rows)...)
}

// PlanEvaluate adds a target's evaluate estimate for rows verdicts.
func (b *Bench) PlanEvaluate(target string, rows int) {
	b.Report.AddPlan(b.Estimator().Evaluate(target, b.Judges(), rows)...)
}

// PlanNote marks the plan rows of a phase that would be skipped.
func (b *Bench) PlanNote(stage phase.Stage, target, note string) {
	b.Report.EditPlan(stage, target, func(p *plan.Row) {
		p.Note, p.RowsNow, p.CostNow = note, 0, 0
	})
}

// PlanShare sets how many of a phase's plan rows would run now, and
// their share of the cost.
func (b *Bench) PlanShare(stage phase.Stage, target string, rowsNow int) {
	b.Report.EditPlan(stage, target, func(p *plan.Row) {
		if p.Note != "" || p.Rows == 0 {
			return
		}
		p.RowsNow = min(rowsNow, p.Rows)
		p.CostNow = p.Cost * float64(p.RowsNow) / float64(p.Rows)
	})
}
