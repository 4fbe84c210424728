package cli

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/impactbench/impactbench/internal/compare"
	"github.com/impactbench/impactbench/internal/runner"
)

func newValidateCmd(g *globals) *cobra.Command {
	pf := &phaseFlags{}
	var swapArg string
	cmd := &cobra.Command{
		Use:   "validate <benchmark> --swap ROLE=MODEL",
		Short: "Rerun with one role swapped and test whether the results hold",
		Long: `Runs the benchmark again with one role played by another model and compares the result
with the main run:

  --swap generator=MODEL  new scenarios written by MODEL (generator bias)
  --swap user=MODEL       same scenarios, MODEL plays the simulated user (user-model bias)
  --swap judge=MODEL      same conversations, judged by MODEL (judge bias)

The validation run is written to <benchmark>/validation/<role>-<model>/, never over the main
run. The comparison reports the rank correlation of the models (Spearman ρ and Kendall τ-b,
with bootstrap intervals), per-model and per-metric pass-rate differences, and whether any
pair of models changes order beyond its uncertainty (validation.json + a table).`,
		Example: `  impactbench validate example --swap user=anthropic/claude-haiku-4-5
  impactbench validate example --swap judge=gpt-4o
  impactbench validate example --swap generator=openai/gpt-5`,
		GroupID: "results",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if swapArg == "" {
				return usagef("--swap ROLE=MODEL is required (role: generator, user or judge)")
			}
			swap, err := runner.ParseSwap(swapArg)
			if err != nil {
				return err
			}
			cfg, err := g.loadConfig()
			if err != nil {
				return err
			}
			benchDir, err := runner.ResolveBench(cfg, args[0])
			if err != nil {
				return err
			}
			vcfg, outDir, err := runner.PrepareValidation(cfg, benchDir, swap)
			if err != nil {
				return err
			}
			tr := g.tracker()
			r, err := runner.New(vcfg, benchDir, runner.Options{
				Force: pf.Force, DryRun: pf.DryRun, MaxCost: pf.MaxCost, OutDir: outDir,
				Progress: tr, Logger: g.logger, Stderr: g.stderr,
			})
			if err != nil {
				g.stopTracker(cmd.Context(), tr)
				return err
			}
			defer r.Close()
			runErr := r.Run(cmd.Context(), r.Targets())
			g.stopTracker(cmd.Context(), tr)
			if runErr != nil || pf.DryRun {
				return g.finish(r, runErr)
			}
			if n, _ := r.Report.Failed(); n > 0 {
				return g.finish(r, nil)
			}
			return compareRuns(cmd.Context(), g, benchDir, outDir, "main", swap.Role+"="+swap.Model,
				compare.Options{Seed: cfg.Seed, Allow: swap.AllowedDiffs()}, filepath.Join(outDir, "validation.json"))
		},
	}
	pf.add(cmd)
	cmd.Flags().StringVar(&swapArg, "swap", "", "role to swap: generator=MODEL, user=MODEL or judge=MODEL")
	return cmd
}

func newCompareCmd(g *globals) *cobra.Command {
	var allow []string
	var force bool
	var seed uint64
	var out string
	cmd := &cobra.Command{
		Use:   "compare <run-dir-A> <run-dir-B>",
		Short: "Compare two runs' results with intervals; refuses runs that measure different things",
		Long: `Compares two benchmark directories (or validation directories): per-model pass rates
with the same clustered intervals as results.json (method, n and base scenarios stated, a
warning below 10 scenarios), their differences, rank correlations, order changes between
models, and per-metric differences.

Runs are comparable only when their metric definitions, judges, settings and prompts agree
(read from run_manifest.json, written by aggregate). Otherwise compare refuses and says what
differs; --allow COMPONENT accepts a known difference, --force compares anyway (marked).`,
		Example: `  impactbench compare benchmarks/example benchmarks/example/validation/user-gpt-4o
  impactbench compare runA runB --allow judges --json`,
		GroupID: "results",
		Args:    cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return compareRuns(cmd.Context(), g, args[0], args[1], "", "", compare.Options{Seed: seed, Allow: allow, Force: force}, out)
		},
	}
	cmd.Flags().StringSliceVar(&allow, "allow", nil, "accept a difference in this component (metrics, judges, settings, prompts)")
	cmd.Flags().BoolVar(&force, "force", false, "compare even when the runs are not comparable (the report says so)")
	cmd.Flags().Uint64Var(&seed, "seed", 0, "seed of the rank correlations' bootstrap (reported, so they are reproducible)")
	cmd.Flags().StringVarP(&out, "output", "o", "", "also write the comparison as JSON to this file")
	return cmd
}

func compareRuns(_ context.Context, g *globals, dirA, dirB, labelA, labelB string, opts compare.Options, out string) error {
	a, err := compare.LoadRun(dirA, labelA)
	if err != nil {
		return &runner.InputError{Msg: err.Error()}
	}
	b, err := compare.LoadRun(dirB, labelB)
	if err != nil {
		return &runner.InputError{Msg: err.Error()}
	}
	rep, err := compare.Compare(a, b, opts)
	if err != nil {
		if compare.IsNotComparable(err) {
			return &runner.InputError{Msg: err.Error()}
		}
		return err
	}
	if out != "" {
		if err := compare.WriteJSON(out, rep); err != nil {
			return err
		}
	}
	if g.JSON {
		return writeJSON(g.stdout, rep)
	}
	if err := rep.WriteTable(g.stdout); err != nil {
		return err
	}
	if out != "" {
		fmt.Fprintf(g.stdout, "\nwritten: %s\n", out)
	}
	return nil
}
