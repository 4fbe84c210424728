package cli

import (
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/runner"
)

// completeBenchTargets completes the benchmark (first argument) from
// benchmarks/ and the targets after it from config.yaml.
func completeBenchTargets(g *globals, withTargets bool) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return func(cmd *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
		cfg, err := config.LoadWithOptions(g.configPath(), config.LoadOptions{AllowMissingEnv: true})
		if err != nil {
			return nil, cobra.ShellCompDirectiveDefault
		}
		if len(args) == 0 {
			dirs, _ := runner.ListBenches(cfg)
			names := make([]string, len(dirs))
			for i, d := range dirs {
				names[i] = filepath.Base(d)
			}
			return names, cobra.ShellCompDirectiveNoFileComp
		}
		if !withTargets {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var ids []string
		for _, t := range cfg.Targets {
			ids = append(ids, t.ID)
		}
		return ids, cobra.ShellCompDirectiveNoFileComp
	}
}

// addCompletions wires completion functions onto the commands that take a
// benchmark (and targets).
func addCompletions(root *cobra.Command, g *globals) {
	for _, c := range root.Commands() {
		switch c.Name() {
		case "run", "simulate", "evaluate", "status", "merge":
			c.ValidArgsFunction = completeBenchTargets(g, true)
		case "gen-metrics", "gen-scenarios", "aggregate", "report", "validate":
			c.ValidArgsFunction = completeBenchTargets(g, false)
		}
	}
}
