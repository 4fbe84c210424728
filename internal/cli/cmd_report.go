package cli

import (
	"fmt"

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
		Args:    cobra.ExactArgs(1),
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
			fmt.Fprintln(g.stdout, path)
			return nil
		},
	}
}

func newStatusCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:     "status <benchmark> [target…]",
		Short:   "Show which phases are done per target, failures, cost so far and the leaderboard",
		Example: `  impactbench status example`,
		GroupID: "results",
		Args:    cobra.MinimumNArgs(1),
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
				Color:    isTerminal(g.stdout),
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
