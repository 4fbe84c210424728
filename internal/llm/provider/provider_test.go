package provider_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/llm"
	"github.com/impactbench/impactbench/internal/llm/llmtest"
	"github.com/impactbench/impactbench/internal/llm/provider"
)

func noSleep(ctx context.Context, d time.Duration) error { return ctx.Err() }

func opts(srv *llmtest.Server) provider.Options {
	return provider.Options{HTTP: srv.Client(), Retry: llm.RetryPolicy{Sleep: noSleep}}
}

var q = llm.Request{Purpose: llm.PurposeTarget, Messages: []llm.Message{
	{Role: llm.RoleSystem, Content: "sys"}, {Role: llm.RoleUser, Content: "hello"},
}}

func TestSourcesRouteToTheRightWireFormat(t *testing.T) {
	tests := []struct {
		source    string
		flavor    llmtest.Flavor
		model     string
		wantModel string // on the wire
	}{
		{"", llmtest.OpenAI, "gpt-4o", "gpt-4o"},
		{"openai", llmtest.OpenAI, "openai/swiss-ai/apertus-8b-instruct", "swiss-ai/apertus-8b-instruct"},
		{"OpenAI", llmtest.OpenAI, "grok-4-1-fast-reasoning", "grok-4-1-fast-reasoning"},
		{"deepinfra", llmtest.OpenAI, "google/gemini-2.5-pro", "google/gemini-2.5-pro"},
		{"xai", llmtest.OpenAI, "grok-4-1-fast-non-reasoning", "grok-4-1-fast-non-reasoning"},
		{"openrouter", llmtest.OpenAI, "openai/gpt-4o", "openai/gpt-4o"},
		{"together", llmtest.OpenAI, "meta-llama/Llama-3.3-70B-Instruct-Turbo", "meta-llama/Llama-3.3-70B-Instruct-Turbo"},
		{"groq", llmtest.OpenAI, "llama-3.3-70b-versatile", "llama-3.3-70b-versatile"},
		{"ollama", llmtest.OpenAI, "llama3.2", "llama3.2"},
		{"vllm", llmtest.OpenAI, "Qwen/Qwen3-8B", "Qwen/Qwen3-8B"},
		{"openai_compatible", llmtest.OpenAI, "local-model", "local-model"},
		{"anthropic", llmtest.Anthropic, "anthropic/claude-sonnet-4-6", "claude-sonnet-4-6"},
		{"gemini", llmtest.Gemini, "gemini-2.5-flash", "gemini-2.5-flash"},
		{"google", llmtest.Gemini, "gemini-2.5-pro", "gemini-2.5-pro"},
	}
	for _, tc := range tests {
		t.Run(tc.source+"/"+tc.model, func(t *testing.T) {
			srv := llmtest.New(t, tc.flavor)
			cfg := config.ModelConfig{Source: tc.source, Model: tc.model, APIKey: srv.APIKey(), BaseURL: srv.BaseURL(),
				ExtraHeaders: map[string]string{"User-Agent": "Test"}}
			c, err := provider.New(cfg, opts(srv))
			if err != nil {
				t.Fatal(err)
			}
			resp, err := c.Complete(t.Context(), q)
			if err != nil {
				t.Fatal(err)
			}
			r := srv.Last()
			if r.Chat.Model != tc.wantModel || r.Chat.System != "sys" || r.Header.Get("User-Agent") != "Test" {
				t.Errorf("wire model=%q system=%q ua=%q", r.Chat.Model, r.Chat.System, r.Header.Get("User-Agent"))
			}
			if r.Chat.MaxTokens != 2048 {
				t.Errorf("max tokens = %d, want upstream's 2048", r.Chat.MaxTokens)
			}
			if resp.Usage.Requests != 1 {
				t.Errorf("usage = %+v", resp.Usage)
			}
		})
	}
}

func TestDefaultBaseURLs(t *testing.T) {
	want := map[string]string{
		"openai":     "https://api.openai.com/v1",
		"":           "https://api.openai.com/v1",
		"anthropic":  "https://api.anthropic.com",
		"gemini":     "https://generativelanguage.googleapis.com/",
		"deepinfra":  "https://api.deepinfra.com/v1/openai",
		"xai":        "https://api.x.ai/v1",
		"openrouter": "https://openrouter.ai/api/v1",
		"together":   "https://api.together.xyz/v1",
		"groq":       "https://api.groq.com/openai/v1",
		"ollama":     "http://localhost:11434/v1",
		"vllm":       "http://localhost:8000/v1",
	}
	for src, url := range want {
		if got := provider.DefaultBaseURL(src); got != url {
			t.Errorf("DefaultBaseURL(%q) = %q, want %q", src, got, url)
		}
	}
}

func TestConfigErrors(t *testing.T) {
	const secret = "sk-do-not-print-me-123456"
	tests := []struct {
		name string
		cfg  config.ModelConfig
		want string // in the message or hint
	}{
		{"unknown source", config.ModelConfig{Source: "azure", Model: "m", APIKey: secret}, "unknown source"},
		{"empty model", config.ModelConfig{Source: "openai", APIKey: secret}, "model"},
		{"missing openai key", config.ModelConfig{Source: "openai", Model: "gpt-4o"}, "OPENAI_API_KEY"},
		{"missing anthropic key", config.ModelConfig{Source: "anthropic", Model: "claude-haiku-4-5"}, "ANTHROPIC_API_KEY"},
		{"missing gemini key", config.ModelConfig{Source: "gemini", Model: "gemini-2.5-flash"}, "GEMINI_API_KEY"},
		{"missing deepinfra key", config.ModelConfig{Source: "deepinfra", Model: "x"}, "DEEPINFRA_TOKEN"},
		{"openai_compatible needs base_url", config.ModelConfig{Source: "openai_compatible", Model: "x", APIKey: secret}, "base_url"},
		{"bad base_url", config.ModelConfig{Source: "xai", Model: "x", APIKey: secret, BaseURL: "api.x.ai"}, "base_url"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := provider.New(tc.cfg, provider.Options{Role: "evaluator_model"})
			var e *llm.Error
			if !errors.As(err, &e) || e.Kind != llm.KindConfig {
				t.Fatalf("err = %v, want KindConfig", err)
			}
			if !strings.Contains(e.Error(), tc.want) {
				t.Errorf("error %q should mention %q", e.Error(), tc.want)
			}
			if strings.Contains(e.Error(), secret) {
				t.Errorf("error prints the key: %q", e.Error())
			}
		})
	}
	// Local servers need no key.
	for _, src := range []string{"ollama", "vllm"} {
		if _, err := provider.New(config.ModelConfig{Source: src, Model: "m"}, provider.Options{}); err != nil {
			t.Errorf("%s without key: %v", src, err)
		}
	}
	if _, err := provider.New(config.ModelConfig{Source: "openai", Model: "m", BaseURL: "http://localhost:1234/v1"}, provider.Options{}); err != nil {
		t.Errorf("openai with a custom base_url and no key: %v", err)
	}
}

func TestMissingKeyErrorNamesTheRole(t *testing.T) {
	_, err := provider.New(config.ModelConfig{ID: "claude", Source: "anthropic", Model: "claude-haiku-4-5"}, provider.Options{})
	if err == nil || !strings.Contains(err.Error(), "apikey of targets[claude]") {
		t.Fatalf("err = %v", err)
	}
}

func TestTimeoutAndRetriesFromConfig(t *testing.T) {
	srv := llmtest.NewOpenAI(t)
	for range 5 {
		srv.Enqueue(llmtest.Reply{Hang: true})
	}
	var retries []int
	o := opts(srv)
	o.Retry.OnRetry = func(a int, err error, d time.Duration) { retries = append(retries, a) }
	c, err := provider.New(config.ModelConfig{Model: "gpt-4o", APIKey: srv.APIKey(), BaseURL: srv.BaseURL(),
		Timeout: 30 * time.Millisecond, MaxRetries: 2}, o)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Complete(t.Context(), q)
	if llm.KindOf(err) != llm.KindTimeout || srv.Calls() != 3 || len(retries) != 2 {
		t.Fatalf("err=%v calls=%d retries=%v, want timeout after 3 attempts", err, srv.Calls(), retries)
	}
}

func TestMaxRetriesFromConfig(t *testing.T) {
	// The loader defaults max_retries to 4; the factory takes it as written.
	for _, tc := range []struct{ maxRetries, calls int }{{4, 5}, {1, 2}, {0, 1}} {
		srv := llmtest.NewAnthropic(t)
		for range 6 {
			srv.Enqueue(llmtest.AnthropicError(529, "overloaded_error", "Overloaded"))
		}
		c, err := provider.New(config.ModelConfig{Source: "anthropic", Model: "claude-haiku-4-5", APIKey: srv.APIKey(),
			BaseURL: srv.BaseURL(), MaxRetries: tc.maxRetries}, opts(srv))
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.Complete(t.Context(), q)
		if llm.KindOf(err) != llm.KindOverloaded || srv.Calls() != tc.calls {
			t.Errorf("max_retries %d: err=%v calls=%d, want %d attempts", tc.maxRetries, err, srv.Calls(), tc.calls)
		}
	}
}

func TestCost(t *testing.T) {
	usage := llmtest.Usage{Input: 1_000_000, Output: 1_000_000}
	tests := []struct {
		name      string
		cfg       config.ModelConfig
		pricing   map[string]config.Price
		wantCost  float64
		wantKnown bool
	}{
		{"table", config.ModelConfig{Model: "gpt-4o"}, nil, 12.5, true},
		{"unknown model", config.ModelConfig{Model: "my-finetune"}, nil, 0, false},
		{"config map wins over table", config.ModelConfig{Model: "gpt-4o"}, map[string]config.Price{"gpt-4o": {Input: 1, Output: 1}}, 2, true},
		{"model pricing wins over map", config.ModelConfig{Model: "gpt-4o", Pricing: &config.Price{Input: 0.5, Output: 0.5}}, map[string]config.Price{"gpt-4o": {Input: 1, Output: 1}}, 1, true},
		{"batch flag does not discount real-time calls", config.ModelConfig{Model: "gpt-4o", Batch: true}, nil, 12.5, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := llmtest.NewOpenAI(t)
			srv.Enqueue(llmtest.Text("x", usage))
			tc.cfg.APIKey, tc.cfg.BaseURL = srv.APIKey(), srv.BaseURL()
			o := opts(srv)
			o.Pricing = tc.pricing
			c, err := provider.New(tc.cfg, o)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := c.Complete(t.Context(), q)
			if err != nil {
				t.Fatal(err)
			}
			if resp.Usage.CostKnown != tc.wantKnown || resp.Usage.Cost < tc.wantCost-1e-9 || resp.Usage.Cost > tc.wantCost+1e-9 {
				t.Errorf("cost = %v known=%v, want %v %v", resp.Usage.Cost, resp.Usage.CostKnown, tc.wantCost, tc.wantKnown)
			}
		})
	}
}

func TestOffline(t *testing.T) {
	c, err := provider.New(config.ModelConfig{Source: "offline", Model: "offline-careful"}, provider.Options{Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Complete(t.Context(), q)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Text == "" || !resp.Usage.CostKnown || resp.Usage.Cost != 0 {
		t.Errorf("offline resp = %+v", resp)
	}
}

// The offline model is free unless the config prices it by name; the
// price table never prices it, even under a real model's name.
func TestOfflinePricing(t *testing.T) {
	priced := &config.Price{Input: 1000, Output: 1000}
	tests := []struct {
		name     string
		cfg      config.ModelConfig
		pricing  map[string]config.Price
		wantCost bool
	}{
		{"no pricing", config.ModelConfig{Source: "offline", Model: "offline-careful"}, nil, false},
		{"a real model's name", config.ModelConfig{Source: "offline", Model: "gpt-4o"}, nil, false},
		{"model block pricing", config.ModelConfig{Source: "offline", Model: "offline-careful", Pricing: priced}, nil, true},
		{"top-level pricing naming it", config.ModelConfig{Source: "offline", Model: "offline-careful"}, map[string]config.Price{"offline-careful": *priced}, true},
		{"top-level pricing naming another", config.ModelConfig{Source: "offline", Model: "offline-careful"}, map[string]config.Price{"gpt-4o": *priced}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := provider.New(tc.cfg, provider.Options{Seed: 7, Pricing: tc.pricing})
			if err != nil {
				t.Fatal(err)
			}
			resp, err := c.Complete(t.Context(), q)
			if err != nil {
				t.Fatal(err)
			}
			if !resp.Usage.CostKnown || (resp.Usage.Cost > 0) != tc.wantCost {
				t.Errorf("cost = %v known=%v, want a cost: %v", resp.Usage.Cost, resp.Usage.CostKnown, tc.wantCost)
			}
		})
	}
}

func TestKeyNeverLoggedOn401(t *testing.T) {
	const secret = "sk-proj-TOPSECRETVALUE-987654"
	for _, f := range []struct {
		source string
		flavor llmtest.Flavor
		model  string
	}{{"openai", llmtest.OpenAI, "gpt-4o"}, {"anthropic", llmtest.Anthropic, "claude-haiku-4-5"}, {"gemini", llmtest.Gemini, "gemini-2.5-flash"}} {
		t.Run(f.source, func(t *testing.T) {
			srv := llmtest.New(t, f.flavor) // expects its own key: ours is rejected
			var buf bytes.Buffer
			o := opts(srv)
			o.Logger = slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
			c, err := provider.New(config.ModelConfig{Source: f.source, Model: f.model, APIKey: secret, BaseURL: srv.BaseURL()}, o)
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.Complete(t.Context(), q)
			if llm.KindOf(err) != llm.KindAuth || srv.Calls() != 1 {
				t.Fatalf("err=%v calls=%d, want one auth failure", err, srv.Calls())
			}
			for _, s := range []string{buf.String(), err.Error()} {
				// "7654": even the masked form OpenAI echoes (sk-****7654) stays out.
				for _, part := range []string{secret, "TOPSECRETVALUE", "987654", "7654"} {
					if strings.Contains(s, part) {
						t.Errorf("key material %q in %q", part, s)
					}
				}
			}
			if !strings.Contains(buf.String(), "llm call failed") || !strings.Contains(err.Error(), "apikey of model "+f.model) {
				t.Errorf("log/hint missing:\nlog: %s\nerr: %v", buf.String(), err)
			}
		})
	}
}

func TestEnvironmentDoesNotRedirect(t *testing.T) {
	decoyOpenAI, decoyAnthropic := llmtest.NewOpenAI(t), llmtest.NewAnthropic(t)
	t.Setenv("OPENAI_BASE_URL", decoyOpenAI.BaseURL())
	t.Setenv("ANTHROPIC_BASE_URL", decoyAnthropic.BaseURL())
	for _, f := range []struct {
		source string
		srv    *llmtest.Server
	}{{"openai", llmtest.NewOpenAI(t)}, {"anthropic", llmtest.NewAnthropic(t)}} {
		c, err := provider.New(config.ModelConfig{Source: f.source, Model: "m", APIKey: f.srv.APIKey(), BaseURL: f.srv.BaseURL()}, opts(f.srv))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Complete(t.Context(), q); err != nil {
			t.Fatal(err)
		}
		if f.srv.Calls() != 1 {
			t.Errorf("%s: configured server got %d calls", f.source, f.srv.Calls())
		}
	}
	if decoyOpenAI.Calls()+decoyAnthropic.Calls() != 0 {
		t.Errorf("environment redirected calls: openai=%d anthropic=%d", decoyOpenAI.Calls(), decoyAnthropic.Calls())
	}
}

func TestWireModel(t *testing.T) {
	tests := []struct{ src, model, want string }{
		{"openai", "openai/swiss-ai/apertus-8b-instruct", "swiss-ai/apertus-8b-instruct"},
		{"", "openai/gpt-4o", "gpt-4o"},
		{"deepinfra", "deepinfra/meta-llama/Llama-4", "meta-llama/Llama-4"},
		{"deepinfra", "google/gemini-2.5-pro", "google/gemini-2.5-pro"},
		{"anthropic", "claude-haiku-4-5", "claude-haiku-4-5"},
		{"openai", "openai/", "openai/"},
	}
	for _, tc := range tests {
		if got := provider.WireModel(tc.src, tc.model); got != tc.want {
			t.Errorf("WireModel(%q, %q) = %q, want %q", tc.src, tc.model, got, tc.want)
		}
	}
}

func TestWrapSeesEveryAttemptOutsideTheTimeout(t *testing.T) {
	srv := llmtest.NewOpenAI(t)
	srv.Enqueue(llmtest.OpenAIError(429, "requests", "rate_limit_exceeded", "slow").WithHeader("retry-after", "1"),
		llmtest.OpenAIError(500, "server_error", "", "x"))
	var seen []llm.ErrorKind
	o := opts(srv)
	o.Wrap = func(inner llm.Client) llm.Client {
		return llm.ClientFunc(func(ctx context.Context, req llm.Request) (llm.Response, error) {
			// Queueing in a limiter must not count against the call's timeout.
			time.Sleep(60 * time.Millisecond)
			resp, err := inner.Complete(ctx, req)
			seen = append(seen, llm.KindOf(err))
			return resp, err
		})
	}
	c, err := provider.New(config.ModelConfig{Model: "gpt-4o", APIKey: srv.APIKey(), BaseURL: srv.BaseURL(), Timeout: 40 * time.Millisecond, MaxRetries: 4}, o)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Complete(t.Context(), q); err != nil {
		t.Fatal(err)
	}
	want := []llm.ErrorKind{llm.KindRateLimit, llm.KindServer, ""}
	if len(seen) != len(want) || seen[0] != want[0] || seen[1] != want[1] || seen[2] != want[2] {
		t.Errorf("wrapper saw %v, want %v", seen, want)
	}
}
