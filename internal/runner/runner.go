// Package runner is the wiring of one invocation. New builds its
// environment (work.Env: clients, pools, the call store, the lock) and a
// benchmark's state (work.Bench); preflight.go checks everything that can
// be checked before any call is paid; run.go and phases.go run the stage
// runners (generate, simulate, evaluate, aggregate) in order, each a
// package of its own whose rows the scheduler (internal/schedule) runs;
// study.go runs several benchmarks over one environment (shared pools,
// lanes, cost ceiling and progress; a benchmark that fails does not stop
// the others); guard.go refuses outputs worse than those on disk; human.go
// builds the viewer's Player (a person's game, its verdict and audit).
// Rows, lanes and ordered writers live below (schedule, work, phase,
// summary); ARCHITECTURE.md maps the floors.
package runner

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/fault"
	"github.com/impactbench/impactbench/internal/fsx"
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
	return "", fault.Inputf("benchmark %q not found: looked for %s and %s (a directory holding benchmark.yaml)%s",
		arg, filepath.Join(arg, "benchmark.yaml"), filepath.Join(cfg.Dir, "benchmarks", arg, "benchmark.yaml"), benchSuggestion(cfg, arg))
}

// benchSuggestion is "; did you mean X?" when a benchmark under
// benchmarks/ is a likely typo of arg, as config keys and commands suggest.
func benchSuggestion(cfg *config.Config, arg string) string {
	names, _ := layout.BenchmarksIn(filepath.Join(cfg.Dir, "benchmarks")) // none: nothing to suggest
	if s := config.Suggest(filepath.Base(arg), names); s != "" {
		return "; did you mean " + s + "?"
	}
	return ""
}

// ListBenches returns every directory under benchmarks/ holding a benchmark.yaml, sorted.
func ListBenches(cfg *config.Config) ([]string, error) {
	root := filepath.Join(cfg.Dir, "benchmarks")
	ents, err := fsx.ReadDir(root, layout.MaxBenchmarkEntries, fs.DirEntry.IsDir)
	var many *fsx.TooManyEntriesError
	if errors.As(err, &many) {
		return nil, err
	}
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
	if err := scenariosFirst(cfg, []string{benchDir}, opts); err != nil {
		return nil, err
	}
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

// scenariosFirst refuses a shard of a benchmark without scenarios.json
// (an input error saying to generate them): shards on different machines
// must share one scenario set, and with a real generator each shard would
// write its own. It runs before the environment and the benchmarks are
// opened, so that the refused worker writes nothing — no lock, no presence
// file, no lease or heartbeat in a shared store.
//
// A replay (merge --from-store) needs them as much: it calls no model, so
// it cannot write them, and the set must be the one the workers ran.
func scenariosFirst(cfg *config.Config, benchDirs []string, opts Options) error {
	if !opts.Shard.Active() && !opts.Replay {
		return nil
	}
	slugs := make([]string, len(benchDirs))
	errs := make([]error, len(benchDirs))
	for i, d := range benchDirs {
		slugs[i] = filepath.Base(d)
		path := layout.ForProject(cfg.Dir, d).Scenarios()
		if _, err := os.Stat(path); err == nil {
			continue
		}
		if opts.Replay {
			if rel, err := filepath.Rel(cfg.Dir, path); err == nil {
				path = rel
			}
			errs[i] = fault.Inputf("merge --from-store needs the %s the workers ran (it calls no model, so it cannot write one): copy %s from the study's project or image into this project, then merge", layout.ScenariosFile, path)
		} else {
			errs[i] = fault.Inputf("sharded runs need scenarios.json first: run `impactbench gen-scenarios %s` once, then start the shards", slugs[i])
		}
	}
	return JoinOnce(slugs, errs)
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
