package generate

import (
	"context"
	"fmt"
	"time"

	"github.com/impactbench/impactbench/internal/clientset"
	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/layout"
	"github.com/impactbench/impactbench/internal/phase"
	"github.com/impactbench/impactbench/internal/stages"
	"github.com/impactbench/impactbench/internal/summary"
	"github.com/impactbench/impactbench/internal/work"
)

// Metrics writes metrics when benchmark.yaml has none, or replaces them
// when regenerate is set (gen-metrics --force). `run` never sets it:
// metrics may be hand-written, and its --force is about scenarios and runs.
func Metrics(ctx context.Context, b *work.Bench, regenerate bool) error {
	rep := summary.PhaseReport{Phase: phase.StageGenMetrics, Output: b.Spec.Path}
	gen := b.Cfg.Generator()
	skip := !MetricsWillRun(b, regenerate)
	if b.Opts.DryRun {
		b.PlanRow(phase.StageGenMetrics, "", "", gen, 1, 1, 1500, 1500)
		if skip {
			b.PlanNote(phase.StageGenMetrics, "", "skip: metrics exist")
		}
		return nil
	}
	if skip {
		rep.Status, rep.Reason = phase.StatusSkipped, fmt.Sprintf("benchmark.yaml already has %d metrics; kept (`impactbench gen-metrics %s --force` replaces them, keeping a backup)", len(b.Spec.Metrics), b.Spec.Slug)
		b.Logf("[skip] gen_metrics %s — %s", b.Spec.Slug, rep.Reason)
		b.Report.Add(rep)
		return nil
	}
	c, err := b.Models.Model(b.GeneratorField(), gen)
	if err != nil {
		return err
	}
	bar := b.OpenBar(phase.StageGenMetrics, "", 1)
	defer bar.Close()
	start := time.Now()
	unit, err := b.Store.Unit(layout.GenMetricsUnit)
	if err != nil {
		return err
	}
	defer unit.Close()
	metrics, usage, err := stages.GenMetrics(ctx, unit.Client(clientset.Identity(gen), c), b.Prompts, b.Spec, stages.GenOptions{Seed: b.Cfg.Seed})
	st := unit.Stats()
	if work.BudgetStopped(err) {
		bar.Bar().Unfinished(st.Spent) // stopped, not failed
	} else {
		bar.Bar().Done(err != nil, st.Misses == 0, st.Spent, time.Since(start))
	}
	rep.Rows, rep.Calls, rep.Spent = 1, st.Spent.Requests, st.Spent
	b.Report.AddReused(st.Saved)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if work.BudgetStopped(err) {
			// A stop at the ceiling, as in the other phases: not a failed
			// row (exit 0), and the ceiling's line says to raise it.
			rep.Status, rep.Reason = phase.StatusStopped, "the cost ceiling was reached before the metrics were written"
			b.NoteRemaining(1)
			b.Report.Add(rep)
			return nil
		}
		rep.Status, rep.Failed = phase.StatusFailed, 1
		rep.Failures = []summary.RowFailure{{Row: "metrics", Reason: err.Error()}}
		b.Report.Add(rep)
		if work.Fatal(err) {
			// A refused key or quota: the run ends with its hint, as
			// gen_scenarios, simulate and evaluate do; a rerun cannot heal it.
			return err
		}
		return nil
	}
	if err := saveMetrics(b, metrics); err != nil {
		return err
	}
	if err := unit.SetResult("done", len(metrics)); err != nil {
		return err
	}
	if err := b.WriteCost(b.Files.Dir, phase.StageGenMetrics.String(), usage); err != nil {
		return err
	}
	rep.Status = phase.StatusRan
	b.Logf("generated %d metrics", len(metrics))
	b.Report.Add(rep)
	return nil
}

// saveMetrics writes generated metrics into benchmark.yaml, backing up
// the metrics it replaces.
func saveMetrics(b *work.Bench, metrics []config.Metric) error {
	if len(b.Spec.Metrics) > 0 {
		bak, err := config.BackupFile(b.Spec.Path, time.Now())
		if err != nil {
			return fmt.Errorf("back up %s before replacing its metrics: %w", b.Spec.Path, err)
		}
		b.Logf("replacing %d metrics in %s; the previous file is saved as %s", len(b.Spec.Metrics), b.Spec.Path, bak)
	}
	if err := config.SaveMetrics(b.Spec.Path, metrics); err != nil {
		return fmt.Errorf("write metrics into %s: %w", b.Spec.Path, err)
	}
	b.Spec.Metrics = metrics
	return nil
}
