package runner

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/callstore"
	"github.com/impactbench/impactbench/internal/clientset"
	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/fault"
	"github.com/impactbench/impactbench/internal/llm"
	"github.com/impactbench/impactbench/internal/phase"
	"github.com/impactbench/impactbench/internal/schedule"
	"github.com/impactbench/impactbench/internal/stages"
	"github.com/impactbench/impactbench/internal/summary"
)

// scenarioInputs are the fingerprints scenarios.json depends on.
func (r *Runner) scenarioInputs() map[string]string {
	in := map[string]string{
		"benchmark":    fingerprint(r.bench.Name, r.bench.Description, r.bench.Scenario),
		"metrics":      fingerprint(r.bench.Metrics),
		"generation":   fingerprint(r.cfg.Generation.ScenariosPerMetric, r.cfg.Generation.Turns),
		"demographics": fingerprint(r.cfg.Demographics),
		"generator":    fingerprint(clientset.Identity(r.cfg.Generator())),
		"prompts":      r.prompts.Hash(),
	}
	switch {
	case r.grow != nil:
		in["set"] = fingerprint(r.grow.target, r.grow.keep)
	default:
		// A set grown or with items replaced stays the set later runs
		// use: they carry its identity, so only another change of input
		// regenerates it.
		if rec, ok := r.records.Get(phase.StageGenScenarios.String()); ok && rec.Inputs["set"] != "" {
			in["set"] = rec.Inputs["set"]
		}
	}
	return in
}

// GenScenarios writes scenarios.json: n base scenarios per metric, each
// expanded into one variant per demographic combination.
func (r *Runner) GenScenarios(ctx context.Context) error { return r.genScenarios(ctx, nil) }

// offers hands a base scenario's variants, the moment its last rewrite is
// done, to whatever starts rows from them (conversations, in `run`), and
// counts the rows started for the progress note.
type offers struct {
	to      func([]artifacts.Scenario)
	started atomic.Int64
}

func (o *offers) offer(vs []artifacts.Scenario) {
	if o != nil && o.to != nil {
		o.to(vs)
	}
}

// genScenarios is GenScenarios, handing each base scenario's variants to
// off as soon as they exist.
func (r *Runner) genScenarios(ctx context.Context, off *offers) error {
	out := filepath.Join(r.outDir, "scenarios.json")
	rep := summary.PhaseReport{Phase: phase.StageGenScenarios, Output: out}
	if len(r.bench.Metrics) == 0 && !r.opts.DryRun {
		return fault.Inputf("%s has no metrics: run `impactbench gen-metrics` first or write them by hand", r.bench.Path)
	}
	combos, err := stages.Combos(r.cfg.Demographics)
	if err != nil {
		return fault.Inputf("%s: demographics: %v", r.cfg.Path, err)
	}
	inputs := r.scenarioInputs()
	n := r.cfg.Generation.ScenariosPerMetric
	skip, note := r.checkSkip(phase.StageGenScenarios, "", phase.StageGenScenarios.String(), out, inputs, rep)
	if skip {
		return nil
	}
	if note != "" {
		defer r.planNote(phase.StageGenScenarios, "", note)
	}
	if r.opts.DryRun {
		r.planGenScenarios(n, len(combos))
		return nil
	}
	if err := r.guardRows(out, r.plannedBases()*len(combos), "fewer metrics, scenarios_per_metric or demographic values"); err != nil {
		return err
	}
	res, err := r.metricRows(ctx, combos, fingerprint(inputs), off)
	rep.Rows, rep.Spent, rep.Calls = len(r.bench.Metrics), res.spent, res.spent.Requests
	r.Report.AddReused(res.saved)
	if err != nil && !budgetStopped(err) {
		return err
	}
	return r.writeScenarios(out, inputs, res, rep, len(combos))
}

// basesOf is how many base scenarios gen_scenarios is to write for metric.
func (r *Runner) basesOf(metric string) int {
	if r.grow == nil {
		return r.cfg.Generation.ScenariosPerMetric
	}
	return r.grow.target[metric]
}

// plannedBases is how many base scenarios gen_scenarios is to write:
// scenarios_per_metric for every metric, or a changed set's own counts.
func (r *Runner) plannedBases() int {
	if r.grow == nil {
		return len(r.bench.Metrics) * r.cfg.Generation.ScenariosPerMetric
	}
	n := 0
	for _, m := range r.bench.Metrics {
		n += r.grow.target[m.ID]
	}
	return n
}

// planGenScenarios adds gen_scenarios to a dry run's plan.
func (r *Runner) planGenScenarios(n, combos int) {
	nm := len(r.bench.Metrics)
	if nm == 0 {
		r.logf("[dry-run] gen_scenarios: metrics are not generated yet; estimating with 5 metrics")
		nm = 5
	}
	gen := r.cfg.Generator()
	r.planRow(phase.StageGenScenarios, "", "", gen, nm, nm, 1800, 350*n)
	if len(r.cfg.Demographics) > 0 {
		r.planRow(phase.StageGenScenarios, "demographic rewrite", "", gen, nm*n*combos, nm*n*combos, 900, 400)
	}
}

// generated is what the metric rows of gen_scenarios made and cost.
type generated struct {
	metrics      []metricScenarios // by metric, in benchmark.yaml's order
	spent, saved llm.Usage
	total        llm.Usage // every variant's usage, stored answers included (cost.json)
}

// metricRows runs one row per metric (its base scenarios and their
// variants, in the metric's call-store unit), at most the gen_scenarios
// lane's worth at once across the study.
func (r *Runner) metricRows(ctx context.Context, combos []artifacts.Demographic, resKey string, off *offers) (generated, error) {
	c, err := r.models.Model(r.generatorField(), r.cfg.Generator())
	if err != nil {
		return generated{}, err
	}
	metrics := r.bench.Metrics
	g := generated{metrics: make([]metricScenarios, len(metrics))}
	bar := r.openBar(phase.StageGenScenarios, "", len(metrics))
	defer bar.Close()
	bar.Bar().SetNote(off.note(r.models.LimitNote(r.cfg.Generator())))
	var mu sync.Mutex
	var wg sync.WaitGroup
	lane := r.lanes.Of(laneKey{phase.StageGenScenarios, ""})
	for i := range metrics {
		wg.Add(1)
		ok := r.goRow(ctx, lane, true, func() {
			defer wg.Done()
			start := time.Now()
			res, st, u := r.genMetricScenarios(ctx, c, metrics[i], combos, resKey, off)
			mu.Lock()
			g.spent, g.saved, g.total = g.spent.Add(st.Spent), g.saved.Add(st.Saved), g.total.Add(u)
			g.metrics[i] = res
			mu.Unlock()
			bar.Bar().Done(res.err != nil || len(res.problems) > 0, st.Misses == 0, st.Spent, time.Since(start))
		}, wg.Done)
		if !ok {
			wg.Done()
			break
		}
	}
	wg.Wait()
	return g, ctx.Err()
}

// note adds the conversations started so far to a progress note, so the
// gen_scenarios line shows that simulation is already under way.
func (o *offers) note(base func() string) func() string {
	if o == nil || o.to == nil {
		return base
	}
	return func() string {
		b, n := base(), o.started.Load()
		if n == 0 {
			return b
		}
		if b != "" {
			b += " · "
		}
		return b + fmt.Sprintf("%d conversation(s) started", n)
	}
}

// writeScenarios writes the variants of every metric, in order, and
// reports the shortfall of metrics that got fewer base scenarios.
func (r *Runner) writeScenarios(out string, inputs map[string]string, g generated, rep summary.PhaseReport, combos int) error {
	var all []artifacts.Scenario
	bases := 0
	for i, res := range g.metrics {
		if res.err != nil && errors.Is(res.err, context.Canceled) {
			return res.err
		}
		if res.err != nil {
			res.problems = append(res.problems, res.err.Error())
		}
		if len(res.problems) > 0 {
			rep.Failed++
			rep.Failures = append(rep.Failures, summary.RowFailure{Row: r.bench.Metrics[i].ID,
				Reason: fmt.Sprintf("%d of %d scenarios: %s", res.bases, r.basesOf(r.bench.Metrics[i].ID), strings.Join(res.problems, "; "))})
		}
		bases += res.bases
		all = append(all, res.variants...)
	}
	if len(all) == 0 {
		// Nothing valid at all: there is nothing for later phases to use.
		rep.Status = phase.StatusFailed
		r.Report.Add(rep)
		return nil
	}
	if err := r.commitScenarios(out, inputs, all, g.total, rep.Failed); err != nil {
		return err
	}
	rep.Status = phase.StatusRan
	if rep.Failed > 0 {
		// Fail last: the valid scenarios are written and later phases use
		// them; the shortfall is reported (exit 1) and the next run tops the
		// short metrics up with fresh attempts, keeping the valid ones and
		// their ids.
		rep.Status, rep.Partial = phase.StatusFailed, true
		rep.Reason = fmt.Sprintf("(%s holds %d of %d base scenarios; later phases use them; run the same command again to top up the rest)",
			relPath(r.outDir, out), bases, r.plannedBases())
	}
	r.logf("generated %d scenarios (%d metrics, %d base scenarios × %d variants)", len(all), len(r.bench.Metrics), bases, combos)
	r.Report.Add(rep)
	return nil
}

// commitScenarios writes scenarios.json, its cost and its phase record.
func (r *Runner) commitScenarios(out string, inputs map[string]string, all []artifacts.Scenario, total llm.Usage, failed int) error {
	if err := r.guardRows(out, len(all), "the generator returned fewer scenarios"); err != nil {
		return err
	}
	key := phase.StageGenScenarios.String()
	if err := r.beginOutput(key, inputs); err != nil {
		return err
	}
	if err := artifacts.WriteScenarios(out, all); err != nil {
		return fmt.Errorf("write %s: %w", out, err)
	}
	if err := r.writeCost(r.outDir, key, total); err != nil {
		return err
	}
	return r.record(key, out, inputs, failed)
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
func (r *Runner) genMetricScenarios(ctx context.Context, c llm.Client, m config.Metric, combos []artifacts.Demographic, resKey string, off *offers) (metricScenarios, callstore.Stats, llm.Usage) {
	var res metricScenarios
	unit, err := r.store.Unit("gen_scenarios/" + safeName(m.ID))
	if err != nil {
		res.err = err
		return res, callstore.Stats{}, llm.Usage{}
	}
	defer unit.Close()
	cl := unit.Client(clientset.Identity(r.cfg.Generator()), c)
	n, existing, next := r.cfg.Generation.ScenariosPerMetric, []artifacts.Scenario(nil), 0
	if g := r.grow; g != nil {
		n, existing, next = g.target[m.ID], g.keep[m.ID], g.next[m.ID]
	}
	base, usage, err := genBases(ctx, r, cl, m, n, existing, next)
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
	vars, u2, failed := r.expandAll(ctx, cl, base, combos, off)
	usage = usage.Add(u2)
	res.variants, res.bases = vars, len(base)-len(failed)
	for _, f := range failed {
		if errors.Is(f, context.Canceled) {
			res.err = f
		}
		res.problems = append(res.problems, f.Error())
	}
	if res.err == nil && len(res.problems) == 0 {
		res.err = unit.SetResult(resKey, metricResult{Variants: len(vars), Bases: base})
	}
	return res, unit.Stats(), usage
}

// genBases writes a metric's n base scenarios, keeping existing ones
// (a grown or replaced set) and numbering new ones from next.
func genBases(ctx context.Context, r *Runner, c llm.Client, m config.Metric, n int, existing []artifacts.Scenario, next int) ([]artifacts.Scenario, llm.Usage, error) {
	opts := stages.GenOptions{Seed: r.cfg.Seed, Existing: existing, NextID: next}
	return stages.GenBaseScenarios(ctx, c, r.prompts, r.bench, m, n, r.cfg.Generation.Turns, opts)
}

// expandAll rewrites one metric's base scenarios into their variants, every
// rewrite as its own task: a base scenario's variants come as fast as one
// rewrite, and the moment the last one is done they are offered (in `run`,
// they start simulating). The gen_scenarios rows each run this, so giving
// each one gen_scenarios_expand / gen_scenarios parallel rewrites keeps the
// total number of rewrites in flight at run.concurrency.gen_scenarios_expand.
// It returns the variants of the base scenarios that expanded fully and an
// error for each one that did not.
func (r *Runner) expandAll(ctx context.Context, c llm.Client, base []artifacts.Scenario, combos []artifacts.Demographic, off *offers) ([]artifacts.Scenario, llm.Usage, []error) {
	nc := len(combos)
	vars := make([][]artifacts.Scenario, len(base))
	usages := make([][]llm.Usage, len(base))
	errs := make([][]error, len(base))
	left := make([]atomic.Int32, len(base))
	for i := range base {
		vars[i], usages[i], errs[i] = make([]artifacts.Scenario, nc), make([]llm.Usage, nc), make([]error, nc)
		left[i].Store(int32(nc))
	}
	perr := schedule.ForEach(ctx, len(base)*nc, r.expandWorkers(len(base)*nc), func(ctx context.Context, k int) {
		i, v := k/nc, k%nc
		vars[i][v], usages[i][v], errs[i][v] = stages.ExpandVariant(ctx, c, r.prompts, base[i], combos, v, r.cfg.Generation.Turns, stages.GenOptions{Seed: r.cfg.Seed})
		if left[i].Add(-1) == 0 && firstErr(errs[i]) == nil {
			off.offer(vars[i]) // its variants are final
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
