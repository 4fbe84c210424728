package runner

import (
	"io"
	"log/slog"

	"github.com/impactbench/impactbench/internal/clientset"
	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/fault"
	"github.com/impactbench/impactbench/internal/progress"
	"github.com/impactbench/impactbench/internal/prompts"
	"github.com/impactbench/impactbench/internal/schedule"
)

// env is what every benchmark of a study shares: the config, its models
// (one client per model over shared provider pools, under one cost
// ceiling), the lanes that bound rows in flight, and the progress display.
type env struct {
	cfg     *config.Config
	opts    Options
	prompts *prompts.Set
	log     *slog.Logger
	prog    *progress.Tracker
	models  *clientset.Set

	// autoWorkers caps the rows in flight of lanes with concurrency auto.
	autoWorkers int
	lanes       *schedule.Lanes[laneKey]
	bars        *schedule.Bars[laneKey]
	// studySize is how many benchmarks share this environment.
	studySize int
	// opened counts the benchmarks opened so far: the next one's rank.
	opened int
}

func newEnv(cfg *config.Config, opts Options) (*env, error) {
	ps, err := prompts.Load(promptDir(cfg))
	if err != nil {
		return nil, &fault.Error{Kind: fault.Input, Err: err}
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
		js, err := resolveJudges(cfg, opts.Judges)
		if err != nil {
			return nil, err
		}
		opts.Judges = js
	}
	maxCost := opts.MaxCost
	if maxCost == 0 {
		maxCost = cfg.MaxCost
	}
	e := &env{
		cfg: cfg, opts: opts, prompts: ps, log: opts.Logger, prog: opts.Progress,
		models:      clientset.New(cfg, clientset.Options{DryRun: opts.DryRun, MaxCost: maxCost, Logger: opts.Logger, Clients: opts.Clients}),
		autoWorkers: clientset.AutoWorkerCeiling(cfg),
	}
	e.lanes = newLanes(e)
	e.bars = schedule.NewBars[laneKey](opts.Progress)
	return e, nil
}

func (r *env) generatorField() string {
	if r.cfg.GeneratorModel != nil {
		return "generator_model"
	}
	return "user_model"
}
