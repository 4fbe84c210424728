package runner

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"

	"github.com/impactbench/impactbench/internal/aggregate"
	"github.com/impactbench/impactbench/internal/schedule"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/evaluate"
	"github.com/impactbench/impactbench/internal/fault"
	"github.com/impactbench/impactbench/internal/generate"
	"github.com/impactbench/impactbench/internal/layout"
	"github.com/impactbench/impactbench/internal/phase"
	"github.com/impactbench/impactbench/internal/simulate"
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
	if err := generate.Metrics(ctx, r.b, false); err != nil {
		return err
	}
	if err := r.stopIfFailed(); err != nil {
		return err
	}
	if r.Report.Stopped(phase.StageGenMetrics, "") {
		return nil // the cost ceiling: no metrics, nothing to generate from
	}
	flows, err := r.openTargets(targets)
	if err != nil {
		return err
	}
	defer closeTargets(flows)
	if err := r.guardBeforeScenarios(targets); err != nil {
		return err
	}
	if err := generate.Scenarios(ctx, r.b, r.grow, r.speculate(ctx, flows)); err != nil {
		return err
	}
	if r.Report.Stopped(phase.StageGenScenarios, "") && !r.b.Opts.DryRun {
		// The cost ceiling stopped gen_scenarios before it wrote anything:
		// there is nothing to simulate, and the ceiling's own line says
		// what to do (exit 0, as every stop at the ceiling), not "run
		// gen-scenarios first".
		if _, err := os.Stat(r.b.Files.Scenarios()); errors.Is(err, os.ErrNotExist) {
			return nil
		}
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
	if err := r.runTargets(ctx, flows); err != nil {
		return err
	}
	return r.finishRun(ctx)
}

// checkRun is what `run` checks before anything is spent (a shard's
// scenarios.json was checked before the benchmark was opened:
// scenariosFirst).
func (r *Runner) checkRun(targets []string) error {
	return r.PreflightRun(targets)
}

// openTargets opens every target's clients; in `run` each stored
// conversation is judged at once (judges that batch wait for the file).
func (r *Runner) openTargets(targets []string) ([]*simulate.Target, error) {
	flows := make([]*simulate.Target, 0, len(targets))
	for _, id := range targets {
		t, err := simulate.NewTarget(r.b, id)
		if err != nil {
			closeTargets(flows)
			return nil, err
		}
		t.Pipeline = !r.b.Opts.DryRun && !r.batchJudges()
		t.NewJudge = r.judgeFor(t)
		flows = append(flows, t)
	}
	return flows, nil
}

func closeTargets(flows []*simulate.Target) {
	for _, t := range flows {
		t.Close()
	}
}

// batchJudges reports whether a judge of the panel sends its calls as a
// batch: its point is one batch after the simulation, so nothing is judged
// while conversations are being made.
func (r *Runner) batchJudges() bool {
	for _, jm := range r.b.Judges() {
		if jm.Batch {
			return true
		}
	}
	return false
}

// speculate returns where gen_scenarios hands each base scenario's
// variants: to every target whose conversations will be made anyway
// (nil when nothing will be generated, so nothing starts early).
func (r *Runner) speculate(ctx context.Context, flows []*simulate.Target) *generate.Offers {
	rows := r.b.ExpectedScenarios() * r.b.Cfg.Generation.NumSamples
	if r.b.Opts.DryRun || r.b.Opts.Shard.Active() || rows == 0 || !generate.ScenariosWillRun(r.b, r.grow) {
		return nil
	}
	off := &generate.Offers{}
	var to []*simulate.Target
	for _, t := range flows {
		if r.startsEarly(t, rows) {
			t.Started = &off.Started
			t.Bar = r.b.OpenBar(phase.StageSimulate, t.ID(), rows)
			_ = t.AttachJudge(rows) // without a judge, evaluate judges them later
			to = append(to, t)
		}
	}
	if len(to) == 0 {
		return nil
	}
	off.To = func(vs []artifacts.Scenario) {
		for _, t := range to {
			t.Offer(ctx, vs)
		}
	}
	return off
}

// startsEarly reports whether t's conversations may start before
// scenarios.json exists: not when its turns go in batch waves (they take
// every conversation at once, at half price), and not when simulate would
// not run for it anyway (its conversations.json is kept as made elsewhere
// or edited by hand) or would refuse to (fewer rows than the file holds,
// or audited conversations where the audit is now off): money spent early
// there would buy nothing.
func (r *Runner) startsEarly(t *simulate.Target, rows int) bool {
	if simulate.BatchWaves(r.b, r.b.Cfg.UserModel) || simulate.BatchWaves(r.b, t.Model()) {
		return false
	}
	out := r.b.Conversations(t.ID())
	if upToDate, _ := r.b.UpToDate(simulate.PhaseKey(r.b, t.ID()), out, simulate.Inputs(r.b, t.Model(), "(being generated)")); upToDate {
		return false
	}
	return r.b.GuardRows(out, rows, "") == nil && r.b.GuardRows(r.b.Scores(t.ID()), rows, "") == nil && simulate.GuardAudits(r.b, t) == nil
}

// judgeFor makes the judge a target's conversations are handed to as they
// are stored (simulate.Target.NewJudge).
func (r *Runner) judgeFor(t *simulate.Target) func(halt *schedule.Halt, total int) (simulate.Judge, error) {
	return func(halt *schedule.Halt, total int) (simulate.Judge, error) {
		j, err := evaluate.NewTarget(halt, r.b, t.ID(), total)
		if err != nil {
			return nil, err
		}
		return j, nil
	}
}

// runTargets simulates and evaluates every target at once, so one slow
// provider does not idle the others.
func (r *Runner) runTargets(ctx context.Context, flows []*simulate.Target) error {
	errs := make([]error, len(flows))
	var wg sync.WaitGroup
	for i, t := range flows {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = r.runTarget(ctx, t)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (r *Runner) runTarget(ctx context.Context, t *simulate.Target) error {
	if err := simulate.Phase(ctx, r.b, t); err != nil {
		return err
	}
	if r.Report.Stopped(phase.StageSimulate, t.ID()) && !r.b.Opts.DryRun {
		return nil
	}
	j, _ := t.Judge().(*evaluate.Target)
	return evaluate.Phase(ctx, r.b, t.ID(), j)
}

// finishRun aggregates the scores (a shard only says how to merge).
func (r *Runner) finishRun(ctx context.Context) error {
	if r.b.Opts.Shard.Active() && r.b.Opts.DryRun {
		return nil // a plan: nothing of the shard was done
	}
	if r.b.Opts.Shard.Active() {
		merge := "impactbench merge " + r.b.Spec.Slug
		if r.b.SharedStore() {
			// Workers sharing only the store keep their shard files on
			// disks of their own: the store holds every shard's answers,
			// and merge --from-store needs nothing else.
			merge += " --from-store"
		}
		r.b.ShardFinished()
		r.b.Logf("shard %d/%d done; when every shard has finished run `%s`", r.b.Opts.Shard.Index, r.b.Opts.Shard.Count, merge)
		return nil
	}
	if !r.anyScores() && r.b.Opts.DryRun {
		return nil
	}
	if err := aggregate.Run(ctx, r.b); err != nil {
		var fe *fault.Error
		if !errors.As(err, &fe) || fe.Kind != fault.Input {
			return err
		}
		r.b.Logf("aggregate skipped: %v", err)
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
	dirs, _ := layout.ListRunDirs(r.b.Files.Dir)
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, layout.ScoresFile)); err == nil {
			return true
		}
	}
	return false
}

// Targets returns all target ids in config order.
func (r *Runner) Targets() []string {
	ids := make([]string, len(r.b.Cfg.Targets))
	for i, t := range r.b.Cfg.Targets {
		ids[i] = t.ID
	}
	return ids
}
