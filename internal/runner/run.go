package runner

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/fault"
	"github.com/impactbench/impactbench/internal/phase"
	"github.com/impactbench/impactbench/internal/stages"
)

// Run runs the five stages of this benchmark for targets: gen_metrics,
// gen_scenarios, simulate and evaluate for every target, then aggregate.
// No stage waits for the last row of the one before it: a base scenario's
// variants start their conversations the moment its rewrites are done,
// and each conversation is judged the moment it is stored; every output
// file is still written whole, in its order, by its own writer.
func (r *Runner) Run(ctx context.Context, targets []string) error {
	err := r.run(ctx, targets)
	r.Report.Settle()
	return err
}

func (r *Runner) run(ctx context.Context, targets []string) error {
	if err := r.checkRun(targets); err != nil {
		return err
	}
	if err := r.genMetrics(ctx, false); err != nil {
		return err
	}
	if err := r.stopIfFailed(); err != nil {
		return err
	}
	flows, err := r.openTargets(ctx, targets)
	if err != nil {
		return err
	}
	defer closeTargets(flows)
	if err := r.genScenarios(ctx, r.speculate(flows)); err != nil {
		return err
	}
	// A metric short of scenarios does not hold up the others: when
	// scenarios.json was written with the valid ones, the run goes on (and
	// still exits 1 for the shortfall).
	if err := r.stopIfFailed(); err != nil && !r.Report.OnlyPartial() {
		return err
	}
	if err := r.guardTargets(targets); err != nil {
		return err
	}
	if err := r.runTargets(flows); err != nil {
		return err
	}
	return r.finishRun(ctx)
}

// checkRun is what `run` checks before anything is spent.
func (r *Runner) checkRun(targets []string) error {
	if r.opts.Shard.Active() {
		// Shards on different machines must share one scenario set; with a
		// real generator each shard would write its own. Generate first.
		if _, err := os.Stat(filepath.Join(r.outDir, "scenarios.json")); err != nil {
			return fault.Inputf("sharded runs need scenarios.json first: run `impactbench gen-scenarios %s` once, then start the shards", r.bench.Slug)
		}
	}
	return r.PreflightRun(targets)
}

// openTargets opens every target's clients; in `run` each stored
// conversation is judged at once (judges that batch wait for the file).
func (r *Runner) openTargets(ctx context.Context, targets []string) ([]*simTarget, error) {
	flows := make([]*simTarget, 0, len(targets))
	for _, id := range targets {
		t, err := r.newSimTarget(ctx, id)
		if err != nil {
			closeTargets(flows)
			return nil, err
		}
		t.pipeline = !r.opts.DryRun && !r.batchJudges()
		flows = append(flows, t)
	}
	return flows, nil
}

func closeTargets(flows []*simTarget) {
	for _, t := range flows {
		t.close()
	}
}

// batchJudges reports whether a judge of the panel sends its calls as a
// batch: its point is one batch after the simulation, so nothing is judged
// while conversations are being made.
func (r *Runner) batchJudges() bool {
	for _, jm := range r.judges() {
		if jm.Batch {
			return true
		}
	}
	return false
}

// speculate returns where gen_scenarios hands each base scenario's
// variants: to every target whose conversations will be made anyway
// (nil when nothing will be generated, so nothing starts early).
func (r *Runner) speculate(flows []*simTarget) *offers {
	rows := r.expectedScenarios() * r.cfg.Generation.NumSamples
	if r.opts.DryRun || r.opts.Shard.Active() || rows == 0 || !r.genScenariosWillRun() {
		return nil
	}
	off := &offers{}
	var to []*simTarget
	for _, t := range flows {
		if r.startsEarly(t, rows) {
			t.started = &off.started
			t.bar = r.openBar(phase.StageSimulate, t.id, rows)
			_ = t.attachJudge(rows) // without a judge, evaluate judges them later
			to = append(to, t)
		}
	}
	if len(to) == 0 {
		return nil
	}
	off.to = func(vs []artifacts.Scenario) {
		for _, t := range to {
			t.offer(vs)
		}
	}
	return off
}

// startsEarly reports whether t's conversations may start before
// scenarios.json exists: not when its turns go in batch waves (they take
// every conversation at once, at half price), and not when simulate would
// not run for it anyway (its conversations.json is kept as made elsewhere
// or edited by hand) or would refuse to (fewer rows than the file holds):
// money spent early there would buy nothing.
func (r *Runner) startsEarly(t *simTarget, rows int) bool {
	if r.batchWaves(r.cfg.UserModel) || r.batchWaves(t.model) {
		return false
	}
	out := filepath.Join(r.runDir(t.id), "conversations.json")
	if upToDate, _ := r.upToDate(phase.StageSimulate.String()+"/"+t.id, out, r.simInputs(t.model, "(being generated)")); upToDate {
		return false
	}
	return r.guardRows(out, rows, "") == nil && r.guardRows(r.scoresPath(t.id), rows, "") == nil
}

// expectedScenarios is how many variants gen_scenarios writes when every
// metric gets all its scenarios (0 when that cannot be known).
func (r *Runner) expectedScenarios() int {
	combos, err := stages.Combos(r.cfg.Demographics)
	if err != nil {
		return 0
	}
	return len(r.bench.Metrics) * r.cfg.Generation.ScenariosPerMetric * len(combos)
}

// runTargets simulates and evaluates every target at once, so one slow
// provider does not idle the others.
func (r *Runner) runTargets(flows []*simTarget) error {
	errs := make([]error, len(flows))
	var wg sync.WaitGroup
	for i, t := range flows {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = r.runTarget(t)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (r *Runner) runTarget(t *simTarget) error {
	if err := r.simulate(t); err != nil {
		return err
	}
	if r.Report.Stopped(phase.StageSimulate, t.id) && !r.opts.DryRun {
		return nil
	}
	return r.evaluate(t.callCtx, t.id, t.judge)
}

// finishRun aggregates the scores (a shard only says how to merge).
func (r *Runner) finishRun(ctx context.Context) error {
	if r.opts.Shard.Active() {
		r.logf("shard %d/%d done; when every shard has finished run `impactbench merge %s`", r.opts.Shard.Index, r.opts.Shard.Count, r.bench.Slug)
		return nil
	}
	if !r.anyScores() && r.opts.DryRun {
		return nil
	}
	if err := r.Aggregate(ctx); err != nil {
		var fe *fault.Error
		if !errors.As(err, &fe) || fe.Kind != fault.Input {
			return err
		}
		r.logf("aggregate skipped: %v", err)
	}
	return nil
}

// stopIfFailed ends a full run when a generation phase failed: later phases
// would only work on a partial benchmark.
func (r *Runner) stopIfFailed() error {
	if n, ph := r.Report.Failed(); n > 0 {
		return &PartialError{Failed: n, Phases: ph}
	}
	return nil
}

func (r *Runner) anyScores() bool {
	dirs, _ := artifacts.ListRunDirs(r.outDir)
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "scores.json")); err == nil {
			return true
		}
	}
	return false
}

// Targets returns all target ids in config order.
func (r *Runner) Targets() []string {
	ids := make([]string, len(r.cfg.Targets))
	for i, t := range r.cfg.Targets {
		ids[i] = t.ID
	}
	return ids
}
