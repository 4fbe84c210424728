package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/llm"
	"github.com/impactbench/impactbench/internal/stages"
)

// GenMetrics writes metrics into benchmark.yaml (kept as the user wrote it otherwise).
func (r *Runner) GenMetrics(ctx context.Context) error {
	rep := PhaseReport{Phase: "gen_metrics", Output: r.bench.Path}
	gen := r.cfg.Generator()
	skip := len(r.bench.Metrics) > 0 && !r.opts.Force
	if r.opts.DryRun {
		r.planRow("gen_metrics", "", gen, 1, 1, 1500, 1500)
		if skip {
			r.planNote("gen_metrics", "", "skip: metrics exist")
		}
		return nil
	}
	if skip {
		rep.Status, rep.Reason = "skipped", fmt.Sprintf("benchmark.yaml already has %d metrics (use --force to regenerate them)", len(r.bench.Metrics))
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
	c, err := r.modelClient(r.generatorField(), gen)
	if err != nil {
		return err
	}
	metrics := r.bench.Metrics
	type result struct {
		variants []artifacts.Scenario
		err      error
	}
	results := make([]result, len(metrics))
	bar := r.prog.Start("gen_scenarios", len(metrics))
	var mu sync.Mutex
	var spent, saved, total llm.Usage
	// Base scenarios and their variants per metric in one unit each: the
	// expansion of metric A can start while metric B is still being written.
	workers := min(r.cfg.Run.Concurrency.GenScenarios, len(metrics))
	perr := forEach(ctx, len(metrics), workers, func(ctx context.Context, i int) {
		m := metrics[i]
		start := time.Now()
		unit, err := r.store.Unit("gen_scenarios/" + safeName(m.ID))
		if err != nil {
			results[i].err = err
			return
		}
		defer unit.Close()
		cl := unit.Client(identity(gen), c)
		base, u1, err := stages.GenBaseScenarios(ctx, cl, r.prompts, r.bench, m, n, r.cfg.Generation.Turns, stages.GenOptions{Seed: r.cfg.Seed})
		var vars []artifacts.Scenario
		var u2 llm.Usage
		if err == nil {
			vars, u2, err = r.expandAll(ctx, cl, base, combos)
		}
		st := unit.Stats()
		mu.Lock()
		spent, saved, total = spent.Add(st.Spent), saved.Add(st.Saved), total.Add(u1).Add(u2)
		mu.Unlock()
		if err == nil {
			err = unit.SetResult(fingerprint(inputs), len(vars))
		}
		results[i] = result{vars, err}
		bar.Done(err != nil, st.Misses == 0, st.Spent, time.Since(start))
	})
	bar.End()
	rep.Rows, rep.Spent, rep.Calls = len(metrics), spent, spent.Requests
	r.Report.addReused(saved)
	if perr != nil && !budgetStopped(perr) {
		return perr
	}
	var all []artifacts.Scenario
	for i, res := range results {
		if res.err != nil {
			rep.Failed++
			if errors.Is(res.err, context.Canceled) {
				return res.err
			}
			rep.Failures = append(rep.Failures, RowFailure{Row: metrics[i].ID, Reason: res.err.Error()})
			continue
		}
		all = append(all, res.variants...)
	}
	if rep.Failed > 0 {
		// scenarios.json is all-or-nothing: a partial file would silently
		// drop a metric from every later phase. The next run redoes only
		// the failed metrics (the others replay from the call store).
		rep.Status = "failed"
		r.Report.add(rep)
		return nil
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
	if err := r.record("gen_scenarios", out, inputs, 0); err != nil {
		return err
	}
	rep.Status = "ran"
	r.logf("generated %d scenarios (%d metrics × %d × %d variants)", len(all), len(metrics), n, len(combos))
	r.Report.add(rep)
	return nil
}

// expandAll rewrites one metric's base scenarios into their variants. The
// gen_scenarios workers each run this, so giving each one
// gen_scenarios_expand / gen_scenarios parallel rewrites keeps the total
// number of rewrites in flight at run.concurrency.gen_scenarios_expand.
func (r *Runner) expandAll(ctx context.Context, c llm.Client, base []artifacts.Scenario, combos []artifacts.Demographic) ([]artifacts.Scenario, llm.Usage, error) {
	cc := r.cfg.Run.Concurrency
	workers := max(1, (cc.GenScenariosExpand+cc.GenScenarios-1)/max(1, cc.GenScenarios))
	vars := make([][]artifacts.Scenario, len(base))
	usages := make([]llm.Usage, len(base))
	errs := make([]error, len(base))
	perr := forEach(ctx, len(base), workers, func(ctx context.Context, i int) {
		vars[i], usages[i], errs[i] = stages.ExpandScenario(ctx, c, r.prompts, base[i], combos, r.cfg.Generation.Turns, stages.GenOptions{Seed: r.cfg.Seed})
	})
	var out []artifacts.Scenario
	var total llm.Usage
	for i := range base {
		total = total.Add(usages[i])
		if errs[i] != nil {
			return nil, total, fmt.Errorf("scenario %s: %w", base[i].ID, errs[i])
		}
		out = append(out, vars[i]...)
	}
	if perr != nil {
		return nil, total, perr
	}
	return out, total, nil
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

// safeName makes an id usable as a file name (ids come from files users edit).
func safeName(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c == '/' || c == '\\' || c < 0x20 || c == ':' {
			b[i] = '_'
		}
	}
	if len(b) == 0 || string(b) == "." || string(b) == ".." {
		return "_" + string(b)
	}
	return string(b)
}
