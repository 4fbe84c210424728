package llm_test

// Optional contract tests against Steady, a request validator that checks
// requests against the providers' OpenAPI specs (see
// shared/reference/providers-and-performance.md §3.4 and shared/contracts/).
// They are skipped unless the validator's base URL is given:
//
//	IMPACTBENCH_STEADY_OPENAI_URL=http://127.0.0.1:4010     (openai-openapi.yaml; no /v1)
//	IMPACTBENCH_STEADY_ANTHROPIC_URL=http://127.0.0.1:4011  (patched anthropic-openapi.json)
//
// Steady answers random schema-valid bodies, so only the request verdict
// (x-steady-request-valid) is checked, not the parsed answer.

import (
	"net/http"
	"os"
	"sync"
	"testing"

	"github.com/impactbench/impactbench/internal/llm"
	"github.com/impactbench/impactbench/internal/llm/anthropic"
	"github.com/impactbench/impactbench/internal/llm/openai"
)

// verdicts records Steady's verdict headers of every response.
type verdicts struct {
	next http.RoundTripper
	mu   sync.Mutex
	got  []http.Header
}

func (v *verdicts) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := v.next.RoundTrip(r)
	if err == nil {
		v.mu.Lock()
		v.got = append(v.got, resp.Header.Clone())
		v.mu.Unlock()
	}
	return resp, err
}

func (v *verdicts) check(t *testing.T) {
	t.Helper()
	v.mu.Lock()
	defer v.mu.Unlock()
	if len(v.got) == 0 {
		t.Fatal("no response from the validator")
	}
	for i, h := range v.got {
		if h.Get("X-Steady-Request-Valid") != "true" {
			t.Errorf("request %d rejected by the spec: %v", i, h)
		}
	}
}

var contractRequests = []llm.Request{
	{Purpose: llm.PurposeTarget, Messages: []llm.Message{{Role: llm.RoleSystem, Content: "sys"}, {Role: llm.RoleUser, Content: "hi"}, {Role: llm.RoleAssistant, Content: "hello"}, {Role: llm.RoleUser, Content: "more"}}},
	{Purpose: llm.PurposeUser, Messages: []llm.Message{{Role: llm.RoleSystem, Content: "play a user"}, {Role: llm.RoleAssistant, Content: "How can I help?"}, {Role: llm.RoleUser, Content: "go on"}}},
	{Purpose: llm.PurposeJudge, JSON: true, SchemaName: "judge", Schema: map[string]any{"type": "object", "additionalProperties": false,
		"properties": map[string]any{"score": map[string]any{"type": "integer"}}, "required": []any{"score"}},
		Messages: []llm.Message{{Role: llm.RoleSystem, Content: "Answer in JSON"}, {Role: llm.RoleUser, Content: "score it"}}},
}

func TestContractOpenAISteady(t *testing.T) {
	base := os.Getenv("IMPACTBENCH_STEADY_OPENAI_URL")
	if base == "" {
		t.Skip("IMPACTBENCH_STEADY_OPENAI_URL not set")
	}
	for _, d := range []openai.Dialect{openai.DialectOpenAI, openai.DialectCompatible} {
		v := &verdicts{next: http.DefaultTransport}
		c, err := openai.New(openai.Config{APIKey: "sk-test", BaseURL: base, Model: "gpt-4o-mini", Dialect: d,
			HTTPClient: &http.Client{Transport: v}})
		if err != nil {
			t.Fatal(err)
		}
		for _, req := range contractRequests {
			_, _ = c.Complete(t.Context(), req) // random bodies may not parse; the verdict is what counts
		}
		v.check(t)
	}
}

func TestContractAnthropicSteady(t *testing.T) {
	base := os.Getenv("IMPACTBENCH_STEADY_ANTHROPIC_URL")
	if base == "" {
		t.Skip("IMPACTBENCH_STEADY_ANTHROPIC_URL not set")
	}
	v := &verdicts{next: http.DefaultTransport}
	c, err := anthropic.New(anthropic.Config{APIKey: "sk-ant-test", BaseURL: base, Model: "claude-haiku-4-5",
		HTTPClient: &http.Client{Transport: v}})
	if err != nil {
		t.Fatal(err)
	}
	for _, req := range contractRequests {
		_, _ = c.Complete(t.Context(), req) // random bodies may not parse; the verdict is what counts
	}
	v.check(t)
}
