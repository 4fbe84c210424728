package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/export"
	"github.com/impactbench/impactbench/internal/fault"
	"github.com/impactbench/impactbench/internal/fsx"
	"github.com/impactbench/impactbench/internal/runner"
	"github.com/impactbench/impactbench/internal/work"
)

// exportOptions are export's flags.
type exportOptions struct {
	Format   string
	Output   string
	Messages bool
	Raw      bool
}

func newExportCmd(g *globals) *cobra.Command {
	var o exportOptions
	cmd := &cobra.Command{
		Use:   "export <benchmark>",
		Short: "Write the judged rows (or transcript messages) as one tidy table: CSV, JSON Lines or Parquet",
		Long: `Writes one row per judged conversation per judge — from runs/<target>/scores.json and every
evaluate --judge output under runs/<target>/judges/ — with its target, model, metric, scenario,
one demo_<axis> column per demographic axis, sample, status, turns, judge, verdict and costs.
Null verdicts stay as empty cells (JSON null, Parquet null). With --messages it writes the
transcripts instead: one row per message. Columns are listed in docs/outputs.md (Export).

CSV text cells that a spreadsheet would run as a formula (starting with =, +, -, @, a tab or a
carriage return: model text can) get a leading apostrophe; --raw writes them exactly as stored.
JSON Lines and Parquet always keep text exact.

Output goes to stdout unless -o FILE is given; -o replaces FILE only once the whole table is
written. Parquet is binary: it goes to stdout only when stdout is not a terminal.`,
		Example: `  impactbench export example --format csv > example.csv
  impactbench export example --format parquet -o example.parquet
  impactbench export example --format jsonl --messages -o messages.jsonl`,
		GroupID: "results",
		Args:    benchArgs(false),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runExport(g, args[0], o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Format, "format", "csv", "output `FORMAT`: csv, jsonl or parquet")
	f.StringVarP(&o.Output, "output", "o", "", "write to `FILE` (replaced only once complete) instead of stdout")
	f.BoolVar(&o.Messages, "messages", false, "export transcripts, one row per message, instead of judged rows")
	f.BoolVar(&o.Raw, "raw", false, "csv: write text cells exactly as stored, even those a spreadsheet would run as a formula")
	return cmd
}

func runExport(g *globals, benchArg string, o exportOptions) error {
	format, err := export.ParseFormat(o.Format)
	if err != nil {
		return usagef("--format: %v", err)
	}
	toStdout := o.Output == "" || o.Output == "-"
	if toStdout && format == export.Parquet && isTerminal(g.stdout) {
		return usagef("--format parquet writes binary data: pass -o FILE or redirect stdout")
	}
	if toStdout && g.JSON {
		return usagef("--json needs -o FILE: without it the table itself goes to stdout")
	}
	if !toStdout {
		if err := outputFileFlag(o.Output); err != nil {
			return err
		}
	}
	if o.Raw && format != export.CSV {
		return usagef("--raw applies to --format csv only (JSON Lines and Parquet keep text exact)")
	}
	wo := export.Options{RawCSV: o.Raw}
	table, err := openExport(g, benchArg, o.Messages)
	if err != nil {
		return err
	}
	if toStdout {
		_, err := export.Write(table, format, g.stdout, wo)
		return exportErr(err)
	}
	n, err := writeExportFile(o.Output, table, format, wo)
	if err != nil {
		return exportErr(err)
	}
	name := export.TableJudged
	if o.Messages {
		name = export.TableMessages
	}
	if g.JSON {
		return writeJSON(g.stdout, map[string]any{"file": o.Output, "format": format, "table": name, "rows": n})
	}
	if !g.Quiet {
		fmt.Fprintf(g.stderr, "impactbench: wrote %d %s rows to %s\n", n, name, o.Output)
	}
	return nil
}

// openExport loads config and benchmark.yaml and opens the chosen table.
func openExport(g *globals, benchArg string, messages bool) (export.Rows, error) {
	cfg, err := g.loadConfig()
	if err != nil {
		return nil, err
	}
	dir, err := runner.ResolveBench(cfg, benchArg)
	if err != nil {
		return nil, err
	}
	bench, err := config.LoadBenchmark(filepath.Join(dir, "benchmark.yaml"))
	if err != nil {
		return nil, err
	}
	g.warnBenchmark(bench)
	src := export.Source{Dir: dir, Metrics: bench.Metrics, Models: map[string]string{}}
	for _, m := range cfg.EvaluatorModels {
		src.Judges = append(src.Judges, work.JudgeLabel(m))
	}
	for _, t := range cfg.Targets {
		src.Models[t.ID] = t.Model
	}
	var t export.Rows
	if messages {
		t, err = export.OpenMessages(src)
	} else {
		t, err = export.OpenJudged(src)
	}
	return t, exportErr(err)
}

// exportErr maps unreadable inputs to the input error (exit 2); output
// failures stay run failures.
func exportErr(err error) error {
	var ie *export.InputError
	if errors.As(err, &ie) {
		return &fault.Error{Kind: fault.Input, Msg: ie.Error()}
	}
	return err
}

// writeExportFile writes the table atomically (package fsx): path is
// replaced only once the whole table is written, so a failed export leaves
// it as it was.
// outputFileFlag refuses an -o that names a directory: the file is written
// beside it and renamed over it, which fails late (exit 1, naming the
// temporary file), after the work is done.
func outputFileFlag(path string) error {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return usagef("-o %s: is a directory: name the file to write, e.g. %s", path, filepath.Join(path, "FILE"))
	}
	return nil
}

func writeExportFile(path string, t export.Rows, f export.Format, o export.Options) (int64, error) {
	out, err := fsx.Create(path, fsx.Shared)
	if err != nil {
		return 0, err
	}
	defer out.Abort() // a no-op after Commit
	n, err := export.Write(t, f, out, o)
	if err != nil {
		return n, err
	}
	return n, out.Commit()
}
