package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/progress"
	"github.com/impactbench/impactbench/internal/runner"
)

// phaseFlags are the switches shared by the stage commands.
type phaseFlags struct {
	Force   bool
	DryRun  bool
	MaxCost float64
	Shard   string
	Report  bool
}

func (f *phaseFlags) add(cmd *cobra.Command) {
	cmd.Flags().BoolVarP(&f.Force, "force", "f", false, "redo this phase even if its output exists (ignores stored answers; may replace a file with fewer rows or null verdicts)")
	cmd.Flags().BoolVarP(&f.DryRun, "dry-run", "n", false, "print rows, model calls and estimated tokens/cost; call nothing")
	cmd.Flags().Float64Var(&f.MaxCost, "max-cost", 0, "stop scheduling new calls before spending more than this many USD (0: config max_cost)")
	cmd.Flags().StringVar(&f.Shard, "shard", "", "run only shard i of K (\"i/K\", 0-based); combine shards with `impactbench merge`")
}

func (f *phaseFlags) shard() (runner.Shard, error) {
	if f.Shard == "" {
		return runner.Shard{}, nil
	}
	var s runner.Shard
	if _, err := fmt.Sscanf(f.Shard, "%d/%d", &s.Index, &s.Count); err != nil || s.Count < 1 || s.Index < 0 || s.Index >= s.Count {
		return s, usagef("--shard %q: want i/K with 0 ≤ i < K, e.g. --shard 0/4", f.Shard)
	}
	if s.Count == 1 {
		return runner.Shard{}, nil
	}
	return s, nil
}

// loadConfig loads --config; a missing default config.yaml gets a hint.
func (g *globals) loadConfig() (*config.Config, error) {
	cfg, err := config.LoadWithOptions(g.ConfigPath, config.LoadOptions{AllowMissingEnv: true})
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, usagef("%s not found: run `impactbench init` to create a project, or pass --config FILE", g.ConfigPath)
		}
		return nil, err
	}
	for _, w := range cfg.Warnings {
		fmt.Fprintf(g.stderr, "impactbench: warning: %s\n", w)
	}
	return cfg, nil
}

// tracker starts the progress display; stop it with stopTracker.
func (g *globals) tracker() *progress.Tracker {
	var tr *progress.Tracker
	switch {
	case g.Quiet:
		tr = progress.New(g.stderr, progress.Quiet, 0)
	case g.isTTY:
		tr = progress.New(g.stderr, progress.Bars, 0)
	default:
		tr = progress.New(g.stderr, progress.Lines, 15*time.Second)
	}
	g.progress.Store(tr)
	return tr
}

// stopTracker ends the display: after an interrupt at once (never waiting
// on the terminal), otherwise once the final frame is drawn.
func (g *globals) stopTracker(ctx context.Context, tr *progress.Tracker) {
	if ctx.Err() != nil {
		tr.Abort()
	} else {
		tr.Close()
	}
	g.progress.CompareAndSwap(tr, nil)
}

// withRunner loads config and benchmark, takes the benchmark lock, runs fn,
// and prints the summary.
func (g *globals) withRunner(ctx context.Context, benchArg string, pf *phaseFlags, extra func(*runner.Options), fn func(context.Context, *runner.Runner) error) error {
	r, tr, err := g.openRunner(benchArg, pf, extra)
	if err != nil {
		return err
	}
	defer r.Close()
	runErr := fn(ctx, r)
	g.stopTracker(ctx, tr)
	return g.finish(r, runErr)
}

// openRunner loads config and benchmark and takes the benchmark lock.
func (g *globals) openRunner(benchArg string, pf *phaseFlags, extra func(*runner.Options)) (*runner.Runner, *progress.Tracker, error) {
	cfg, err := g.loadConfig()
	if err != nil {
		return nil, nil, err
	}
	dir, err := runner.ResolveBench(cfg, benchArg)
	if err != nil {
		return nil, nil, err
	}
	shard, err := pf.shard()
	if err != nil {
		return nil, nil, err
	}
	tr := g.tracker()
	opts := runner.Options{
		Force:    pf.Force || cfg.Run.Force,
		DryRun:   pf.DryRun || cfg.Run.DryRun,
		MaxCost:  pf.MaxCost,
		Shard:    shard,
		Progress: tr,
		Logger:   g.logger,
		Stderr:   g.stderr,
	}
	if extra != nil {
		extra(&opts)
	}
	r, err := runner.New(cfg, dir, opts)
	if err != nil {
		tr.Close()
		return nil, nil, err
	}
	return r, tr, nil
}

// preflightRun checks one benchmark as `run` would before its first phase,
// without running anything (for `run all`, before the first benchmark runs).
func (g *globals) preflightRun(benchArg string, pf *phaseFlags) error {
	r, tr, err := g.openRunner(benchArg, pf, nil)
	if err != nil {
		return err
	}
	defer r.Close()
	tr.Close()
	return r.PreflightRun(r.Targets())
}

// finish prints the plan or summary and turns failed rows into exit 1.
func (g *globals) finish(r *runner.Runner, runErr error) error {
	r.RecordLimits()
	s := r.Report
	if runErr == nil {
		if n, ph := s.Failed(); n > 0 {
			runErr = &runner.PartialError{Failed: n, Phases: ph}
		}
	}
	if g.JSON {
		out := struct {
			*runner.Summary
			ExitCode int    `json:"exit_code"`
			Error    string `json:"error,omitempty"`
		}{Summary: s, ExitCode: exitCode(runErr)}
		if runErr != nil {
			out.Error = runErr.Error()
		}
		enc := json.NewEncoder(g.stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(out); err != nil {
			return err
		}
		return runErr
	}
	if s.DryRun {
		runner.PrintPlan(g.stdout, s)
		return runErr
	}
	if !g.Quiet {
		printSummary(g, s)
	}
	return runErr
}

func printSummary(g *globals, s *runner.Summary) {
	for _, p := range s.Phases {
		if p.Status == "failed" || p.Status == "stopped" {
			label := p.Phase
			if p.Target != "" {
				label += " " + p.Target
			}
			fmt.Fprintf(g.stderr, "%s: %s — %d of %d row(s) failed %s\n", label, p.Status, p.Failed, p.Rows, p.Reason)
			for _, f := range p.Failures {
				fmt.Fprintf(g.stderr, "  %s: %s\n", f.Row, f.Reason)
			}
		}
	}
	if s.Budget != nil {
		fmt.Fprintf(g.stderr, "cost ceiling $%.4f: spent $%.4f this run; %d row(s) not done — raise --max-cost and rerun to finish them\n",
			s.Budget.Max, s.Budget.Spent, s.Budget.Remaining)
	}
	fmt.Fprintf(g.stderr, "spent now: %s (%d calls, %d in / %d out tokens); reused from earlier runs: %d calls worth %s\n",
		progress.Dollars(s.Spent), s.Spent.Requests, s.Spent.InputTokens, s.Spent.OutputTokens,
		s.Reused.Requests, progress.Dollars(s.Reused))
	if line := limitsLine(s.Limits); line != "" {
		fmt.Fprintln(g.stderr, line)
	}
}

// limitsLine says how many calls in flight each provider pool ended at,
// e.g. "concurrency learned: gpt-4o 48 of ≤256 (peak 52, 3 back-offs, 7 × 429)".
func limitsLine(ls []runner.PoolLimit) string {
	if len(ls) == 0 {
		return ""
	}
	parts := make([]string, len(ls))
	for i, l := range ls {
		p := fmt.Sprintf("%s %d of ≤%d (peak %d", l.Pool, l.Concurrency, l.MaxConcurrency, l.PeakInFlight)
		if l.BackOffs > 0 {
			p += fmt.Sprintf(", %d back-offs", l.BackOffs)
		}
		if l.RateLimited > 0 {
			p += fmt.Sprintf(", %d × 429", l.RateLimited)
		}
		parts[i] = p + ")"
	}
	return "concurrency learned: " + strings.Join(parts, "; ")
}

// benchDirs expands "all" to every benchmark under benchmarks/.
func benchArgs(g *globals, arg string) ([]string, error) {
	if arg != "all" {
		return []string{arg}, nil
	}
	cfg, err := g.loadConfig()
	if err != nil {
		return nil, err
	}
	dirs, err := runner.ListBenches(cfg)
	if err != nil {
		return nil, err
	}
	if len(dirs) == 0 {
		return nil, usagef("no benchmarks under %s", filepath.Join(cfg.Dir, "benchmarks"))
	}
	return dirs, nil
}
