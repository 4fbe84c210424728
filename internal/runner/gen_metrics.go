package runner

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/clientset"
	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/llm"
	"github.com/impactbench/impactbench/internal/phase"
	"github.com/impactbench/impactbench/internal/stages"
	"github.com/impactbench/impactbench/internal/summary"
)

// GenMetrics writes metrics into benchmark.yaml (kept as the user wrote it
// otherwise). With --force it replaces existing metrics, after a backup.
func (r *Runner) GenMetrics(ctx context.Context) error { return r.genMetrics(ctx, r.opts.Force) }

// genMetrics writes metrics when benchmark.yaml has none, or replaces them
// when regenerate is set. `run` never sets it: metrics may be hand-written,
// and its --force is about scenarios and runs.
func (r *Runner) genMetrics(ctx context.Context, regenerate bool) error {
	rep := summary.PhaseReport{Phase: phase.StageGenMetrics, Output: r.bench.Path}
	gen := r.cfg.Generator()
	skip := !r.genMetricsWillRun(regenerate)
	if r.opts.DryRun {
		r.planRow(phase.StageGenMetrics, "", "", gen, 1, 1, 1500, 1500)
		if skip {
			r.planNote(phase.StageGenMetrics, "", "skip: metrics exist")
		}
		return nil
	}
	if skip {
		rep.Status, rep.Reason = phase.StatusSkipped, fmt.Sprintf("benchmark.yaml already has %d metrics; kept (`impactbench gen-metrics %s --force` replaces them, keeping a backup)", len(r.bench.Metrics), r.bench.Slug)
		r.logf("[skip] gen_metrics %s — %s", r.bench.Slug, rep.Reason)
		r.Report.Add(rep)
		return nil
	}
	c, err := r.models.Model(r.generatorField(), gen)
	if err != nil {
		return err
	}
	bar := r.openBar(phase.StageGenMetrics, "", 1)
	defer bar.Close()
	start := time.Now()
	unit, err := r.store.Unit("gen_metrics/metrics")
	if err != nil {
		return err
	}
	defer unit.Close()
	metrics, usage, err := stages.GenMetrics(ctx, unit.Client(clientset.Identity(gen), c), r.prompts, r.bench, stages.GenOptions{Seed: r.cfg.Seed})
	st := unit.Stats()
	bar.Bar().Done(err != nil, st.Misses == 0, st.Spent, time.Since(start))
	rep.Rows, rep.Calls, rep.Spent = 1, st.Spent.Requests, st.Spent
	r.Report.AddReused(st.Saved)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		rep.Status, rep.Failed = phase.StatusFailed, 1
		rep.Failures = []summary.RowFailure{{Row: "metrics", Reason: err.Error()}}
		r.Report.Add(rep)
		return nil
	}
	if err := r.saveMetrics(metrics); err != nil {
		return err
	}
	if err := unit.SetResult("done", len(metrics)); err != nil {
		return err
	}
	if err := r.writeCost(r.outDir, phase.StageGenMetrics.String(), usage); err != nil {
		return err
	}
	rep.Status = phase.StatusRan
	r.logf("generated %d metrics", len(metrics))
	r.Report.Add(rep)
	return nil
}

// saveMetrics writes generated metrics into benchmark.yaml, backing up
// the metrics it replaces.
func (r *Runner) saveMetrics(metrics []config.Metric) error {
	if len(r.bench.Metrics) > 0 {
		bak, err := config.BackupFile(r.bench.Path, time.Now())
		if err != nil {
			return fmt.Errorf("back up %s before replacing its metrics: %w", r.bench.Path, err)
		}
		r.logf("replacing %d metrics in %s; the previous file is saved as %s", len(r.bench.Metrics), r.bench.Path, bak)
	}
	if err := config.SaveMetrics(r.bench.Path, metrics); err != nil {
		return fmt.Errorf("write metrics into %s: %w", r.bench.Path, err)
	}
	r.bench.Metrics = metrics
	return nil
}

// writeCost records a phase's usage in dir/cost.json: upstream's shape
// (cost, input and output tokens, phase) and ours after it, including the
// prompt cache's reads, writes and net saving and, when given, the split
// by model.
func (r *Runner) writeCost(dir, phase string, u llm.Usage, models ...byModel) error {
	if r.opts.Shard.Active() {
		phase = fmt.Sprintf("%s.shard-%d-of-%d", phase, r.opts.Shard.Index, r.opts.Shard.Count)
	}
	all := byModel{}
	for _, m := range models {
		for label, mu := range m {
			all.add(label, mu)
		}
	}
	return artifacts.UpdateCost(filepath.Join(dir, "cost.json"), phase, phaseCost(phase, u, all))
}

// phaseCost is one cost.json entry.
func phaseCost(phase string, u llm.Usage, models byModel) artifacts.PhaseCost {
	pc := artifacts.PhaseCost{
		Cost: artifacts.Round(u.Cost, 6), InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, Phase: phase,
		CachedInputTokens: u.CachedInputTokens, ReasoningTokens: u.ReasoningTokens, Requests: u.Requests,
		CacheWriteTokens: u.CacheWriteTokens, CacheSaving: artifacts.Round(u.CacheSaving, 6),
	}
	if u.Requests > 0 && !u.CostKnown {
		f := false
		pc.CostKnown = &f
	}
	for label, mu := range models {
		if pc.Models == nil {
			pc.Models = map[string]artifacts.ModelCost{}
		}
		pc.Models[label] = artifacts.ModelCost{Requests: mu.Requests, Cost: artifacts.Round(mu.Cost, 6),
			InputTokens: mu.InputTokens, OutputTokens: mu.OutputTokens, CachedInputTokens: mu.CachedInputTokens,
			CacheWriteTokens: mu.CacheWriteTokens, CacheSaving: artifacts.Round(mu.CacheSaving, 6)}
	}
	return pc
}

// phaseUsage reads a cost.json entry back: its usage and its split by model.
func phaseUsage(p artifacts.PhaseCost) (llm.Usage, byModel) {
	u := usageOf(artifacts.UsageRecord{Cost: p.Cost, InputTokens: p.InputTokens, OutputTokens: p.OutputTokens,
		CachedInputTokens: p.CachedInputTokens, CacheWriteTokens: p.CacheWriteTokens, CacheSaving: p.CacheSaving,
		ReasoningTokens: p.ReasoningTokens, Requests: p.Requests, CostKnown: p.CostKnown})
	models := byModel{}
	for label, m := range p.Models {
		models.add(label, llm.Usage{Requests: m.Requests, Cost: m.Cost, InputTokens: m.InputTokens, OutputTokens: m.OutputTokens,
			CachedInputTokens: m.CachedInputTokens, CacheWriteTokens: m.CacheWriteTokens, CacheSaving: m.CacheSaving, CostKnown: u.CostKnown})
	}
	return u, models
}

func safeName(s string) string { return artifacts.SafeName(s) }
