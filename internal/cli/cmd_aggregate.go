package cli

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/impactbench/impactbench/internal/aggregate"
	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/fault"
	"github.com/impactbench/impactbench/internal/phase"
	"github.com/impactbench/impactbench/internal/runner"
	"github.com/impactbench/impactbench/internal/sanitize"
	"github.com/impactbench/impactbench/internal/summary"
)

// benchDirs resolves a command's benchmark arguments, as run does: `all`
// (alone) is every benchmark under benchmarks/, alphabetical; otherwise each
// argument names one, in the order given. Every name is checked before
// anything runs: the names that are no benchmark are one error (exit 2)
// naming them all.
func benchDirs(cfg *config.Config, args []string) ([]string, error) {
	if len(args) == 1 && args[0] == "all" {
		dirs, err := runner.ListBenches(cfg)
		if err == nil && len(dirs) == 0 {
			err = usagef("no benchmarks under %s", filepath.Join(cfg.Dir, "benchmarks"))
		}
		return dirs, err
	}
	var dirs, bad []string
	var lastErr error
	for _, a := range args {
		if a == "all" {
			return nil, usagef("`all` is every benchmark: give it alone, or name the benchmarks")
		}
		dir, err := runner.ResolveBench(cfg, a)
		if err != nil {
			bad, lastErr = append(bad, a), err
			continue
		}
		dirs = append(dirs, dir)
	}
	switch {
	case len(bad) == 1:
		return nil, lastErr // names what it looked for
	case len(bad) > 1:
		return nil, fault.Inputf("%d benchmarks not found: %s (a benchmark is a directory under %s holding benchmark.yaml, or a path to one)",
			len(bad), strings.Join(bad, ", "), filepath.Join(cfg.Dir, "benchmarks"))
	}
	return dirs, nil
}

// aggregateAll is `aggregate all` and `aggregate b1 b2 …`: each benchmark
// aggregated in turn (aggregate calls no model, so there is no schedule to
// share, unlike run's study); one that fails does not stop the others, and
// the error names each failure by benchmark. With --json, one array of run
// objects in the order given.
func (g *globals) aggregateAll(ctx context.Context, args []string, pf *phaseFlags, upstreamOnly bool) error {
	return g.forBenches(ctx, args, func(dir string, several bool) (any, error) {
		if !several {
			return nil, g.aggregateOne(ctx, dir, pf, upstreamOnly, nil)
		}
		if !g.JSON && !g.Quiet {
			fmt.Fprintf(g.stderr, "== %s\n", sanitize.Terminal(filepath.Base(dir)))
		}
		var objs []runJSON
		err := g.aggregateOne(ctx, dir, pf, upstreamOnly, &objs)
		if len(objs) == 0 {
			return nil, err
		}
		return objs[0], err
	})
}

// aggregateOne aggregates one benchmark and writes its report; collect
// (several benchmarks with --json) takes its run object instead of stdout.
func (g *globals) aggregateOne(ctx context.Context, dir string, pf *phaseFlags, upstreamOnly bool, collect *[]runJSON) error {
	r, tr, err := g.openRunner(ctx, dir, pf, func(o *runner.Options) { o.UpstreamOnly = upstreamOnly })
	if err != nil {
		if collect != nil {
			*collect = append(*collect, failedRunJSON("aggregate", filepath.Base(dir), err))
		}
		return err
	}
	defer r.Close()
	var inv invocation
	runErr := aggregateRun(ctx, g, r, &inv)
	g.stopTracker(ctx, tr)
	if collect == nil || !g.JSON {
		return g.finish("aggregate", r, inv, runErr)
	}
	runErr = settle(r, runErr)
	*collect = append(*collect, newRunJSON("aggregate", r, inv, runErr))
	return runErr
}

// aggregateRun is the aggregate stage of one benchmark, then its report.
func aggregateRun(ctx context.Context, g *globals, r *runner.Runner, inv *invocation) error {
	if err := r.Preflight(phase.StageAggregate, r.Targets()); err != nil {
		return err
	}
	if err := aggregate.Run(ctx, r.Work()); err != nil {
		return err
	}
	return writeReport(ctx, g, r, inv)
}

// failedRunJSON is the run object of a benchmark that could not be opened.
func failedRunJSON(command, bench string, err error) runJSON {
	msg := fmt.Sprintf("%v", err)
	return runJSON{Command: command, Benchmark: bench, ExitCode: exitCode(err), Error: &msg, Phases: []summary.PhaseReport{}}
}
