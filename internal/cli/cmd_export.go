package cli

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/export"
	"github.com/impactbench/impactbench/internal/fault"
	"github.com/impactbench/impactbench/internal/fsx"
	"github.com/impactbench/impactbench/internal/sanitize"
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
		Use:   "export <benchmark…|all>",
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
written. Parquet is binary: it goes to stdout only when stdout is not a terminal.

` + "`export all`" + ` (or several names) writes the study as one table: every benchmark's rows in turn, told
apart by the benchmark column, over the union of their columns (a demographic axis one
benchmark lacks is empty on its rows). With all, a benchmark with nothing to export yet (never
evaluated; never simulated for --messages) is left out and named on stderr; a named one is an
error.`,
		Example: `  impactbench export example --format csv > example.csv
  impactbench export example --format parquet -o example.parquet
  impactbench export example --format jsonl --messages -o messages.jsonl
  impactbench export all --format parquet -o study.parquet`,
		GroupID: "results",
		Args:    benchArgs(true),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runExport(g, args, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Format, "format", "csv", "output `FORMAT`: csv, jsonl or parquet")
	f.StringVarP(&o.Output, "output", "o", "", "write to `FILE` (replaced only once complete) instead of stdout")
	f.BoolVar(&o.Messages, "messages", false, "export transcripts, one row per message, instead of judged rows")
	f.BoolVar(&o.Raw, "raw", false, "csv: write text cells exactly as stored, even those a spreadsheet would run as a formula")
	return cmd
}

func runExport(g *globals, benchArgs []string, o exportOptions) error {
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
	table, err := openExports(g, benchArgs, o.Messages)
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

// openExports opens the chosen table of each benchmark named (or of every
// one, for all) as one table. With all, benchmarks with nothing to export
// yet are left out, named on stderr; none left is the error of the first.
func openExports(g *globals, args []string, messages bool) (export.Rows, error) {
	cfg, err := g.loadConfig()
	if err != nil {
		return nil, err
	}
	dirs, err := benchDirs(cfg, args)
	if err != nil {
		return nil, err
	}
	all := len(args) == 1 && args[0] == "all"
	var parts []export.Rows
	var skipped []string
	var first error
	for _, dir := range dirs {
		t, err := openExport(g, cfg, dir, messages)
		if all && errors.Is(err, export.ErrNothingToExport) {
			skipped = append(skipped, filepath.Base(dir))
			first = cmp.Or(first, err)
			continue
		}
		if err != nil {
			return nil, err
		}
		parts = append(parts, t)
	}
	if len(parts) == 0 {
		return nil, first
	}
	if len(skipped) > 0 && !g.Quiet {
		fmt.Fprintf(g.stderr, "impactbench: left out %d benchmark(s) with nothing to export yet: %s\n", len(skipped), sanitize.Terminal(strings.Join(skipped, ", ")))
	}
	if len(parts) == 1 {
		return parts[0], nil
	}
	return export.Concat(parts...)
}

// openExport loads benchmark.yaml and opens the chosen table of the
// benchmark in dir.
func openExport(g *globals, cfg *config.Config, dir string, messages bool) (export.Rows, error) {
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
		return &fault.Error{Kind: fault.Input, Msg: ie.Error(), Err: ie}
	}
	return err
}

// outputFileFlag refuses an -o that names a directory: the file is written
// beside it and renamed over it, which fails late (exit 1, naming the
// temporary file), after the work is done.
func outputFileFlag(path string) error {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return usagef("-o %s: is a directory: name the file to write, e.g. %s", path, filepath.Join(path, "FILE"))
	}
	return nil
}

// writeExportFile writes the table atomically (package fsx): path is
// replaced only once the whole table is written, so a failed export leaves
// it as it was.
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
