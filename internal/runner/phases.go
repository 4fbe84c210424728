package runner

import (
	"context"

	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/evaluate"
	"github.com/impactbench/impactbench/internal/generate"
	"github.com/impactbench/impactbench/internal/layout"
	"github.com/impactbench/impactbench/internal/simulate"
	"github.com/impactbench/impactbench/internal/work"
)

// The single-stage commands: each runs one stage's rows, with the rows of
// the stages before it read from their files.

// GenMetrics writes the benchmark's metrics (gen-metrics; --force
// regenerates them).
func (r *Runner) GenMetrics(ctx context.Context) error {
	return generate.Metrics(ctx, r.b, r.b.Opts.Force)
}

// GenScenarios writes scenarios.json.
func (r *Runner) GenScenarios(ctx context.Context) error {
	return generate.Scenarios(ctx, r.b, r.grow, nil)
}

// Simulate runs every scenario × sample against one target and writes
// runs/<target>/conversations.json.
func (r *Runner) Simulate(ctx context.Context, targetID string) error {
	return simulate.Simulate(ctx, r.b, targetID)
}

// Evaluate judges every conversation of targetID and writes its scores.json.
func (r *Runner) Evaluate(ctx context.Context, targetID string) error {
	return evaluate.Evaluate(ctx, r.b, targetID)
}

// Repeat judges every conversation of targetID k more times with other
// seeds (evaluate --repeats) and writes repeats.json.
func (r *Runner) Repeat(ctx context.Context, targetID string, k int) error {
	return evaluate.Repeat(ctx, r.b, targetID, k)
}

// RecordLimits stores every provider pool's concurrency in the summary;
// call it once the phases are done.
func (r *Runner) RecordLimits() { r.Report.SetLimits(r.b.Models.PoolLimits()) }

// Bench returns the loaded benchmark (metrics reflect gen_metrics once run).
func (r *Runner) Bench() *config.Benchmark { return r.b.Spec }

// Config is the run's configuration.
func (r *Runner) Config() *config.Config { return r.b.Cfg }

// Layout is where this benchmark's outputs and cache are.
func (r *Runner) Layout() layout.Bench { return r.b.Files }

// OutDir is where outputs are written.
func (r *Runner) OutDir() string { return r.b.Files.Dir }

// Logf prints a human line through the progress tracker.
func (r *Runner) Logf(format string, args ...any) { r.b.Logf(format, args...) }

// RunRound runs the benchmark over the scenario set g grows the current
// one into (nil: the current set), as run --until's rounds do.
func (r *Runner) RunRound(ctx context.Context, targets []string, g *generate.Growth) error {
	r.grow = g
	defer func() { r.grow = nil }()
	return r.run(ctx, targets)
}

// Work is the benchmark's state, for the features that work on it
// (until, scenarioset, merge, aggregate, calibrate).
func (r *Runner) Work() *work.Bench { return r.b }
