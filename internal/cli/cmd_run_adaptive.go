package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

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
	flags      *pflag.FlagSet
}

func (a *adaptiveFlags) add(cmd *cobra.Command) {
	f := cmd.Flags()
	a.flags = f
	f.BoolVar(&a.on, "adaptive", false, "run the study (run all) in rounds of base scenarios shared by every target, growing only the metrics whose conclusions (different-calls, grade words, ranks) are still undecided (docs/statistics.md); with --dry-run, the first round's plan and the expected and worst-case bill (default: config run.adaptive)")
	f.IntVar(&a.start, "adaptive-start", adaptive.DefaultStart, "with --adaptive: base scenarios every metric gets in the first round (default: config run.adaptive.start, else 1)")
	f.IntVar(&a.max, "adaptive-max", 0, "with --adaptive: the most base scenarios any metric gets, the worst-case bill (default: config run.adaptive.max, else generation.scenarios_per_metric)")
	f.Uint64Var(&a.seed, "adaptive-seed", 0, "with --adaptive: seeds the order in which a node's metrics grow (default: config run.adaptive.seed)")
}

// configured pairs each design flag with its run.adaptive key
// (TestAdaptiveFlagsOverrideConfig checks every pair, both ways).
func (a *adaptiveFlags) configured(cfg *config.Config) []flagSetting {
	c := &cfg.Run.Adaptive
	return []flagSetting{
		{flag: "adaptive", key: "run.adaptive", flagVal: &a.on, cfgVal: &c.Enabled},
		{flag: "adaptive-start", key: "run.adaptive.start", flagVal: &a.start, cfgVal: &c.Start},
		{flag: "adaptive-max", key: "run.adaptive.max", flagVal: &a.max, cfgVal: &c.Max},
		{flag: "adaptive-seed", key: "run.adaptive.seed", flagVal: &a.seed, cfgVal: &c.Seed},
	}
}

// resolve settles the design's settings between config.yaml's
// run.adaptive and the flags as phaseFlags.resolve does: a flag typed on
// the command line wins, in both directions (--adaptive=false over
// run.adaptive: true); an untyped flag takes config's value, except a
// number config leaves at 0 (unset), which keeps the flag's default.
// Afterwards both agree. Idempotent.
func (a *adaptiveFlags) resolve(cfg *config.Config) {
	for _, s := range a.configured(cfg) {
		typed := a.flags != nil && a.flags.Changed(s.flag)
		switch f := s.flagVal.(type) {
		case *bool:
			settleFlag(f, s.cfgVal.(*bool), typed, true)
		case *int:
			c := s.cfgVal.(*int)
			settleFlag(f, c, typed, *c != 0)
		case *uint64:
			c := s.cfgVal.(*uint64)
			settleFlag(f, c, typed, *c != 0)
		}
	}
}

// settleFlag makes flag and cfg agree: the flag's value when typed, else
// config's when set, else the flag's default.
func settleFlag[T any](flag, cfg *T, typed, cfgSet bool) {
	if typed || !cfgSet {
		*cfg = *flag
		return
	}
	*flag = *cfg
}

// check refuses what --adaptive cannot be combined with, naming the flags
// (and run.adaptive when config.yaml, not a flag, turned it on).
func (a *adaptiveFlags) check(args, targets []string, until bool) error {
	from := "--adaptive"
	if a.flags != nil && !a.flags.Changed("adaptive") {
		from = "run.adaptive in config.yaml (--adaptive=false turns it off for this run)"
	}
	switch {
	case args[0] != "all":
		return usagef("%s runs the whole study (its conclusions rest on every benchmark): use `impactbench run all --adaptive`", from)
	case len(targets) > 0:
		return usagef("%s runs every target (every model must see the same scenarios of a metric): drop the target arguments %v", from, targets)
	case until:
		return usagef("%s and --until are two stopping rules: give one", from)
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
// --dry-run, plans its first round and prints the design's bill; with
// --json, both go into run's study object (runAdaptiveJSON).
func (g *globals) runAdaptive(ctx context.Context, cfg *config.Config, dirs []string, pf *phaseFlags, noReport bool, design adaptive.Options) error {
	if err := refuseSharded(pf, os.Getenv); err != nil {
		return err
	}
	o := adaptrun.Options{Dir: filepath.Join(cfg.Dir, "benchmarks"), Design: design}
	if err := adaptrun.Check(o); err != nil {
		return err
	}
	out := newAdaptiveJSON(design)
	err := g.runStudyWith(ctx, cfg, dirs, pf, noReport, out, func(ctx context.Context, s *runner.Study) error {
		st := adaptiveStudy{s}
		o.Logf = s.Benchmarks()[0].Logf
		if pf.DryRun {
			b, err := adaptrun.DryRun(ctx, st, nil, o)
			if err == nil {
				out.Bill = &b
			}
			return err
		}
		res, err := adaptrun.Run(ctx, st, nil, o)
		out.setResult(res, design.Max)
		g.printAdaptive(res)
		return err
	})
	if out.Bill != nil && err == nil && !g.JSON {
		err = out.Bill.WriteText(g.stdout)
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
	if res == nil || res.Stopped == "" || g.Quiet || g.JSON {
		return
	}
	printAdaptiveResult(g.stderr, res)
}

func printAdaptiveResult(w io.Writer, res *adaptrun.Result) {
	fmt.Fprintln(w, adaptiveMessage(res))
}

// adaptiveMessage says how the rounds ended and, after the cost ceiling,
// how to go on.
func adaptiveMessage(res *adaptrun.Result) string {
	if res.Stopped == adaptrun.StoppedCost {
		done := "no round was complete"
		if l := res.Last; l != nil {
			done = fmt.Sprintf("the rounds before it are complete (look %d of %d: %d conclusion(s) decided on %d judged conversations)", l.Look, l.Looks, len(l.Decided), l.Conversations)
		}
		return fmt.Sprintf("adaptive study: the cost ceiling (--max-cost) was reached during round %d of this run; %s, and round %d is saved as far as it got: rerun with a higher --max-cost (or none) to finish it and go on — nothing stored is paid again",
			res.Rounds, done, res.Rounds)
	}
	why := map[string]string{
		adaptrun.StoppedDecided: "no open conclusion left",
		adaptrun.StoppedMax:     fmt.Sprintf("%d conclusion(s) left undecided: out of reach even at --adaptive-max base scenarios per metric, or their metrics already there", res.Last.Open),
	}[res.Stopped]
	return fmt.Sprintf("adaptive study: stopped after %d round(s) in this run, look %d of %d: %s; %d conclusion(s) decided on %d judged conversations",
		res.Rounds, res.Last.Look, res.Last.Looks, why, len(res.Last.Decided), res.Last.Conversations)
}

// runAdaptiveJSON is `run all --adaptive --json`: the study's run object
// and the adaptive study's own (docs/json.md "run --adaptive").
type runAdaptiveJSON struct {
	StudyRun
	Adaptive *adaptiveJSON `json:"adaptive"`
}

// StudyRun is the study's run object, embedded (and so flattened) in
// runAdaptiveJSON.
type StudyRun = runStudyJSON

// adaptiveJSON is how the adaptive study stands (docs/json.md "run
// --adaptive.adaptive").
type adaptiveJSON struct {
	Design        adaptiveDesignJSON   `json:"design"`
	Rounds        []adaptrun.LookLog   `json:"rounds"`
	Stopped       *string              `json:"stopped"`
	Message       *string              `json:"message"`
	Look          int                  `json:"look"`
	Looks         int                  `json:"looks"`
	Conversations int                  `json:"conversations"`
	Decided       int                  `json:"decided"`
	Open          int                  `json:"open"`
	Metrics       []adaptiveMetricJSON `json:"metrics"`
	Bill          *adaptive.Bill       `json:"bill"`
}

type adaptiveDesignJSON struct {
	Start int    `json:"start"`
	Max   int    `json:"max"`
	Seed  uint64 `json:"seed"`
}

// adaptiveMetricJSON is one metric at the last look (docs/json.md "run
// --adaptive.adaptive.metrics[]").
type adaptiveMetricJSON struct {
	Benchmark     string `json:"benchmark"`
	Metric        string `json:"metric"`
	BaseScenarios int    `json:"base_scenarios"`
	Next          int    `json:"next"`
	Reason        string `json:"reason"`
}

func newAdaptiveJSON(o adaptive.Options) *adaptiveJSON {
	return &adaptiveJSON{Design: adaptiveDesignJSON{Start: o.Start, Max: o.Max, Seed: o.Seed}, Rounds: []adaptrun.LookLog{}, Metrics: []adaptiveMetricJSON{}}
}

// setResult records how the rounds ended; most is the design's cap.
func (a *adaptiveJSON) setResult(res *adaptrun.Result, most int) {
	if res == nil {
		return
	}
	a.Rounds = append(a.Rounds, res.Looks...)
	if res.Stopped != "" {
		stopped, msg := res.Stopped, adaptiveMessage(res)
		a.Stopped, a.Message = &stopped, &msg
	}
	r := res.Last
	if r == nil {
		return
	}
	a.Look, a.Looks, a.Conversations, a.Decided, a.Open = r.Look, r.Looks, r.Conversations, len(r.Decided), r.Open
	for _, t := range r.Targets {
		a.Metrics = append(a.Metrics, adaptiveMetricJSON{Benchmark: t.Bench, Metric: t.Metric, BaseScenarios: t.Have, Next: t.Want,
			Reason: adaptrun.MetricReason(r, t, res.Stopped, most)})
	}
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
