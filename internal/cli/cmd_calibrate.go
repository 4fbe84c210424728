package cli

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/impactbench/impactbench/internal/aggregate"
	"github.com/impactbench/impactbench/internal/calibrate"
	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/fault"
	"github.com/impactbench/impactbench/internal/results"
	"github.com/impactbench/impactbench/internal/runner"
	"github.com/impactbench/impactbench/internal/sanitize"
	"github.com/impactbench/impactbench/internal/work"
)

// calibrateOptions are calibrate's flags.
type calibrateOptions struct {
	Plan      bool
	HalfWidth float64
	// IncludeAfterReveal counts labels given after the verdict was shown.
	IncludeAfterReveal bool
}

func newCalibrateCmd(g *globals) *cobra.Command {
	var o calibrateOptions
	cmd := &cobra.Command{
		Use:   "calibrate <benchmark>|all",
		Short: "Measure every judge against the human labels and correct pass rates for judge error",
		Long: `Reads benchmarks/<bench>/labels.jsonl (human verdicts: see docs/statistics.md, "Human labels and judge calibration"),
measures every judge — the main verdict, each member of a panel, and every evaluate --judge
panel — against the labellers' majority on each metric (sensitivity, specificity, Cohen's κ,
Youden's J, each with an interval, weighted back to the study's rows by target × verdict with
the raw counts beside them), over every target's labels, with a permutation test of whether
its error differs by target. Each target's pass rates are corrected for the main judge's errors
with that target's own labels only (Rogan–Gladen, with an interval that includes the labels'
uncertainty): a judge may err differently on one model, and borrowed labels would then bias
that model's rate with nothing to show it. A target or metric without enough labels of its own
gets no number and a line saying how many of its rows to label. Labels changed after the
judges' verdict was shown (after_reveal) are left out and counted. Everything goes into
results.json (judge_calibration, corrected) — the same as aggregate, which does this whenever
labels exist — and is printed here. "all" does this for every benchmark of the project, after
checking every labels file first.

--plan prints, per metric and target, how many more labels of each judge verdict would give a
corrected rate within --half-width, and from the start which cannot get a number and why
(writes nothing; works before the first label). The viewer's calibration queue draws exactly
those conversations.

A bad labels line (not JSON, a missing or mistyped field, an unknown conversation) stops
with exit 2, naming the line and the field; nothing is written.`,
		Example: `  impactbench calibrate example
  impactbench calibrate example --plan --half-width 0.15
  impactbench calibrate all
  impactbench calibrate example --json`,
		GroupID: "results",
		Args:    benchArgs(false),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !o.Plan && cmd.Flags().Changed("half-width") {
				// Without --plan it would be ignored, and the calibration
				// the user did not ask for written to results.json.
				return usagef("--half-width applies to --plan only: add --plan for the labelling plan")
			}
			if o.Plan && !(o.HalfWidth > 0 && o.HalfWidth < 1) {
				return usagef("--half-width %v: want a half-width between 0 and 1 (0.10 = ±10 points)", o.HalfWidth)
			}
			if args[0] == "all" {
				return runCalibrateAll(cmd.Context(), g, o)
			}
			if o.Plan {
				return runCalibratePlan(cmd.Context(), g, args[0], o)
			}
			return runCalibrate(cmd.Context(), g, args[0], o)
		},
	}
	f := cmd.Flags()
	f.BoolVar(&o.Plan, "plan", false, "print how many more labels of which metric a corrected rate within --half-width needs (writes nothing)")
	f.BoolVar(&o.IncludeAfterReveal, "include-after-reveal", false, "count labels given after the judges' verdict was shown (left out by default: a person who saw the verdict is no longer a blind check; results.json then reports n_after_reveal 0)")
	f.Float64Var(&o.HalfWidth, "half-width", results.DefaultPlanHalfWidth, "with --plan: the 95 % half-width to plan for (0.10 = ±10 points)")
	return cmd
}

func runCalibrate(ctx context.Context, g *globals, benchArg string, o calibrateOptions) error {
	res, path, err := calibrateBench(ctx, g, benchArg, o)
	if err != nil {
		return err
	}
	if g.JSON {
		return writeJSON(g.stdout, calibrationJSON(res))
	}
	printCalibration(g.stdout, path, res)
	return nil
}

// benchCalibration is one benchmark of `calibrate all --json`.
type benchCalibration struct {
	Benchmark string `json:"benchmark"`
	// Models are the benchmark's calibrate --json entries; Plan its
	// labelling plan (with --plan); Note why it has neither (no labels).
	Models []calibrationEntry `json:"models,omitempty"`
	Plan   *results.LabelPlan `json:"plan,omitempty"`
	Note   string             `json:"note,omitempty"`
}

// runCalibrateAll calibrates (or, with --plan, plans) every benchmark of
// the project. Every labels file is read and checked first: a bad line in
// any of them stops everything before a file is written.
func runCalibrateAll(ctx context.Context, g *globals, o calibrateOptions) error {
	dirs, err := expandAll(g, "all")
	if err != nil {
		return err
	}
	have := make([]bool, len(dirs))
	for i, d := range dirs {
		n, err := countLabels(ctx, g, d)
		if err != nil {
			return err
		}
		have[i] = n > 0
	}
	if !o.Plan && !slices.Contains(have, true) {
		return &fault.Error{Kind: fault.Input, Msg: "no labels in any benchmark: record them in `impactbench view` (`impactbench calibrate all --plan` says how many)"}
	}
	var out []benchCalibration
	for i, d := range dirs {
		bc := benchCalibration{Benchmark: filepath.Base(d)}
		if err := calibrateOne(ctx, g, d, o, have[i], &bc); err != nil {
			return err
		}
		out = append(out, bc)
	}
	if g.JSON {
		return writeJSON(g.stdout, out)
	}
	return nil
}

// calibrateOne is one benchmark of `calibrate all`: printed as it is made
// (or kept for --json in bc).
func calibrateOne(ctx context.Context, g *globals, dir string, o calibrateOptions, labelled bool, bc *benchCalibration) error {
	if !g.JSON {
		fmt.Fprintf(g.stdout, "== %s\n", sanitize.Terminal(bc.Benchmark))
	}
	switch {
	case o.Plan:
		plan, path, err := planBench(ctx, g, dir, o)
		if err != nil {
			return err
		}
		bc.Plan = &plan
		if !g.JSON {
			printPlan(g.stdout, path, plan)
		}
	case !labelled:
		bc.Note = fmt.Sprintf("no labels yet: impactbench calibrate %s --plan says how many", bc.Benchmark)
		if !g.JSON {
			fmt.Fprintf(g.stdout, "%s\n", sanitize.Terminal(bc.Note))
		}
	default:
		res, path, err := calibrateBench(ctx, g, dir, o)
		if err != nil {
			return err
		}
		bc.Models = calibrationJSON(res)
		if !g.JSON {
			printCalibration(g.stdout, path, res)
		}
	}
	if !g.JSON {
		fmt.Fprintln(g.stdout)
	}
	return nil
}

// countLabels reads and checks one benchmark's labels file (a bad line is
// exit 2 naming it) and counts its labels.
func countLabels(ctx context.Context, g *globals, dir string) (int, error) {
	r, tr, err := g.openRunner(ctx, dir, &phaseFlags{}, nil)
	if err != nil {
		return 0, err
	}
	defer r.Close()
	tr.Close()
	ls, err := calibrate.ReadLabels(ctx, r.Layout())
	return len(ls), err
}

// calibrateBench aggregates one benchmark with its labels and reads back
// its results (and the labels file's path).
func calibrateBench(ctx context.Context, g *globals, benchArg string, o calibrateOptions) ([]results.ModelResult, string, error) {
	r, tr, err := g.openRunner(ctx, benchArg, &phaseFlags{}, func(ro *runner.Options) { ro.IncludeAfterReveal = o.IncludeAfterReveal })
	if err != nil {
		return nil, "", err
	}
	defer r.Close()
	closeTracker := sync.OnceFunc(tr.Close) // bars end before the table prints
	defer closeTracker()
	ls, err := calibrate.ReadLabels(ctx, r.Layout())
	if err != nil {
		return nil, "", err
	}
	if len(ls) == 0 {
		return nil, "", fault.Inputf("no labels in %s: add human verdicts (one JSON object per line; see docs/statistics.md, \"Human labels and judge calibration\") or record them in `impactbench view` (`impactbench calibrate %s --plan` says how many)", r.Layout().Labels(), r.Bench().Slug)
	}
	if err := aggregate.Run(ctx, r.Work()); err != nil {
		return nil, "", err
	}
	res, err := results.ReadResults(filepath.Join(r.OutDir(), "results.json"))
	if err != nil {
		return nil, "", err
	}
	if err := writeReport(ctx, g, r, &invocation{}); err != nil {
		fmt.Fprintf(g.stderr, "impactbench: report not written: %s\n", sanitize.Terminal(err.Error()))
	}
	return res, r.Layout().Labels(), nil
}

// runCalibratePlan prints the labelling plan: read-only.
func runCalibratePlan(ctx context.Context, g *globals, benchArg string, o calibrateOptions) error {
	plan, path, err := planBench(ctx, g, benchArg, o)
	if err != nil {
		return err
	}
	if g.JSON {
		return writeJSON(g.stdout, plan)
	}
	printPlan(g.stdout, path, plan)
	return nil
}

// planBench makes one benchmark's labelling plan (and names its labels file).
func planBench(ctx context.Context, g *globals, benchArg string, o calibrateOptions) (results.LabelPlan, string, error) {
	r, tr, err := g.openRunner(ctx, benchArg, &phaseFlags{}, nil)
	if err != nil {
		return results.LabelPlan{}, "", err
	}
	defer r.Close()
	tr.Close()
	ls, err := calibrate.ReadLabels(ctx, r.Layout())
	if err != nil {
		return results.LabelPlan{}, "", err
	}
	in, err := results.Load(r.OutDir(), r.Bench().Metrics)
	if err != nil {
		return results.LabelPlan{}, "", err
	}
	rows := make([]results.ScoreRow, len(in.Scores))
	for i, s := range in.Scores {
		rows[i] = results.RowOf(s)
		if rows[i].TargetModel == "" {
			rows[i].TargetModel = in.RunDirs[i]
		}
	}
	if len(rows) == 0 {
		return results.LabelPlan{}, "", fault.Inputf("no judged conversations in %s: run evaluate first; the plan is drawn from the judge's verdicts", r.OutDir())
	}
	cfg, err := g.loadConfig()
	if err != nil {
		return results.LabelPlan{}, "", err
	}
	return results.PlanLabels(rows, ls, mainJudgeName(cfg, rows), o.HalfWidth, results.DefaultConf), r.Layout().Labels(), nil
}

// mainJudgeName names the verdict of scores.json as judge_calibration
// does: "panel" for a panel's majority, else the single evaluator's label.
func mainJudgeName(cfg *config.Config, rows []results.ScoreRow) string {
	for _, r := range rows {
		if len(r.Judges) >= 2 {
			return "panel"
		}
	}
	if len(cfg.EvaluatorModels) == 1 {
		return work.JudgeLabel(cfg.EvaluatorModels[0])
	}
	return "judge"
}

// printPlan writes the labelling plan: first what cannot get a number,
// then per metric its totals and each target's line.
func printPlan(w io.Writer, labelsPath string, p results.LabelPlan) {
	fmt.Fprintf(w, "labelling plan for a corrected rate within ±%.0f points (each target, 95 %%), judge %s, labels so far in %s\n", 100*p.HalfWidth, p.Judge, labelsPath)
	for _, u := range p.Unreachable {
		fmt.Fprintf(w, "  cannot get a corrected rate: %s on %s: %s\n", sanitize.Terminal(u.Metric), sanitize.Terminal(u.Target), u.Why)
	}
	if p.AfterReveal > 0 {
		fmt.Fprintf(w, "  %d label line(s) given after the judges' verdict was shown are left out (not blind; --include-after-reveal counts them)\n", p.AfterReveal)
	}
	if p.Stale > 0 {
		fmt.Fprintf(w, "  ! %s\n", staleWarning(p.Stale))
	}
	fmt.Fprintln(w, "each target is corrected with its own labels: label its rows at random within each judge verdict (impactbench view: Calibration queue)")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  metric\ttarget\trows present/absent\tlabelled present/absent\tmore present/absent\texpected ± now\t± after\tfloor\tstatus")
	var notes []string
	for _, e := range p.Metrics {
		m := e.Value
		fmt.Fprintf(tw, "  %s\tall %d\t%d / %d\t%d / %d\t%d / %d\t%s\t%s\t%s\t%d of %d corrected\n", sanitize.Terminal(e.Key), len(m.Targets), m.RowsPresent, m.RowsAbsent,
			m.LabelledPresent, m.LabelledAbsent, m.MorePresent, m.MoreAbsent, fmtPoints(m.HalfWidthNow), fmtPoints(m.HalfWidthPlanned), fmtPoints(m.Floor), m.Corrected, len(m.Targets))
		for _, te := range m.Targets {
			t := te.Value
			fmt.Fprintf(tw, "  \t%s\t%d / %d\t%d / %d\t%d / %d\t%s\t%s\t%s\t%s\n", sanitize.Terminal(te.Key), t.RowsPresent, t.RowsAbsent, t.LabelledPresent, t.LabelledAbsent,
				t.MorePresent, t.MoreAbsent, fmtPoints(t.HalfWidthNow), fmtPoints(t.HalfWidthPlanned), fmtPoints(t.Floor), t.Status)
			if t.Note != "" && t.Status != results.PlanUnreachable {
				notes = append(notes, e.Key+" on "+te.Key+": "+t.Note)
			}
		}
	}
	tw.Flush()
	for _, n := range notes {
		fmt.Fprintf(w, "  ! %s\n", sanitize.Terminal(n))
	}
	fmt.Fprintf(w, "%d more label(s) in all; ± now is \"—\" until a target has %d labelled rows of each verdict (or all of them)\n", p.More, results.MinTargetLabelsPerClass)
}

func fmtPoints(p *float64) string {
	if p == nil {
		return "—"
	}
	return fmt.Sprintf("±%.1f pt", 100**p)
}

// calibrationEntry is one model in calibrate --json.
type calibrationEntry struct {
	TargetModel          string                        `json:"target_model"`
	PositivePassRate     *float64                      `json:"positive_pass_rate"`
	NegativePassRate     *float64                      `json:"negative_pass_rate"`
	PositiveCorrected    *results.Corrected            `json:"positive_corrected"`
	NegativeCorrected    *results.Corrected            `json:"negative_corrected"`
	LeaderboardCorrected *results.LeaderboardCorrected `json:"leaderboard_corrected"`
	ByMetricCorrected    map[string]*results.Corrected `json:"by_metric_corrected"`
	JudgeCalibration     *results.JudgeCalibration     `json:"judge_calibration"`
	JudgeConsistency     *results.JudgeConsistency     `json:"judge_consistency,omitempty"`
}

func calibrationJSON(res []results.ModelResult) []calibrationEntry {
	out := []calibrationEntry{}
	for _, m := range res {
		if m.JudgeCalibration == nil {
			continue
		}
		e := calibrationEntry{TargetModel: m.TargetModel, PositivePassRate: m.PositivePassRate, NegativePassRate: m.NegativePassRate,
			PositiveCorrected: m.PositiveCorrected, NegativeCorrected: m.NegativeCorrected,
			JudgeCalibration: m.JudgeCalibration, JudgeConsistency: m.JudgeConsistency, ByMetricCorrected: map[string]*results.Corrected{}}
		if m.Leaderboard != nil {
			e.LeaderboardCorrected = m.Leaderboard.Corrected
		}
		for _, r := range m.ByMetric {
			if r.Value.Corrected != nil {
				e.ByMetricCorrected[r.Key] = r.Value.Corrected
			}
		}
		out = append(out, e)
	}
	return out
}

// printCalibration writes the calibration, pooled over targets (the same
// in every model's entry), then each model's corrected rates.
func printCalibration(w io.Writer, labelsPath string, res []results.ModelResult) {
	fmt.Fprintf(w, "judge calibration against %s\n", labelsPath)
	var first *results.JudgeCalibration
	for _, m := range res {
		if m.JudgeCalibration != nil {
			first = m.JudgeCalibration
			break
		}
	}
	if first == nil {
		return
	}
	if l := first.AllTargets; l != nil {
		fmt.Fprintf(w, "%d labelled rows over every target (%d label lines, %d labeler(s), %d tie(s), %d not judged yet%s)\n",
			l.NRows, l.NLines, l.NLabelers, l.NTies, l.NUnjudged, afterRevealNote(l.NAfterReveal)+staleNote(l.NStale))
		if l.NStale > 0 {
			fmt.Fprintf(w, "  ! %s\n", staleWarning(l.NStale))
		}
	}
	fmt.Fprintln(w, "each judge × metric over every target's labels, weighted to the study's rows by target × verdict (raw counts beside them); it describes the judge — each target below is corrected with its own labels")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  judge\trole\tmetric\tn\tsensitivity (weighted)\tspecificity (weighted)\tkappa (weighted)\tby target")
	var warns []string
	row := func(judge, role, metric string, c results.MetricCalibration) {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\n", judge, role, metric, c.N,
			fmtStat(c.Sensitivity), fmtStat(c.Specificity), fmtStat(c.Kappa), fmtTargetTest(c.ByTarget))
		if c.Warning != "" {
			warns = append(warns, fmt.Sprintf("%s %s: %s", judge, metric, c.Warning))
		}
	}
	for _, j := range first.Judges {
		for _, e := range j.Value.ByMetric {
			row(j.Key, j.Value.Role, e.Key, e.Value)
		}
		if a := j.Value.AllMetrics; a != nil {
			row(j.Key, j.Value.Role, "all metrics", *a)
		}
	}
	tw.Flush()
	for _, wn := range warns {
		fmt.Fprintf(w, "  ! %s\n", wn)
	}
	for _, e := range first.LabelerAgreement {
		a := e.Value
		fmt.Fprintf(w, "  labelers on %s: %d row(s) with several labels, %d unanimous, alpha %s\n", e.Key, a.NRows, a.NUnanimous, fmtNum(a.Alpha))
		if a.Note != "" {
			fmt.Fprintf(w, "    (%s)\n", a.Note)
		}
	}
	for _, m := range res {
		jc := m.JudgeCalibration
		if jc == nil {
			continue
		}
		l := jc.Labels
		fmt.Fprintf(w, "\n%s: %d labelled rows of its own (%d label lines, %d labeler(s), %d tie(s), %d not judged yet%s)\n",
			sanitize.Terminal(m.TargetModel), l.NRows, l.NLines, l.NLabelers, l.NTies, l.NUnjudged, afterRevealNote(l.NAfterReveal)+staleNote(l.NStale))
		if len(jc.Judges) > 0 {
			for _, e := range jc.Judges[0].Value.ThisTarget {
				c := e.Value
				fmt.Fprintf(w, "  %s on this target's labels only: n %d, sensitivity %s, specificity %s\n", e.Key, c.N, fmtStat(c.Sensitivity), fmtStat(c.Specificity))
			}
		}
		printCorrected(w, m)
		printConsistency(w, m.JudgeConsistency)
	}
}

func printCorrected(w io.Writer, m results.ModelResult) {
	fmt.Fprintln(w, "  pass rates, observed → corrected for judge error (with this target's own labels):")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	var notes []string
	line := func(name string, observed *float64, c *results.Corrected) {
		if c == nil {
			return
		}
		mark := ""
		if c.ClipNote != "" {
			mark = "†"
			notes = append(notes, "† "+name+": "+c.ClipNote)
		}
		fmt.Fprintf(tw, "    %s\t%s\t→ %s%s\n", name, fmtNum(observed), fmtCorrected(c.Estimate, c.Low, c.High, c.Warning), mark)
		if c.LevelNote != "" && c.Estimate != nil {
			notes = append(notes, name+": "+c.LevelNote)
		}
	}
	line("positive", m.PositivePassRate, m.PositiveCorrected)
	line("negative", m.NegativePassRate, m.NegativeCorrected)
	for _, e := range m.ByMetric {
		line(e.Key, e.Value.PassRate, e.Value.Corrected)
	}
	if lb := m.Leaderboard; lb != nil && lb.Corrected != nil {
		c := lb.Corrected
		fmt.Fprintf(tw, "    leaderboard\t%s\t→ %s\n", fmtNum(lb.Score), fmtCorrected(c.Score, c.CILow, c.CIHigh, c.Warning))
	}
	tw.Flush()
	for _, n := range notes {
		fmt.Fprintf(w, "    * %s\n", n)
	}
}

func printConsistency(w io.Writer, jc *results.JudgeConsistency) {
	if jc == nil {
		return
	}
	fmt.Fprintf(w, "  judge self-consistency (%d repeat(s)):\n", jc.Repeats)
	for _, j := range jc.Judges {
		for _, e := range j.Value {
			f := e.Value
			fmt.Fprintf(w, "    %s %s: flip rate %s (%d of %d rows)\n", j.Key, e.Key, fmtNum(f.Rate), f.NFlipped, f.NRows)
		}
	}
}

// afterRevealNote is ", N after the reveal left out" (or nothing).
func afterRevealNote(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf(", %d given after the judges' verdict was shown left out (--include-after-reveal counts them)", n)
}

func staleNote(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf(", %d on a conversation run again since left out", n)
}

// staleWarning says what n stale label lines are and what to do.
func staleWarning(n int) string {
	return fmt.Sprintf("%d label line(s) were given on a conversation that has been run again since (its transcript is not the one the person labelled): "+
		"they are left out; label those rows again (impactbench view: the review queue asks for them)", n)
}

func fmtNum(p *float64) string {
	if p == nil {
		return "n/a"
	}
	return fmt.Sprintf("%.2f", *p)
}

// fmtStat is an estimate with its interval and the raw count behind it:
// "0.85 [0.60, 0.97] raw 9/10" (weighted numbers are so headed), or
// "n/a (why)".
func fmtStat(s results.Statistic) string {
	if s.Estimate == nil {
		if s.Reason != "" {
			return "n/a (" + s.Reason + ")"
		}
		return "n/a"
	}
	out := fmt.Sprintf("%s [%s, %s]", fmtNum(s.Estimate), fmtNum(s.Low), fmtNum(s.High))
	if s.Hits != nil {
		return out + fmt.Sprintf(" raw %d/%d", *s.Hits, s.N)
	}
	return out + fmt.Sprintf(" n=%d", s.N)
}

// fmtTargetTest is the by-target test: "p 0.41 (Holm 0.82)", "differs:
// p …", or why there is none.
func fmtTargetTest(t *results.TargetTest) string {
	switch {
	case t == nil:
		return ""
	case t.P == nil:
		return "— (" + t.Reason + ")"
	case t.Differs:
		return fmt.Sprintf("differs: p %.3g (Holm %.3g)", *t.P, *t.PAdjusted)
	}
	return fmt.Sprintf("p %.3g (Holm %.3g)", *t.P, *t.PAdjusted)
}

func fmtCorrected(est, lo, hi *float64, warning string) string {
	if est == nil {
		return "not corrected: " + strings.TrimPrefix(warning, "not corrected: ")
	}
	return fmt.Sprintf("%s [%s, %s]", fmtNum(est), fmtNum(lo), fmtNum(hi))
}
