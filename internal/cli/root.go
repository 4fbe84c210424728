// Package cli is impactbench's command line: one file per command, options
// structs, errors mapped to exit codes in one place (exit.go).
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/impactbench/impactbench/internal/fault"
	"github.com/impactbench/impactbench/internal/progress"
	"github.com/impactbench/impactbench/internal/sanitize"
)

// version is set by -ldflags "-X github.com/impactbench/impactbench/internal/cli.version=v1.2.3".
var version = ""

// Version returns the build's version: the -ldflags version, else the
// module version the go command stamped (a release tag, or a
// pseudo-version from the git checkout it was built in), else the git
// revision, else "devel" (go run and go test record neither).
func Version() string {
	bi, _ := debug.ReadBuildInfo()
	return buildVersion(version, bi).String()
}

// versionInfo is what the build says about itself; also version's --json.
type versionInfo struct {
	Command  string `json:"command"`
	Version  string `json:"version"`  // -ldflags or module version; "" if neither
	Revision string `json:"revision"` // vcs.revision; "" when not built from a checkout
	Time     string `json:"time"`     // vcs.time, the commit's time
	Modified bool   `json:"modified"` // vcs.modified: uncommitted changes
	Go       string `json:"go"`
}

func buildVersion(ldflags string, bi *debug.BuildInfo) versionInfo {
	v := versionInfo{Command: "version", Version: ldflags}
	if bi == nil {
		return v
	}
	v.Go = bi.GoVersion
	if v.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		v.Version = bi.Main.Version
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Revision = s.Value
		case "vcs.time":
			v.Time = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	return v
}

// String is the one-line version: "v1.2.3", "v0.0.0-…-abcdef+dirty",
// "devel abcdef123456 (modified)" or "devel".
func (v versionInfo) String() string {
	if v.Version != "" {
		return v.Version
	}
	s := "devel"
	if v.Revision != "" {
		s += " " + v.Revision[:min(12, len(v.Revision))]
		if v.Modified {
			s += " (modified)"
		}
	}
	return s
}

// globals are the flags every command takes.
type globals struct {
	ConfigPath string
	// configSet: --config was given; otherwise config.yaml is looked for in
	// the working directory and its parents (findConfig).
	configSet bool
	Quiet     bool
	JSON      bool
	Verbose   bool

	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
	isTTY  bool
	logger *slog.Logger

	progress        atomic.Pointer[progress.Tracker] // the live display, for signal handling
	interruptedOnce sync.Once
	// forced: the command redoes its work (--force, or run.force), so an
	// interrupted run is not continued by the same command again.
	forced atomic.Bool

	// warned holds the warning lines this command printed (warn), each
	// once however often it is found.
	warnedMu sync.Mutex
	warned   map[string]bool
}

// Main runs the CLI and returns the exit code.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	g := &globals{stdin: stdin, stdout: stdout, stderr: stderr, isTTY: isTerminal(stderr)}
	ctx, stop := g.handleSignals()
	defer stop()
	defer StartProfiles(stderr)()
	root := newRootCmd(g)
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	// cobra adds its help and completion commands when the tree runs (the
	// completion commands write where the root writes when they are
	// made): add them now, so their argument checks are typed too.
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	typedUsage(root)
	err := root.ExecuteContext(ctx)
	if err != nil {
		if g.JSON || wantsJSON(args) {
			printErrorJSON(stderr, err, g.interruptedMessage())
		} else {
			g.printError(err)
		}
	}
	return exitCode(err)
}

// Execute runs another command tree of the project (impactbench-bench)
// the way Main runs impactbench's: the same flag-error messages, usage
// errors by type, exit codes and --json error objects (jsonOut: the
// tree's --json flag).
func Execute(ctx context.Context, root *cobra.Command, args []string, stdout, stderr io.Writer, jsonOut *bool) int {
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SilenceUsage, root.SilenceErrors = true, true
	root.SetFlagErrorFunc(flagError)
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	typedUsage(root)
	err := root.ExecuteContext(ctx)
	if err != nil {
		if *jsonOut || wantsJSON(args) {
			printErrorJSON(stderr, err, interruptedMsg)
		} else if errors.Is(err, context.Canceled) {
			fmt.Fprintln(stderr, "impactbench: "+interruptedMsg)
		} else {
			fmt.Fprintf(stderr, "impactbench: %s\n", sanitize.Terminal(err.Error()))
		}
	}
	return exitCode(err)
}

// wantsJSON finds --json on a command line whose parsing failed before
// reaching it (e.g. `run --nope --json`): the error must still be JSON.
func wantsJSON(args []string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		if a == "--json" || a == "--json=true" {
			return true
		}
	}
	return false
}

// typedUsage makes every argument check of the command tree return a
// usage error (exit 2, kind "usage"), recognised by its type: each
// command's own validator is wrapped, and a command without one gets
// cobra's default rule (a command with subcommands takes no other
// arguments: "unknown command", with cobra's suggestions). Flag errors go
// through flagError. Called once the tree is built.
func typedUsage(c *cobra.Command) {
	check := c.Args
	if check == nil {
		check = unknownCommand
	}
	c.Args = func(cmd *cobra.Command, args []string) error {
		err := check(cmd, args)
		if err == nil || fault.KindOf(err) == fault.Usage {
			return err
		}
		return &fault.Error{Kind: fault.Usage, Msg: err.Error() + " (see --help)", Err: err}
	}
	for _, sub := range c.Commands() {
		typedUsage(sub)
	}
}

// unknownCommand is cobra's rule for a command without an argument check:
// a command that has subcommands takes no other arguments.
func unknownCommand(cmd *cobra.Command, args []string) error {
	if !cmd.HasSubCommands() || len(args) == 0 {
		return nil
	}
	msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
	if cmd.SuggestionsMinimumDistance <= 0 {
		cmd.SuggestionsMinimumDistance = 2 // cobra's own default
	}
	if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
		msg += "\n\nDid you mean this?\n\t" + strings.Join(s, "\n\t")
	}
	return errors.New(msg)
}

// exitGrace bounds how long an interrupted process may take to stop. The
// first Ctrl-C cancels the run: calls in flight abort, everything completed
// is already stored, and the process normally exits 130 well within this.
// If anything still holds it up (a provider that ignores cancellation, a
// terminal that does not take output), it exits anyway: every stored call
// and output is written atomically, so stopping here is as safe as the
// kill -9 the tests exercise.
const exitGrace = 2 * time.Second

// handleSignals cancels the returned context on the first SIGINT/SIGTERM and
// exits 130 with the interrupted message on a second one, or when the run
// has not stopped within exitGrace.
func (g *globals) handleSignals() (context.Context, func()) {
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	quit := make(chan struct{})
	go func() {
		var sig os.Signal
		select {
		case sig = <-ch:
		case <-quit:
			return
		}
		cancel()
		// Never on this goroutine: a blocked terminal must not delay the
		// second Ctrl-C.
		go g.notice(stopNotice(sig, g.forced.Load()))
		grace := time.NewTimer(exitGrace)
		defer grace.Stop()
		select {
		case <-ch:
		case <-grace.C:
		case <-quit:
			return
		}
		g.exitInterrupted()
	}()
	return ctx, func() { signal.Stop(ch); close(quit); cancel() }
}

// stopNotice is what a process says when a signal stops it. Ctrl-C is a
// person at a terminal, who may press it again; SIGTERM is a scheduler or
// a supervisor (Slurm's scancel or time limit, a Kubernetes eviction),
// which waits for the process to end: it is told what resumes the work —
// unless the run is forced, which the same command does not resume.
func stopNotice(sig os.Signal, forced bool) string {
	if sig == syscall.SIGTERM && forced {
		return "impactbench: SIGTERM received — stopping, saving completed work; this run is forced (--force, run.force): the same command again starts over, paying again"
	}
	if sig == syscall.SIGTERM {
		return "impactbench: SIGTERM received — stopping, saving completed work; run the same command again (for a worker, its index again) to resume without paying twice"
	}
	return "impactbench: stopping — saving completed work (press Ctrl-C again to quit immediately)"
}

// notice prints a line above the live progress bars (or plainly without
// them), even in quiet mode.
func (g *globals) notice(line string) {
	if tr := g.progress.Load(); tr != nil && !g.Quiet {
		tr.Printf("%s", line)
		return
	}
	fmt.Fprintln(g.stderr, "\n"+line)
}

// exitInterrupted stops the progress display, prints the interrupted
// message and exits 130 without waiting for the run — within a second even
// if stderr takes no output.
func (g *globals) exitInterrupted() {
	done := make(chan struct{})
	go func() {
		if tr := g.progress.Load(); tr != nil {
			tr.Abort()
		}
		g.printInterrupted()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(time.Second):
	}
	os.Exit(ExitInterrupted)
}

func newRootCmd(g *globals) *cobra.Command {
	// List commands in pipeline order, not alphabetically.
	cobra.EnableCommandSorting = false
	root := &cobra.Command{
		Use:   "impactbench",
		Short: "Run behavioural benchmarks of AI assistants",
		Long: `impactbench runs behavioural benchmarks of AI assistants in five stages:

  gen-metrics    benchmark description → metrics in benchmark.yaml
  gen-scenarios  metrics → adversarial scenarios × demographic variants (scenarios.json)
  simulate       a simulated user pursues each scenario's latent goal against each target
  evaluate       a blind judge decides whether each metric's behaviour is present
  aggregate      pass rates with intervals, agreement and demographic gaps (results.json)

It reads ImpactBench's config.yaml and benchmark files unchanged. Every model call
is stored as it completes, so an interrupted run continues where it stopped and
never pays twice for the same call.`,
		Example: `  impactbench init demo && cd demo
  impactbench run example            # all five stages on the built-in offline model
  impactbench run example --dry-run  # rows, calls and estimated cost; no calls
  impactbench status example
  impactbench report example         # writes benchmarks/example/report.html`,
		Version: Version(),
		// Runnable, so that an unknown command is refused by the typed
		// argument check (typedUsage) rather than answered with help.
		RunE:          func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			lvl := slog.LevelWarn
			if g.Verbose {
				lvl = slog.LevelDebug
			}
			if g.Quiet {
				lvl = slog.LevelError
			}
			g.logger = slog.New(slog.NewTextHandler(g.stderr, &slog.HandlerOptions{Level: lvl, ReplaceAttr: safeAttr}))
			g.configSet = cmd.Flags().Changed("config")
			return nil
		},
	}
	root.SetVersionTemplate("impactbench {{.Version}}\n")
	root.SetFlagErrorFunc(flagError)
	pf := root.PersistentFlags()
	pf.StringVarP(&g.ConfigPath, "config", "c", "config.yaml", "config `FILE` (ImpactBench format)")
	pf.BoolVarP(&g.Quiet, "quiet", "q", false, "print no progress, notes or warnings on stderr (errors, and results on stdout, still print)")
	pf.BoolVar(&g.JSON, "json", false, "print a machine-readable summary on stdout")
	pf.BoolVarP(&g.Verbose, "verbose", "v", false, "log every model call (never keys or bodies)")

	root.AddGroup(&cobra.Group{ID: "stages", Title: "Pipeline stages:"}, &cobra.Group{ID: "results", Title: "Results:"})
	root.AddCommand(
		newInitCmd(g),
		newRunCmd(g),
		newPhaseCmd(g, "gen-metrics", phaseGenMetrics),
		newPhaseCmd(g, "gen-scenarios", phaseGenScenarios),
		newPhaseCmd(g, "simulate", phaseSimulate),
		newPhaseCmd(g, "evaluate", phaseEvaluate),
		newPhaseCmd(g, "aggregate", phaseAggregate),
		newReportCmd(g),
		newStatusCmd(g),
		newVersionCmd(g),
		newExitCodesHelp(g),
	)
	addExtraCommands(root, g)
	addCompletions(root, g)
	return root
}

func newVersionCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  noArgs(""),
		RunE: func(cmd *cobra.Command, _ []string) error {
			bi, _ := debug.ReadBuildInfo()
			v := buildVersion(version, bi)
			if g.JSON {
				return writeJSON(g.stdout, v)
			}
			fmt.Fprintf(g.stdout, "impactbench %s\n", v)
			if v.Revision != "" && v.Version != "" {
				fmt.Fprintf(g.stdout, "revision %s%s\n", v.Revision, map[bool]string{true: " (modified)"}[v.Modified])
			}
			return nil
		},
	}
}

// exitCodes are the exit codes and what they mean: the text of `help
// exit-codes` (each meaning's line breaks as printed) and, with --json, an
// array of exitCodeJSON.
var exitCodes = []struct {
	code    int
	meaning string
}{
	{ExitOK, `success, also a run stopped at the cost ceiling (--max-cost): rerun with a higher
ceiling to go on`},
	{ExitFailure, `run failure: some rows failed after retries (outputs hold the rest; rerun to retry them),
a provider refused (auth, quota), or another process holds the benchmark`},
	{ExitUsage, `bad usage or bad input: flags, config.yaml, benchmark.yaml, scenario/conversation files,
a study's taxonomy.json, nutrition-label.json or models.yaml;
a config that cannot produce a result (no judge, no targets, empty scenarios.json), an
unknown target, a missing key — all checked before the first phase; or a refused
overwrite: the new file would hold fewer rows or models, or nulls where verdicts stood
(the old file is kept byte for byte; --accept-fewer overrides, --force does not)`},
	{ExitInterrupted, `interrupted (Ctrl-C / SIGTERM): completed work is saved; rerun to continue`},
}

// exitCodeJSON is one exit code in `help exit-codes --json` (docs/json.md
// "exit-codes[]").
type exitCodeJSON struct {
	Code    int      `json:"code"`
	Meaning string   `json:"meaning"`
	Kinds   []string `json:"kinds"`
}

// exitCodesText is the help text: each code, its meaning indented under it.
func exitCodesText() string {
	var b strings.Builder
	for i, c := range exitCodes {
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "%-4d %s", c.code, strings.ReplaceAll(c.meaning, "\n", "\n     "))
	}
	return b.String()
}

// exitCodesJSON is the exit codes for --json: each meaning on one line,
// with the error kinds (the --json error's "kind") that exit with it.
func exitCodesJSON() []exitCodeJSON {
	out := make([]exitCodeJSON, len(exitCodes))
	for i, c := range exitCodes {
		out[i] = exitCodeJSON{Code: c.code, Meaning: strings.Join(strings.Fields(c.meaning), " "), Kinds: []string{}}
		for k := fault.Failure; k <= fault.Interrupted; k++ { // every kind, in fault's order
			if exitCode(&fault.Error{Kind: k, Msg: k.String()}) == c.code {
				out[i].Kinds = append(out[i].Kinds, k.String())
			}
		}
	}
	return out
}

// newExitCodesHelp is `help exit-codes` (also `exit-codes`, and its
// --help): the text, or with --json the array.
func newExitCodesHelp(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "exit-codes",
		Short: "Exit codes and what they mean",
		Long:  exitCodesText(),
		Args:  noArgs(""),
		Run:   func(cmd *cobra.Command, _ []string) { cmd.Help() },
	}
	defaultHelp := cmd.HelpFunc()
	cmd.SetHelpFunc(func(c *cobra.Command, args []string) {
		if g.JSON {
			if err := writeJSON(g.stdout, exitCodesJSON()); err != nil {
				fmt.Fprintf(g.stderr, "impactbench: %s\n", err)
			}
			return
		}
		defaultHelp(c, args)
	})
	return cmd
}

// isTerminal reports whether w is a terminal that takes cursor movement
// (progress bars): a character device is not enough, /dev/null is one too.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	return term.IsTerminal(int(f.Fd())) && os.Getenv("TERM") != "dumb"
}

// useColor reports whether output to w may be coloured: a terminal, and no
// NO_COLOR set to a non-empty value (https://no-color.org).
func useColor(w io.Writer) bool {
	return isTerminal(w) && os.Getenv("NO_COLOR") == ""
}
