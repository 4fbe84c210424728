package generate

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/callstore"
	"github.com/impactbench/impactbench/internal/clientset"
	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/fault"
	"github.com/impactbench/impactbench/internal/layout"
	"github.com/impactbench/impactbench/internal/llm"
	"github.com/impactbench/impactbench/internal/phase"
	"github.com/impactbench/impactbench/internal/schedule"
	"github.com/impactbench/impactbench/internal/stages"
	"github.com/impactbench/impactbench/internal/summary"
	"github.com/impactbench/impactbench/internal/work"
)

// scenarioInputs are the fingerprints scenarios.json depends on.
func scenarioInputs(b *work.Bench, grow *Growth) map[string]string {
	in := map[string]string{
		"benchmark":    phase.Fingerprint(b.Spec.Name, b.Spec.Description, b.Spec.Scenario),
		"metrics":      phase.Fingerprint(b.Spec.Metrics),
		"generation":   phase.Fingerprint(b.Cfg.Generation.ScenariosPerMetric, b.Cfg.Generation.Turns),
		"demographics": phase.Fingerprint(b.Cfg.Demographics),
		"generator":    phase.Fingerprint(clientset.Identity(b.Cfg.Generator())),
		"prompts":      b.Prompts.Hash(),
	}
	switch {
	case grow != nil:
		in["set"] = phase.Fingerprint(grow.target, grow.keep)
	default:
		// A set grown or with items replaced stays the set later runs
		// use: they carry its identity, so only another change of input
		// regenerates it.
		if rec, ok := b.Records.Get(phase.StageGenScenarios.String()); ok && rec.Inputs["set"] != "" {
			in["set"] = rec.Inputs["set"]
		}
	}
	return in
}

// Offers hands a base scenario's variants, the moment its last rewrite is
// done, to whatever starts rows from them (conversations, in `run`), and
// counts the rows started for the progress note.
type Offers struct {
	To      func([]artifacts.Scenario)
	Started atomic.Int64
}

func (o *Offers) offer(vs []artifacts.Scenario) {
	if o != nil && o.To != nil {
		o.To(vs)
	}
}

// Scenarios writes scenarios.json: n base scenarios per metric, each
// expanded into one variant per demographic combination, or the set g
// makes of the current one (nil: a fresh set). Each base scenario's
// variants are handed to off the moment they exist (nil: to no one).
func Scenarios(ctx context.Context, b *work.Bench, grow *Growth, off *Offers) error {
	out := b.Files.Scenarios()
	rep := summary.PhaseReport{Phase: phase.StageGenScenarios, Output: out}
	if len(b.Spec.Metrics) == 0 && !b.Opts.DryRun {
		return fault.Inputf("%s has no metrics: run `impactbench gen-metrics` first or write them by hand", b.Spec.Path)
	}
	combos, err := stages.Combos(b.Cfg.Demographics)
	if err != nil {
		return fault.Inputf("%s: demographics: %v", b.Cfg.Path, err)
	}
	inputs := scenarioInputs(b, grow)
	n := b.Cfg.Generation.ScenariosPerMetric
	skip, note, err := b.CheckSkip(rep, phase.StageGenScenarios.String(), inputs)
	if err != nil {
		return err
	}
	if skip {
		return nil
	}
	if note != "" {
		defer b.PlanNote(phase.StageGenScenarios, "", note)
	}
	if b.Opts.DryRun {
		planGenScenarios(b, n, len(combos))
		return nil
	}
	if err := b.GuardRows(out, plannedBases(b, grow)*len(combos), "fewer metrics, scenarios_per_metric or demographic values"); err != nil {
		return err
	}
	res, err := metricRows(ctx, b, grow, combos, phase.Fingerprint(inputs), off)
	rep.Rows, rep.Spent, rep.Calls = len(b.Spec.Metrics), res.spent, res.spent.Requests
	b.Report.AddReused(res.saved)
	if err != nil && !work.BudgetStopped(err) {
		return err
	}
	return writeScenarios(b, grow, out, inputs, res, rep, len(combos))
}

// basesOf is how many base scenarios gen_scenarios is to write for metric.
func basesOf(b *work.Bench, grow *Growth, metric string) int {
	if grow == nil {
		return b.Cfg.Generation.ScenariosPerMetric
	}
	return grow.target[metric]
}

// plannedBases is how many base scenarios gen_scenarios is to write:
// scenarios_per_metric for every metric, or a changed set's own counts.
func plannedBases(b *work.Bench, grow *Growth) int {
	if grow == nil {
		return len(b.Spec.Metrics) * b.Cfg.Generation.ScenariosPerMetric
	}
	n := 0
	for _, m := range b.Spec.Metrics {
		n += grow.target[m.ID]
	}
	return n
}

// PlannedScenarios is how many rows scenarios.json is to hold once
// gen_scenarios has run with grow (nil: a fresh set): the row count its own
// guard checks before anything is paid for.
func PlannedScenarios(b *work.Bench, grow *Growth) (int, error) {
	combos, err := stages.Combos(b.Cfg.Demographics)
	if err != nil {
		return 0, fault.Inputf("%s: demographics: %v", b.Cfg.Path, err)
	}
	return plannedBases(b, grow) * len(combos), nil
}

// planGenScenarios adds gen_scenarios to a dry run's plan.
func planGenScenarios(b *work.Bench, n, combos int) {
	nm := len(b.Spec.Metrics)
	if nm == 0 {
		b.Logf("[dry-run] gen_scenarios: metrics are not generated yet; estimating with 5 metrics")
		nm = 5
	}
	gen := b.Cfg.Generator()
	b.PlanRow(phase.StageGenScenarios, "", "", gen, nm, nm, 1800, 350*n)
	if len(b.Cfg.Demographics) > 0 {
		b.PlanRow(phase.StageGenScenarios, "demographic rewrite", "", gen, nm*n*combos, nm*n*combos, 900, 400)
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
func metricRows(ctx context.Context, b *work.Bench, grow *Growth, combos []artifacts.Demographic, resKey string, off *Offers) (generated, error) {
	c, err := b.Models.Model(b.GeneratorField(), b.Cfg.Generator())
	if err != nil {
		return generated{}, err
	}
	metrics := b.Spec.Metrics
	g := generated{metrics: make([]metricScenarios, len(metrics))}
	bar := b.OpenBar(phase.StageGenScenarios, "", len(metrics))
	defer bar.Close()
	bar.Bar().SetNote(off.note(b.Models.LimitNote(b.Cfg.Generator())))
	var mu sync.Mutex
	var wg sync.WaitGroup
	lane := b.Lane(phase.StageGenScenarios, "")
	for i := range metrics {
		wg.Add(1)
		ok := b.Go(ctx, lane, true, func() {
			defer wg.Done()
			start := time.Now()
			res, st, u := genMetricScenarios(ctx, b, grow, c, metrics[i], combos, resKey, off)
			mu.Lock()
			g.spent, g.saved, g.total = g.spent.Add(st.Spent), g.saved.Add(st.Saved), g.total.Add(u)
			g.metrics[i] = res
			mu.Unlock()
			if res.stopped() {
				bar.Bar().Unfinished(st.Spent) // the cost ceiling: stopped, not failed
			} else {
				bar.Bar().Done(res.err != nil || len(res.problems) > 0, st.Misses == 0, st.Spent, time.Since(start))
			}
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
func (o *Offers) note(base func() string) func() string {
	if o == nil || o.To == nil {
		return base
	}
	return func() string {
		b, n := base(), o.Started.Load()
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
func writeScenarios(b *work.Bench, grow *Growth, out string, inputs map[string]string, g generated, rep summary.PhaseReport, combos int) error {
	var all []artifacts.Scenario
	bases, stopped := 0, 0
	// A refused key, an exhausted quota or a config mistake fails every
	// metric alike and no rerun heals it: like simulate and evaluate, the
	// run ends with that error (and its hint: which apikey to check), not
	// with "run the same command again".
	var fatal error
	for i, res := range g.metrics {
		if res.err != nil && errors.Is(res.err, context.Canceled) {
			return res.err
		}
		for _, c := range res.causes {
			if fatal == nil && work.Fatal(c) {
				fatal = c
			}
		}
		if res.err != nil {
			res.problems = append(res.problems, res.err.Error())
		}
		switch {
		case len(res.problems) > 0 && res.stopped():
			stopped++
		case len(res.problems) > 0:
			rep.Failed++
			rep.Failures = append(rep.Failures, summary.RowFailure{Row: b.Spec.Metrics[i].ID,
				Reason: fmt.Sprintf("%d of %d scenarios: %s", res.bases, basesOf(b, grow, b.Spec.Metrics[i].ID), strings.Join(res.problems, "; "))})
		}
		bases += res.bases
		all = append(all, res.variants...)
	}
	if stopped > 0 {
		b.NoteRemaining(stopped)
	}
	if len(all) == 0 {
		// Nothing valid at all: there is nothing for later phases to use.
		rep.Status = phase.StatusFailed
		if rep.Failed == 0 && stopped > 0 {
			rep.Status = phase.StatusStopped
			rep.Reason = "the cost ceiling was reached before any scenario was written; nothing to simulate yet"
		}
		b.Report.Add(rep)
		return fatal
	}
	// The record counts the stopped metrics with the failed ones, so the
	// next run tops both up.
	if err := commitScenarios(b, out, inputs, all, g.total, rep.Failed+stopped); err != nil {
		return err
	}
	rep.Status = phase.StatusRan
	if stopped > 0 {
		rep.Partial = true
		rep.Reason = fmt.Sprintf("(the cost ceiling stopped %d metric(s): %s holds %d of %d base scenarios; rerun with a higher --max-cost to top up the rest)",
			stopped, work.RelPath(b.Files.Dir, out), bases, plannedBases(b, grow))
	}
	if rep.Failed > 0 {
		// Fail last: the valid scenarios are written and later phases use
		// them; the shortfall is reported (exit 1) and the next run tops the
		// short metrics up with fresh attempts, keeping the valid ones and
		// their ids.
		rep.Status, rep.Partial = phase.StatusFailed, true
		rep.Reason = fmt.Sprintf("(%s holds %d of %d base scenarios; later phases use them; run the same command again to top up the rest)",
			work.RelPath(b.Files.Dir, out), bases, plannedBases(b, grow))
	}
	b.Logf("generated %d scenarios (%d metrics, %d base scenarios × %d variants)", len(all), len(b.Spec.Metrics), bases, combos)
	b.Report.Add(rep)
	return fatal
}

// commitScenarios writes scenarios.json, its cost and its phase record.
func commitScenarios(b *work.Bench, out string, inputs map[string]string, all []artifacts.Scenario, total llm.Usage, failed int) error {
	if err := b.GuardRows(out, len(all), "the generator returned fewer scenarios"); err != nil {
		return err
	}
	key := phase.StageGenScenarios.String()
	if err := b.BeginOutput(key, inputs); err != nil {
		return err
	}
	if err := artifacts.WriteScenarios(out, all); err != nil {
		return fmt.Errorf("write %s: %w", out, err)
	}
	if err := b.WriteCost(b.Files.Dir, key, total); err != nil {
		return err
	}
	return b.Record(key, out, inputs, failed)
}

// metricScenarios is one metric's outcome: the variants of every base
// scenario that was generated and fully expanded, and what went wrong.
type metricScenarios struct {
	variants []artifacts.Scenario
	bases    int      // complete base scenarios
	problems []string // shortfall and expansion failures (the metric is a failed row)
	err      error    // the metric could not be worked on at all
	// causes are the errors behind err and problems: when the cost ceiling
	// is every one of them, the metric was stopped, not failed (stopped).
	causes []error
}

// stopped reports a metric the cost ceiling alone left short: like a
// simulate or evaluate row the ceiling leaves undone, it is not a failed
// row (no exit 1); a rerun with a higher ceiling tops it up.
func (r metricScenarios) stopped() bool {
	if len(r.causes) == 0 {
		return false
	}
	for _, c := range r.causes {
		if !work.BudgetStopped(c) {
			return false
		}
	}
	return true
}

// genMetricScenarios generates and expands one metric's scenarios in its
// call-store unit. A base scenario whose expansion fails is left out (its
// variants come together or not at all) and reported; its id stays
// reserved, so a rerun fills the gap without renumbering the others.
func genMetricScenarios(ctx context.Context, b *work.Bench, grow *Growth, c llm.Client, m config.Metric, combos []artifacts.Demographic, resKey string, off *Offers) (metricScenarios, callstore.Stats, llm.Usage) {
	var res metricScenarios
	unit, err := b.Store.Unit(layout.GenScenariosUnit(m.ID))
	if err != nil {
		res.err = err
		return res, callstore.Stats{}, llm.Usage{}
	}
	defer unit.Close()
	cl := unit.Client(clientset.Identity(b.Cfg.Generator()), c)
	n, existing, next := b.Cfg.Generation.ScenariosPerMetric, []artifacts.Scenario(nil), 0
	if g := grow; g != nil {
		n, existing, next = g.target[m.ID], g.keep[m.ID], g.next[m.ID]
	}
	base, usage, err := genBases(ctx, b, cl, m, n, existing, next)
	var sf *stages.ShortfallError
	switch {
	case errors.As(err, &sf):
		res.problems, res.causes = append(res.problems, err.Error()), append(res.causes, err)
		if errors.Is(err, context.Canceled) {
			res.err = err
		}
	case err != nil:
		res.err, res.causes = err, append(res.causes, err)
		return res, unit.Stats(), usage
	}
	vars, u2, failed := expandAll(ctx, b, cl, base, combos, off)
	usage = usage.Add(u2)
	res.variants, res.bases = vars, len(base)-len(failed)
	for _, f := range failed {
		if errors.Is(f, context.Canceled) {
			res.err = f
		}
		res.problems, res.causes = append(res.problems, f.Error()), append(res.causes, f)
	}
	if res.err == nil && len(res.problems) == 0 {
		res.err = unit.SetResult(resKey, metricResult{Variants: len(vars), Bases: base})
	}
	return res, unit.Stats(), usage
}

// genBases writes a metric's n base scenarios, keeping existing ones
// (a grown or replaced set) and numbering new ones from next.
func genBases(ctx context.Context, b *work.Bench, c llm.Client, m config.Metric, n int, existing []artifacts.Scenario, next int) ([]artifacts.Scenario, llm.Usage, error) {
	opts := stages.GenOptions{Seed: b.Cfg.Seed, Existing: existing, NextID: next}
	return stages.GenBaseScenarios(ctx, c, b.Prompts, b.Spec, m, n, b.Cfg.Generation.Turns, opts)
}

// expandAll rewrites one metric's base scenarios into their variants, every
// rewrite as its own task: a base scenario's variants come as fast as one
// rewrite, and the moment the last one is done they are offered (in `run`,
// they start simulating). The gen_scenarios rows each run this, so giving
// each one gen_scenarios_expand / gen_scenarios parallel rewrites keeps the
// total number of rewrites in flight at run.concurrency.gen_scenarios_expand.
// It returns the variants of the base scenarios that expanded fully and an
// error for each one that did not.
func expandAll(ctx context.Context, b *work.Bench, c llm.Client, base []artifacts.Scenario, combos []artifacts.Demographic, off *Offers) ([]artifacts.Scenario, llm.Usage, []error) {
	nc := len(combos)
	vars := make([][]artifacts.Scenario, len(base))
	usages := make([][]llm.Usage, len(base))
	errs := make([][]error, len(base))
	left := make([]atomic.Int32, len(base))
	for i := range base {
		vars[i], usages[i], errs[i] = make([]artifacts.Scenario, nc), make([]llm.Usage, nc), make([]error, nc)
		left[i].Store(int32(nc))
	}
	perr := schedule.ForEach(ctx, len(base)*nc, expandWorkers(b, len(base)*nc), func(ctx context.Context, k int) {
		i, v := k/nc, k%nc
		vars[i][v], usages[i][v], errs[i][v] = stages.ExpandVariant(ctx, c, b.Prompts, base[i], combos, v, b.Cfg.Generation.Turns, stages.GenOptions{Seed: b.Cfg.Seed})
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

// expandWorkers is how many of one metric's demographic rewrites (of all
// its base scenarios) run at once. A configured gen_scenarios_expand is the
// total over the gen_scenarios workers, so each gets its share; auto
// rewrites them all at once.
func expandWorkers(b *work.Bench, rewrites int) int {
	cc := b.Cfg.Run.Concurrency
	if cc.GenScenariosExpand <= 0 {
		return b.Workers(0, rewrites)
	}
	gs := b.Workers(cc.GenScenarios, len(b.Spec.Metrics))
	return max(1, (cc.GenScenariosExpand+gs-1)/gs)
}
