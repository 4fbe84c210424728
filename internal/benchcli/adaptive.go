package benchcli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime"

	"github.com/spf13/pflag"

	"github.com/impactbench/impactbench/internal/adaptive"
	"github.com/impactbench/impactbench/internal/fault"
	"github.com/impactbench/impactbench/internal/layout"
	"github.com/impactbench/impactbench/internal/study"
	"github.com/impactbench/impactbench/internal/study/studytest"
)

// The adaptive-replay preset replays the published July 2026 verdicts
// (rebuilt from the data studytest embeds: 16 models, 360 metrics × 3
// base scenarios × 2 ages) through the adaptive study design in random
// scenario orders, as if they were being collected (issue #37 item 4). It
// lives in the harness, not in impactbench, because it is a measurement
// of the design on fixed published data: the user's binary carries
// neither the data nor the harness, and the design's real-run side is
// internal/adaptive's Look and Estimate.

// adaptiveFlags are the adaptive-replay preset's flags.
type adaptiveFlags struct {
	replays, workers  int
	seed              uint64
	start, max        int
	rho, hope, budget float64
}

func addAdaptiveFlags(fl *pflag.FlagSet, af *adaptiveFlags) {
	fl.IntVar(&af.replays, "replays", 200, "--preset adaptive-replay: replays, each in its own random order of every metric's base scenarios")
	fl.Uint64Var(&af.seed, "seed", 2026, "--preset adaptive-replay: the seed of the scenario orders")
	fl.IntVar(&af.workers, "parallel", 0, "--preset adaptive-replay: replays at once (default: the CPUs)")
	fl.IntVar(&af.start, "start", 0, "--preset adaptive-replay: base scenarios every metric gets in the first round (default 1)")
	fl.IntVar(&af.max, "max", 0, "--preset adaptive-replay: the most base scenarios a metric gets (default 3, all the published study has)")
	fl.Float64Var(&af.rho, "rho", 0, "--preset adaptive-replay: the spending function's exponent (default 8)")
	fl.Float64Var(&af.hope, "hope", 0, "--preset adaptive-replay: how much of the projected evidence a conclusion needs to stay open (default 1)")
	fl.Float64Var(&af.budget, "budget", 0, "--preset adaptive-replay: the most the design may collect, as a share of the worst case (default 1: no cap)")
}

// runAdaptiveReplay is `impactbench-bench --preset adaptive-replay`.
func runAdaptiveReplay(ctx context.Context, g *globals, af adaptiveFlags, tmp string) error {
	o := adaptive.Options{Start: af.start, Max: af.max, Rho: af.rho, Hope: af.hope, Budget: af.budget}
	if af.replays < 1 {
		return fault.Usagef("--replays %d: want at least 1", af.replays)
	}
	if err := o.Validate(); err != nil {
		return fault.Usagef("%v", err)
	}
	s, cleanup, err := julyStudy(tmp)
	if err != nil {
		return err
	}
	defer cleanup()
	workers := af.workers
	if workers <= 0 {
		workers = runtime.NumCPU()
	}
	if !g.Quiet && !g.JSON {
		fmt.Fprintf(g.stderr, "impactbench-bench: replaying the July 2026 study %d times (%d at once)\n", af.replays, workers)
	}
	ro := adaptive.ReplayOptions{Design: o, Replays: af.replays, Seed: af.seed, Workers: workers}
	if !g.Quiet && !g.JSON {
		ro.Progress = func(done, total int) {
			if done%10 == 0 || done == total {
				fmt.Fprintf(g.stderr, "impactbench-bench: %d of %d replays done\n", done, total)
			}
		}
	}
	runs, err := adaptive.Replay(ctx, s, ro)
	if err != nil {
		return err
	}
	rep := adaptive.NewReport(runs, o, af.seed)
	if g.JSON {
		enc := json.NewEncoder(g.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	return rep.WriteText(g.stdout)
}

// julyStudy rebuilds the published July 2026 study in a temporary
// directory under tmp ("" : the system's) and loads it; cleanup removes
// the directory.
func julyStudy(tmp string) (*study.Study, func(), error) {
	dir, err := os.MkdirTemp(tmp, "impactbench-july-")
	if err != nil {
		return nil, nil, fmt.Errorf("adaptive-replay: %w", err)
	}
	cleanup := func() { os.RemoveAll(dir) }
	if _, err := studytest.WriteDir(dir); err != nil {
		cleanup()
		return nil, nil, fmt.Errorf("adaptive-replay: rebuilding the July 2026 study: %w", err)
	}
	s, err := study.Load(layout.BenchmarksDir(dir))
	if err != nil {
		cleanup()
		return nil, nil, fmt.Errorf("adaptive-replay: %w", err)
	}
	return s, cleanup, nil
}
