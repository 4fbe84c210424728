package cli

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/impactbench/impactbench/internal/results"
	"github.com/impactbench/impactbench/internal/runner"
	"github.com/impactbench/impactbench/internal/sanitize"
)

func newCalibrateCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "calibrate <benchmark>",
		Short: "Measure every judge against the human labels and correct pass rates for judge error",
		Long: `Reads benchmarks/<bench>/labels.jsonl (human verdicts: see docs/statistics.md, "Human labels and judge calibration"),
measures every judge — the main verdict, each member of a panel, and every evaluate --judge
panel — against the labellers' majority on each metric (sensitivity, specificity, Cohen's κ,
each with an interval and n), and, where the main judge is informative and labelled enough,
corrects the pass rates for its errors (Rogan–Gladen, with an interval that includes the
labels' uncertainty). Everything goes into results.json (judge_calibration, corrected) — the
same as aggregate, which does this whenever labels exist — and is printed here.

A bad labels line (not JSON, a missing or mistyped field, an unknown conversation) stops
with exit 2, naming the line and the field; nothing is written.`,
		Example: `  impactbench calibrate example
  impactbench calibrate example --json`,
		GroupID: "results",
		Args:    benchArgs(false),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runCalibrate(cmd.Context(), g, args[0])
		},
	}
}

func runCalibrate(ctx context.Context, g *globals, benchArg string) error {
	r, tr, err := g.openRunner(benchArg, &phaseFlags{}, nil)
	if err != nil {
		return err
	}
	defer r.Close()
	closeTracker := sync.OnceFunc(tr.Close) // bars end before the table prints
	defer closeTracker()
	ls, err := r.ReadLabels(ctx)
	if err != nil {
		return err
	}
	if len(ls) == 0 {
		return &runner.InputError{Msg: fmt.Sprintf("no labels in %s: add human verdicts (one JSON object per line; see docs/statistics.md, \"Human labels and judge calibration\") or record them in `impactbench view`", r.LabelsPath())}
	}
	if err := r.Aggregate(ctx); err != nil {
		return err
	}
	res, err := results.ReadResults(filepath.Join(r.OutDir(), "results.json"))
	if err != nil {
		return err
	}
	if err := writeReport(ctx, g, r, &invocation{}); err != nil {
		fmt.Fprintf(g.stderr, "impactbench: report not written: %s\n", sanitize.Terminal(err.Error()))
	}
	closeTracker()
	if g.JSON {
		return writeJSON(g.stdout, calibrationJSON(res))
	}
	printCalibration(g.stdout, r.LabelsPath(), res)
	return nil
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

// printCalibration writes the human-readable calibration of every model
// with labels.
func printCalibration(w io.Writer, labelsPath string, res []results.ModelResult) {
	fmt.Fprintf(w, "judge calibration against %s\n", labelsPath)
	for _, m := range res {
		jc := m.JudgeCalibration
		if jc == nil {
			continue
		}
		l := jc.Labels
		fmt.Fprintf(w, "\n%s: %d labelled rows (%d label lines, %d labeler(s), %d tie(s), %d not judged yet)\n",
			m.TargetModel, l.NRows, l.NLines, l.NLabelers, l.NTies, l.NUnjudged)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  judge\trole\tmetric\tn\tsensitivity\tspecificity\tkappa")
		var warns []string
		for _, j := range jc.Judges {
			for _, e := range j.Value.ByMetric {
				c := e.Value
				fmt.Fprintf(tw, "  %s\t%s\t%s\t%d\t%s\t%s\t%s\n", j.Key, j.Value.Role, e.Key, c.N,
					fmtStat(c.Sensitivity), fmtStat(c.Specificity), fmtStat(c.Kappa))
				if c.Warning != "" {
					warns = append(warns, fmt.Sprintf("%s %s: %s", j.Key, e.Key, c.Warning))
				}
			}
		}
		tw.Flush()
		for _, wn := range warns {
			fmt.Fprintf(w, "  ! %s\n", wn)
		}
		for _, e := range jc.LabelerAgreement {
			a := e.Value
			fmt.Fprintf(w, "  labelers on %s: %d row(s) with several labels, %d unanimous, alpha %s\n", e.Key, a.NRows, a.NUnanimous, fmtNum(a.Alpha))
		}
		printCorrected(w, m)
		printConsistency(w, m.JudgeConsistency)
	}
}

func printCorrected(w io.Writer, m results.ModelResult) {
	fmt.Fprintln(w, "  pass rates, observed → corrected for judge error:")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	line := func(name string, observed *float64, c *results.Corrected) {
		if c == nil {
			return
		}
		fmt.Fprintf(tw, "    %s\t%s\t→ %s\n", name, fmtNum(observed), fmtCorrected(c.Estimate, c.Low, c.High, c.Warning))
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

func fmtNum(p *float64) string {
	if p == nil {
		return "n/a"
	}
	return fmt.Sprintf("%.2f", *p)
}

func fmtStat(s results.Statistic) string {
	if s.Estimate == nil {
		return "n/a"
	}
	return fmt.Sprintf("%s [%s, %s] n=%d", fmtNum(s.Estimate), fmtNum(s.Low), fmtNum(s.High), s.N)
}

func fmtCorrected(est, lo, hi *float64, warning string) string {
	if est == nil {
		return "not corrected: " + strings.TrimPrefix(warning, "not corrected: ")
	}
	return fmt.Sprintf("%s [%s, %s]", fmtNum(est), fmtNum(lo), fmtNum(hi))
}
