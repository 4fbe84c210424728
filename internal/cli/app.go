package cli

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/impactbench/impactbench/internal/cluster"
	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/fault"
	"github.com/impactbench/impactbench/internal/phase"
	"github.com/impactbench/impactbench/internal/plan"
	"github.com/impactbench/impactbench/internal/progress"
	"github.com/impactbench/impactbench/internal/runner"
	"github.com/impactbench/impactbench/internal/sanitize"
	"github.com/impactbench/impactbench/internal/summary"
)

// phaseFlags are the switches shared by the stage commands.
type phaseFlags struct {
	Force   bool
	DryRun  bool
	MaxCost float64
	Shard   string
	Shards  int
	Workers int
	// IndependentOpenings is --independent-openings
	// (generation.independent_openings).
	IndependentOpenings bool
	Report              bool

	// AcceptFewer: an output may replace one with more rows, models or
	// verdicts (phase.RefusedError otherwise). A flag only, not a config
	// key: losing results is decided per invocation, never left on.
	AcceptFewer bool
	// sharded: the command registered the shard flags, so its rows may be
	// split and the cluster scheduler's variables are read. calls: it
	// calls models, so it uses the shared store and rate backend (a
	// command that only reads its outputs needs neither reachable).
	sharded, calls bool
	// fromStore: assemble outputs from the call store alone (merge
	// --from-store), which must then be the configured one.
	fromStore bool
	// flags is the command's flag set, to tell a flag typed on the command
	// line from its default (resolve); nil for a command without them.
	flags *pflag.FlagSet
}

// phaseFlagSet picks the phase flags a command registers: each command
// lists only the flags it acts on.
type phaseFlagSet int

const (
	withForce phaseFlagSet = 1 << iota
	// withAcceptFewer: the command's outputs are guarded against
	// replacement by fewer rows, models or verdicts (phase.RefusedError).
	withAcceptFewer
	withDryRun
	withMaxCost  // the command calls models
	withShard    // the command's rows can be split across machines
	withOpenings // the command simulates conversations
)

func (f *phaseFlags) add(cmd *cobra.Command, set phaseFlagSet) {
	fl := cmd.Flags()
	f.flags = fl
	if set&withForce != 0 {
		fl.BoolVarP(&f.Force, "force", "f", false, forceHelp[cmd.Name()])
	}
	if set&withAcceptFewer != 0 {
		fl.BoolVar(&f.AcceptFewer, strings.TrimPrefix(phase.AcceptFewerFlag, "--"), false, acceptFewerHelp)
	}
	if set&withDryRun != 0 {
		fl.BoolVarP(&f.DryRun, "dry-run", "n", false, "print rows, model calls and estimated tokens/cost; call nothing")
	}
	if set&withMaxCost != 0 {
		f.calls = true
		fl.Var((*usdValue)(&f.MaxCost), "max-cost", "stop scheduling new calls before spending more than this many US dollars (default: config max_cost; 0: no ceiling)")
	}
	if set&withOpenings != 0 {
		fl.BoolVar(&f.IndependentOpenings, "independent-openings", false, "ask the simulated user's first turn once per target instead of once for every target (default: config generation.independent_openings, false: one shared opening)")
	}
	if set&withShard != 0 {
		f.sharded = true
		// A back-quoted word is the placeholder pflag shows after the flag.
		fl.StringVar(&f.Shard, "shard", "", "run only shard `i/K` of the rows (0 ≤ i < K, e.g. 0/4); combine the shards with impactbench merge. Without it, the index comes from the cluster's scheduler: "+cluster.EnvK8sIndex+", "+cluster.EnvSlurmID+" or "+cluster.EnvAWSIndex)
		fl.Var((*countValue)(&f.Shards), "shards", "the shard count `K` when the scheduler gives only an index (a Kubernetes Indexed Job's completions; or "+cluster.EnvShards+")")
		fl.Var((*countValue)(&f.Workers), "workers", "workers running at once on the same provider keys (the Job's parallelism, the array's %N; or "+cluster.EnvWorkers+"): each takes 1/`N` of every provider limit (default: every shard at once)")
	}
}

// configured pairs each phase flag with the config.yaml key it overrides
// (TestFlagsOverrideConfig checks every pair, both ways).
func (f *phaseFlags) configured(cfg *config.Config) []flagSetting {
	return []flagSetting{
		{flag: "force", key: "run.force", flagVal: &f.Force, cfgVal: &cfg.Run.Force},
		{flag: "dry-run", key: "run.dry_run", flagVal: &f.DryRun, cfgVal: &cfg.Run.DryRun},
		{flag: "max-cost", key: "max_cost", flagVal: &f.MaxCost, cfgVal: &cfg.MaxCost},
		{flag: "independent-openings", key: "generation.independent_openings", flagVal: &f.IndependentOpenings, cfgVal: &cfg.Generation.IndependentOpenings},
	}
}

// flagSetting is one setting that a flag and a config key both set.
type flagSetting struct {
	flag, key       string
	flagVal, cfgVal any // *bool or *float64, the same type
}

// resolve settles every setting both config.yaml and a flag give: a flag
// typed on the command line wins, in both directions (--dry-run=false
// over run.dry_run: true, --max-cost 0 over max_cost: 50, meaning no
// ceiling); an untyped flag takes config's value. Afterwards the flags and
// cfg agree, so the command and the runner see one value. Idempotent.
func (f *phaseFlags) resolve(cfg *config.Config) {
	for _, s := range f.configured(cfg) {
		from, to := s.cfgVal, s.flagVal
		if f.flags != nil && f.flags.Changed(s.flag) {
			from, to = s.flagVal, s.cfgVal
		}
		switch to := to.(type) {
		case *bool:
			*to = *from.(*bool)
		case *float64:
			*to = *from.(*float64)
		}
	}
}

// usdValue is a dollar amount flag: a readable error for "abc" or "-5"
// instead of strconv's text.
type usdValue float64

func (v *usdValue) String() string { return strconv.FormatFloat(float64(*v), 'f', -1, 64) }
func (v *usdValue) Type() string   { return "USD" }

func (v *usdValue) Set(s string) error {
	x, err := strconv.ParseFloat(strings.TrimPrefix(strings.TrimSpace(s), "$"), 64)
	if err != nil || x < 0 || math.IsInf(x, 0) || math.IsNaN(x) {
		return errors.New("want a dollar amount ≥ 0, e.g. 25 or 2.50")
	}
	*v = usdValue(x)
	return nil
}

// countValue is --shards or --workers: a whole number ≥ 1 when given
// (0, the default, is "not given", so a 0 typed must not pass for that).
type countValue int

func (v *countValue) String() string { return strconv.Itoa(int(*v)) }
func (v *countValue) Type() string   { return "count" }

func (v *countValue) Set(s string) error {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || n < 1 {
		return errors.New("want a whole number ≥ 1")
	}
	*v = countValue(n)
	return nil
}

// worker is this process's place in the study: --shard/--shards/--workers,
// or the cluster scheduler's variables (package cluster). A command that
// cannot split its rows is every row, alone.
func (f *phaseFlags) worker(getenv func(string) string) (cluster.Worker, error) {
	if !f.sharded {
		return cluster.Worker{Workers: 1}, nil
	}
	return cluster.Detect(cluster.Flags{Shard: f.Shard, Shards: f.Shards, Workers: f.Workers}, getenv)
}

// loadConfig loads --config; a missing default config.yaml gets a hint.
func (g *globals) loadConfig() (*config.Config, error) {
	path := g.configPath()
	cfg, err := config.LoadWithOptions(path, config.LoadOptions{AllowMissingEnv: true})
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			if g.configSet {
				return nil, usagef("%s not found: run `impactbench init` to create a project, or pass --config FILE", path)
			}
			return nil, usagef("no %s in this directory or any parent: run `impactbench init` to create a project, or pass --config FILE", path)
		}
		return nil, err
	}
	g.warnFile(cfg.Warnings)
	return cfg, nil
}

// warnFile prints the warnings of a file the command read — config.yaml's,
// benchmark.yaml's, each "file:line:col: message" — on stderr (warn).
func (g *globals) warnFile(warnings []string) {
	for _, w := range warnings {
		g.warn(w)
	}
}

// warn prints one warning on stderr, "impactbench: warning: msg" (msg as
// text: names in it come from files and folders). Every warning of every
// command goes through it, so that:
//   - with -q none prints: --quiet's help promises no warnings on stderr;
//   - each prints once per command however often the command finds it
//     (`aggregate all` loads config.yaml once per benchmark, a study run
//     reads a benchmark.yaml several times).
func (g *globals) warn(msg string) {
	if g.Quiet {
		return
	}
	line := "impactbench: warning: " + sanitize.Terminal(msg) + "\n"
	g.warnedMu.Lock()
	defer g.warnedMu.Unlock()
	if g.warned[line] {
		return
	}
	if g.warned == nil {
		g.warned = map[string]bool{}
	}
	g.warned[line] = true
	fmt.Fprint(g.stderr, line)
}

// warnBenchmark prints the warnings of a benchmark.yaml the command loaded
// (keys it does not know, kept in the file but not used) as loadConfig
// prints config.yaml's (b nil: none).
func (g *globals) warnBenchmark(b *config.Benchmark) {
	if b != nil {
		g.warnFile(b.Warnings)
	}
}

// warnBenchmarkIn is warnBenchmark for the benchmark.yaml in dir, for a
// command that reads it through a package that keeps the warnings to
// itself (report, status, compare, view): the file is read once more for
// them. One that does not load is left to the command, which says why.
func (g *globals) warnBenchmarkIn(dirs ...string) {
	for _, d := range dirs {
		if b, err := config.LoadBenchmark(d); err == nil {
			g.warnBenchmark(b)
		}
	}
}

// tracker starts the progress display; stop it with stopTracker.
func (g *globals) tracker() *progress.Tracker {
	var tr *progress.Tracker
	switch {
	case g.Quiet:
		tr = progress.New(g.stderr, progress.Quiet, 0)
	case g.isTTY:
		tr = progress.New(g.stderr, progress.Bars, 0)
	default:
		tr = progress.New(g.stderr, progress.Lines, 15*time.Second)
	}
	g.progress.Store(tr)
	return tr
}

// stopTracker ends the display: after an interrupt at once (never waiting
// on the terminal), otherwise once the final frame is drawn.
func (g *globals) stopTracker(ctx context.Context, tr *progress.Tracker) {
	if ctx.Err() != nil {
		tr.Abort()
	} else {
		tr.Close()
	}
	g.progress.CompareAndSwap(tr, nil)
}

// withRunner loads config and benchmark, takes the benchmark lock, runs fn,
// and prints the summary (command names it in --json).
func (g *globals) withRunner(ctx context.Context, command, benchArg string, pf *phaseFlags, extra func(*runner.Options), fn func(context.Context, *runner.Runner, *invocation) error) error {
	r, tr, err := g.openRunner(ctx, benchArg, pf, extra)
	if err != nil {
		return err
	}
	defer r.Close()
	var inv invocation
	runErr := fn(ctx, r, &inv)
	g.stopTracker(ctx, tr)
	return g.finish(command, r, inv, runErr)
}

// openRunner loads config and benchmark and takes the benchmark lock.
func (g *globals) openRunner(ctx context.Context, benchArg string, pf *phaseFlags, extra func(*runner.Options)) (*runner.Runner, *progress.Tracker, error) {
	cfg, err := g.loadConfig()
	if err != nil {
		return nil, nil, err
	}
	dir, err := runner.ResolveBench(cfg, benchArg)
	if err != nil {
		return nil, nil, err
	}
	opts, err := g.runnerOptions(cfg, pf)
	if err != nil {
		return nil, nil, err
	}
	tr := g.tracker()
	opts.Progress = tr
	if extra != nil {
		extra(&opts)
	}
	r, err := runner.New(ctx, cfg, dir, opts)
	if err != nil {
		tr.Close()
		return nil, nil, err
	}
	g.warnBenchmark(r.Bench())
	return r, tr, nil
}

// runnerOptions are the runner's options from the phase flags (a typed
// flag over config: resolve), config and the environment (the scheduler's
// index, IMPACTBENCH_STORE and IMPACTBENCH_RATE_BACKEND over config's store
// and rate_backend).
func (g *globals) runnerOptions(cfg *config.Config, pf *phaseFlags) (runner.Options, error) {
	w, err := pf.worker(os.Getenv)
	if err != nil {
		return runner.Options{}, err
	}
	if w.Note != "" && !g.Quiet {
		fmt.Fprintf(g.stderr, "impactbench: %s\n", w.Note)
	}
	pf.resolve(cfg)
	g.forced.Store(pf.Force && !pf.DryRun)
	o := runner.Options{
		Force:       pf.Force,
		AcceptFewer: pf.AcceptFewer,
		DryRun:      pf.DryRun,
		MaxCost:     pf.MaxCost,
		Shard:       w.Shard,
		Workers:     w.Workers,
		// A duplicate of a shard the scheduler started waits for its twin;
		// a --shard typed by hand twice is refused.
		WaitShard: w.Shard.Active() && w.From != "--shard",
		Logger:    g.logger,
		Stderr:    g.stderr,
	}
	if !pf.calls && !pf.fromStore {
		return o, nil
	}
	if o.Store, o.StoreFrom, err = fromEnv(config.EnvStore, cfg.Store, "store", config.StoreURLProblem); err != nil {
		return o, err
	}
	if pf.fromStore {
		o.Replay = true
		return o, nil
	}
	if o.RateBackend, o.RateBackendFrom, err = fromEnv(config.EnvRateBackend, cfg.RateBackend, "rate_backend", config.RateBackendProblem); err != nil {
		return o, err
	}
	return o, nil
}

// fromEnv is variable name's value when set (checked by problem: a bad one
// is a usage error naming the variable), else config's value of key.
func fromEnv(name, configured, key string, problem func(string) string) (value, from string, err error) {
	v, ok := os.LookupEnv(name)
	if !ok || v == "" {
		if configured == "" {
			return "", "", nil
		}
		return configured, key, nil
	}
	if p := problem(v); p != "" {
		return "", "", usagef("%s=%s: %s", name, sanitize.URL(v), p)
	}
	return v, name, nil
}

// finish turns failed rows into exit 1 and prints the plan or summary
// (with --json, the command's runJSON on stdout).
func (g *globals) finish(command string, r *runner.Runner, inv invocation, runErr error) error {
	runErr = settle(r, runErr)
	s := r.Report
	if g.JSON {
		if err := writeJSON(g.stdout, newRunJSON(command, r, inv, runErr)); err != nil {
			return err
		}
		return runErr
	}
	if runErr != nil && !begun(s) {
		return runErr // stopped by its checks: only the error prints
	}
	if s.DryRun {
		printDryRun(g.stdout, s)
		fmt.Fprintln(g.stdout)
		printPrecision(g.stdout, s.Precision)
		return runErr
	}
	if !g.Quiet {
		printSummary(g, s)
	}
	return runErr
}

// settle completes one benchmark's summary once its work is over: failed
// rows as the error (withFailedRows), the learned limits, and a dry run's
// precision lines.
func settle(r *runner.Runner, runErr error) error {
	runErr = withFailedRows(r, runErr)
	r.RecordLimits()
	if s := r.Report; s.DryRun {
		s.SetPrecision(plan.DryRunPrecision(r.Config(), r.Bench(), r.Layout().Results()))
	}
	return runErr
}

// withFailedRows is runErr, or the failed rows as a PartialError (exit 1)
// when the run itself returned no error.
func withFailedRows(r *runner.Runner, runErr error) error {
	if runErr == nil {
		if n, ph := r.Report.Failed(); n > 0 {
			return &runner.PartialError{Failed: n, Phases: ph}
		}
	}
	return runErr
}

// begun reports whether the command got past its checks on one benchmark:
// a phase reported (ran, skipped, failed or stopped), a dry run estimated a
// row, or a call was paid or replayed. A command refused before that — a
// target config.yaml lacks, an input not there yet — prints only its error:
// a "spent now: $0.0000" line or an empty plan before it would say that
// something had run.
func begun(s *summary.Summary) bool {
	return len(s.Phases) > 0 || len(s.Plan) > 0 || s.Spent.Requests > 0 || s.Reused.Requests > 0
}

func printSummary(g *globals, s *summary.Summary) {
	printPhaseProblems(g, s.Phases, "")
	if s.Budget != nil {
		fmt.Fprintf(g.stderr, "cost ceiling $%.4f: spent $%.4f this run; %d row(s) not done — raise --max-cost and rerun to finish them\n",
			s.Budget.Max, s.Budget.Spent, s.Budget.Remaining)
	}
	printSpent(g.stderr, "", s.Spent, s.Reused)
	if note := summary.CacheNote(s.Spent); note != "" {
		fmt.Fprintln(g.stderr, note)
	}
	if line := limitsLine(s.Limits); line != "" {
		fmt.Fprintln(g.stderr, line)
	}
}

// printPhaseProblems lists the failed and stopped phases, each label
// prefixed (a study names the benchmark).
func printPhaseProblems(g *globals, phases []summary.PhaseReport, prefix string) {
	for _, p := range phases {
		if p.Status != phase.StatusFailed && p.Status != phase.StatusStopped {
			continue
		}
		label := prefix + p.Phase.String()
		if p.Target != "" {
			label += " " + p.Target
		}
		if p.Status == phase.StatusStopped && p.Failed == 0 {
			// Nothing failed: the phase was cut short (Ctrl-C, cost ceiling).
			fmt.Fprintf(g.stderr, "%s: stopped — %s\n", sanitize.Line(label), sanitize.Line(p.Reason))
			continue
		}
		reason := ""
		if p.Reason != "" {
			reason = ": " + sanitize.Line(p.Reason)
		}
		fmt.Fprintf(g.stderr, "%s: %s — %d of %d row(s) failed%s\n", sanitize.Line(label), p.Status, p.Failed, p.Rows, reason)
		printFailures(g.stderr, p.Failures)
	}
}

// limitsLine says how many calls in flight each provider pool ended at,
// e.g. "concurrency learned: gpt-4o 48 of ≤256 (peak 52, 3 back-offs, 7 × 429)".
func limitsLine(ls []summary.PoolLimit) string {
	if len(ls) == 0 {
		return ""
	}
	parts := make([]string, len(ls))
	for i, l := range ls {
		p := fmt.Sprintf("%s %d of ≤%d (peak %d", l.Pool, l.Concurrency, l.MaxConcurrency, l.PeakInFlight)
		if l.BackOffs > 0 {
			p += fmt.Sprintf(", %d back-offs", l.BackOffs)
		}
		if l.RateLimited > 0 {
			p += fmt.Sprintf(", %d × 429", l.RateLimited)
		}
		parts[i] = p + ")"
	}
	return "concurrency learned: " + strings.Join(parts, "; ")
}

// benchArgs checks a command's arguments: a benchmark name, then targets
// when withTargets. The errors say what is expected, not just how many.
func benchArgs(withTargets bool) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 {
			return usagef("expected a benchmark name (a directory under benchmarks/), e.g. `impactbench %s example`", cmd.Name())
		}
		if !withTargets && len(args) > 1 {
			return usagef("%s takes one benchmark name, got %d arguments: %s", cmd.Name(), len(args), strings.Join(args, " "))
		}
		return nil
	}
}

// oneBench is benchArgs for a command that works on one benchmark at a
// time: `all` there is no benchmark's name but a reader's guess that it
// works as in run, so it is refused saying what does (instead).
func oneBench(withTargets bool, instead string) cobra.PositionalArgs {
	check := benchArgs(withTargets)
	return func(cmd *cobra.Command, args []string) error {
		if len(args) > 0 && args[0] == "all" {
			return usagef("%s works on one benchmark at a time, not all: %s", cmd.Name(), instead)
		}
		return check(cmd, args)
	}
}

// noArgs refuses arguments to a command that takes none, saying what the
// command takes instead (hint: e.g. "to write into %s, use -o %s", %s the
// first argument) rather than cobra's "unknown command": a reader who
// typed `publish site-data` gave a folder, not a command.
func noArgs(hint string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 {
			return nil
		}
		msg := fmt.Sprintf("%s takes no arguments, got %s", cmd.CommandPath(), strings.Join(quoteAll(args), " "))
		if hint != "" {
			msg += ": " + strings.ReplaceAll(hint, "%s", args[0])
		}
		return usagef("%s", msg)
	}
}

// quoteAll quotes each argument as Go would, so that spaces and control
// characters in what was typed show.
func quoteAll(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = strconv.Quote(a)
	}
	return out
}

// flagError turns pflag's "invalid argument … strconv.ParseFloat: …" into
// what the flag wants.
func flagError(_ *cobra.Command, err error) error {
	var ive *pflag.InvalidValueError
	if !errors.As(err, &ive) {
		return &fault.Error{Kind: fault.Usage, Msg: err.Error() + " (see --help)", Err: err}
	}
	f := ive.GetFlag()
	want := map[string]string{
		"int": "a whole number", "uint64": "a whole number ≥ 0", "float64": "a number",
		"duration": "a duration such as 500ms, 30s or 2m", "bool": "true or false",
	}[f.Value.Type()]
	if want == "" {
		want = ive.Unwrap().Error() // our own flag types say it themselves
	} else {
		want = "want " + want
	}
	return usagef("--%s %q: %s (see --help)", f.Name, ive.GetValue(), want)
}

// expandAll expands "all" to every benchmark under benchmarks/.
func expandAll(g *globals, arg string) ([]string, error) {
	if arg != "all" {
		return []string{arg}, nil
	}
	cfg, err := g.loadConfig()
	if err != nil {
		return nil, err
	}
	dirs, err := runner.ListBenches(cfg)
	if err != nil {
		return nil, err
	}
	if len(dirs) == 0 {
		return nil, usagef("no benchmarks under %s", filepath.Join(cfg.Dir, "benchmarks"))
	}
	return dirs, nil
}
