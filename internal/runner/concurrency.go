package runner

import (
	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/phase"
)

// workers is a phase's worker-pool size for rows rows: the configured
// run.concurrency value, which is a cap as upstream, or with auto (0) every
// row at once up to the ceiling, so that the provider pools' adaptive
// limits, not the workers, decide how many calls are in flight.
func (r *env) workers(configured, rows int) int {
	if configured > 0 {
		return configured
	}
	return max(1, min(rows, r.autoWorkers))
}

// expandWorkers is how many of one metric's demographic rewrites (of all
// its base scenarios) run at once. A configured gen_scenarios_expand is the total
// over the gen_scenarios workers, so each gets its share; auto rewrites
// them all at once.
func (r *Runner) expandWorkers(rewrites int) int {
	cc := r.cfg.Run.Concurrency
	if cc.GenScenariosExpand <= 0 {
		return r.workers(0, rewrites)
	}
	gs := r.workers(cc.GenScenarios, len(r.bench.Metrics))
	return max(1, (cc.GenScenariosExpand+gs-1)/gs)
}

// RecordLimits stores every provider pool's concurrency in Report.Limits,
// for the summary; call it once the phases are done.
func (r *Runner) RecordLimits() {
	r.Report.SetLimits(r.models.PoolLimits())
}

// configuredConcurrency is run.concurrency's value for a stage's rows (0: auto).
func configuredConcurrency(cc config.Concurrency, stage phase.Stage) int {
	switch stage {
	case phase.StageSimulate:
		return cc.Simulate
	case phase.StageEvaluate, phase.StageRepeats:
		return cc.Evaluate
	case phase.StageGenScenarios:
		return cc.GenScenarios
	}
	return 0
}
