package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/spf13/cobra"

	"github.com/impactbench/impactbench/internal/compare"
	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/fault"
	"github.com/impactbench/impactbench/internal/runner"
	"github.com/impactbench/impactbench/internal/sanitize"
	"github.com/impactbench/impactbench/internal/validation"
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
		Args:    oneBench(false, "a validation reruns one benchmark with a role swapped; name it, e.g. `impactbench validate example --swap judge=gpt-4o`"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if swapArg == "" {
				return usagef("--swap ROLE=MODEL is required (role: generator, user or judge)")
			}
			swap, err := validation.ParseSwap(swapArg)
			if err != nil {
				return err
			}
			cfg, err := g.loadConfig()
			if err != nil {
				return err
			}
			pf.resolve(cfg)
			benchDir, err := runner.ResolveBench(cfg, args[0])
			if err != nil {
				return err
			}
			vcfg, outDir, err := validation.PrepareValidation(cfg, benchDir, swap)
			if err != nil {
				return err
			}
			tr := g.tracker()
			r, err := runner.New(cmd.Context(), vcfg, benchDir, runner.Options{
				Force: pf.Force, AcceptFewer: pf.AcceptFewer, DryRun: pf.DryRun, MaxCost: pf.MaxCost, OutDir: outDir,
				Progress: tr, Logger: g.logger, Stderr: g.stderr,
			})
			if err != nil {
				g.stopTracker(cmd.Context(), tr)
				return err
			}
			defer r.Close()
			g.warnBenchmark(r.Bench())
			runErr := withFailedRows(r, r.Run(cmd.Context(), r.Targets()))
			g.stopTracker(cmd.Context(), tr)
			var rep *compare.Report
			var written string
			if runErr == nil && !pf.DryRun {
				written = filepath.Join(outDir, "validation.json")
				rep, runErr = compareReport(benchDir, outDir, "main", swap.Role+"="+swap.Model,
					compare.Options{Seed: cfg.Seed, Allow: swap.AllowedDiffs()}, written)
			}
			if g.JSON {
				return writeValidateJSON(g, r, swap, rep, written, runErr)
			}
			if rep == nil {
				return g.finish("validate", r, invocation{}, runErr)
			}
			return printComparison(g, rep, written)
		},
	}
	pf.add(cmd, withForce|withAcceptFewer|withDryRun|withMaxCost) // a validation run is never sharded
	cmd.Flags().StringVar(&swapArg, "swap", "", "role to swap: generator=MODEL, user=MODEL or judge=MODEL")
	return cmd
}

func newCompareCmd(g *globals) *cobra.Command {
	var allow []string
	var force bool
	var seed uint64
	var out string
	var studies bool
	cmd := &cobra.Command{
		Use:   "compare <run-A> <run-B> | compare --study <A> <B>",
		Short: "Compare two runs' results with intervals; refuses runs that measure different things",
		Long: `Compares two benchmarks (names under benchmarks/, or directories; validation directories too): per-model pass rates
with the same clustered intervals as results.json (method, n and base scenarios stated, a
warning below 10 scenarios), their differences, rank correlations, order changes between
models, and per-metric differences.

Runs are comparable only when their metric definitions, judges, settings and prompts agree
(read from run_manifest.json, written by aggregate). Otherwise compare refuses and says what
differs; --allow COMPONENT accepts a known difference, --force compares anyway (marked).

With --study, A and B are two study.json files (or directories holding one, or projects whose
benchmarks/ does): every model's score at every level and age in both, B − A with an interval
built from the two scores' intervals (MOVER), and how many changed beyond it.`,
		Example: `  impactbench compare benchmarks/example benchmarks/example/validation/user-gpt-4o
  impactbench compare runA runB --allow judges --json
  impactbench compare --study before/study.json benchmarks/study.json`,
		GroupID: "results",
		Args:    cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if out != "" {
				if err := outputFileFlag(out); err != nil {
					return err
				}
			}
			if studies {
				return compareStudies(g, args[0], args[1], out)
			}
			dirs := benchesOrDirs(g.configPath(), args)
			g.warnBenchmarkIn(dirs...)
			rep, err := compareReport(dirs[0], dirs[1], "", "", compare.Options{Seed: seed, Allow: allow, Force: force}, out)
			if err != nil {
				return err
			}
			return printComparison(g, rep, out)
		},
	}
	cmd.Flags().StringSliceVar(&allow, "allow", nil, "accept a difference in this component (metrics, judges, settings, prompts)")
	cmd.Flags().BoolVar(&force, "force", false, forceHelp["compare"])
	cmd.Flags().Uint64Var(&seed, "seed", 0, "seed of the rank correlations' bootstrap (reported, so they are reproducible)")
	cmd.Flags().StringVarP(&out, "output", "o", "", "also write the comparison as JSON to this file")
	cmd.Flags().BoolVar(&studies, "study", false, "compare two study.json files (two publishes of a study) instead of two runs")
	return cmd
}

// benchesOrDirs keeps each arg that names something on disk and turns
// the others into the benchmark of that name under the project's
// benchmarks/ when there is one, so that `compare example mybench` works
// as `status example` does (and is not told to create a benchmark.yaml
// that exists). The config is read once, and only when a name needs it.
func benchesOrDirs(configPath string, args []string) []string {
	out := slices.Clone(args)
	var cfg *config.Config
	for i, arg := range args {
		if _, err := os.Stat(arg); err == nil {
			continue
		}
		if cfg == nil {
			var err error
			if cfg, err = config.LoadWithOptions(configPath, config.LoadOptions{AllowMissingEnv: true}); err != nil {
				return out // no project: the names stay as typed, and compare says what is missing
			}
		}
		if dir, err := runner.ResolveBench(cfg, arg); err == nil {
			out[i] = dir
		}
	}
	return out
}

// compareReport compares two run directories and, when out is set, writes
// the comparison there as JSON.
func compareReport(dirA, dirB, labelA, labelB string, opts compare.Options, out string) (*compare.Report, error) {
	a, err := compare.LoadRun(dirA, labelA)
	if err != nil {
		return nil, &fault.Error{Kind: fault.Input, Msg: err.Error() + studyHint(dirA), Err: err}
	}
	b, err := compare.LoadRun(dirB, labelB)
	if err != nil {
		return nil, &fault.Error{Kind: fault.Input, Msg: err.Error() + studyHint(dirB), Err: err}
	}
	rep, err := compare.Compare(a, b, opts)
	if err != nil {
		if compare.IsNotComparable(err) {
			return nil, fault.AsInput(err)
		}
		return nil, err
	}
	if out != "" {
		if err := compare.WriteJSON(out, rep); err != nil {
			return nil, err
		}
	}
	return rep, nil
}

// printComparison prints a comparison: with --json the report itself on
// stdout (with or without -o), otherwise the table, and the file written
// as a note on stderr.
func printComparison(g *globals, rep *compare.Report, written string) error {
	if g.JSON {
		return writeJSON(g.stdout, rep)
	}
	if err := rep.WriteTable(g.stdout); err != nil {
		return err
	}
	g.wrote(written)
	return nil
}

// wrote notes on stderr (not with -q or --json) that the command wrote
// path, besides the results it prints on stdout ("": none).
func (g *globals) wrote(path string) {
	if path != "" && !g.Quiet && !g.JSON {
		fmt.Fprintf(g.stderr, "wrote %s\n", sanitize.Terminal(path))
	}
}

// validateJSON is validate's --json output: the validation run and, when
// it finished, its comparison with the main run.
type validateJSON struct {
	Command        string          `json:"command"`
	Benchmark      string          `json:"benchmark"`
	Swap           string          `json:"swap"`
	ExitCode       int             `json:"exit_code"`
	Error          *string         `json:"error"`
	Run            runJSON         `json:"run"`
	Comparison     *compare.Report `json:"comparison"`
	ValidationFile *string         `json:"validation_file"`
}

func writeValidateJSON(g *globals, r *runner.Runner, swap validation.Swap, rep *compare.Report, written string, runErr error) error {
	run := newRunJSON("validate", r, invocation{}, runErr)
	out := validateJSON{Command: "validate", Benchmark: run.Benchmark, Swap: swap.Role + "=" + swap.Model,
		ExitCode: run.ExitCode, Error: run.Error, Run: run, Comparison: rep}
	if rep != nil {
		out.ValidationFile = &written
	}
	if err := writeJSON(g.stdout, out); err != nil {
		return err
	}
	return runErr
}
