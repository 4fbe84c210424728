package cli

import (
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/plan"
	"github.com/impactbench/impactbench/internal/runner"
)

// planOptions are `impactbench plan`'s flags.
type planOptions struct {
	ICC       float64
	Rate      float64
	HalfWidth float64
	Pilot     string
}

func newPlanCmd(g *globals) *cobra.Command {
	o := planOptions{ICC: plan.DefaultPlanICC, Rate: plan.DefaultPlanRate, HalfWidth: plan.DefaultPlanHalfWidth}
	cmd := &cobra.Command{
		Use:   "plan <benchmark>",
		Short: "Expected interval width for the configured design, and the base scenarios a target width needs",
		Long: `For the design in config.yaml (scenarios_per_metric, demographic variants, num_samples) and the
metrics in benchmark.yaml, prints the expected 95% half-width of each track's pass rate and of one
metric's, and how many base scenarios a target half-width needs. Conversations of one base
scenario are correlated (the intra-class correlation, ICC), so they count as less than independent
evidence: assume an ICC with --icc, or take a previous run's from its results.json with --pilot.
Calls no model; the same lines close every --dry-run.`,
		Example: `  impactbench plan example
  impactbench plan example --icc 0.6 --half-width 0.05
  impactbench plan example --pilot benchmarks/pilot/results.json`,
		GroupID: "results",
		Args:    oneBench(false, "`impactbench run all --dry-run` plans the whole study (its calls, bill and interval widths) without calling a model"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runPlan(g, args[0], o)
		},
	}
	f := cmd.Flags()
	f.Float64Var(&o.ICC, "icc", o.ICC, "assumed intra-class correlation of a base scenario's conversations (0–1)")
	f.Float64Var(&o.Rate, "rate", o.Rate, "assumed pass rate (0.5 gives the widest interval)")
	f.Float64Var(&o.HalfWidth, "half-width", o.HalfWidth, "target half-width as a fraction (0.10 = ±10 points)")
	f.StringVar(&o.Pilot, "pilot", "", "results.json (or benchmark directory) of a previous run: use its track ICCs")
	return cmd
}

func runPlan(g *globals, benchArg string, o planOptions) error {
	cfg, err := g.loadConfig()
	if err != nil {
		return err
	}
	dir, err := runner.ResolveBench(cfg, benchArg)
	if err != nil {
		return err
	}
	bench, err := config.LoadBenchmark(filepath.Join(dir, "benchmark.yaml"))
	if err != nil {
		return err
	}
	g.warnBenchmark(bench)
	plan, err := plan.PlanPrecision(cfg, bench, plan.PrecisionOptions{ICC: o.ICC, Rate: o.Rate, HalfWidth: o.HalfWidth, Pilot: o.Pilot})
	if err != nil {
		return err
	}
	if g.JSON {
		return writeJSON(g.stdout, plan)
	}
	printPrecision(g.stdout, plan)
	return nil
}
