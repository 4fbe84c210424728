package runner

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/generate"
	"github.com/impactbench/impactbench/internal/plan"
	"github.com/impactbench/impactbench/internal/summary"
	"github.com/impactbench/impactbench/internal/work"
)

// Study is several benchmarks run as one schedule of rows. Every
// benchmark's rows go through the same provider pools and lanes, under one
// cost ceiling and one progress display, so no pool idles between
// benchmarks; a benchmark that fails does not stop the others.
type Study struct {
	env     *work.Env
	benches []*Runner
}

// NewStudy loads the benchmarks in benchDirs and takes each one's lock.
func NewStudy(ctx context.Context, cfg *config.Config, benchDirs []string, opts Options) (*Study, error) {
	if err := scenariosFirst(cfg, benchDirs, opts); err != nil {
		return nil, err
	}
	e, err := work.NewEnv(ctx, cfg, opts)
	if err != nil {
		return nil, err
	}
	s := &Study{env: e}
	e.StudySize = len(benchDirs)
	for _, d := range benchDirs {
		r, err := open(ctx, e, d)
		if err != nil {
			s.Close()
			return nil, err
		}
		s.benches = append(s.benches, r)
	}
	return s, nil
}

// Benchmarks are the study's benchmarks, in the order they were given.
func (s *Study) Benchmarks() []*Runner { return s.benches }

// Close releases every benchmark's lock.
func (s *Study) Close() {
	for _, r := range s.benches {
		r.Close()
	}
	s.env.Close()
}

// Preflight checks every benchmark as Run would before anything runs: a
// mistake in the last benchmark must not surface after the first ones
// have paid for their calls.
func (s *Study) Preflight(targets []string) error {
	slugs := make([]string, len(s.benches))
	errs := make([]error, len(s.benches))
	for i, r := range s.benches {
		slugs[i], errs[i] = r.b.Spec.Slug, r.checkRun(targets)
	}
	return JoinOnce(slugs, errs)
}

// JoinOnce joins the benchmarks' errors (errs[i] is slugs[i]'s, nil: none)
// saying each text once: one every benchmark gave (a target config.yaml
// does not have, a key left unset) is said as it is, once rather than once
// per benchmark; one only some gave names them ("b2: …", BenchError), so
// that none is repeated and none is left without its benchmark. Every
// error is kept, each text in the order first given.
func JoinOnce(slugs []string, errs []error) error {
	type same struct {
		err     error
		benches []string
	}
	var groups []*same
	byText := map[string]*same{}
	for i, err := range errs {
		if err == nil {
			continue
		}
		g := byText[err.Error()]
		if g == nil {
			g = &same{err: err}
			byText[err.Error()] = g
			groups = append(groups, g)
		}
		g.benches = append(g.benches, slugs[i])
	}
	out := make([]error, len(groups))
	for i, g := range groups {
		out[i] = g.err
		if len(g.benches) < len(slugs) {
			out[i] = &BenchError{Benches: g.benches, Err: g.err}
		}
	}
	if len(out) == 1 {
		return out[0] // itself, as one benchmark's command returns it
	}
	return errors.Join(out...)
}

// Run runs every benchmark at once (see Runner.Run). It returns when all
// have finished what they can; the error names each benchmark that failed.
func (s *Study) Run(ctx context.Context, targets []string) error {
	return s.RunRound(ctx, targets, nil)
}

// RunRound is Run over the scenario sets grow gives, by benchmark slug: a
// benchmark listed grows its current set into grow's (as run --until's
// rounds do), the others run their current sets. The adaptive study
// (internal/adaptrun) runs its rounds through it.
func (s *Study) RunRound(ctx context.Context, targets []string, grow map[string]*generate.Growth) error {
	if err := s.Preflight(targets); err != nil {
		return err
	}
	errs := make([]error, len(s.benches))
	var wg sync.WaitGroup
	for i, r := range s.benches {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ts := targets
			if len(ts) == 0 {
				ts = r.Targets()
			}
			r.grow = grow[r.b.Spec.Slug]
			err := r.run(ctx, ts)
			r.grow = nil
			r.Report.Settle()
			if n, ph := r.Report.Failed(); err == nil && n > 0 {
				err = &PartialError{Failed: n, Phases: ph}
			}
			if err != nil {
				errs[i] = &BenchError{Benches: []string{r.b.Spec.Slug}, Err: err}
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// BenchError is one benchmark's failure in a study: Benches holds its slug,
// or before the run (Preflight) every benchmark that failed alike
// (JoinOnce), so that --json gives each of them the error.
type BenchError struct {
	Benches []string
	Err     error
}

func (e *BenchError) Error() string {
	return fmt.Sprintf("%s: %v", strings.Join(e.Benches, ", "), e.Err)
}
func (e *BenchError) Unwrap() error { return e.Err }

// Summary settles and returns the study's summary. Call it after Run.
func (s *Study) Summary() *summary.StudySummary {
	out := &summary.StudySummary{DryRun: s.env.Opts.DryRun, Limits: s.env.Models.PoolLimits()}
	var rows []plan.Row
	remaining, capped := 0, false
	for _, r := range s.benches {
		spent, reused, p, budget := r.Report.Totals()
		out.Spent, out.Reused = out.Spent.Add(spent), out.Reused.Add(reused)
		rows = append(rows, p...)
		if budget != nil {
			remaining += budget.Remaining
			capped = true
		}
		r.Report.SetLimits(out.Limits)
		out.Benchmarks = append(out.Benchmarks, r.Report)
	}
	if b := s.env.Models.Budget(); b != nil && capped {
		out.Budget = &summary.BudgetReport{Max: b.Max(), Spent: b.Spent(), Stopped: b.Exhausted(), Remaining: remaining}
	}
	if out.DryRun {
		t := plan.TotalOf(rows)
		out.Plan = &t
	}
	return out
}
