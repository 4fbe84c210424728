package cli

import (
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/impactbench/impactbench/internal/config"
)

func newInitCmd(g *globals) *cobra.Command {
	var force bool
	cmd := &cobra.Command{
		Use:   "init [dir]",
		Short: "Create a project: config.yaml, .env.example and an example benchmark",
		Long: `Creates config.yaml (every key documented), .env.example and benchmarks/example/benchmark.yaml
in dir (default: the current directory). The config uses the built-in offline model for every
role, so the example runs without an API key; switch models to real providers when ready.
Existing files are never overwritten unless --force.`,
		Example: `  impactbench init demo && cd demo && impactbench run example`,
		Args:    cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := "."
			if len(args) == 1 {
				dir = args[0]
			}
			files, err := config.Scaffold(dir, force)
			if err != nil {
				return err
			}
			for _, f := range files {
				fmt.Fprintln(g.stdout, "wrote", f)
			}
			abs, _ := filepath.Abs(dir)
			fmt.Fprintf(g.stdout, "\nNext:\n  cd %s\n  impactbench run example\n", abs)
			return nil
		},
	}
	cmd.Flags().BoolVar(&force, "force", false, "overwrite existing files")
	return cmd
}
