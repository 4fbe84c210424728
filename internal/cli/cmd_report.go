package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/layout"
	"github.com/impactbench/impactbench/internal/report"
	"github.com/impactbench/impactbench/internal/runner"
)

func newReportCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "report <benchmark…|all>",
		Short: "Write report.html: leaderboard, heatmap, demographics, costs and a transcript viewer",
		Long: `Writes one self-contained report.html into the benchmark directory and prints its path. It
works offline from a single file (no CDN, no server) and stays usable with tens of thousands of
conversations. All model and user text is shown as text, never executed.

` + "`report all`" + ` (or several names) writes every benchmark's report in turn; with --json, one array
of the benchmarks' objects. A benchmark whose report cannot be written is named and the others
still are.`,
		Example: `  impactbench report example && xdg-open benchmarks/example/report.html
  impactbench report all`,
		GroupID: "results",
		Args:    benchArgs(true),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := g.loadConfig()
			if err != nil {
				return err
			}
			return g.forBenches(cmd.Context(), args, func(dir string, _ bool) (any, error) {
				g.warnBenchmarkIn(dir)
				path, err := report.WriteFile(cmd.Context(), dir, report.OptionsFor(cfg))
				if err != nil {
					return nil, err
				}
				if g.JSON {
					v, err := reportJSONOf(dir, path)
					if err != nil {
						return nil, err
					}
					return v, nil
				}
				fmt.Fprintln(g.stdout, path)
				return nil, nil
			})
		},
	}
}

// reportJSON is report's --json output.
type reportJSON struct {
	Command   string      `json:"command"`
	Benchmark string      `json:"benchmark"`
	Report    string      `json:"report"`
	Bytes     int64       `json:"bytes"`
	Results   []modelJSON `json:"results"`
}

// reportJSONOf is the --json object of the report written at path.
func reportJSONOf(dir, path string) (reportJSON, error) {
	st, err := os.Stat(path)
	if err != nil {
		return reportJSON{}, err
	}
	out := reportJSON{Command: "report", Benchmark: filepath.Base(dir), Report: path, Bytes: st.Size()}
	// The pass rates the report shows; null before the first aggregate.
	if res := filepath.Join(dir, "results.json"); fileExists(res) {
		if out.Results, err = readModels(res); err != nil {
			return out, err
		}
	}
	return out, nil
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func newStatusCmd(g *globals) *cobra.Command {
	var showStudy bool
	cmd := &cobra.Command{
		Use:   "status <benchmark|all> [target…] | status --study",
		Short: "Show which phases are done per target, failures, cost so far and the leaderboard",
		Long: `Shows a benchmark's phases per target (live while a run works on it), failures, cost so far
and its leaderboard. ` + "`status all`" + ` shows the whole study's progress: one row per benchmark and one per
target, each over the other, and the study's totals. With --study (and no benchmark): the
study's leaderboards from benchmarks/study.json (written by ` + "`impactbench study`" + ` and publish),
with intervals, rank intervals and ties.`,
		Example: `  impactbench status example
  impactbench status all
  impactbench status --study`,
		GroupID: "results",
		Args: func(cmd *cobra.Command, args []string) error {
			if showStudy {
				if len(args) > 0 {
					return usagef("status --study takes no benchmark (it reads benchmarks/study.json), got %s", strings.Join(args, " "))
				}
				return nil
			}
			return benchArgs(true)(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if showStudy {
				return statusStudy(g)
			}
			cfg, err := g.loadConfig()
			if err != nil {
				return err
			}
			if args[0] == "all" {
				return studyStatus(g, cfg, args[1:])
			}
			dir, err := runner.ResolveBench(cfg, args[0])
			if err != nil {
				return err
			}
			g.warnBenchmarkIn(dir)
			targets := args[1:]
			if err := checkTargets(cfg, []string{dir}, targets); err != nil {
				return err
			}
			if len(targets) == 0 {
				for _, t := range cfg.Targets {
					targets = append(targets, t.ID)
				}
			}
			opts := report.StatusOptions{
				Color:    useColor(g.stdout),
				Samples:  cfg.Generation.NumSamples,
				CacheDir: runner.CacheDir(cfg, dir),
			}
			if g.JSON {
				return report.WriteStatusJSON(g.stdout, dir, targets, opts)
			}
			return report.Status(g.stdout, dir, targets, opts)
		},
	}
	cmd.Flags().BoolVar(&showStudy, "study", false, "show the study's leaderboards (benchmarks/study.json) instead of a benchmark's status")
	return cmd
}

// studyStatus is `status all`: every benchmark of the project as one study.
func studyStatus(g *globals, cfg *config.Config, targets []string) error {
	dirs, err := runner.ListBenches(cfg)
	if err != nil {
		return err
	}
	g.warnBenchmarkIn(dirs...)
	if err := checkTargets(cfg, dirs, targets); err != nil {
		return err
	}
	if len(targets) == 0 {
		for _, t := range cfg.Targets {
			targets = append(targets, t.ID)
		}
	}
	benches := make([]report.StudyBench, len(dirs))
	for i, d := range dirs {
		benches[i] = report.StudyBench{Dir: d, CacheDir: runner.CacheDir(cfg, d)}
	}
	opts := report.StatusOptions{Color: useColor(g.stdout), Samples: cfg.Generation.NumSamples}
	if g.JSON {
		return report.WriteStudyStatusJSON(g.stdout, benches, targets, opts)
	}
	return report.StudyStatus(g.stdout, benches, targets, opts)
}

// checkTargets refuses a target named on the command line (status, merge)
// that config.yaml does not have and no benchmark in dirs has a
// runs/<target>/ folder for (a target taken out of config.yaml still shows,
// and merges, what it ran), as run and the stages refuse one: exit 2
// naming it and config's targets, before anything is read or written.
func checkTargets(cfg *config.Config, dirs, targets []string) error {
	var unknown []string
	for _, t := range targets {
		if _, ok := cfg.Target(t); ok || ranIn(dirs, t) {
			continue
		}
		unknown = append(unknown, t)
	}
	return runner.UnknownTargets(cfg, unknown)
}

// ranIn reports whether a benchmark in dirs has a runs/<target>/ folder;
// target is one folder name (never "..", never a path).
func ranIn(dirs []string, target string) bool {
	if target == "" || target == "." || target == ".." || strings.ContainsAny(target, `/\`) {
		return false
	}
	for _, d := range dirs {
		if st, err := os.Stat(layout.InDir(d).RunDir(target)); err == nil && st.IsDir() {
			return true
		}
	}
	return false
}
