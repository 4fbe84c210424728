package cli

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/phase"
	"github.com/impactbench/impactbench/internal/runner"
	"github.com/impactbench/impactbench/internal/study"
	"github.com/impactbench/impactbench/internal/summary"
	"github.com/impactbench/impactbench/internal/until"
)

func newRunCmd(g *globals) *cobra.Command {
	pf := &phaseFlags{}
	var noReport bool
	var untilW untilValue
	var rounds int
	var ad adaptiveFlags
	cmd := &cobra.Command{
		Use:   "run <benchmark…|all> [target…]",
		Short: "Run all five stages (all targets when none is named)",
		Long: `Runs gen-metrics, gen-scenarios, then simulate and evaluate for each target, then aggregate,
and writes report.html. No stage waits for the last row of the one before it: a scenario's
conversations start as soon as it is written and each conversation is judged as soon as it
ends. A phase whose output exists and whose inputs have not changed is skipped; if an input
changed, the tool says what changed and reruns what depends on it — stored answers are
reused, so only changed calls are paid for.

Several benchmarks (` + "`run all`" + `, or ` + "`run b1 b2 …`" + `) run as one study: every benchmark's rows go through
the same provider limits at once, under one --max-cost ceiling, with one progress display
and one summary; a benchmark that fails does not stop the others. Arguments after the
benchmarks are targets.

Everything the run will need (models and their keys, targets, scenarios) is checked for every
benchmark before the first call. A phase that would replace a file with fewer rows, fewer
models or null verdicts where verdicts stood refuses (exit 2) unless --accept-fewer, with or
without --force. --force redoes scenarios and runs, every call paid again, but never replaces
metrics benchmark.yaml already has: use gen-metrics --force for that.`,
		Example: `  impactbench run example
  impactbench run example gpt-4o claude-haiku-4-5
  impactbench run all
  impactbench run all --dry-run            # the whole study's calls, tokens and bill
  impactbench run all --adaptive           # rounds of base scenarios until the study's conclusions are decided
  impactbench run all --adaptive --dry-run # the first round's plan and the design's expected and worst-case bill
  impactbench run humanebench cog-bias --max-cost 25`,
		GroupID: "stages",
		Args:    benchArgs(true),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := g.loadConfig()
			if err != nil {
				return err
			}
			pf.resolve(cfg) // --until's check below needs the dry run's value
			ad.resolve(cfg)
			dirs, targets, study, err := runArgs(cfg, args)
			if err != nil {
				return err
			}
			if err := flagsWithout(cmd, untilW > 0, "--until", "rounds"); err != nil {
				return err
			}
			if err := flagsWithout(cmd, ad.on, "--adaptive (or run.adaptive in config.yaml)", "adaptive-start", "adaptive-max", "adaptive-seed"); err != nil {
				return err
			}
			if untilW > 0 && study {
				return usagef("--until runs one benchmark in rounds; name one benchmark")
			}
			if untilW > 0 {
				return g.runUntil(cmd.Context(), dirs[0], targets, pf, noReport, until.Options{HalfWidth: float64(untilW), MaxRounds: rounds})
			}
			if ad.on {
				if err := ad.check(args, targets, untilW > 0); err != nil {
					return err
				}
				return g.runAdaptive(cmd.Context(), cfg, dirs, pf, noReport, ad.options(cfg))
			}
			if !study {
				return g.runOne(cmd.Context(), dirs[0], targets, pf, noReport)
			}
			return g.runStudy(cmd.Context(), cfg, dirs, pf, noReport, func(ctx context.Context, s *runner.Study) error { return s.Run(ctx, targets) })
		},
	}
	pf.add(cmd, withForce|withAcceptFewer|withDryRun|withMaxCost|withShard|withOpenings)
	ad.add(cmd)
	cmd.Flags().BoolVar(&noReport, "no-report", false, "do not write report.html at the end")
	cmd.Flags().Var(&untilW, "until", "run in rounds, adding base scenarios where the intervals are widest, until every model's positive and negative rate is within ±`W` (e.g. ±0.05, 5%) by an anytime-valid interval; with --max-cost, or at --rounds, it stops there (until.json says why)")
	cmd.Flags().IntVar(&rounds, "rounds", until.DefaultRounds, "with --until: the most rounds")
	return cmd
}

// flagsWithout refuses flags typed although what they qualify is off
// (--rounds without --until): they would be ignored without a word.
func flagsWithout(cmd *cobra.Command, on bool, what string, names ...string) error {
	if on {
		return nil
	}
	for _, n := range names {
		if cmd.Flags().Changed(n) {
			return usagef("--%s applies with %s only", n, what)
		}
	}
	return nil
}

// runUntil runs one benchmark in rounds until its intervals are precise
// enough (--until), and writes its report.
func (g *globals) runUntil(ctx context.Context, dir string, targets []string, pf *phaseFlags, noReport bool, o until.Options) error {
	if pf.DryRun {
		return usagef("--until with --dry-run: a round's size depends on the last round's results; plan the first round with `impactbench run --dry-run` and `impactbench plan`")
	}
	return g.withRunner(ctx, "run", dir, pf, nil, func(ctx context.Context, r *runner.Runner, inv *invocation) error {
		if len(targets) == 0 {
			targets = r.Targets()
		}
		if err := until.Run(ctx, r, targets, o); err != nil {
			return err
		}
		if noReport || !r.Report.Ran(phase.StageAggregate) {
			return nil
		}
		return writeReport(ctx, g, r, inv)
	})
}

// untilValue is --until: a half-width as a fraction ("0.05", "±0.05") or
// in points ("5%", "5pt").
type untilValue float64

func (v *untilValue) String() string {
	if *v == 0 {
		return ""
	}
	return strconv.FormatFloat(float64(*v), 'f', -1, 64)
}
func (v *untilValue) Type() string { return "±W" }

func (v *untilValue) Set(s string) error {
	t := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(s), "±"))
	scale := 1.0
	for _, suf := range []string{"%", "pt", "pts"} {
		if strings.HasSuffix(t, suf) {
			t, scale = strings.TrimSpace(strings.TrimSuffix(t, suf)), 0.01
			break
		}
	}
	x, err := strconv.ParseFloat(t, 64)
	x *= scale
	if err != nil || !(x > 0 && x < 0.5) {
		return errors.New("want a half-width between 0 and 0.5, e.g. ±0.05 or 5%")
	}
	*v = untilValue(x)
	return nil
}

// runArgs splits run's arguments into benchmark directories and targets:
// `all` is every benchmark under benchmarks/; otherwise the leading
// arguments that name benchmarks are benchmarks and the rest targets. A
// study is `all` or more than one benchmark.
func runArgs(cfg *config.Config, args []string) (dirs, targets []string, study bool, err error) {
	if args[0] == "all" {
		dirs, err = runner.ListBenches(cfg)
		if err == nil && len(dirs) == 0 {
			err = usagef("no benchmarks under %s/benchmarks", cfg.Dir)
		}
		return dirs, args[1:], true, err
	}
	for i, a := range args {
		dir, rerr := runner.ResolveBench(cfg, a)
		if rerr != nil {
			if i == 0 {
				return nil, nil, false, rerr
			}
			return dirs, args[i:], len(dirs) > 1, nil
		}
		dirs = append(dirs, dir)
	}
	return dirs, nil, len(dirs) > 1, nil
}

// runOne runs one benchmark and writes its report.
func (g *globals) runOne(ctx context.Context, dir string, targets []string, pf *phaseFlags, noReport bool) error {
	return g.withRunner(ctx, "run", dir, pf, nil, func(ctx context.Context, r *runner.Runner, inv *invocation) error {
		if len(targets) == 0 {
			targets = r.Targets()
		}
		if err := r.Run(ctx, targets); err != nil {
			return err
		}
		if noReport || pf.DryRun || !r.Report.Ran(phase.StageAggregate) {
			return nil // no new results.json: the report would only restate old files
		}
		return writeReport(ctx, g, r, inv)
	})
}

// runStudy runs several benchmarks as one study (play runs it once) and
// writes each one's report where aggregate ran.
func (g *globals) runStudy(ctx context.Context, cfg *config.Config, dirs []string, pf *phaseFlags, noReport bool, play func(context.Context, *runner.Study) error) error {
	return g.runStudyWith(ctx, cfg, dirs, pf, noReport, nil, play)
}

// runStudyWith is runStudy whose --json object carries ad, the adaptive
// study's own object (nil: none), which play fills in.
func (g *globals) runStudyWith(ctx context.Context, cfg *config.Config, dirs []string, pf *phaseFlags, noReport bool, ad *adaptiveJSON, play func(context.Context, *runner.Study) error) error {
	opts, err := g.runnerOptions(cfg, pf)
	if err != nil {
		return err
	}
	tr := g.tracker()
	opts.Progress = tr
	s, err := runner.NewStudy(ctx, cfg, dirs, opts)
	if err != nil {
		tr.Close()
		return err
	}
	defer s.Close()
	for _, r := range s.Benchmarks() {
		g.warnBenchmark(r.Bench())
	}
	runErr := play(ctx, s)
	invs := make([]invocation, len(s.Benchmarks()))
	for i, r := range s.Benchmarks() {
		if noReport || pf.DryRun || !r.Report.Ran(phase.StageAggregate) || ctx.Err() != nil {
			continue
		}
		if err := writeReport(ctx, g, r, &invs[i]); err != nil {
			runErr = errors.Join(runErr, fmt.Errorf("%s: %w", r.Bench().Slug, err))
		}
	}
	g.stopTracker(ctx, tr)
	if !pf.DryRun && ctx.Err() == nil && anyAggregated(s) {
		if err := g.refreshStudy(cfg); err != nil {
			runErr = errors.Join(runErr, err)
		}
	}
	return g.finishStudy(s, invs, ad, runErr)
}

func anyAggregated(s *runner.Study) bool {
	for _, r := range s.Benchmarks() {
		if r.Report.Ran(phase.StageAggregate) {
			return true
		}
	}
	return false
}

// refreshStudy rewrites benchmarks/study.json after a study run when the
// project has a study's inputs (benchmarks/taxonomy.json). A problem with
// them fails the command (the error keeps its kind: a bad input is exit
// 2): the runs themselves are done and stay, but study.json is left as it
// was, now stale, and `status --study` says so.
func (g *globals) refreshStudy(cfg *config.Config) error {
	dir := filepath.Join(cfg.Dir, "benchmarks")
	path := filepath.Join(dir, study.ResultFile)
	if !fileExists(filepath.Join(dir, study.TaxonomyFile)) {
		return nil
	}
	s, err := study.Load(dir)
	if err == nil {
		res := s.Compute()
		if err = res.WriteFile(path); err == nil && !g.JSON {
			g.warnStudy(res.Warnings)
		}
	}
	if err != nil {
		return fmt.Errorf("the benchmarks ran, but %s was not refreshed and is now stale (fix the cause, then run `impactbench study`): %w", path, err)
	}
	if !g.Quiet && !g.JSON {
		fmt.Fprintf(g.stderr, "study: %s\n", path)
	}
	return nil
}

// finishStudy prints the study's plan or summary (with --json, one
// runStudyJSON on stdout, or with ad a runAdaptiveJSON); Study.Run already
// names each benchmark's failed rows.
func (g *globals) finishStudy(s *runner.Study, invs []invocation, ad *adaptiveJSON, runErr error) error {
	sum := s.Summary()
	if g.JSON && ad != nil {
		return writeJSON(g.stdout, runAdaptiveJSON{StudyRun: newRunStudyJSON(s, sum, invs, runErr), Adaptive: ad})
	}
	if g.JSON {
		return writeJSON(g.stdout, newRunStudyJSON(s, sum, invs, runErr))
	}
	if runErr != nil && !studyBegun(sum) {
		return runErr // stopped by its checks: only the error prints
	}
	if sum.DryRun {
		printStudyPlan(g.stdout, sum.Benchmarks)
		return runErr
	}
	if !g.Quiet {
		printStudySummary(g, sum)
	}
	return runErr
}

// studyBegun is begun over a study: any benchmark begun, or a call paid or
// replayed by the study as a whole.
func studyBegun(s *summary.StudySummary) bool {
	return s.Spent.Requests > 0 || s.Reused.Requests > 0 || slices.ContainsFunc(s.Benchmarks, begun)
}

// printStudySummary is printSummary over a study: each benchmark's failed
// and stopped phases, named, then one line of what the study spent.
func printStudySummary(g *globals, s *summary.StudySummary) {
	for _, b := range s.Benchmarks {
		printPhaseProblems(g, b.Phases, b.Benchmark+": ")
	}
	if s.Budget != nil {
		fmt.Fprintf(g.stderr, "cost ceiling $%.4f: spent $%.4f this run; %d row(s) not done — raise --max-cost and rerun to finish them\n",
			s.Budget.Max, s.Budget.Spent, s.Budget.Remaining)
	}
	printSpent(g.stderr, fmt.Sprintf("study of %d benchmark(s) — ", len(s.Benchmarks)), s.Spent, s.Reused)
	if note := summary.CacheNote(s.Spent); note != "" {
		fmt.Fprintln(g.stderr, note)
	}
	if line := limitsLine(s.Limits); line != "" {
		fmt.Fprintln(g.stderr, line)
	}
}
