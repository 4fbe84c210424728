package cli

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"

	"github.com/spf13/cobra"

	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/phase"
	"github.com/impactbench/impactbench/internal/report"
	"github.com/impactbench/impactbench/internal/runner"
	"github.com/impactbench/impactbench/internal/scenarioset"
)

type phaseKind int

const (
	phaseGenMetrics phaseKind = iota
	phaseGenScenarios
	phaseSimulate
	phaseEvaluate
	phaseAggregate
)

var phaseDocs = map[phaseKind]struct{ short, long, example string }{
	phaseGenMetrics: {"Write metrics for a benchmark into its benchmark.yaml",
		"Asks the generator model (generator_model, else user_model) for metrics from the benchmark's\nname and description and writes them into benchmark.yaml with ids m01, m02, …, keeping\nyour comments and other keys. Skipped when metrics exist, unless --force, which first saves\nthe old file as benchmark.yaml.bak-<UTC time>.",
		"  impactbench gen-metrics example\n  impactbench gen-metrics benchmarks/example --force"},
	phaseGenScenarios: {"Generate adversarial scenarios and their demographic variants",
		"Writes scenarios.json: generation.scenarios_per_metric base scenarios per metric, each\nchecked (persona, goals, 1–5 landmarks within generation.turns) and regenerated if malformed,\nthen rewritten once per demographic combination (ids mNN_sNNN_vNN).",
		"  impactbench gen-scenarios example"},
	phaseSimulate: {"Run simulated conversations against targets",
		"For every scenario × sample, a simulated user pursues the latent goal against the target,\nwhich sees only its system prompt and the dialogue. Writes runs/<target>/conversations.json.\nWith no target named, every target in config.yaml runs, concurrently.",
		"  impactbench simulate example gpt-4o\n  impactbench simulate example            # all targets"},
	phaseEvaluate: {"Judge conversations with the blind evaluator",
		"The judge sees only the metric definition and the transcript. Writes runs/<target>/scores.json.\n--judge re-judges stored conversations with other judges (written under runs/<target>/judges/).\n--repeats K re-judges them K more times with fresh seeds and reports each metric's flip rate\n(runs/<target>/repeats.json; scores.json is not touched).",
		"  impactbench evaluate example\n  impactbench evaluate example gpt-4o --judge gpt-5-mini"},
	phaseAggregate: {"Compute pass rates, intervals and agreement into results.json",
		"Reads every runs/*/scores.json. Upstream's fields are computed exactly as ImpactBench does;\nintervals, demographic breakdowns, agreement and gaps are added in new fields.\n\nSeveral benchmarks (`aggregate all`, or `aggregate b1 b2 …`) are aggregated one after another,\nevery name checked first (names that are no benchmark: exit 2, naming them); one that fails\ndoes not stop the others, and the error names each failure by benchmark (an error every\nbenchmark gives alike is said once).",
		"  impactbench aggregate example\n  impactbench aggregate all\n  impactbench aggregate example humanebench"},
}

func newPhaseCmd(g *globals, name string, kind phaseKind) *cobra.Command {
	pf := &phaseFlags{}
	var judges []string
	var upstreamOnly bool
	var repeats int
	var replace string
	doc := phaseDocs[kind]
	use := name + " <benchmark>"
	const studyWide = "`impactbench run all` runs every benchmark's stages as one study (shared provider limits, one --max-cost), skipping what is done"
	args := oneBench(false, studyWide)
	switch kind {
	case phaseSimulate, phaseEvaluate:
		use += " [target…]"
		args = oneBench(true, studyWide)
	case phaseAggregate:
		use = name + " <benchmark…|all>"
		args = benchArgs(true)
	}
	cmd := &cobra.Command{
		Use:     use,
		Aliases: underscoreAlias(name),
		Short:   doc.short,
		Long:    doc.long,
		Example: doc.example,
		GroupID: "stages",
		Args:    args,
		RunE: func(cmd *cobra.Command, args []string) error {
			if kind == phaseAggregate {
				if cmd.Flags().Changed("force") {
					return errAggregateForce
				}
				return g.aggregateAll(cmd.Context(), args, pf, upstreamOnly)
			}
			return g.withRunner(cmd.Context(), name, args[0], pf, func(o *runner.Options) {
				if len(judges) > 0 {
					o.Judges = judgeConfigs(judges)
				}
			}, func(ctx context.Context, r *runner.Runner, _ *invocation) error {
				targets := args[1:]
				if len(targets) == 0 {
					targets = r.Targets()
				}
				if err := r.Preflight(kind.stage(), targets); err != nil {
					return err
				}
				switch kind {
				case phaseGenMetrics:
					return r.GenMetrics(ctx)
				case phaseGenScenarios:
					if replace != "" {
						return replaceWeak(ctx, r, replace)
					}
					return r.GenScenarios(ctx)
				case phaseSimulate:
					return forTargets(ctx, targets, r.Simulate)
				default: // evaluate; aggregate is aggregateAll
					if repeats != 0 {
						return forTargets(ctx, targets, func(ctx context.Context, t string) error { return r.Repeat(ctx, t, repeats) })
					}
					return forTargets(ctx, targets, r.Evaluate)
				}
			})
		},
	}
	pf.add(cmd, kind.flags())
	if kind == phaseAggregate {
		// aggregate always recomputes results.json, so a redo means
		// nothing there; its old --force (accepting fewer models or rows)
		// is --accept-fewer now. The hidden flag says so instead of
		// cobra's bare "unknown flag".
		cmd.Flags().BoolP("force", "f", false, "")
		_ = cmd.Flags().MarkHidden("force")
		cmd.Flags().BoolVar(&upstreamOnly, "upstream-only", false, "write only upstream ImpactBench's fields (byte-identical to its results.json)")
	}
	if kind == phaseGenScenarios {
		cmd.Flags().StringVar(&replace, "replace", "", "`KIND` weak: replace the base scenarios `impactbench items` lists as weak with new ones, in a new version of the scenario set (the old set's files are kept under sets/; the other scenarios and their results are kept)")
	}
	if kind == phaseEvaluate {
		cmd.Flags().StringSliceVar(&judges, "judge", nil, "judge with these models instead of evaluator_model (\"source/model\" or a target id); repeat for a panel")
		cmd.Flags().IntVar(&repeats, "repeats", 0, "re-judge the stored transcripts `K` more times with fresh seeds to measure judge self-consistency (flip rates; written to repeats.json, main scores untouched)")
	}
	return cmd
}

// errAggregateForce answers `aggregate --force`.
var errAggregateForce = usagef("aggregate has no --force: it always recomputes results.json; " +
	"to let one with fewer models or rows replace the old file, pass " + phase.AcceptFewerFlag)

// flags are the phase flags a stage acts on. Metrics and scenarios are one
// set for all shards, so only simulate and evaluate split by --shard;
// aggregate calls no model, so it has no ceiling; gen-metrics never
// refuses to replace benchmark.yaml (it keeps a backup), so it has no
// --accept-fewer.
func (k phaseKind) flags() phaseFlagSet {
	switch k {
	case phaseGenMetrics: // keeps a backup instead of refusing
		return withForce | withDryRun | withMaxCost
	case phaseGenScenarios:
		return withForce | withAcceptFewer | withDryRun | withMaxCost
	case phaseAggregate: // always recomputed: nothing to redo (errAggregateForce)
		return withAcceptFewer | withDryRun
	}
	if k == phaseSimulate {
		return withForce | withAcceptFewer | withDryRun | withMaxCost | withShard | withOpenings
	}
	return withForce | withAcceptFewer | withDryRun | withMaxCost | withShard
}

func (k phaseKind) stage() phase.Stage {
	return map[phaseKind]phase.Stage{
		phaseGenMetrics:   phase.StageGenMetrics,
		phaseGenScenarios: phase.StageGenScenarios,
		phaseSimulate:     phase.StageSimulate,
		phaseEvaluate:     phase.StageEvaluate,
		phaseAggregate:    phase.StageAggregate,
	}[k]
}

// judgeConfigs turns --judge values into model configs. The lookup against
// targets and sources happens in resolveJudges once config is loaded.
func judgeConfigs(names []string) []config.ModelConfig {
	out := make([]config.ModelConfig, 0, len(names))
	for _, n := range names {
		m := config.ModelConfig{Model: n, ID: "judge:" + n}
		if i := strings.Index(n, "/"); i > 0 {
			m.Source, m.Model = n[:i], n[i+1:]
		}
		out = append(out, m)
	}
	return out
}

// forTargets runs one phase for several targets concurrently: a slow
// provider must not idle the others. Every target's error is returned, in
// the targets' order (errors.Join), so one failure does not hide another and
// the exit code is the most specific of them (fault.KindOf). A failure
// several targets share (a scenarios.json every one reads) is said once.
func forTargets(ctx context.Context, targets []string, fn func(context.Context, string) error) error {
	errs := make([]error, len(targets))
	var wg sync.WaitGroup
	for i, t := range targets {
		wg.Go(func() { errs[i] = fn(ctx, t) })
	}
	wg.Wait()
	said := map[string]bool{}
	errs = slices.DeleteFunc(errs, func(err error) bool {
		if err == nil || said[err.Error()] {
			return true
		}
		said[err.Error()] = true
		return false
	})
	return errors.Join(errs...)
}

// writeReport writes report.html next to results.json and notes it in inv
// (best effort: a report failure is reported but does not undo a finished
// run).
func writeReport(ctx context.Context, g *globals, r *runner.Runner, inv *invocation) error {
	if r.Report.DryRun {
		return nil
	}
	path, err := report.WriteFile(ctx, r.OutDir(), report.OptionsFor(r.Config()))
	if err != nil {
		return err
	}
	inv.report = path
	if !g.Quiet && !g.JSON {
		g.logger.Info("report written", "path", path)
		r.Logf("report: %s", path)
	}
	return nil
}

// underscoreAlias is upstream's spelling of a stage name (gen_metrics), when
// it differs from ours.
func underscoreAlias(name string) []string {
	if a := strings.ReplaceAll(name, "-", "_"); a != name {
		return []string{a}
	}
	return nil
}

// replaceWeak is gen-scenarios --replace weak: the weak items of the item
// analysis (impactbench items) are replaced in a new scenario set version.
func replaceWeak(ctx context.Context, r *runner.Runner, what string) error {
	if what != "weak" {
		return usagef("--replace %q: the one kind of item that can be replaced is weak (--replace weak)", what)
	}
	if r.Report.DryRun {
		return usagef("--replace weak with --dry-run: run `impactbench items %s` to see what would be replaced", r.Bench().Slug)
	}
	items, err := itemAnalysis(r.OutDir(), r.Bench().Metrics)
	if err != nil {
		return err
	}
	var weak []scenarioset.ReplacedItem
	for _, it := range items {
		if len(it.Weak) > 0 {
			weak = append(weak, scenarioset.ReplacedItem{ID: it.Base, Reasons: it.Weak})
		}
	}
	return scenarioset.ReplaceWeak(ctx, r.Work(), weak)
}
