package batch_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/impactbench/impactbench/internal/llm"
	"github.com/impactbench/impactbench/internal/llm/batch"
	"github.com/impactbench/impactbench/internal/llm/batch/fakebatch"
)

// fast polls every millisecond.
var fast = batch.Options{PollInterval: time.Millisecond}

// price is a known price: $1 / $4 per million input / output tokens,
// cached reads $0.10, cache writes $1.25.
var price = llm.Price{Input: 1, Output: 4, CachedInput: 0.1, CacheWrite: 1.25}

func newOpenAI(t *testing.T, srv *fakebatch.Server, mod func(*batch.OpenAIConfig)) *batch.OpenAI {
	t.Helper()
	cfg := batch.OpenAIConfig{APIKey: srv.APIKey(), BaseURL: srv.BaseURL(), Model: "gpt-4o-mini",
		HTTPClient: srv.Client(), Price: price, PriceKnown: true}
	if mod != nil {
		mod(&cfg)
	}
	p, err := batch.NewOpenAI(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func newAnthropic(t *testing.T, srv *fakebatch.Server, mod func(*batch.AnthropicConfig)) *batch.Anthropic {
	t.Helper()
	cfg := batch.AnthropicConfig{APIKey: srv.APIKey(), BaseURL: srv.BaseURL(), Model: "claude-haiku-4-5",
		HTTPClient: srv.Client(), Price: price, PriceKnown: true}
	if mod != nil {
		mod(&cfg)
	}
	p, err := batch.NewAnthropic(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// flavour runs a test against both providers.
type flavour struct {
	name string
	fake func(*testing.T, fakebatch.Options) *fakebatch.Server
	prov func(*testing.T, *fakebatch.Server) batch.Provider
}

var flavours = []flavour{
	{"openai", func(t *testing.T, o fakebatch.Options) *fakebatch.Server { return fakebatch.NewOpenAI(t, o) },
		func(t *testing.T, s *fakebatch.Server) batch.Provider { return newOpenAI(t, s, nil) }},
	{"anthropic", func(t *testing.T, o fakebatch.Options) *fakebatch.Server { return fakebatch.NewAnthropic(t, o) },
		func(t *testing.T, s *fakebatch.Server) batch.Provider { return newAnthropic(t, s, nil) }},
}

// judgeItems builds n judge-like requests with ids item-000, item-001, …
func judgeItems(n int) []batch.Item {
	items := make([]batch.Item, n)
	for i := range items {
		items[i] = batch.Item{CustomID: fmt.Sprintf("item-%03d", i), Req: llm.Request{
			Purpose: llm.PurposeJudge,
			Messages: []llm.Message{
				{Role: llm.RoleSystem, Content: "You are a strict judge."},
				{Role: llm.RoleUser, Content: fmt.Sprintf("Transcript %d: USER: hi\nASSISTANT: hello", i)},
			},
			MaxTokens: 300,
			JSON:      true,
			Seed:      uint64(i),
		}}
	}
	return items
}

// byID indexes results.
func byID(rs []batch.Result) map[string]batch.Result {
	m := map[string]batch.Result{}
	for _, r := range rs {
		m[r.CustomID] = r
	}
	return m
}
