package stages

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/impactbench/impactbench/internal/llm"
	"github.com/impactbench/impactbench/internal/prompts"
)

// fake is a scripted llm.Client that records every request.
type fake struct {
	mu     sync.Mutex
	reqs   []llm.Request
	answer func(req llm.Request, call int) (llm.Response, error)
}

func (f *fake) Complete(_ context.Context, req llm.Request) (llm.Response, error) {
	f.mu.Lock()
	call := len(f.reqs)
	f.reqs = append(f.reqs, req)
	f.mu.Unlock()
	return f.answer(req, call)
}

func (f *fake) calls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.reqs)
}

// oneUsage is what each fake call costs.
var oneUsage = llm.Usage{Requests: 1, InputTokens: 10, OutputTokens: 5, Cost: 0.001, CostKnown: true}

func ok(text string) (llm.Response, error) { return llm.Response{Text: text, Usage: oneUsage}, nil }

// script answers call i with texts[i] (the last one repeats).
func script(texts ...string) *fake {
	return &fake{answer: func(_ llm.Request, call int) (llm.Response, error) {
		return ok(texts[min(call, len(texts)-1)])
	}}
}

// never fails the test if it is called.
func never(t *testing.T) *fake {
	return &fake{answer: func(req llm.Request, _ int) (llm.Response, error) {
		t.Errorf("unexpected %s call", req.Purpose)
		return llm.Response{}, nil
	}}
}

func loadPrompts(t *testing.T) *prompts.Set {
	t.Helper()
	p, err := prompts.Load("")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// allText is every message and Meta value of a request, for leak checks.
func allText(req llm.Request) string {
	var b strings.Builder
	for _, m := range req.Messages {
		b.WriteString(m.Content)
		b.WriteString("\n")
	}
	for k, v := range req.Meta {
		b.WriteString(k + "=" + v + "\n")
	}
	return b.String()
}

func checkRequest(t *testing.T, req llm.Request, purpose llm.Purpose, metaKeys ...string) {
	t.Helper()
	if req.Purpose != purpose {
		t.Errorf("Purpose = %q, want %q", req.Purpose, purpose)
	}
	if req.MaxTokens < 1024 {
		t.Errorf("%s: MaxTokens = %d, want >= 1024", purpose, req.MaxTokens)
	}
	if req.Seed == 0 {
		t.Errorf("%s: Seed not set", purpose)
	}
	for _, k := range metaKeys {
		if _, ok := req.Meta[k]; !ok {
			t.Errorf("%s: Meta[%q] missing (have %v)", purpose, k, req.Meta)
		}
	}
}
