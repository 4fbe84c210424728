package llm_test

import (
	"context"
	"math"
	"testing"

	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/llm"
)

func near(a, b float64) bool { return math.Abs(a-b) < 1e-12 }

func TestDefaultPricesLoad(t *testing.T) {
	p := llm.DefaultPrices()
	if p.AsOf == "" || p.Source == "" {
		t.Fatalf("price table lacks as_of/source: %+v", p)
	}
	for _, m := range []string{"gpt-4o", "gpt-4o-mini", "gpt-4.1", "gpt-4.1-mini", "gpt-4.1-nano", "gpt-5", "gpt-5-mini",
		"gpt-5-nano", "gpt-5.1", "gpt-5-chat-latest", "o3", "o4-mini", "claude-haiku-4-5", "claude-sonnet-4-5",
		"claude-sonnet-4-6", "claude-opus-4-5", "claude-opus-4-6", "gemini-2.5-pro", "gemini-2.5-flash"} {
		pr, ok := p.Lookup(m)
		if !ok || pr.Input <= 0 || pr.Output <= 0 {
			t.Errorf("%s: price %+v known=%v", m, pr, ok)
		}
	}
}

func TestPriceLookup(t *testing.T) {
	p := llm.DefaultPrices()
	tests := []struct {
		model string
		want  string // model whose price must be returned; "" = unknown
	}{
		{"claude-haiku-4-5-20251001", "claude-haiku-4-5"},
		{"anthropic/claude-sonnet-4-6", "claude-sonnet-4-6"},
		{"gpt-4o-2024-08-06", "gpt-4o"},
		{"openai/gpt-4o-mini", "gpt-4o-mini"},
		{"GPT-5-Mini", "gpt-5-mini"},
		{"deepinfra/google/gemini-2.5-pro", "gemini-2.5-pro"},
		{"meta-llama/Llama-4-Maverick-17B-128E-Instruct-FP8", "meta-llama/llama-4-maverick-17b-128e-instruct-fp8"},
		{"gpt-5-chat-latest", "gpt-5-chat-latest"},
		{"claude-3-5-haiku-latest", "claude-3-5-haiku"},
		// Never guessed across models:
		{"gpt-5.1-codex", ""},
		{"gpt-4o-mini-tts", ""},
		{"swiss-ai/apertus-8b-instruct", ""},
		{"claude-haiku-4", ""},
	}
	for _, tc := range tests {
		t.Run(tc.model, func(t *testing.T) {
			got, ok := p.Lookup(tc.model)
			if tc.want == "" {
				if ok {
					t.Fatalf("Lookup(%q) = %+v, want unknown", tc.model, got)
				}
				return
			}
			want, _ := p.Lookup(tc.want)
			if !ok || got != want {
				t.Fatalf("Lookup(%q) = %+v %v, want %+v", tc.model, got, ok, want)
			}
		})
	}
}

func TestPriceCost(t *testing.T) {
	p := llm.DefaultPrices()
	// Anthropic: 1000 uncached + 10000 cache reads + 2000 cache writes, 500 out.
	u := llm.Usage{Requests: 1, InputTokens: 13000, CachedInputTokens: 10000, CacheWriteTokens: 2000, OutputTokens: 500}
	got, ok := p.Cost("claude-sonnet-4-5-20250929", u)
	want := (1000*3.00 + 10000*0.30 + 2000*3.75 + 500*15.00) / 1e6
	if !ok || !near(got, want) {
		t.Errorf("sonnet cost = %v %v, want %v", got, ok, want)
	}
	// OpenAI: cached input price; reasoning tokens are inside output.
	u = llm.Usage{Requests: 1, InputTokens: 2000, CachedInputTokens: 1024, OutputTokens: 300, ReasoningTokens: 200}
	got, ok = p.Cost("gpt-5-mini", u)
	want = (976*0.25 + 1024*0.025 + 300*2.00) / 1e6
	if !ok || !near(got, want) {
		t.Errorf("gpt-5-mini cost = %v %v, want %v", got, ok, want)
	}
	if c, ok := p.Cost("no-such-model", u); ok || c != 0 {
		t.Errorf("unknown model cost = %v %v, want 0 false", c, ok)
	}
	pr, _ := p.Lookup("gpt-4o")
	if full, batch := pr.Cost(u, false), pr.Cost(u, true); !near(batch, full/2) {
		t.Errorf("batch %v, want half of %v", batch, full)
	}
}

func TestPriceEntryDefaults(t *testing.T) {
	// No cache rates given: reads at full input (no discount assumed),
	// writes at 1.25x.
	got := llm.PriceEntry{Input: 2, Output: 8}.Resolve()
	if got.CachedInput != 2 || got.CacheWrite != 2.5 {
		t.Errorf("Resolve = %+v", got)
	}
	zero := 0.0
	got = llm.PriceEntry{Input: 2, Output: 8, CachedInput: &zero}.Resolve()
	if got.CachedInput != 0 {
		t.Errorf("explicit 0 cached price lost: %+v", got)
	}
}

func TestPricesOverridesAndParse(t *testing.T) {
	base := llm.DefaultPrices()
	over := base.WithOverrides(map[string]config.Price{"GPT-4o": {Input: 1, Output: 4, CachedRead: 0.5}, "my-local-model": {}})
	if pr, _ := over.Lookup("gpt-4o-2024-08-06"); pr != (llm.Price{Input: 1, Output: 4, CachedInput: 0.5, CacheWrite: 1.25}) {
		t.Errorf("override not used: %+v", pr)
	}
	// A model's own pricing block wins over the table and the map.
	u := llm.Usage{Requests: 1, InputTokens: 1_000_000}
	if c, ok := over.Cost("gpt-4o", u, &config.Price{Input: 0.1}); !ok || !near(c, 0.1) {
		t.Errorf("per-model override: %v %v", c, ok)
	}
	if c, ok := over.Cost("gpt-4o", u, nil); !ok || !near(c, 1) {
		t.Errorf("nil override must fall back to the table: %v %v", c, ok)
	}
	if c, ok := over.Cost("unknown-x", u, &config.Price{Input: 2}); !ok || !near(c, 2) {
		t.Errorf("override prices an unknown model: %v %v", c, ok)
	}
	if _, ok := over.Lookup("my-local-model"); !ok {
		t.Error("override of a new model missing")
	}
	if pr, _ := base.Lookup("gpt-4o"); pr.Input != 2.5 {
		t.Errorf("WithOverrides changed the original: %+v", pr)
	}
	if _, err := llm.ParsePrices([]byte(`{"models":{}}`)); err == nil {
		t.Error("a table without as_of must be rejected")
	}
	if _, err := llm.ParsePrices([]byte(`{"as_of":"x","models":{"m":{"input":-1}}}`)); err == nil {
		t.Error("a negative price must be rejected")
	}
}

func TestWithCost(t *testing.T) {
	usage := llm.Usage{Requests: 2, InputTokens: 1_000_000, OutputTokens: 1_000_000}
	okClient := llm.ClientFunc(func(context.Context, llm.Request) (llm.Response, error) {
		return llm.Response{Usage: usage}, nil
	})
	errClient := llm.ClientFunc(func(context.Context, llm.Request) (llm.Response, error) {
		return llm.Response{}, &llm.Error{Kind: llm.KindEmpty, Usage: usage}
	})
	price := llm.Price{Input: 1, Output: 2, CachedInput: 1, CacheWrite: 1}

	resp, _ := llm.WithCost(okClient, price, true).Complete(t.Context(), llm.Request{})
	if !resp.Usage.CostKnown || !near(resp.Usage.Cost, 3) {
		t.Errorf("known price: %+v", resp.Usage)
	}
	resp, _ = llm.WithCost(okClient, llm.Price{}, false).Complete(t.Context(), llm.Request{})
	if resp.Usage.CostKnown || resp.Usage.Cost != 0 {
		t.Errorf("unknown price must give CostKnown=false: %+v", resp.Usage)
	}
	_, err := llm.WithCost(errClient, price, true).Complete(t.Context(), llm.Request{})
	e, _ := err.(*llm.Error)
	if e == nil || !e.Usage.CostKnown || !near(e.Usage.Cost, 3) {
		t.Errorf("billed failure not priced: %v", err)
	}
	// The offline model: known and free.
	resp, _ = llm.WithCost(okClient, llm.Price{}, true).Complete(t.Context(), llm.Request{})
	if !resp.Usage.CostKnown || resp.Usage.Cost != 0 {
		t.Errorf("free model: %+v", resp.Usage)
	}
}
