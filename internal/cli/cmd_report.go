package cli

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/impactbench/impactbench/internal/report"
	"github.com/impactbench/impactbench/internal/runner"
)

func newReportCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "report <benchmark>",
		Short: "Write report.html: leaderboard, heatmap, demographics, costs and a transcript viewer",
		Long: `Writes one self-contained report.html into the benchmark directory. It works offline from
a single file (no CDN, no server) and stays usable with tens of thousands of conversations.
All model and user text is shown as text, never executed.`,
		Example: `  impactbench report example && xdg-open benchmarks/example/report.html`,
		GroupID: "results",
		Args:    benchArgs(false),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := g.loadConfig()
			if err != nil {
				return err
			}
			dir, err := runner.ResolveBench(cfg, args[0])
			if err != nil {
				return err
			}
			path, err := report.WriteFile(cmd.Context(), dir, runner.ReportOptionsFor(cfg))
			if err != nil {
				return err
			}
			if g.JSON {
				return writeReportJSON(g, dir, path)
			}
			fmt.Fprintln(g.stdout, path)
			return nil
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

func writeReportJSON(g *globals, dir, path string) error {
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	out := reportJSON{Command: "report", Benchmark: filepath.Base(dir), Report: path, Bytes: st.Size()}
	// The pass rates the report shows; null before the first aggregate.
	if res := filepath.Join(dir, "results.json"); fileExists(res) {
		if out.Results, err = readModels(res); err != nil {
			return err
		}
	}
	return writeJSON(g.stdout, out)
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func newStatusCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:     "status <benchmark> [target…]",
		Short:   "Show which phases are done per target, failures, cost so far and the leaderboard",
		Example: `  impactbench status example`,
		GroupID: "results",
		Args:    benchArgs(true),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := g.loadConfig()
			if err != nil {
				return err
			}
			dir, err := runner.ResolveBench(cfg, args[0])
			if err != nil {
				return err
			}
			targets := args[1:]
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
}
