// Package clientset is a run's models: one client per model and sampling
// settings, over provider pools shared by every model that shares a
// provider's limits (ratelimit), under the run's one cost ceiling, and the
// sizes of the run's pools and lanes derived from the models' limits.
package clientset

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/impactbench/impactbench/internal/callstore"
	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/llm"
	"github.com/impactbench/impactbench/internal/llm/provider"
	"github.com/impactbench/impactbench/internal/llm/ratelimit"
	"github.com/impactbench/impactbench/internal/phase"
	"github.com/impactbench/impactbench/internal/summary"
)

// Options are a client set's switches.
type Options struct {
	DryRun  bool    // a plan calls nothing: keys need not be set yet
	MaxCost float64 // USD ceiling (0: none)
	Logger  *slog.Logger
	// Clients, when set, replaces provider construction (tests).
	Clients func(m config.ModelConfig) (llm.Client, error)
	// Workers and Shared: how the provider pools share their limits with
	// other processes (ratelimit.Options).
	Workers int
	Shared  ratelimit.SharedBuckets
	// Replay makes no provider clients: every call must be answered by the
	// call store in front of them, and one that is not fails (ReplayMiss).
	Replay bool
}

// Set is a run's clients, pools and cost ceiling.
type Set struct {
	cfg  *config.Config
	opts Options
	log  *slog.Logger

	http   *http.Client
	prices *llm.Prices
	limits *ratelimit.Registry
	budget *ratelimit.Budget

	mu      sync.Mutex
	clients map[string]llm.Client
	// poolNames maps limit pool keys to display names (see PoolName).
	poolNames map[string]string
}

// New makes the client set of cfg.
func New(cfg *config.Config, opts Options) *Set {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	s := &Set{
		cfg: cfg, opts: opts, log: opts.Logger,
		http:      llm.NewHTTPClient(IdleConnsPerHost(cfg)),
		prices:    llm.DefaultPrices().WithOverrides(cfg.Pricing),
		limits:    ratelimit.NewRegistry(ratelimit.Options{Logger: opts.Logger, LearnFraction: 0.99, Workers: opts.Workers, Shared: opts.Shared}),
		clients:   map[string]llm.Client{},
		poolNames: map[string]string{},
	}
	if opts.MaxCost > 0 {
		s.budget = ratelimit.NewBudget(opts.MaxCost)
	}
	tracePools(s.limits, opts.Logger)
	return s
}

// PoolTraceEnv names a file to which the first client set of the process
// writes its provider pools' occupancy every 100 ms (ratelimit.Trace),
// until the process ends: a debugging aid for the scheduler, an
// environment variable like IMPACTBENCH_CPUPROFILE so the bench harness's
// child runs can be traced without changing their command lines. "%p" in
// the path becomes the process id.
const PoolTraceEnv = "IMPACTBENCH_POOLTRACE"

// poolTraceOnce: only the first registry is traced (Reconfigured makes
// sets that keep the first one's pools).
var poolTraceOnce sync.Once

func tracePools(reg *ratelimit.Registry, log *slog.Logger) {
	path := os.Getenv(PoolTraceEnv)
	if path == "" {
		return
	}
	poolTraceOnce.Do(func() {
		path = strings.ReplaceAll(path, "%p", strconv.Itoa(os.Getpid()))
		f, err := os.Create(path)
		if err != nil {
			log.Warn("pool trace", "err", err)
			return
		}
		// It runs for the life of the process: the trace is a debugging
		// aid, never on in a normal run.
		go func() {
			if err := reg.Trace(context.Background(), f, 100*time.Millisecond); err != nil {
				log.Warn("pool trace", "err", err)
			}
		}()
	})
}

// Reconfigured is a set for a changed cfg (config.yaml edited while a
// long-lived process runs) that keeps s's provider pools, HTTP client and
// cost ceiling, so they span the process whatever the file says
// meanwhile; clients are made anew for the new models.
func (s *Set) Reconfigured(cfg *config.Config) *Set {
	n := New(cfg, s.opts)
	n.http, n.limits, n.budget = s.http, s.limits, s.budget
	s.mu.Lock()
	for k, v := range s.poolNames {
		n.poolNames[k] = v
	}
	s.mu.Unlock()
	return n
}

// Prices are the run's prices (config pricing: over the defaults).
func (s *Set) Prices() *llm.Prices { return s.prices }

// HTTP is the client every provider adapter shares.
func (s *Set) HTTP() *http.Client { return s.http }

// Stats are the provider pools' statistics as they are now, by pool key.
func (s *Set) Stats() []ratelimit.Stats { return s.limits.Stats() }

// FollowLive divides the provider pools' limits by the workers count
// says run now (ratelimit.Registry.FollowLive) until ctx ends.
func (s *Set) FollowLive(ctx context.Context, count ratelimit.LiveCount, o ratelimit.FollowOptions) {
	s.limits.FollowLive(ctx, count, o)
}

// Live is the workers the provider pools' limits are divided by now.
func (s *Set) Live() int { return s.limits.Live() }

// Budget is the run's cost ceiling (nil: none).
func (s *Set) Budget() *ratelimit.Budget { return s.budget }

// ProviderOptions are what a batch adapter of m needs (role: the config
// field m comes from).
func (s *Set) ProviderOptions(role string) provider.Options {
	return provider.Options{HTTP: s.http, Prices: s.prices, Pricing: s.cfg.Pricing, Role: role}
}

// Model checks that the environment variables a model's config refers to
// are set (only now that the model is about to be used; not in a dry run)
// and returns its client. field is the config field the model comes from,
// so provider errors can say which block of config.yaml to fix.
func (s *Set) Model(field string, m config.ModelConfig) (llm.Client, error) {
	if field != "" && !s.opts.DryRun && !s.opts.Replay {
		if err := s.cfg.CheckEnv(field); err != nil {
			return nil, err
		}
	}
	return s.clientRole(field, m)
}

// Build constructs a model's client now (not checking its variables),
// keeping it for the phases: a missing key or a malformed base_url then
// stops a command before its first call.
func (s *Set) Build(field string, m config.ModelConfig) error {
	_, err := s.clientRole(field, m)
	return err
}

// Identity is what determines a model's answers, minus secrets.
func Identity(m config.ModelConfig) callstore.Identity {
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
		id.Profile = fmt.Sprintf("care=%v pressure=%v", Deref(m.Offline.Care), Deref(m.Offline.Pressure))
	}
	return id
}

// Deref is a nullable float as a value for fingerprints (nil stays nil).
func Deref(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}

// PoolKey groups calls that share a provider's limits (the key itself is
// hashed and never leaves memory): models with the same rate_pool and key
// share one quota; models on one base_url you set are one server (a vLLM
// or other self-hosted server, a gateway) whose limit they all share;
// otherwise each model of a provider has its own limits, as OpenAI's and
// Anthropic's do.
func PoolKey(m config.ModelConfig) string {
	h := sha256.Sum256([]byte(m.APIKey))
	key := hex.EncodeToString(h[:4])
	switch {
	case m.RatePool != "":
		return m.Provider() + "|pool:" + m.RatePool + "|" + key
	case m.BaseURL != "":
		return m.Provider() + "|url:" + m.BaseURL + "|" + key
	}
	return m.Provider() + "||" + m.Model + "|" + key
}

// Client returns the shared client for a model config: provider adapter,
// limiter (per attempt), retry, and the cost ceiling.
func (s *Set) Client(m config.ModelConfig) (llm.Client, error) { return s.clientRole("", m) }

// clientRole is client with the config field the model came from, so
// provider errors can say which block of config.yaml to fix.
func (s *Set) clientRole(role string, m config.ModelConfig) (llm.Client, error) {
	// One client per model and sampling settings (models sharing a
	// rate_pool still get their own client, over the shared pool).
	key := m.BaseURL + "|" + m.Model + "|" + PoolKey(m) + fmt.Sprintf("|%v|%d", Deref(m.Temperature), m.MaxTokens)
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.clients[key]; ok {
		return c, nil
	}
	var c llm.Client
	var err error
	switch {
	case s.opts.Replay:
		c = replayOnly{m: m}
	case s.opts.Clients != nil:
		c, err = s.opts.Clients(m)
	default:
		lim := ratelimit.Limits{MaxInFlight: m.MaxConcurrency, RPM: m.RPM, TPM: m.TPM, ITPM: m.ITPM, OTPM: m.OTPM}
		limited := lim != ratelimit.Limits{}
		lim.Start = StartConcurrency(s.cfg, role)
		pk := PoolKey(m)
		s.poolNames[pk] = PoolName(m)
		c, err = provider.New(m, provider.Options{
			HTTP:   s.http,
			Prices: s.prices,
			Logger: s.log,
			Seed:   s.cfg.Seed,
			Role:   role,
			Redact: s.cfg.Secrets(),
			Wrap: func(inner llm.Client) llm.Client {
				if m.Provider() == "offline" && !limited {
					return inner
				}
				return s.limits.Wrap(pk, lim, inner)
			},
		})
	}
	if err != nil {
		return nil, err
	}
	if s.budget != nil {
		c = ratelimit.WrapBudget(s.budget, s.EstimateCost(m), c)
	}
	s.clients[key] = c
	return c, nil
}

// EstimateCost prices a request before it is sent (for the ceiling): input
// from the message sizes, output at its cap.
func (s *Set) EstimateCost(m config.ModelConfig) func(req llm.Request) float64 {
	return func(req llm.Request) float64 {
		in := 0
		for _, msg := range req.Messages {
			in += len(msg.Content)/4 + 4
		}
		out := req.MaxTokens
		if out == 0 {
			out = 2048
		}
		cost, _ := s.prices.Cost(m.Model, llm.Usage{Requests: 1, InputTokens: in, OutputTokens: out}, m.Pricing)
		return cost
	}
}

// AutoWorkerCeiling is the most workers a phase with concurrency auto
// starts: twice the highest concurrency any provider pool may reach (a
// simulation worker waits on two pools in turn, so twice keeps both full).
// Workers beyond what the pools admit only wait in their queues, at the
// cost of a goroutine and the row they hold.
func AutoWorkerCeiling(cfg *config.Config) int {
	hi := ratelimit.DefaultMaxConcurrency
	for _, m := range AllModels(cfg) {
		hi = max(hi, m.MaxConcurrency)
	}
	return 2 * hi
}

// LaneCeiling is the most rows in flight of one auto lane (a stage of one
// target): twice the highest concurrency its own pools may reach. Sized
// from every model of the run instead, each target's lane of a study held
// 512 conversations when its pools could use 128, and all of them
// advanced turn by turn together, holding their transcripts to the end.
func LaneCeiling(cfg *config.Config, stage phase.Stage, target string) int {
	var ms []config.ModelConfig
	switch stage {
	case phase.StageSimulate:
		ms = append(ms, cfg.UserModel)
		for _, t := range cfg.Targets {
			if t.ID == target {
				ms = append(ms, t)
			}
		}
		if cfg.LandmarkModel != nil {
			ms = append(ms, *cfg.LandmarkModel) // the audit's calls
		} else if len(cfg.EvaluatorModels) > 0 {
			ms = append(ms, cfg.EvaluatorModels[0])
		}
	case phase.StageEvaluate, phase.StageRepeats:
		ms = cfg.EvaluatorModels
	default:
		return AutoWorkerCeiling(cfg)
	}
	hi := 0
	for _, m := range ms {
		if m.MaxConcurrency > 0 {
			hi = max(hi, m.MaxConcurrency)
		} else {
			hi = max(hi, ratelimit.DefaultMaxConcurrency)
		}
	}
	if hi == 0 {
		return AutoWorkerCeiling(cfg)
	}
	return 2 * hi
}

// IdleConnsPerHost sizes the shared HTTP client's idle pool: every model
// of the run may talk to the same host (one provider, or a gateway), so the
// pool must hold a connection for each call all of their pools may have in
// flight at once. Sized to one model's concurrency, a study with four
// targets, a user and a judge on one host closed and redialled a third of
// its connections on every round of calls.
func IdleConnsPerHost(cfg *config.Config) int {
	n := 0
	for _, m := range AllModels(cfg) {
		if m.MaxConcurrency > 0 {
			n += m.MaxConcurrency
		} else {
			n += ratelimit.DefaultMaxConcurrency
		}
	}
	return max(256, n)
}

func AllModels(cfg *config.Config) []config.ModelConfig {
	ms := append([]config.ModelConfig{cfg.UserModel}, cfg.Targets...)
	ms = append(ms, cfg.EvaluatorModels...)
	for _, m := range []*config.ModelConfig{cfg.GeneratorModel, cfg.LandmarkModel} {
		if m != nil {
			ms = append(ms, *m)
		}
	}
	return ms
}

// StartConcurrency is where the limit of a pool first used by role (a
// config field) starts: the phase's configured concurrency, which is how
// many calls upstream sent at once from the start (0: the automatic
// start). The limit still adapts from there, and never passes
// max_concurrency.
func StartConcurrency(cfg *config.Config, role string) int {
	cc := cfg.Run.Concurrency
	switch {
	case role == "user_model" || strings.HasPrefix(role, "targets["):
		return cc.Simulate
	case role == "evaluator_model" || strings.HasPrefix(role, "evaluator_models["):
		return cc.Evaluate
	case role == "generator_model":
		return cc.GenScenariosExpand
	}
	return 0
}

// PoolName is how progress and the summary name a model's limit pool:
// its rate_pool, else its model name (the pool key itself holds a hash
// of the API key and stays in memory).
func PoolName(m config.ModelConfig) string {
	if m.RatePool != "" {
		return m.RatePool
	}
	if m.BaseURL != "" {
		if u, err := url.Parse(m.BaseURL); err == nil && u.Host != "" {
			return u.Host + strings.TrimSuffix(u.Path, "/") // never userinfo or the query: they may hold a key
		}
	}
	return m.Model
}

// LimitNote returns the progress-bar note for a phase that calls models:
// each distinct pool's current concurrency limit, e.g.
// "limit gpt-4o 48, claude-haiku 64". Pools without a limiter (the offline
// model without limits) are left out.
func (s *Set) LimitNote(models ...config.ModelConfig) func() string {
	var keys, names []string
	for _, m := range models {
		if k := PoolKey(m); !slices.Contains(keys, k) {
			keys, names = append(keys, k), append(names, PoolName(m))
		}
	}
	return func() string {
		var parts []string
		for i, k := range keys {
			if st, ok := s.limits.PoolStats(k); ok {
				parts = append(parts, fmt.Sprintf("%s %d", names[i], st.Concurrency))
			}
		}
		if len(parts) == 0 {
			return ""
		}
		return "limit " + strings.Join(parts, ", ")
	}
}

// PoolLimits is every provider pool this invocation called, as it is now.
func (s *Set) PoolLimits() []summary.PoolLimit {
	s.mu.Lock()
	names := make(map[string]string, len(s.poolNames))
	for k, v := range s.poolNames {
		names[k] = v
	}
	s.mu.Unlock()
	var out []summary.PoolLimit
	for _, st := range s.limits.Stats() {
		if st.Calls == 0 {
			continue
		}
		name, ok := names[st.Pool]
		if !ok {
			continue
		}
		out = append(out, summary.PoolLimit{
			Pool: name, Concurrency: st.Concurrency, MaxConcurrency: st.MaxConcurrency,
			PeakInFlight: st.PeakInFlight, BackOffs: st.BackOffs, Calls: st.Calls, RateLimited: st.RateLimited,
			LatencyBaselineMS: st.LatencyBaseline.Milliseconds(), RPM: st.Effective.RPM, TPM: st.Effective.TPM,
		})
	}
	slices.SortFunc(out, func(a, b summary.PoolLimit) int { return strings.Compare(a.Pool, b.Pool) })
	return out
}
