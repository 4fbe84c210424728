// Package runner drives the five stages over one benchmark: it owns file
// I/O, the call store (resume), concurrency, provider limits, the cost
// ceiling, progress and the phase skip/rerun decisions. Stage logic itself
// lives in package stages as plain functions.
package runner

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/impactbench/impactbench/internal/callstore"
	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/llm"
	"github.com/impactbench/impactbench/internal/llm/provider"
	"github.com/impactbench/impactbench/internal/llm/ratelimit"
	"github.com/impactbench/impactbench/internal/progress"
	"github.com/impactbench/impactbench/internal/prompts"
)

// Options are the per-invocation switches (CLI flags win over config run:).
type Options struct {
	Force   bool    // redo the phases this invocation runs, ignoring stored answers
	DryRun  bool    // plan only: rows, calls, token and cost estimates; no calls
	MaxCost float64 // USD ceiling for this invocation (0: config max_cost, else none)
	// Judges overrides evaluator_model (evaluate --judge); scores then go to
	// runs/<target>/judges/<label>/scores.json so the main scores stay intact.
	Judges []config.ModelConfig
	// OutDir, when set, writes every output there instead of the benchmark
	// directory (validation runs); benchmark.yaml is still read from Bench.
	OutDir string
	// UpstreamOnly writes results.json with upstream's fields only, byte for
	// byte what upstream ImpactBench writes.
	UpstreamOnly bool
	// Shard runs only rows whose shard index (hash of the row id) equals
	// Shard.Index, writing shard files for `impactbench merge`.
	Shard Shard

	Progress *progress.Tracker
	Logger   *slog.Logger
	Stderr   io.Writer

	// Clients, when set, replaces provider construction (tests).
	Clients func(m config.ModelConfig) (llm.Client, error)
}

// Shard selects a deterministic slice of rows: 0/0 means "all".
type Shard struct{ Index, Count int }

// Active reports whether sharding is on.
func (s Shard) Active() bool { return s.Count > 1 }

// Runner runs phases of one benchmark.
type Runner struct {
	cfg      *config.Config
	bench    *config.Benchmark
	opts     Options
	prompts  *prompts.Set
	outDir   string // where scenarios.json, runs/, results.json go
	cacheDir string
	store    *callstore.Store
	manifest *manifest
	lock     *lockFile
	log      *slog.Logger
	prog     *progress.Tracker

	http    *http.Client
	prices  *llm.Prices
	limits  *ratelimit.Registry
	budget  *ratelimit.Budget
	mu      sync.Mutex
	clients map[string]llm.Client
	// poolNames maps limit pool keys to display names (see poolName).
	poolNames map[string]string
	// autoWorkers caps the worker pools of phases with concurrency auto.
	autoWorkers int
	// early simulates variants while gen_scenarios still runs (run only).
	early *earlySims

	Report *Summary
}

// ResolveBench finds a benchmark: a path to a directory or benchmark.yaml, or
// a name under <config dir>/benchmarks/.
func ResolveBench(cfg *config.Config, arg string) (string, error) {
	cands := []string{arg, filepath.Join(cfg.Dir, "benchmarks", arg)}
	for _, c := range cands {
		st, err := os.Stat(c)
		if err != nil {
			continue
		}
		if st.IsDir() {
			if _, err := os.Stat(filepath.Join(c, "benchmark.yaml")); err == nil {
				return filepath.Abs(c)
			}
			continue
		}
		if filepath.Base(c) == "benchmark.yaml" {
			return filepath.Abs(filepath.Dir(c))
		}
	}
	return "", &InputError{Msg: fmt.Sprintf("benchmark %q not found: looked for %s and %s (a directory holding benchmark.yaml)",
		arg, filepath.Join(arg, "benchmark.yaml"), filepath.Join(cfg.Dir, "benchmarks", arg, "benchmark.yaml"))}
}

// ListBenches returns every directory under benchmarks/ holding a benchmark.yaml, sorted.
func ListBenches(cfg *config.Config) ([]string, error) {
	root := filepath.Join(cfg.Dir, "benchmarks")
	ents, err := os.ReadDir(root)
	if err != nil {
		return nil, &InputError{Msg: fmt.Sprintf("no benchmarks directory at %s: create one or run `impactbench init`", root)}
	}
	var out []string
	for _, e := range ents {
		if e.IsDir() {
			if _, err := os.Stat(filepath.Join(root, e.Name(), "benchmark.yaml")); err == nil {
				out = append(out, filepath.Join(root, e.Name()))
			}
		}
	}
	sort.Strings(out)
	return out, nil
}

// New prepares a runner for the benchmark in benchDir and takes its lock.
func New(cfg *config.Config, benchDir string, opts Options) (*Runner, error) {
	bench, err := config.LoadBenchmark(filepath.Join(benchDir, "benchmark.yaml"))
	if err != nil {
		return nil, err
	}
	ps, err := prompts.Load(promptDir(cfg))
	if err != nil {
		return nil, &InputError{Msg: err.Error()}
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
	out := benchDir
	if opts.OutDir != "" {
		out = opts.OutDir
	}
	cacheDir := CacheDir(cfg, bench.Dir)
	if opts.OutDir != "" {
		cacheDir = filepath.Join(opts.OutDir, ".cache")
	}
	r := &Runner{
		cfg: cfg, bench: bench, opts: opts, prompts: ps,
		outDir: out, cacheDir: cacheDir,
		store:       callstore.Open(filepath.Join(cacheDir, "calls"), opts.Force),
		manifest:    loadManifest(filepath.Join(cacheDir, "manifest.json")),
		log:         opts.Logger,
		prog:        opts.Progress,
		clients:     map[string]llm.Client{},
		poolNames:   map[string]string{},
		autoWorkers: autoWorkerCeiling(cfg),
		Report:      &Summary{Benchmark: bench.Slug, DryRun: opts.DryRun},
	}
	if !opts.DryRun {
		lk, err := acquireLock(cacheDir, bench.Slug)
		if err != nil {
			return nil, err
		}
		r.lock = lk
		if n := sweepTemps(time.Now(), r.tempDirs()...); n > 0 {
			r.log.Info("removed temp files left by an interrupted run", "count", n)
		}
	}
	r.http = llm.NewHTTPClient(256)
	r.prices = llm.DefaultPrices().WithOverrides(cfg.Pricing)
	r.limits = ratelimit.NewRegistry(ratelimit.Options{Logger: opts.Logger, LearnFraction: 0.99})
	maxCost := opts.MaxCost
	if maxCost == 0 {
		maxCost = cfg.MaxCost
	}
	if maxCost > 0 {
		r.budget = ratelimit.NewBudget(maxCost)
	}
	return r, nil
}

// CacheDir is where the benchmark in benchDir keeps its call store, phase
// manifest and lock: <config dir>/.cache/<benchmark directory name>.
func CacheDir(cfg *config.Config, benchDir string) string {
	return filepath.Join(cfg.Dir, ".cache", filepath.Base(benchDir))
}

// Close releases the lock.
func (r *Runner) Close() { r.lock.release() }

// Bench returns the loaded benchmark (metrics reflect gen_metrics once run).
func (r *Runner) Bench() *config.Benchmark { return r.bench }

// OutDir is where outputs are written.
func (r *Runner) OutDir() string { return r.outDir }

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

// identity is what determines a model's answers, minus secrets.
func identity(m config.ModelConfig) callstore.Identity {
	id := callstore.Identity{
		Provider:    m.Provider(),
		BaseURL:     m.BaseURL,
		Model:       m.Model,
		Temperature: m.Temperature,
		MaxTokens:   m.MaxTokens,
	}
	for k, v := range m.ExtraHeaders {
		if callstore.IsSecretHeader(k) {
			continue
		}
		if id.Headers == nil {
			id.Headers = map[string]string{}
		}
		id.Headers[strings.ToLower(k)] = v
	}
	if m.Offline != nil {
		id.Profile = fmt.Sprintf("care=%v pressure=%v", deref(m.Offline.Care), deref(m.Offline.Pressure))
	}
	return id
}

func deref(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}

// poolKey groups calls that share a provider's limits: same provider,
// endpoint, model and key (hashed — the key itself never leaves memory), or
// the model's rate_pool and key when several model names share one quota.
func poolKey(m config.ModelConfig) string {
	h := sha256.Sum256([]byte(m.APIKey))
	if m.RatePool != "" {
		return m.Provider() + "|pool:" + m.RatePool + "|" + hex.EncodeToString(h[:4])
	}
	return m.Provider() + "|" + m.BaseURL + "|" + m.Model + "|" + hex.EncodeToString(h[:4])
}

// modelClient checks that the environment variables a model's config refers
// to are set (only now that the model is about to be used) and returns its client.
func (r *Runner) modelClient(field string, m config.ModelConfig) (llm.Client, error) {
	if field != "" && !r.opts.DryRun {
		if err := r.cfg.CheckEnv(field); err != nil {
			return nil, err
		}
	}
	return r.clientRole(field, m)
}

func (r *Runner) generatorField() string {
	if r.cfg.GeneratorModel != nil {
		return "generator_model"
	}
	return "user_model"
}

// client returns the shared client for a model config: provider adapter,
// limiter (per attempt), retry, and the cost ceiling.
func (r *Runner) client(m config.ModelConfig) (llm.Client, error) { return r.clientRole("", m) }

// clientRole is client with the config field the model came from, so
// provider errors can say which block of config.yaml to fix.
func (r *Runner) clientRole(role string, m config.ModelConfig) (llm.Client, error) {
	// One client per model and sampling settings (models sharing a
	// rate_pool still get their own client, over the shared pool).
	key := m.BaseURL + "|" + m.Model + "|" + poolKey(m) + fmt.Sprintf("|%v|%d", deref(m.Temperature), m.MaxTokens)
	r.mu.Lock()
	defer r.mu.Unlock()
	if c, ok := r.clients[key]; ok {
		return c, nil
	}
	var c llm.Client
	var err error
	if r.opts.Clients != nil {
		c, err = r.opts.Clients(m)
	} else {
		lim := ratelimit.Limits{MaxInFlight: m.MaxConcurrency, RPM: m.RPM, TPM: m.TPM, ITPM: m.ITPM, OTPM: m.OTPM}
		limited := lim != ratelimit.Limits{}
		lim.Start = r.startConcurrency(role)
		pk := poolKey(m)
		r.poolNames[pk] = poolName(m)
		c, err = provider.New(m, provider.Options{
			HTTP:   r.http,
			Prices: r.prices,
			Logger: r.log,
			Seed:   r.cfg.Seed,
			Role:   role,
			Redact: r.cfg.Secrets(),
			Wrap: func(inner llm.Client) llm.Client {
				if m.Provider() == "offline" && !limited {
					return inner
				}
				return r.limits.Wrap(pk, lim, inner)
			},
		})
	}
	if err != nil {
		return nil, err
	}
	if r.budget != nil {
		c = ratelimit.WrapBudget(r.budget, r.estimateCost(m), c)
	}
	r.clients[key] = c
	return c, nil
}

// estimateCost prices a request before it is sent (for the ceiling): input
// from the message sizes, output at its cap.
func (r *Runner) estimateCost(m config.ModelConfig) func(req llm.Request) float64 {
	return func(req llm.Request) float64 {
		in := 0
		for _, msg := range req.Messages {
			in += len(msg.Content)/4 + 4
		}
		out := req.MaxTokens
		if out == 0 {
			out = 2048
		}
		cost, _ := r.prices.Cost(m.Model, llm.Usage{Requests: 1, InputTokens: in, OutputTokens: out}, m.Pricing)
		return cost
	}
}

// InputError is bad input (files, arguments): the CLI exits 2.
type InputError struct{ Msg string }

func (e *InputError) Error() string { return e.Msg }

// PartialError says some rows failed after their retries; outputs hold what
// succeeded and a rerun redoes only the failed rows. The CLI exits 1.
type PartialError struct {
	Failed int
	Phases []string
}

func (e *PartialError) Error() string {
	return fmt.Sprintf("%d row(s) failed in %s; completed rows are saved — run the same command again to retry only the failed ones",
		e.Failed, strings.Join(e.Phases, ", "))
}

// fatalErr reports errors that no other row can escape either (a refused
// key, exhausted quota, a config mistake): the phase stops at once instead
// of sending the same doomed request for every row.
func fatalErr(err error) bool {
	switch llm.KindOf(err) {
	case llm.KindAuth, llm.KindQuota, llm.KindConfig:
		return true
	}
	return false
}

// budgetStopped reports whether err stems from the cost ceiling.
func budgetStopped(err error) bool { return errors.Is(err, llm.ErrBudgetExceeded) }

// logf prints a human line through the progress tracker (never tears bars).
func (r *Runner) logf(format string, args ...any) { r.prog.Printf(format, args...) }
