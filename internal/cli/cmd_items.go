package cli

import (
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/fault"
	"github.com/impactbench/impactbench/internal/results"
)

// itemsOptions are `impactbench items`' flags.
type itemsOptions struct {
	All bool
}

// itemsJSON is `items --json` (docs/json.md "items").
type itemsJSON struct {
	Benchmark  string          `json:"benchmark"`
	Items      []results.Item  `json:"items"`
	NItems     int             `json:"n_items"`
	NWeak      int             `json:"n_weak"`
	Targets    []string        `json:"targets"`
	Thresholds itemsThresholds `json:"thresholds"`
}

// itemsThresholds are the weak-item thresholds results.ItemAnalysis uses.
type itemsThresholds struct {
	Spread            float64 `json:"spread"`
	ItemTotal         float64 `json:"item_total"`
	JudgeDisagreement float64 `json:"judge_disagreement"`
	Invalid           float64 `json:"invalid_rate"`
	NearDuplicate     float64 `json:"near_duplicate"`
}

func newItemsCmd(g *globals) *cobra.Command {
	var o itemsOptions
	cmd := &cobra.Command{
		Use:   "items <benchmark…|all>",
		Short: "Item analysis: which base scenarios measure poorly across the targets",
		Long: `Reads every target's scores.json (and repeats.json, and scenarios.json for the texts) and, for
each base scenario of each metric, across every target: the pass rate, how far apart the targets'
rates are (spread) and whether they follow the targets' rates on the metric's other scenarios
(item-total correlation), whether every verdict passes or fails, how often re-judging or a judge
panel disagrees, how often the simulated user broke the scenario (the landmark check), how many
of its verdicts took a repair to read (score rows with _repairs), and the most similar other
scenario of the metric (word overlap of user_goal and persona). Lists the weak
ones and why (--all: every base scenario). Calls no model and writes nothing.

` + "`items all`" + ` (or several names) analyses every benchmark of the project in turn; with --json, one
array of the benchmarks' objects. A benchmark that cannot be analysed (not scored yet) is named
and the others still are.`,
		Example: `  impactbench items example
  impactbench items example --all --json
  impactbench items all --json | jq '.[] | {benchmark, n_weak}'`,
		GroupID: "results",
		Args:    benchArgs(true),
		RunE: func(cmd *cobra.Command, args []string) error {
			printed := false // a blank line between benchmarks' tables
			return g.forBenches(cmd.Context(), args, func(dir string, _ bool) (any, error) {
				if printed && !g.JSON {
					fmt.Fprintln(g.stdout)
				}
				printed = true
				return runItems(g, dir, o)
			})
		},
	}
	cmd.Flags().BoolVar(&o.All, "all", false, "list every base scenario, not only the weak ones")
	return cmd
}

// runItems analyses the benchmark in dir and, without --json, prints it;
// it returns the --json object.
func runItems(g *globals, dir string, o itemsOptions) (any, error) {
	bench, err := config.LoadBenchmark(filepath.Join(dir, "benchmark.yaml"))
	if err != nil {
		return nil, err
	}
	g.warnBenchmark(bench)
	in, err := itemInput(dir, bench.Metrics)
	if err != nil {
		return nil, err
	}
	targets := distinctTargets(in)
	items, err := results.ItemAnalysis(in)
	if err != nil {
		return nil, err
	}
	out := itemsJSON{Benchmark: filepath.Base(dir), NItems: len(items), Targets: targets, Items: []results.Item{},
		Thresholds: itemsThresholds{results.WeakSpread, results.WeakItemTotal, results.WeakJudgeDisagreement, results.WeakInvalid, results.NearDuplicate}}
	for _, it := range items {
		if len(it.Weak) > 0 {
			out.NWeak++
		}
		if o.All || len(it.Weak) > 0 {
			out.Items = append(out.Items, it)
		}
	}
	if g.JSON {
		return out, nil
	}
	return out, printItems(g.stdout, out, o.All)
}

// distinctTargets lists the targets of in's rows in first-appearance order
// (the run directory name for rows without a target_model).
func distinctTargets(in results.Input) []string {
	seen := map[string]bool{}
	var out []string
	for i, s := range in.Scores {
		t := s.TargetModel
		if t == "" && i < len(in.RunDirs) {
			t = in.RunDirs[i]
		}
		if !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	return out
}

// printItems writes the table: one line per listed item, then why each weak
// one is weak.
func printItems(w io.Writer, out itemsJSON, all bool) error {
	fmt.Fprintf(w, "Item analysis of %s: %d base scenario(s) over %d target(s) (%s); %d weak\n",
		out.Benchmark, out.NItems, len(out.Targets), strings.Join(out.Targets, ", "), out.NWeak)
	if len(out.Items) == 0 {
		fmt.Fprintln(w, "No weak base scenario.")
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "METRIC\tBASE SCENARIO\tPASS\tSPREAD\tITEM-TOTAL r\tJUDGES DISAGREE\tSIM. INVALID\tMOST SIMILAR\tJUDGE REPAIRED\tWEAK BECAUSE")
	for _, it := range out.Items {
		similar := "—"
		if it.Similarity != nil {
			similar = fmt.Sprintf("%.2f", *it.Similarity)
			if it.NearDuplicate != "" {
				similar += " (" + it.NearDuplicate + ")"
			}
		}
		why := strings.Join(it.Weak, "; ")
		if why == "" {
			why = "—"
		}
		repaired := "—"
		if it.JudgeRepaired > 0 {
			repaired = strconv.Itoa(it.JudgeRepaired)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", it.MetricID, it.Base,
			share(it.PassRate, it.Passed, it.N), num2(it.Spread), num2(it.ItemTotal),
			share(it.JudgeDisagreement, it.JudgeSplit, it.JudgeRows), share(it.InvalidRate, it.Invalid, it.Checked), similar, repaired, why)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if !all {
		fmt.Fprintln(w, "Only weak base scenarios are listed; --all lists every one.")
	}
	fmt.Fprintf(w, "Weak: every verdict the same; per-target rates within %.2f (2+ targets); item-total r ≤ %.1f (4+ targets); judges disagree on ≥ %.0f%% of re-judged rows; simulated user invalid in ≥ %.0f%%; word overlap ≥ %.1f with an earlier base scenario of the metric.\n",
		out.Thresholds.Spread, out.Thresholds.ItemTotal, 100*out.Thresholds.JudgeDisagreement, 100*out.Thresholds.Invalid, out.Thresholds.NearDuplicate)
	return nil
}

// share is "37% (3/8)", or "—" without a denominator.
func share(rate *float64, k, n int) string {
	if rate == nil || n == 0 {
		return "—"
	}
	return strconv.FormatFloat(100**rate, 'f', 0, 64) + "% (" + strconv.Itoa(k) + "/" + strconv.Itoa(n) + ")"
}

func num2(x *float64) string {
	if x == nil {
		return "—"
	}
	return strconv.FormatFloat(*x, 'f', 2, 64)
}

// itemInput reads what the item analysis needs: every target's scores and
// repeats, and scenarios.json for the texts.
func itemInput(dir string, metrics []config.Metric) (results.Input, error) {
	in, err := results.Load(dir, metrics)
	if err != nil {
		return in, err
	}
	if len(in.Scores) == 0 {
		return in, fault.Inputf("%s has no scored conversations yet: run `impactbench evaluate %s` first", dir, filepath.Base(dir))
	}
	reps, err := results.LoadRepeats(dir)
	if err != nil {
		return in, err
	}
	in.Calibration = &results.CalibrationInput{Repeats: reps}
	return in, nil
}

// itemAnalysis is the item analysis of the benchmark in dir.
func itemAnalysis(dir string, metrics []config.Metric) ([]results.Item, error) {
	in, err := itemInput(dir, metrics)
	if err != nil {
		return nil, err
	}
	return results.ItemAnalysis(in)
}
