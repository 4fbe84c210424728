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
	"context"
	"os"
	"path/filepath"
	"sort"

	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/fault"
	"github.com/impactbench/impactbench/internal/generate"
	"github.com/impactbench/impactbench/internal/layout"
	"github.com/impactbench/impactbench/internal/summary"
	"github.com/impactbench/impactbench/internal/work"
)

// Options are the per-invocation switches (package work).
type Options = work.Options

// Runner is one benchmark of a study: the stages' rows (packages generate,
// simulate, evaluate) wired into runs over its state (work.Bench).
type Runner struct {
	b *work.Bench
	// grow, when set, makes gen_scenarios keep and top up the current
	// scenario set instead of generating a fresh one (scenarioset.go).
	grow *generate.Growth
	// env is the environment New made for this Runner alone (nil in a
	// Study, which closes its own).
	env *work.Env

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
// it, holding the benchmark's lock (ctx bounds the wait for a shard's lock
// and the connections to a shared store and rate backend).
func New(ctx context.Context, cfg *config.Config, benchDir string, opts Options) (*Runner, error) {
	e, err := work.NewEnv(ctx, cfg, opts)
	if err != nil {
		return nil, err
	}
	r, err := open(ctx, e, benchDir)
	if err != nil {
		e.Close()
		return nil, err
	}
	r.env = e
	return r, nil
}

// open loads the benchmark in benchDir into the environment (work.Env.Open).
func open(ctx context.Context, e *work.Env, benchDir string) (*Runner, error) {
	b, err := e.Open(ctx, benchDir)
	if err != nil {
		return nil, err
	}
	return &Runner{b: b, Report: b.Report}, nil
}

// CacheDir is where the benchmark in benchDir keeps its call store, phase
// records and lock: <config dir>/.cache/<benchmark directory name>.
func CacheDir(cfg *config.Config, benchDir string) string {
	return layout.CacheDir(cfg.Dir, benchDir)
}

// Close releases the lock, the call store and, for a Runner made by New,
// its environment's connections.
func (r *Runner) Close() {
	r.b.Close()
	if r.env != nil {
		r.env.Close()
	}
}

// PartialError says some rows failed after their retries (work.PartialError).
type PartialError = work.PartialError
