package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/callstore"
	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/llm"
	"github.com/impactbench/impactbench/internal/stages"
)

// GenMetrics writes metrics into benchmark.yaml (kept as the user wrote it
// otherwise). With --force it replaces existing metrics, after a backup.
func (r *Runner) GenMetrics(ctx context.Context) error { return r.genMetrics(ctx, r.opts.Force) }

// genMetrics writes metrics when benchmark.yaml has none, or replaces them
// when regenerate is set. `run` never sets it: metrics may be hand-written,
// and its --force is about scenarios and runs.
func (r *Runner) genMetrics(ctx context.Context, regenerate bool) error {
	rep := PhaseReport{Phase: "gen_metrics", Output: r.bench.Path}
	gen := r.cfg.Generator()
	skip := !r.genMetricsWillRun(regenerate)
	if r.opts.DryRun {
		r.planRow("gen_metrics", "", gen, 1, 1, 1500, 1500)
		if skip {
			r.planNote("gen_metrics", "", "skip: metrics exist")
		}
		return nil
	}
	if skip {
		rep.Status, rep.Reason = "skipped", fmt.Sprintf("benchmark.yaml already has %d metrics; kept (`impactbench gen-metrics %s --force` replaces them, keeping a backup)", len(r.bench.Metrics), r.bench.Slug)
		r.logf("[skip] gen_metrics %s — %s", r.bench.Slug, rep.Reason)
		r.Report.add(rep)
		return nil
	}
	c, err := r.modelClient(r.generatorField(), gen)
	if err != nil {
		return err
	}
	bar := r.prog.Start("gen_metrics", 1)
	defer bar.End()
	start := time.Now()
	unit, err := r.store.Unit("gen_metrics/metrics")
	if err != nil {
		return err
	}
	defer unit.Close()
	metrics, usage, err := stages.GenMetrics(ctx, unit.Client(identity(gen), c), r.prompts, r.bench, stages.GenOptions{Seed: r.cfg.Seed})
	st := unit.Stats()
	bar.Done(err != nil, st.Misses == 0, st.Spent, time.Since(start))
	rep.Rows, rep.Calls, rep.Spent = 1, st.Spent.Requests, st.Spent
	r.Report.addReused(st.Saved)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		rep.Status, rep.Failed = "failed", 1
		rep.Failures = []RowFailure{{Row: "metrics", Reason: err.Error()}}
		r.Report.add(rep)
		return nil
	}
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
	if err := unit.SetResult("done", len(metrics)); err != nil {
		return err
	}
	if err := r.writeCost(r.outDir, "gen_metrics", usage); err != nil {
		return err
	}
	rep.Status = "ran"
	r.logf("generated %d metrics", len(metrics))
	r.Report.add(rep)
	return nil
}

// scenarioInputs are the fingerprints scenarios.json depends on.
func (r *Runner) scenarioInputs() map[string]string {
	return map[string]string{
		"benchmark":    fingerprint(r.bench.Name, r.bench.Description, r.bench.Scenario),
		"metrics":      fingerprint(r.bench.Metrics),
		"generation":   fingerprint(r.cfg.Generation.ScenariosPerMetric, r.cfg.Generation.Turns),
		"demographics": fingerprint(r.cfg.Demographics),
		"generator":    fingerprint(identity(r.cfg.Generator())),
		"prompts":      r.prompts.Hash(),
	}
}

// upToDate decides whether a phase whose output exists may be skipped: only
// when its recorded inputs match (outputs made elsewhere — e.g. by upstream —
// have no record and are trusted, as upstream does). It returns a reason.
func (r *Runner) upToDate(key, output string, inputs map[string]string) (bool, string) {
	if r.opts.Force {
		return false, "forced"
	}
	if _, err := os.Stat(output); err != nil {
		return false, ""
	}
	rec, ok := r.manifest.get(key)
	if !ok {
		return true, fmt.Sprintf("%s exists (use --force to redo)", rel(r.outDir, output))
	}
	if rec.Pending {
		return false, fmt.Sprintf("the last run stopped while writing %s; redoing it from stored calls", rel(r.outDir, output))
	}
	if sha, err := fileSHA(output); err == nil && rec.Output != "" && sha != rec.Output {
		return true, fmt.Sprintf("%s exists and was edited by hand; keeping it (use --force to redo)", rel(r.outDir, output))
	}
	if ch := changedInputs(rec.Inputs, inputs); len(ch) > 0 {
		return false, fmt.Sprintf("inputs changed since %s was made: %v", rel(r.outDir, output), ch)
	}
	if rec.Failed > 0 {
		return false, fmt.Sprintf("%d row(s) failed last time; retrying them", rec.Failed)
	}
	return true, fmt.Sprintf("%s is up to date (use --force to redo)", rel(r.outDir, output))
}

// checkSkip applies the skip rule to a phase: it reports (and records in the
// summary) a skip when the output is up to date, or says why it reruns. In a
// dry run nothing is skipped; the plan rows get dryNote instead.
func (r *Runner) checkSkip(phase, target, key, out string, inputs map[string]string, rep PhaseReport) (skip bool, dryNote string) {
	upToDate, why := r.upToDate(key, out, inputs)
	label := r.bench.Slug
	if target != "" {
		label += "/" + target
	}
	switch {
	case r.opts.DryRun:
		if upToDate {
			return false, "skip: up to date"
		}
	case upToDate:
		rep.Status, rep.Reason = "skipped", why
		r.logf("[skip] %s %s — %s", phase, label, why)
		r.Report.add(rep)
		return true, ""
	case why != "" && why != "forced":
		r.logf("%s %s: %s", phase, label, why)
	}
	return false, ""
}

// beginOutput marks key's output as being replaced, before it is written. A
// process killed after the output is in place but before cost.json and the
// record are would otherwise leave an output that the next run trusts as
// made elsewhere (no record) or as edited by hand (the old record's hash):
// it would skip the phase, and cost.json would lack its entry for good.
func (r *Runner) beginOutput(key string, inputs map[string]string) error {
	return r.manifest.put(key, phaseRecord{Inputs: inputs, Pending: true, Finished: time.Now().UTC()})
}

func (r *Runner) record(key, output string, inputs map[string]string, failed int) error {
	sha, err := fileSHA(output)
	if err != nil {
		return err
	}
	return r.manifest.put(key, phaseRecord{Inputs: inputs, Output: sha, Failed: failed, Finished: time.Now().UTC()})
}

func rel(base, p string) string {
	if s, err := filepath.Rel(base, p); err == nil {
		return s
	}
	return p
}

// GenScenarios writes scenarios.json: n base scenarios per metric, each
// expanded into one variant per demographic combination.
func (r *Runner) GenScenarios(ctx context.Context) error {
	out := filepath.Join(r.outDir, "scenarios.json")
	rep := PhaseReport{Phase: "gen_scenarios", Output: out}
	if len(r.bench.Metrics) == 0 {
		if r.opts.DryRun {
			r.logf("[dry-run] gen_scenarios: metrics are not generated yet; estimating with 5 metrics")
		} else {
			return &InputError{Msg: fmt.Sprintf("%s has no metrics: run `impactbench gen-metrics` first or write them by hand", r.bench.Path)}
		}
	}
	combos, err := stages.Combos(r.cfg.Demographics)
	if err != nil {
		return &InputError{Msg: fmt.Sprintf("%s: demographics: %v", r.cfg.Path, err)}
	}
	inputs := r.scenarioInputs()
	n := r.cfg.Generation.ScenariosPerMetric
	gen := r.cfg.Generator()
	skip, note := r.checkSkip("gen_scenarios", "", "gen_scenarios", out, inputs, rep)
	if skip {
		return nil
	}
	if note != "" {
		defer r.planNote("gen_scenarios", "", note)
	}
	if r.opts.DryRun {
		nm := len(r.bench.Metrics)
		if nm == 0 {
			nm = 5
		}
		r.planRow("gen_scenarios", "", gen, nm, nm, 1800, 350*n)
		if len(r.cfg.Demographics) > 0 {
			r.planRow("gen_scenarios (demographic rewrite)", "", gen, nm*n*len(combos), nm*n*len(combos), 900, 400)
		}
		return nil
	}
	if err := r.guardRows(out, len(r.bench.Metrics)*n*len(combos), "fewer metrics, scenarios_per_metric or demographic values"); err != nil {
		return err
	}
	c, err := r.modelClient(r.generatorField(), gen)
	if err != nil {
		return err
	}
	metrics := r.bench.Metrics
	results := make([]metricScenarios, len(metrics))
	bar := r.prog.Start("gen_scenarios", len(metrics))
	bar.SetNote(r.early.note(r.limitNote(gen)))
	var mu sync.Mutex
	var spent, saved, total llm.Usage
	// Base scenarios and their variants per metric in one unit each: the
	// expansion of metric A can start while metric B is still being written.
	workers := r.workers(r.cfg.Run.Concurrency.GenScenarios, len(metrics))
	perr := forEach(ctx, len(metrics), workers, func(ctx context.Context, i int) {
		start := time.Now()
		res, st, u := r.genMetricScenarios(ctx, c, metrics[i], n, combos, fingerprint(inputs))
		mu.Lock()
		spent, saved, total = spent.Add(st.Spent), saved.Add(st.Saved), total.Add(u)
		mu.Unlock()
		results[i] = res
		bar.Done(res.err != nil || len(res.problems) > 0, st.Misses == 0, st.Spent, time.Since(start))
	})
	bar.End()
	rep.Rows, rep.Spent, rep.Calls = len(metrics), spent, spent.Requests
	r.Report.addReused(saved)
	if perr != nil && !budgetStopped(perr) {
		return perr
	}
	var all []artifacts.Scenario
	bases := 0
	for i, res := range results {
		if res.err != nil && errors.Is(res.err, context.Canceled) {
			return res.err
		}
		if res.err != nil {
			res.problems = append(res.problems, res.err.Error())
		}
		if len(res.problems) > 0 {
			rep.Failed++
			rep.Failures = append(rep.Failures, RowFailure{Row: metrics[i].ID,
				Reason: fmt.Sprintf("%d of %d scenarios: %s", res.bases, n, strings.Join(res.problems, "; "))})
		}
		bases += res.bases
		all = append(all, res.variants...)
	}
	if len(all) == 0 {
		// Nothing valid at all: there is nothing for later phases to use.
		rep.Status = "failed"
		r.Report.add(rep)
		return nil
	}
	if err := r.guardRows(out, len(all), "the generator returned fewer scenarios"); err != nil {
		return err
	}
	if err := r.beginOutput("gen_scenarios", inputs); err != nil {
		return err
	}
	if err := artifacts.WriteScenarios(out, all); err != nil {
		return fmt.Errorf("write %s: %w", out, err)
	}
	if err := r.writeCost(r.outDir, "gen_scenarios", total); err != nil {
		return err
	}
	if err := r.record("gen_scenarios", out, inputs, rep.Failed); err != nil {
		return err
	}
	rep.Status = "ran"
	if rep.Failed > 0 {
		// Fail last: the valid scenarios are written and later phases use
		// them; the shortfall is reported (exit 1) and the next run tops the
		// short metrics up with fresh attempts, keeping the valid ones and
		// their ids.
		rep.Status, rep.Partial = "failed", true
		rep.Reason = fmt.Sprintf("(%s holds %d of %d base scenarios; later phases use them; run the same command again to top up the rest)",
			rel(r.outDir, out), bases, n*len(metrics))
	}
	r.logf("generated %d scenarios (%d metrics, %d base scenarios × %d variants)", len(all), len(metrics), bases, len(combos))
	r.Report.add(rep)
	return nil
}

// metricScenarios is one metric's outcome: the variants of every base
// scenario that was generated and fully expanded, and what went wrong.
type metricScenarios struct {
	variants []artifacts.Scenario
	bases    int      // complete base scenarios
	problems []string // shortfall and expansion failures (the metric is a failed row)
	err      error    // the metric could not be worked on at all
}

// genMetricScenarios generates and expands one metric's scenarios in its
// call-store unit. A base scenario whose expansion fails is left out (its
// variants come together or not at all) and reported; its id stays
// reserved, so a rerun fills the gap without renumbering the others.
func (r *Runner) genMetricScenarios(ctx context.Context, c llm.Client, m config.Metric, n int, combos []artifacts.Demographic, resKey string) (metricScenarios, callstore.Stats, llm.Usage) {
	var res metricScenarios
	unit, err := r.store.Unit("gen_scenarios/" + safeName(m.ID))
	if err != nil {
		res.err = err
		return res, callstore.Stats{}, llm.Usage{}
	}
	defer unit.Close()
	cl := unit.Client(identity(r.cfg.Generator()), c)
	base, usage, err := stages.GenBaseScenarios(ctx, cl, r.prompts, r.bench, m, n, r.cfg.Generation.Turns, stages.GenOptions{Seed: r.cfg.Seed})
	var sf *stages.ShortfallError
	switch {
	case errors.As(err, &sf):
		res.problems = append(res.problems, err.Error())
		if errors.Is(err, context.Canceled) {
			res.err = err
		}
	case err != nil:
		res.err = err
		return res, unit.Stats(), usage
	}
	vars, u2, failed := r.expandAll(ctx, cl, base, combos)
	usage = usage.Add(u2)
	res.variants, res.bases = vars, len(base)-len(failed)
	for _, f := range failed {
		if errors.Is(f, context.Canceled) {
			res.err = f
		}
		res.problems = append(res.problems, f.Error())
	}
	if res.err == nil && len(res.problems) == 0 {
		res.err = unit.SetResult(resKey, len(vars))
	}
	return res, unit.Stats(), usage
}

// expandAll rewrites one metric's base scenarios into their variants, every
// rewrite as its own task: a base scenario's variants come as fast as one
// rewrite, and the moment the last one is done they start simulating (run).
// The gen_scenarios workers each run this, so giving each one
// gen_scenarios_expand / gen_scenarios parallel rewrites keeps the total
// number of rewrites in flight at run.concurrency.gen_scenarios_expand.
// It returns the variants of the base scenarios that expanded fully and an
// error for each one that did not.
func (r *Runner) expandAll(ctx context.Context, c llm.Client, base []artifacts.Scenario, combos []artifacts.Demographic) ([]artifacts.Scenario, llm.Usage, []error) {
	nc := len(combos)
	workers := r.expandWorkers(len(base) * nc)
	vars := make([][]artifacts.Scenario, len(base))
	usages := make([][]llm.Usage, len(base))
	errs := make([][]error, len(base))
	left := make([]atomic.Int32, len(base))
	for i := range base {
		vars[i], usages[i], errs[i] = make([]artifacts.Scenario, nc), make([]llm.Usage, nc), make([]error, nc)
		left[i].Store(int32(nc))
	}
	perr := forEach(ctx, len(base)*nc, workers, func(ctx context.Context, k int) {
		i, v := k/nc, k%nc
		vars[i][v], usages[i][v], errs[i][v] = stages.ExpandVariant(ctx, c, r.prompts, base[i], combos, v, r.cfg.Generation.Turns, stages.GenOptions{Seed: r.cfg.Seed})
		if left[i].Add(-1) == 0 && firstErr(errs[i]) == nil {
			// Its variants are final: start simulating them (run only).
			r.early.offer(vars[i], r.cfg.Generation.NumSamples)
		}
	})
	var out []artifacts.Scenario
	var total llm.Usage
	var failed []error
	for i := range base {
		for _, u := range usages[i] {
			total = total.Add(u)
		}
		switch err := firstErr(errs[i]); {
		case err != nil:
			failed = append(failed, fmt.Errorf("scenario %s: %w", base[i].ID, err))
		case left[i].Load() > 0:
			failed = append(failed, fmt.Errorf("scenario %s: not expanded: %w", base[i].ID, perr))
		default:
			out = append(out, vars[i]...)
		}
	}
	return out, total, failed
}

func firstErr(errs []error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// writeCost records a phase's usage in dir/cost.json (upstream's shape).
func (r *Runner) writeCost(dir, phase string, u llm.Usage) error {
	if r.opts.Shard.Active() {
		phase = fmt.Sprintf("%s.shard-%d-of-%d", phase, r.opts.Shard.Index, r.opts.Shard.Count)
	}
	pc := artifacts.PhaseCost{
		Cost: artifacts.Round(u.Cost, 6), InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, Phase: phase,
		CachedInputTokens: u.CachedInputTokens, ReasoningTokens: u.ReasoningTokens, Requests: u.Requests,
	}
	if u.Requests > 0 && !u.CostKnown {
		f := false
		pc.CostKnown = &f
	}
	return artifacts.UpdateCost(filepath.Join(dir, "cost.json"), phase, pc)
}

func safeName(s string) string { return artifacts.SafeName(s) }
