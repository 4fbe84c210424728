package work

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/impactbench/impactbench/internal/clientset"
	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/fault"
	"github.com/impactbench/impactbench/internal/layout"
	"github.com/impactbench/impactbench/internal/llm"
	"github.com/impactbench/impactbench/internal/llm/ratelimit/redisrate"
	"github.com/impactbench/impactbench/internal/phase"
	"github.com/impactbench/impactbench/internal/plan"
	"github.com/impactbench/impactbench/internal/progress"
	"github.com/impactbench/impactbench/internal/prompts"
	"github.com/impactbench/impactbench/internal/schedule"
)

// Options are the per-invocation switches. A command-line flag that was
// set overrides config.yaml's run: block in both directions (the CLI
// resolves them before it fills these).
type Options struct {
	// Force redoes the phases this invocation runs even where their
	// outputs are up to date, ignoring stored answers (every call paid
	// again). It does not let an output shrink: that is AcceptFewer.
	Force bool
	// AcceptFewer lets an output with fewer rows, fewer models or null
	// verdicts where verdicts stood replace the existing one; without it
	// such a write is refused (phase.RefusedError), forced or not.
	AcceptFewer bool
	DryRun      bool    // plan only: rows, calls, token and cost estimates; no calls
	MaxCost     float64 // USD ceiling for this invocation (0: config max_cost, else none)
	// Judges overrides evaluator_model (evaluate --judge); scores then go to
	// runs/<target>/judges/<label>/scores.json so the main scores stay intact.
	Judges []config.ModelConfig
	// OutDir, when set, writes every output there instead of the benchmark
	// directory (validation runs); benchmark.yaml is still read from the
	// benchmark's directory.
	OutDir string
	// UpstreamOnly writes results.json with upstream's fields only, byte for
	// byte what upstream ImpactBench writes.
	UpstreamOnly bool
	// IncludeAfterReveal counts in calibration the labels given after the
	// judges' verdict was shown (calibrate --include-after-reveal); they
	// are left out by default.
	IncludeAfterReveal bool
	// Shard runs only rows whose shard index (hash of the base scenario id)
	// equals Shard.Index, writing shard files for `impactbench merge`.
	Shard layout.Shard
	// Workers is how many workers run at once against the same provider
	// keys (a cluster's parallelism): each provider pool takes 1/Workers of
	// every limit, configured or learned (0 or 1: alone).
	Workers int
	// WaitShard: when another process holds this shard (a duplicate pod
	// the scheduler started), wait for it to finish instead of refusing;
	// what it stored is then reused, not paid for again.
	WaitShard bool
	// Store is where the call store lives: "" for each benchmark's
	// .cache/<bench>/calls, else a directory or an object store URL under
	// which each benchmark has <bench>/ (config store:). StoreFrom names
	// where it came from for errors ("store" or IMPACTBENCH_STORE).
	Store, StoreFrom string
	// RateBackend is a Redis URL sharing the request and token buckets of
	// every worker (config rate_backend:); RateBackendFrom as StoreFrom.
	RateBackend, RateBackendFrom string
	// Replay answers every call from the call store: a call that would be
	// paid fails instead (merge --from-store: the shards paid for them).
	Replay bool

	Progress *progress.Tracker
	Logger   *slog.Logger
	Stderr   io.Writer

	// Clients, when set, replaces provider construction (tests).
	Clients func(m config.ModelConfig) (llm.Client, error)
}

// LaneKey names a lane: one kind of row for one target ("" for rows of no
// target).
type LaneKey struct {
	Stage  phase.Stage
	Target string
}

// BarPart is one output's share of a lane's progress bar.
type BarPart = BarPartOf[LaneKey]

// Env is what every benchmark of a study shares.
type Env struct {
	Cfg     *config.Config
	Opts    Options
	Prompts *prompts.Set
	Log     *slog.Logger
	Prog    *progress.Tracker
	Models  *clientset.Set
	Lanes   *schedule.Lanes[LaneKey]
	Bars    *Bars[LaneKey]
	// StudySize is how many benchmarks share this environment.
	StudySize int

	// autoWorkers caps the rows in flight of lanes with concurrency auto.
	autoWorkers int
	// opened counts the benchmarks opened so far: the next one's rank.
	opened int
	// closers are what Close releases (the rate backend's connections).
	closers []io.Closer
}

// NewEnv prepares the environment of a run of cfg: prompts, and clients
// under one cost ceiling whose provider pools share their limits with
// opts.Workers workers (exactly, through opts.RateBackend, when given; a
// server that does not answer is an input error before any call).
func NewEnv(ctx context.Context, cfg *config.Config, opts Options) (*Env, error) {
	if opts.Replay {
		cfg = cfg.WithoutBatch()
	}
	ps, err := prompts.Load(promptDir(cfg))
	if err != nil {
		return nil, fault.AsInput(err)
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if opts.Stderr == nil {
		opts.Stderr = io.Discard
	}
	if opts.Progress == nil {
		opts.Progress = progress.New(opts.Stderr, progress.Quiet, 0)
	}
	if len(opts.Judges) > 0 {
		js, err := ResolveJudges(cfg, opts.Judges)
		if err != nil {
			return nil, err
		}
		opts.Judges = js
	}
	maxCost := opts.MaxCost
	if maxCost == 0 {
		maxCost = cfg.MaxCost
	}
	e := &Env{
		Cfg: cfg, Opts: opts, Prompts: ps, Log: opts.Logger, Prog: opts.Progress,
		autoWorkers: clientset.AutoWorkerCeiling(cfg),
		Bars:        NewBars[LaneKey](opts.Progress),
	}
	cs := clientset.Options{DryRun: opts.DryRun, MaxCost: maxCost, Logger: opts.Logger, Clients: opts.Clients,
		Workers: opts.Workers, Replay: opts.Replay}
	if opts.RateBackend != "" && !opts.DryRun && !opts.Replay {
		rb, err := redisrate.Open(ctx, opts.RateBackend)
		if err != nil {
			return nil, fault.AsInput(namedBy(opts.RateBackendFrom, "rate_backend", err))
		}
		e.closers = append(e.closers, rb)
		cs.Shared = rb
		e.Log.Info("provider limits shared through the rate backend", "url", rb.URL(), "workers", max(opts.Workers, 1))
	}
	e.Models = clientset.New(cfg, cs)
	e.Lanes = schedule.NewLanes(e.laneSize)
	if err := e.followWorkers(ctx, cfg.Dir); err != nil {
		e.Close()
		return nil, err
	}
	return e, nil
}

// namedBy prefixes err with the variable a value came from when it did
// not come from config.yaml's key (whose name the error already says).
func namedBy(from, key string, err error) error {
	if from == "" || from == key {
		return err
	}
	return fmt.Errorf("%s: %w", from, err)
}

// Close releases what the environment holds open (the rate backend's
// connections). Benchmarks opened in it are closed by their own Close.
func (e *Env) Close() {
	for _, c := range e.closers {
		_ = c.Close()
	}
	e.closers = nil
}

// Reconfigured is the environment of a changed cfg (config.yaml edited
// while a long-lived process runs) that keeps e's provider pools, HTTP
// client, cost ceiling and lanes.
func (e *Env) Reconfigured(cfg *config.Config) (*Env, error) {
	o := e.Opts
	o.RateBackend = "" // the pools are kept, and with them their shared buckets: nothing to connect
	n, err := NewEnv(context.Background(), cfg, o)
	if err != nil {
		return nil, err
	}
	n.Models = e.Models.Reconfigured(cfg)
	n.Lanes, n.Bars = e.Lanes, e.Bars
	return n, nil
}

// laneSize bounds the rows in flight of each kind and target across the
// whole study: run.concurrency's value for the stage (a cap, as
// upstream), or with auto a ceiling high enough that the provider pools'
// adaptive limits, not the lane, decide how many calls are in flight.
func (e *Env) laneSize(k LaneKey) int {
	conf := configured(e.Cfg.Run.Concurrency, k.Stage)
	n := e.Workers(conf, math.MaxInt)
	if conf <= 0 {
		n = min(n, clientset.LaneCeiling(e.Cfg, k.Stage, k.Target))
	}
	return n
}

// configured is run.concurrency's value for a stage's rows (0: auto).
func configured(cc config.Concurrency, stage phase.Stage) int {
	switch stage {
	case phase.StageSimulate:
		return cc.Simulate
	case phase.StageEvaluate, phase.StageRepeats:
		return cc.Evaluate
	case phase.StageGenScenarios:
		return cc.GenScenarios
	}
	return 0
}

// Lane is the lane of stage and target.
func (e *Env) Lane(stage phase.Stage, target string) *schedule.Lane {
	return e.Lanes.Of(LaneKey{stage, target})
}

// OpenBar adds n rows of an output to the progress bar of stage and target.
func (e *Env) OpenBar(stage phase.Stage, target string, n int) *BarPart {
	label := stage.String()
	if target != "" {
		label += " " + target
	}
	return e.Bars.Open(LaneKey{stage, target}, label, n)
}

// Workers is a phase's worker-pool size for rows rows: the configured
// run.concurrency value, which is a cap as upstream, or with auto (0) every
// row at once up to the ceiling, so that the provider pools' adaptive
// limits, not the workers, decide how many calls are in flight.
func (e *Env) Workers(configured, rows int) int {
	if configured > 0 {
		return configured
	}
	return max(1, min(rows, e.autoWorkers))
}

// Estimator prices this run's phases (package plan).
func (e *Env) Estimator() plan.Estimator {
	return plan.Estimator{Cfg: e.Cfg, Prices: e.Models.Prices()}
}

// Judges are the panel: --judge's models, else evaluator_model.
func (e *Env) Judges() []config.ModelConfig {
	if len(e.Opts.Judges) > 0 {
		return e.Opts.Judges
	}
	return e.Cfg.EvaluatorModels
}

// JudgeLabel names a judge in scores, costs and the report: its id
// (--judge with a target's name), else its model.
func JudgeLabel(m config.ModelConfig) string {
	if m.ID != "" {
		return m.ID
	}
	return m.Model
}

// PanelDirs are the safe names of an alternative panel's judges (evaluate
// --judge), whose scores go to runs/<target>/judges/<a+b>; nil for the
// configured judges.
func (e *Env) PanelDirs() []string {
	var labels []string
	for _, j := range e.Opts.Judges {
		labels = append(labels, layout.SafeName(JudgeLabel(j)))
	}
	return labels
}

// AuditModel is the model that audits conversations, and the config field
// it comes from: landmark_model, else the first evaluator (ok false when
// validity.audit is off).
func (e *Env) AuditModel() (m config.ModelConfig, field string, ok bool) {
	switch {
	case !e.Cfg.Validity.Audit:
		return m, "", false
	case e.Cfg.LandmarkModel != nil:
		return *e.Cfg.LandmarkModel, "landmark_model", true
	case len(e.Cfg.EvaluatorModels) > 0:
		field = "evaluator_model"
		if len(e.Cfg.EvaluatorModels) > 1 {
			field += "[0]"
		}
		return e.Cfg.EvaluatorModels[0], field, true
	}
	return m, "", false
}

// GeneratorField is the config field of the model that writes metrics
// and scenarios.
func (e *Env) GeneratorField() string {
	if e.Cfg.GeneratorModel != nil {
		return "generator_model"
	}
	return "user_model"
}

func promptDir(cfg *config.Config) string {
	if cfg.Prompts != "" {
		if filepath.IsAbs(cfg.Prompts) {
			return cfg.Prompts
		}
		return filepath.Join(cfg.Dir, cfg.Prompts)
	}
	d := filepath.Join(cfg.Dir, "prompts")
	if st, err := os.Stat(d); err == nil && st.IsDir() {
		return d
	}
	return ""
}

// BatchPollInterval is how often running provider batches are polled:
// $IMPACTBENCH_BATCH_POLL (a duration) when set, else 15 s. Tests and the
// cost benchmark, whose fake answers at once, shorten it.
var BatchPollInterval = batchPollInterval(os.Getenv("IMPACTBENCH_BATCH_POLL"))

func batchPollInterval(env string) time.Duration {
	if d, err := time.ParseDuration(env); err == nil && d > 0 {
		return d
	}
	return 15 * time.Second
}
