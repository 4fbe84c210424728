// Package runner runs benchmarks as one schedule of rows.
//
// The pipeline is gen_metrics → gen_scenarios → simulate → evaluate →
// aggregate, but the unit of work is the row, not the phase: a metric's
// base scenarios and their demographic variants (gen_scenarios.go), a
// conversation (converse.go), a verdict (judge.go). Each row runs once per
// invocation under the call-store unit it is stored in (resume: nothing is
// paid twice) and waits only for the rows it needs: a conversation starts
// the moment its variant exists, a verdict the moment its conversation is
// stored (run.go). Whoever needs a row first starts it; everyone else
// finds it in its set (rows.go). Lanes bound the rows in flight per stage
// and target; provider pools (env.go) bound the calls.
//
// Every output file is written whole, in its order, by its own writer
// from finished rows — scenarios.json (gen_scenarios.go),
// conversations.json (simulate.go), scores.json (evaluate.go),
// results.json (aggregate.go) — with a phase record (outputs.go,
// manifest.go) that decides whether an up-to-date file is skipped and
// says what changed when it is not. Outputs are never replaced by worse
// ones (guard.go). Batch waves (waves.go) and judge batches (batch.go) are
// how batched rows' calls are sent; a scenario set can grow (until.go) or
// have its weak items replaced (scenarioset.go), keeping the rest exactly.
//
// A Study (study.go) is several benchmarks over one environment: shared
// pools, lanes, cost ceiling and progress; a benchmark that fails does not
// stop the others. Rows count themselves into their benchmark's Summary
// (summary.go), which settles every phase's counts once the rows end.
// phase.Stage logic itself lives in package stages as plain functions.
package runner

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/impactbench/impactbench/internal/callstore"
	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/fault"
	"github.com/impactbench/impactbench/internal/layout"
	"github.com/impactbench/impactbench/internal/llm"
	"github.com/impactbench/impactbench/internal/phase"
	"github.com/impactbench/impactbench/internal/progress"
	"github.com/impactbench/impactbench/internal/summary"
)

// Options are the per-invocation switches (CLI flags win over config run:).
type Options struct {
	Force   bool    // redo the phases this invocation runs, ignoring stored answers
	DryRun  bool    // plan only: rows, calls, token and cost estimates; no calls
	MaxCost float64 // USD ceiling for this invocation (0: config max_cost, else none)
	// Judges overrides evaluator_model (evaluate --judge); scores then go to
	// runs/<target>/judges/<label>/scores.json so the main scores stay intact.
	Judges []config.ModelConfig
	// OutDir, when set, writes every output there instead of the benchmark
	// directory (validation runs); benchmark.yaml is still read from Bench.
	OutDir string
	// UpstreamOnly writes results.json with upstream's fields only, byte for
	// byte what upstream ImpactBench writes.
	UpstreamOnly bool
	// Shard runs only rows whose shard index (hash of the row id) equals
	// Shard.Index, writing shard files for `impactbench merge`.
	Shard Shard

	Progress *progress.Tracker
	Logger   *slog.Logger
	Stderr   io.Writer

	// Clients, when set, replaces provider construction (tests).
	Clients func(m config.ModelConfig) (llm.Client, error)
}

// Shard selects a deterministic slice of rows: 0/0 means "all".
type Shard struct{ Index, Count int }

// Active reports whether sharding is on.
func (s Shard) Active() bool { return s.Count > 1 }

// Runner is one benchmark of a study: its files, call store, phase records
// and lock, over the environment every benchmark of the study shares.
type Runner struct {
	*env
	bench    *config.Benchmark
	outDir   string // where scenarios.json, runs/, results.json go
	cacheDir string
	store    *callstore.Store
	records  *phase.Records
	lock     *lockFile
	rows     *rowSets
	// rank is the benchmark's place in the study (0 for the first or
	// only one): its queued rows start before those of later benchmarks.
	rank int
	// grow, when set, makes gen_scenarios keep and top up the current
	// scenario set instead of generating a fresh one (scenarioset.go).
	grow *growth
	// dryPending is, per target, the conversations a dry run found that
	// simulate would make now (plan_now.go).
	dryMu      sync.Mutex
	dryPending map[string]map[simRow]bool

	Report *summary.Summary
}

// ResolveBench finds a benchmark: a path to a directory or benchmark.yaml, or
// a name under <config dir>/benchmarks/.
func ResolveBench(cfg *config.Config, arg string) (string, error) {
	cands := []string{arg, filepath.Join(cfg.Dir, "benchmarks", arg)}
	for _, c := range cands {
		st, err := os.Stat(c)
		if err != nil {
			continue
		}
		if st.IsDir() {
			if _, err := os.Stat(filepath.Join(c, "benchmark.yaml")); err == nil {
				return filepath.Abs(c)
			}
			continue
		}
		if filepath.Base(c) == "benchmark.yaml" {
			return filepath.Abs(filepath.Dir(c))
		}
	}
	return "", fault.Inputf("benchmark %q not found: looked for %s and %s (a directory holding benchmark.yaml)",
		arg, filepath.Join(arg, "benchmark.yaml"), filepath.Join(cfg.Dir, "benchmarks", arg, "benchmark.yaml"))
}

// ListBenches returns every directory under benchmarks/ holding a benchmark.yaml, sorted.
func ListBenches(cfg *config.Config) ([]string, error) {
	root := filepath.Join(cfg.Dir, "benchmarks")
	ents, err := os.ReadDir(root)
	if err != nil {
		return nil, fault.Inputf("no benchmarks directory at %s: create one or run `impactbench init`", root)
	}
	var out []string
	for _, e := range ents {
		if e.IsDir() {
			if _, err := os.Stat(filepath.Join(root, e.Name(), "benchmark.yaml")); err == nil {
				out = append(out, filepath.Join(root, e.Name()))
			}
		}
	}
	sort.Strings(out)
	return out, nil
}

// New prepares a study of one benchmark (the one in benchDir) and returns
// it, holding the benchmark's lock.
func New(cfg *config.Config, benchDir string, opts Options) (*Runner, error) {
	e, err := newEnv(cfg, opts)
	if err != nil {
		return nil, err
	}
	return e.open(benchDir)
}

// open loads the benchmark in benchDir into the environment and, unless
// this is a dry run, takes its lock and sweeps what a killed run left.
func (e *env) open(benchDir string) (*Runner, error) {
	bench, err := config.LoadBenchmark(filepath.Join(benchDir, "benchmark.yaml"))
	if err != nil {
		return nil, err
	}
	out, cacheDir := benchDir, CacheDir(e.cfg, bench.Dir)
	if e.opts.OutDir != "" {
		out, cacheDir = e.opts.OutDir, filepath.Join(e.opts.OutDir, ".cache")
	}
	r := &Runner{
		env: e, bench: bench, outDir: out, cacheDir: cacheDir,
		store:   callstore.Open(filepath.Join(cacheDir, "calls"), e.opts.Force),
		records: phase.LoadRecords(filepath.Join(cacheDir, "manifest.json")),
		rows:    &rowSets{},
		rank:    e.opened,
		Report:  summary.New(bench.Slug, e.opts.DryRun, e.cfg.Generation.Turns),
	}
	if !e.opts.DryRun {
		lk, err := acquireLock(cacheDir, bench.Slug)
		if err != nil {
			return nil, err
		}
		r.lock = lk
		if n := sweepTemps(time.Now(), r.tempDirs()...); n > 0 {
			r.log.Info("removed temp files left by an interrupted run", "count", n)
		}
	}
	e.opened++
	return r, nil
}

// CacheDir is where the benchmark in benchDir keeps its call store, phase
// manifest and lock: <config dir>/.cache/<benchmark directory name>.
func CacheDir(cfg *config.Config, benchDir string) string {
	return filepath.Join(cfg.Dir, ".cache", filepath.Base(benchDir))
}

// Close releases the lock.
func (r *Runner) Close() { r.lock.release() }

// Bench returns the loaded benchmark (metrics reflect gen_metrics once run).
func (r *Runner) Bench() *config.Benchmark { return r.bench }

// Config is the run's configuration.
func (r *Runner) Config() *config.Config { return r.cfg }

// Layout is where this benchmark's outputs and cache are.
func (r *Runner) Layout() layout.Bench { return layout.Bench{Dir: r.outDir, Cache: r.cacheDir} }

// OutDir is where outputs are written.
func (r *Runner) OutDir() string { return r.outDir }

func promptDir(cfg *config.Config) string {
	if cfg.Prompts != "" {
		if filepath.IsAbs(cfg.Prompts) {
			return cfg.Prompts
		}
		return filepath.Join(cfg.Dir, cfg.Prompts)
	}
	d := filepath.Join(cfg.Dir, "prompts")
	if st, err := os.Stat(d); err == nil && st.IsDir() {
		return d
	}
	return ""
}

// PartialError says some rows failed after their retries; outputs hold what
// succeeded and a rerun redoes only the failed rows. The CLI exits 1.
type PartialError struct {
	Failed int
	Phases []string
}

// FaultKind: failed rows are retried by running the command again.
func (e *PartialError) FaultKind() fault.Kind { return fault.Partial }

func (e *PartialError) Error() string {
	return fmt.Sprintf("%d row(s) failed in %s; completed rows are saved — run the same command again to retry only the failed ones",
		e.Failed, strings.Join(e.Phases, ", "))
}

// fatalErr reports errors that no other row can escape either (a refused
// key, exhausted quota, a config mistake): the phase stops at once instead
// of sending the same doomed request for every row.
func fatalErr(err error) bool {
	switch llm.KindOf(err) {
	case llm.KindAuth, llm.KindQuota, llm.KindConfig:
		return true
	}
	return false
}

// budgetStopped reports whether err stems from the cost ceiling.
func budgetStopped(err error) bool { return errors.Is(err, llm.ErrBudgetExceeded) }

// logf prints a human line through the progress tracker (never tears bars).
// In a study of several benchmarks each line names its benchmark.
func (r *Runner) logf(format string, args ...any) {
	if r.studySize > 1 {
		format = r.bench.Slug + ": " + format
	}
	r.prog.Printf(format, args...)
}
