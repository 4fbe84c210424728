package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/impactbench/impactbench/internal/adaptive"
	"github.com/impactbench/impactbench/internal/adaptrun"
	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/runner"
	"github.com/impactbench/impactbench/internal/work"
)

// adaptiveFlags are run's --adaptive and the design's caps.
type adaptiveFlags struct {
	on         bool
	start, max int
	seed       uint64
}

func (a *adaptiveFlags) add(cmd *cobra.Command) {
	f := cmd.Flags()
	f.BoolVar(&a.on, "adaptive", false, "run the study (run all) in rounds of base scenarios shared by every target, growing only the metrics whose conclusions (different-calls, grade words, ranks) are still undecided (docs/statistics.md); with --dry-run, the first round's plan and the expected and worst-case bill")
	f.IntVar(&a.start, "adaptive-start", adaptive.DefaultStart, "with --adaptive: base scenarios every metric gets in the first round")
	f.IntVar(&a.max, "adaptive-max", 0, "with --adaptive: the most base scenarios any metric gets, the worst-case bill (default: generation.scenarios_per_metric)")
	f.Uint64Var(&a.seed, "adaptive-seed", 0, "with --adaptive: seeds the order in which a node's metrics grow")
}

// check refuses what --adaptive cannot be combined with, naming the flags.
func (a *adaptiveFlags) check(args, targets []string, until bool) error {
	switch {
	case args[0] != "all":
		return usagef("--adaptive runs the whole study (its conclusions rest on every benchmark): use `impactbench run all --adaptive`")
	case len(targets) > 0:
		return usagef("--adaptive runs every target (every model must see the same scenarios of a metric): drop the target arguments %v", targets)
	case until:
		return usagef("--adaptive and --until are two stopping rules: give one")
	}
	return nil
}

// options are the design's: --adaptive-max defaults to the fixed design's
// size, so an adaptive study never pays more than the fixed one would.
func (a *adaptiveFlags) options(cfg *config.Config) adaptive.Options {
	o := adaptive.Options{Start: a.start, Max: a.max, Seed: a.seed}
	if o.Max == 0 {
		o.Max = max(cfg.Generation.ScenariosPerMetric, o.Start)
	}
	return o
}

// runAdaptive runs the study in adaptive rounds (adaptrun.Run), or, with
// --dry-run, plans its first round and prints the design's bill.
func (g *globals) runAdaptive(ctx context.Context, cfg *config.Config, dirs []string, pf *phaseFlags, noReport bool, design adaptive.Options) error {
	if err := refuseSharded(pf, os.Getenv); err != nil {
		return err
	}
	var bill *adaptive.Bill
	o := adaptrun.Options{Dir: filepath.Join(cfg.Dir, "benchmarks"), Design: design}
	if err := adaptrun.Check(o); err != nil {
		return err
	}
	err := g.runStudy(ctx, cfg, dirs, pf, noReport, func(ctx context.Context, s *runner.Study) error {
		st := adaptiveStudy{s}
		o.Logf = s.Benchmarks()[0].Logf
		if pf.DryRun {
			b, err := adaptrun.DryRun(ctx, st, nil, o)
			bill = &b
			return err
		}
		res, err := adaptrun.Run(ctx, st, nil, o)
		g.printAdaptive(res)
		return err
	})
	if bill != nil && err == nil {
		w := g.stdout
		if g.JSON {
			w = g.stderr // stdout holds the one JSON object
		}
		err = bill.WriteText(w)
	}
	return err
}

// refuseSharded refuses --adaptive in a sharded run — by flag or by the
// scheduler's variables (getenv) — before the study is opened, so nothing
// (not even a lock file) is written: a round's growth depends on every
// shard's scores.
func refuseSharded(pf *phaseFlags, getenv func(string) string) error {
	if pf.Shard != "" || pf.Shards > 0 || pf.Workers > 0 {
		return usagef("--adaptive with --shard/--shards/--workers: a round's growth depends on every shard's scores; run the adaptive study in one process")
	}
	w, err := pf.worker(getenv)
	if err != nil {
		return err
	}
	if w.Shard.Active() {
		return usagef("--adaptive in a sharded job (%s gave this process shard %d of %d): a round's growth depends on every shard's scores; run the adaptive study in one process, outside the array or indexed job", w.From, w.Shard.Index, w.Shard.Count)
	}
	return nil
}

// printAdaptive says how the rounds ended.
func (g *globals) printAdaptive(res *adaptrun.Result) {
	if res == nil || res.Last == nil || g.Quiet {
		return
	}
	printAdaptiveResult(g.stderr, res)
}

func printAdaptiveResult(w io.Writer, res *adaptrun.Result) {
	why := map[string]string{
		adaptrun.StoppedDecided: "no open conclusion left",
		adaptrun.StoppedMax:     fmt.Sprintf("%d conclusion(s) left undecided: out of reach even at --adaptive-max base scenarios per metric, or their metrics already there", res.Last.Open),
		adaptrun.StoppedCost:    "the cost ceiling (--max-cost) was reached; rerun with a higher one to go on",
	}[res.Stopped]
	fmt.Fprintf(w, "adaptive study: stopped after %d round(s) in this run, look %d of %d: %s; %d conclusion(s) decided on %d judged conversations\n",
		res.Rounds, res.Last.Look, res.Last.Looks, why, len(res.Last.Decided), res.Last.Conversations)
}

// adaptiveStudy is a runner.Study as the adaptive rounds see it.
type adaptiveStudy struct{ *runner.Study }

func (a adaptiveStudy) Benches() []*work.Bench {
	out := make([]*work.Bench, 0, len(a.Benchmarks()))
	for _, r := range a.Benchmarks() {
		out = append(out, r.Work())
	}
	return out
}
