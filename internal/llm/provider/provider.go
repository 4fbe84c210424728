// Package provider builds the llm.Client for one model config: it picks the
// adapter by source, fills defaults (base URL, output cap, timeout, retries)
// and stacks the provider-neutral layers around it.
//
// The stack, outermost first:
//
//	redaction (Options.Redact: configured secrets out of all model text) →
//	cost (Usage.Cost from the price table) →
//	retry (one policy for all providers) →
//	Options.Wrap (e.g. the rate limiter; per attempt) →
//	log (one debug line per attempt) →
//	per-attempt timeout →
//	adapter (official SDK, its own retries off)
package provider

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/llm"
	"github.com/impactbench/impactbench/internal/llm/anthropic"
	"github.com/impactbench/impactbench/internal/llm/gemini"
	"github.com/impactbench/impactbench/internal/llm/openai"
	"github.com/impactbench/impactbench/internal/sanitize"
)

// DefaultTimeout is the per-attempt timeout when the config sets none.
const DefaultTimeout = 120 * time.Second

// Options are the run-wide inputs shared by every model's client.
type Options struct {
	// HTTP is the run's shared client; nil builds one (llm.NewHTTPClient).
	HTTP *http.Client
	// Prices is the price table; nil means llm.DefaultPrices().
	Prices *llm.Prices
	// Pricing is config.yaml's pricing: map (model name → price). It wins
	// over Prices; a model's own pricing: block wins over both.
	Pricing map[string]config.Price
	// Logger gets one debug line per attempt, and a warning when a server
	// refuses the seed parameter; nil logs nothing.
	Logger *slog.Logger
	// Seed seeds the offline model.
	Seed uint64
	// Retry is the retry policy (backoff, sleep, jitter, OnRetry hook); the
	// number of retries always comes from ModelConfig.MaxRetries.
	Retry llm.RetryPolicy
	// Role names where this model is configured ("user_model",
	// "evaluator_model", "targets[gpt-4o]"), for error hints.
	Role string
	// Wrap, if set, wraps each attempt inside the retry loop and outside the
	// per-attempt timeout: the place for a rate limiter, which must see
	// every attempt and every 429, and whose queueing must not eat into the
	// call's timeout.
	Wrap func(llm.Client) llm.Client
	// Redact lists the secret values (config.(*Config).Secrets(): every
	// apikey, credential header value and base_url credential) to replace
	// in the text of every answer and error before anything stores it: a
	// model can be made to repeat a key, and a gateway can echo one.
	// Values shorter than llm.MinSecretLen are ignored.
	Redact []string
}

type adapterKind int

const (
	kindOpenAI adapterKind = iota
	kindAnthropic
	kindGemini
	kindOffline
)

type source struct {
	kind    adapterKind
	baseURL string
	// keyEnv is the variable users conventionally keep the key in (only
	// named in hints; never read).
	keyEnv   string
	needsKey bool
}

// sources maps config.yaml's source values to adapters and default base
// URLs (upstream's routing, plus the common OpenAI-compatible hosts).
var sources = map[string]source{
	"openai":            {kindOpenAI, openai.DefaultBaseURL, "OPENAI_API_KEY", true},
	"anthropic":         {kindAnthropic, anthropic.DefaultBaseURL, "ANTHROPIC_API_KEY", true},
	"gemini":            {kindGemini, gemini.DefaultBaseURL, "GEMINI_API_KEY", true},
	"google":            {kindGemini, gemini.DefaultBaseURL, "GEMINI_API_KEY", true},
	"deepinfra":         {kindOpenAI, "https://api.deepinfra.com/v1/openai", "DEEPINFRA_TOKEN", true},
	"xai":               {kindOpenAI, "https://api.x.ai/v1", "XAI_API_KEY", true},
	"openrouter":        {kindOpenAI, "https://openrouter.ai/api/v1", "OPENROUTER_API_KEY", true},
	"together":          {kindOpenAI, "https://api.together.xyz/v1", "TOGETHER_API_KEY", true},
	"groq":              {kindOpenAI, "https://api.groq.com/openai/v1", "GROQ_API_KEY", true},
	"ollama":            {kindOpenAI, "http://localhost:11434/v1", "", false},
	"vllm":              {kindOpenAI, "http://localhost:8000/v1", "", false},
	"openai_compatible": {kindOpenAI, "", "", false},
	"offline":           {kind: kindOffline},
}

// Sources lists the accepted source values.
func Sources() []string {
	out := make([]string, 0, len(sources))
	for k := range sources {
		out = append(out, k)
	}
	return out
}

// DefaultBaseURL returns the base URL used for source when base_url is unset
// ("" for sources without one).
func DefaultBaseURL(src string) string { return sources[normSource(src)].baseURL }

func normSource(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	if s == "" {
		return "openai"
	}
	return s
}

// WireModel is the model name sent to the provider. Upstream routes through
// litellm as "source/model", and litellm strips that provider prefix before
// sending, so a model already written with its source prefix
// ("openai/swiss-ai/apertus-8b-instruct" with source openai) reaches the
// wire without it ("swiss-ai/apertus-8b-instruct").
func WireModel(src, model string) string {
	if m, ok := strings.CutPrefix(model, normSource(src)+"/"); ok && m != "" {
		return m
	}
	return model
}

// New builds the client for cfg. Configuration problems (unknown source,
// missing model, missing API key, bad base_url) are *llm.Error of KindConfig
// returned here, before any call is made. Build one client per model config
// and share it: clients are safe for concurrent use and hold the SDK state.
func New(cfg config.ModelConfig, opts Options) (llm.Client, error) {
	srcName := normSource(cfg.Source)
	src, ok := sources[srcName]
	if !ok {
		return nil, &llm.Error{Kind: llm.KindConfig, Provider: srcName, Model: cfg.Model,
			Message: fmt.Sprintf("unknown source %q", cfg.Source),
			Hint:    "use one of openai, anthropic, gemini, deepinfra, xai, openrouter, together, groq, ollama, vllm, openai_compatible, offline"}
	}
	if strings.TrimSpace(cfg.Model) == "" {
		return nil, &llm.Error{Kind: llm.KindConfig, Provider: srcName, Message: "model is empty",
			Hint: "set model: for " + role(opts, cfg)}
	}

	// The config loader fills max_retries with 4 when it is absent, so the
	// value is taken as written: 0 means "no retries" (one attempt).
	retry := opts.Retry
	retry.MaxRetries = cfg.MaxRetries
	if retry.MaxRetries <= 0 {
		retry.MaxRetries = -1
	}
	price, known := priceFor(cfg, opts)

	if src.kind == kindOffline {
		// The offline model is free and instant: no timeout layer; retries
		// stay so that simulated failures behave like real ones.
		c := newOffline(cfg, opts.Seed)
		c = llm.WithLogging(c, opts.Logger, srcName, cfg.Model)
		if opts.Wrap != nil {
			c = opts.Wrap(c)
		}
		c = llm.WithRetry(c, retry)
		return llm.WithRedaction(llm.WithCost(c, offlinePrice(cfg, opts, price), true), opts.Redact), nil
	}

	baseURL, keyField, err := endpoint(cfg, opts, srcName, src)
	if err != nil {
		return nil, err
	}
	model := WireModel(srcName, cfg.Model)
	c, err := adapter(src.kind, cfg, opts, srcName, baseURL, model, keyField)
	if err != nil {
		return nil, err
	}

	timeout := cfg.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	c = llm.WithTimeout(c, timeout)
	c = llm.WithLogging(c, opts.Logger, srcName, model)
	if opts.Wrap != nil {
		c = opts.Wrap(c)
	}
	if opts.Logger != nil {
		retry.OnRetry = logRetry(opts.Logger, srcName, model, retry.OnRetry)
	}
	c = llm.WithRetry(c, retry)
	// Real-time calls are never discounted, even with batch: true — the
	// batch price applies only to calls made through a batch API.
	return llm.WithRedaction(llm.WithCost(c, price, known), opts.Redact), nil
}

// endpoint is where a network source's calls go (cfg's base_url, else the
// source's) and the field its API key is set in, for hints. It rejects a
// missing or relative base URL and a missing key the host needs.
func endpoint(cfg config.ModelConfig, opts Options, srcName string, src source) (baseURL, keyField string, err error) {
	baseURL = strings.TrimSpace(cfg.BaseURL)
	if baseURL == "" {
		baseURL = src.baseURL
	}
	if baseURL == "" {
		return "", "", &llm.Error{Kind: llm.KindConfig, Provider: srcName, Model: cfg.Model,
			Message: "base_url is required for source " + srcName, Hint: "set base_url: for " + role(opts, cfg)}
	}
	u, err := url.Parse(baseURL)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return "", "", &llm.Error{Kind: llm.KindConfig, Provider: srcName, Model: cfg.Model,
			Message: fmt.Sprintf("base_url %q is not an absolute URL", sanitize.URL(baseURL))}
	}
	keyField = "apikey of " + role(opts, cfg)
	if src.keyEnv != "" {
		keyField += " (usually ${" + src.keyEnv + "})"
	}
	needsKey := src.needsKey
	if srcName == "openai" && !strings.EqualFold(u.Hostname(), "api.openai.com") {
		// source openai + base_url is upstream's way to reach any
		// OpenAI-compatible server, local ones included.
		needsKey = false
	}
	if needsKey && strings.TrimSpace(cfg.APIKey) == "" {
		return "", "", &llm.Error{Kind: llm.KindConfig, Provider: srcName, Model: cfg.Model,
			Message: "API key is empty", Hint: "set " + keyField + " in config.yaml, and make sure the variable is set"}
	}
	return baseURL, keyField, nil
}

// adapter builds the SDK client of kind (Anthropic, Gemini, else
// OpenAI-compatible) for model at baseURL, over opts' HTTP client or a new
// one sized to cfg's concurrency.
func adapter(kind adapterKind, cfg config.ModelConfig, opts Options, srcName, baseURL, model, keyField string) (llm.Client, error) {
	httpClient := opts.HTTP
	if httpClient == nil {
		httpClient = llm.NewHTTPClient(cfg.MaxConcurrency)
	}
	switch kind {
	case kindAnthropic:
		return anthropic.New(anthropic.Config{
			Provider: srcName, APIKey: cfg.APIKey, BaseURL: baseURL, Model: model,
			ExtraHeaders: cfg.ExtraHeaders, HTTPClient: httpClient,
			Temperature: cfg.Temperature, MaxTokens: cfg.MaxTokens, KeyField: keyField,
			CacheMinTokens: cfg.CacheMinTokens,
		})
	case kindGemini:
		return gemini.New(gemini.Config{
			Provider: srcName, APIKey: cfg.APIKey, BaseURL: baseURL, Model: model,
			ExtraHeaders: cfg.ExtraHeaders, HTTPClient: httpClient,
			Temperature: cfg.Temperature, MaxTokens: cfg.MaxTokens, KeyField: keyField,
			StructuredOutputs: true,
		})
	default:
		return openai.New(openai.Config{
			Provider: srcName, APIKey: cfg.APIKey, BaseURL: baseURL, Model: model,
			ExtraHeaders: cfg.ExtraHeaders, HTTPClient: httpClient,
			Temperature: cfg.Temperature, MaxTokens: cfg.MaxTokens, KeyField: keyField,
			Logger: opts.Logger,
		})
	}
}

func role(opts Options, cfg config.ModelConfig) string {
	switch {
	case opts.Role != "":
		return opts.Role
	case cfg.ID != "":
		return "targets[" + cfg.ID + "]"
	}
	return "model " + cfg.Model
}

// priceFor resolves the model's price: its own pricing: block, then the
// config-wide pricing: map, then the price table.
func priceFor(cfg config.ModelConfig, opts Options) (llm.Price, bool) {
	prices := opts.Prices
	if prices == nil {
		prices = llm.DefaultPrices()
	}
	if len(opts.Pricing) > 0 {
		prices = prices.WithOverrides(opts.Pricing)
	}
	return prices.Price(cfg.Model, cfg.Pricing)
}

// offlinePrice is free unless the config prices the offline model by
// name (its model block's pricing:, or the top-level pricing: map), as
// docs/config.md promises for every model: then --max-cost and the bill
// can be tried without a key. The price table is not consulted, so an
// offline model named like a real one stays free.
func offlinePrice(cfg config.ModelConfig, opts Options, configured llm.Price) llm.Price {
	if _, named := opts.Pricing[cfg.Model]; cfg.Pricing != nil || named {
		return configured
	}
	return llm.Price{}
}

func logRetry(l *slog.Logger, provider, model string, next func(int, error, time.Duration)) func(int, error, time.Duration) {
	return func(attempt int, err error, wait time.Duration) {
		l.Debug("llm retry", "provider", provider, "model", model, "attempt", attempt,
			"kind", string(llm.KindOf(err)), "wait", wait)
		if next != nil {
			next(attempt, err, wait)
		}
	}
}
