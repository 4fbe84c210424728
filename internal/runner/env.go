package runner

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"

	"github.com/impactbench/impactbench/internal/callstore"
	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/llm"
	"github.com/impactbench/impactbench/internal/llm/provider"
	"github.com/impactbench/impactbench/internal/llm/ratelimit"
	"github.com/impactbench/impactbench/internal/progress"
	"github.com/impactbench/impactbench/internal/prompts"
)

// env is what every benchmark of a study shares: the config, one client
// per model over shared provider pools, the cost ceiling, the lanes that
// bound rows in flight, and the progress display.
type env struct {
	cfg     *config.Config
	opts    Options
	prompts *prompts.Set
	log     *slog.Logger
	prog    *progress.Tracker

	http   *http.Client
	prices *llm.Prices
	limits *ratelimit.Registry
	budget *ratelimit.Budget

	mu      sync.Mutex
	clients map[string]llm.Client
	// poolNames maps limit pool keys to display names (see poolName).
	poolNames map[string]string
	// autoWorkers caps the rows in flight of lanes with concurrency auto.
	autoWorkers int
	lanes       *lanes
	bars        *bars
	// studySize is how many benchmarks share this environment.
	studySize int
	// opened counts the benchmarks opened so far: the next one's rank.
	opened int
}

func newEnv(cfg *config.Config, opts Options) (*env, error) {
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
	e := &env{
		cfg: cfg, opts: opts, prompts: ps, log: opts.Logger, prog: opts.Progress,
		http:        llm.NewHTTPClient(idleConnsPerHost(cfg)),
		prices:      llm.DefaultPrices().WithOverrides(cfg.Pricing),
		limits:      ratelimit.NewRegistry(ratelimit.Options{Logger: opts.Logger, LearnFraction: 0.99}),
		clients:     map[string]llm.Client{},
		poolNames:   map[string]string{},
		autoWorkers: autoWorkerCeiling(cfg),
	}
	e.lanes = newLanes(e)
	e.bars = newBars(opts.Progress)
	maxCost := opts.MaxCost
	if maxCost == 0 {
		maxCost = cfg.MaxCost
	}
	if maxCost > 0 {
		e.budget = ratelimit.NewBudget(maxCost)
	}
	return e, nil
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

// poolKey groups calls that share a provider's limits (the key itself is
// hashed and never leaves memory): models with the same rate_pool and key
// share one quota; models on one base_url you set are one server (a vLLM
// or other self-hosted server, a gateway) whose limit they all share;
// otherwise each model of a provider has its own limits, as OpenAI's and
// Anthropic's do.
func poolKey(m config.ModelConfig) string {
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

// modelClient checks that the environment variables a model's config refers
// to are set (only now that the model is about to be used) and returns its client.
func (r *env) modelClient(field string, m config.ModelConfig) (llm.Client, error) {
	if field != "" && !r.opts.DryRun {
		if err := r.cfg.CheckEnv(field); err != nil {
			return nil, err
		}
	}
	return r.clientRole(field, m)
}

func (r *env) generatorField() string {
	if r.cfg.GeneratorModel != nil {
		return "generator_model"
	}
	return "user_model"
}

// client returns the shared client for a model config: provider adapter,
// limiter (per attempt), retry, and the cost ceiling.
func (r *env) client(m config.ModelConfig) (llm.Client, error) { return r.clientRole("", m) }

// clientRole is client with the config field the model came from, so
// provider errors can say which block of config.yaml to fix.
func (r *env) clientRole(role string, m config.ModelConfig) (llm.Client, error) {
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
func (r *env) estimateCost(m config.ModelConfig) func(req llm.Request) float64 {
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
