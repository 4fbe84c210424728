package openai_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/impactbench/impactbench/internal/llm"
	"github.com/impactbench/impactbench/internal/llm/llmtest"
	"github.com/impactbench/impactbench/internal/llm/openai"
)

func newClient(t *testing.T, srv *llmtest.Server, mod func(*openai.Config)) *openai.Client {
	t.Helper()
	cfg := openai.Config{Provider: "openai", APIKey: srv.APIKey(), BaseURL: srv.BaseURL(), Model: "gpt-4o-mini", HTTPClient: srv.Client()}
	if mod != nil {
		mod(&cfg)
	}
	c, err := openai.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

var dialogue = []llm.Message{
	{Role: llm.RoleSystem, Content: "You are terse."},
	{Role: llm.RoleUser, Content: "Hi"},
	{Role: llm.RoleAssistant, Content: "Hello."},
	{Role: llm.RoleUser, Content: "Bye"},
}

func TestRequestShape(t *testing.T) {
	temp := 0.3
	tests := []struct {
		name     string
		dialect  openai.Dialect
		req      llm.Request
		wantMCT  any // max_completion_tokens in the body (nil = absent)
		wantMT   any // max_tokens
		wantType any // response_format.type
	}{
		{"openai default cap", openai.DialectOpenAI, llm.Request{Messages: dialogue}, 2048.0, nil, nil},
		{"compatible uses max_tokens", openai.DialectCompatible, llm.Request{Messages: dialogue, MaxTokens: 100}, nil, 100.0, nil},
		{"json object", openai.DialectOpenAI, llm.Request{Messages: dialogue, JSON: true}, 2048.0, nil, "json_object"},
		{"schema on openai", openai.DialectOpenAI, llm.Request{Messages: dialogue, JSON: true, SchemaName: "gen metrics!", Schema: map[string]any{"type": "object"}}, 2048.0, nil, "json_schema"},
		{"schema on compatible falls back", openai.DialectCompatible, llm.Request{Messages: dialogue, Schema: map[string]any{"type": "object"}}, nil, 2048.0, "json_object"},
		{"temperature", openai.DialectOpenAI, llm.Request{Messages: dialogue, Temperature: &temp}, 2048.0, nil, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := llmtest.NewOpenAI(t)
			c := newClient(t, srv, func(cfg *openai.Config) {
				cfg.Dialect = tc.dialect
				cfg.ExtraHeaders = map[string]string{"User-Agent": "Test", "X-Extra": "1"}
			})
			if _, err := c.Complete(t.Context(), tc.req); err != nil {
				t.Fatal(err)
			}
			r := srv.Last()
			if r.Path != "/v1/chat/completions" {
				t.Errorf("path = %q", r.Path)
			}
			if got := r.Header.Get("Authorization"); got != "Bearer "+srv.APIKey() {
				t.Errorf("Authorization = %q", got)
			}
			if r.Header.Get("X-Extra") != "1" || r.Header.Get("User-Agent") != "Test" {
				t.Errorf("extra headers missing: %v", r.Header)
			}
			if r.Body["model"] != "gpt-4o-mini" {
				t.Errorf("model = %v", r.Body["model"])
			}
			msgs := r.Body["messages"].([]any)
			roles := []string{}
			for _, m := range msgs {
				roles = append(roles, m.(map[string]any)["role"].(string))
			}
			if diff := cmp.Diff([]string{"system", "user", "assistant", "user"}, roles); diff != "" {
				t.Errorf("roles (-want +got):\n%s", diff)
			}
			if got := r.Body["max_completion_tokens"]; got != tc.wantMCT {
				t.Errorf("max_completion_tokens = %v, want %v", got, tc.wantMCT)
			}
			if got := r.Body["max_tokens"]; got != tc.wantMT {
				t.Errorf("max_tokens = %v, want %v", got, tc.wantMT)
			}
			var gotType any
			if rf, ok := r.Body["response_format"].(map[string]any); ok {
				gotType = rf["type"]
				if gotType == "json_schema" {
					js := rf["json_schema"].(map[string]any)
					if js["name"] != "gen_metrics_" || js["strict"] != false {
						t.Errorf("json_schema name/strict = %v/%v", js["name"], js["strict"])
					}
				}
			}
			if gotType != tc.wantType {
				t.Errorf("response_format.type = %v, want %v", gotType, tc.wantType)
			}
			if tc.req.Temperature != nil && r.Body["temperature"] != *tc.req.Temperature {
				t.Errorf("temperature = %v", r.Body["temperature"])
			}
			if tc.req.Temperature == nil && r.Body["temperature"] != nil {
				t.Errorf("temperature sent although unset: %v", r.Body["temperature"])
			}
			if _, ok := r.Body["seed"]; ok {
				t.Error("seed must not be sent (it is a cache key, not a provider parameter)")
			}
		})
	}
}

func TestDialectAuto(t *testing.T) {
	// A non-OpenAI host (the fake) is treated as OpenAI-compatible.
	srv := llmtest.NewOpenAI(t)
	c := newClient(t, srv, nil)
	if _, err := c.Complete(t.Context(), llm.Request{Messages: dialogue}); err != nil {
		t.Fatal(err)
	}
	if _, ok := srv.Last().Body["max_tokens"]; !ok {
		t.Errorf("auto dialect on a non-OpenAI host should send max_tokens: %v", srv.Last().Body)
	}
}

func TestUsageMapping(t *testing.T) {
	srv := llmtest.NewOpenAI(t)
	srv.Enqueue(llmtest.Text("answer", llmtest.Usage{Input: 5000, Output: 700, Cached: 4096, Reasoning: 512}))
	resp, err := newClient(t, srv, nil).Complete(t.Context(), llm.Request{Messages: dialogue})
	if err != nil {
		t.Fatal(err)
	}
	want := llm.Usage{Requests: 1, InputTokens: 5000, OutputTokens: 700, CachedInputTokens: 4096, ReasoningTokens: 512}
	if diff := cmp.Diff(want, resp.Usage); diff != "" {
		t.Errorf("usage (-want +got):\n%s", diff)
	}
	if resp.Text != "answer" || resp.FinishReason != "stop" || resp.RequestID != "req_1" || resp.Model != "gpt-4o-mini" {
		t.Errorf("resp = %+v", resp)
	}
	if rl := resp.RateLimit; rl == nil || rl.LimitRequests != 10000 || rl.RemainingTokens != 1999000 || rl.ResetRequests != 6*time.Millisecond {
		t.Errorf("rate-limit headers not reported: %+v", rl)
	}
}

func TestErrorMapping(t *testing.T) {
	tests := []struct {
		name       string
		reply      llmtest.Reply
		kind       llm.ErrorKind
		code       string
		retryAfter time.Duration
		hint       string // substring
	}{
		{"400", llmtest.OpenAIError(400, "invalid_request_error", "", "bad param"), llm.KindBadRequest, "invalid_request_error", 0, ""},
		{"401", llmtest.OpenAIError(401, "invalid_request_error", "invalid_api_key", "Incorrect API key"), llm.KindAuth, "invalid_api_key", 0, "OPENAI_KEY_FIELD"},
		{"403", llmtest.OpenAIError(403, "permission_error", "", "region"), llm.KindAuth, "permission_error", 0, "OPENAI_KEY_FIELD"},
		{"404", llmtest.OpenAIError(404, "invalid_request_error", "model_not_found", "no such model"), llm.KindBadRequest, "model_not_found", 0, "model name and base_url"},
		{"422", llmtest.OpenAIError(422, "invalid_request_error", "", "unprocessable"), llm.KindBadRequest, "invalid_request_error", 0, ""},
		{"429 rate limit ms", llmtest.OpenAIError(429, "requests", "rate_limit_exceeded", "slow down").WithHeader("retry-after-ms", "1500").WithHeader("retry-after", "9"), llm.KindRateLimit, "rate_limit_exceeded", 1500 * time.Millisecond, ""},
		{"429 rate limit s", llmtest.OpenAIError(429, "tokens", "rate_limit_exceeded", "slow down").WithHeader("retry-after", "3"), llm.KindRateLimit, "rate_limit_exceeded", 3 * time.Second, ""},
		{"429 insufficient quota", llmtest.OpenAIError(429, "insufficient_quota", "insufficient_quota", "You exceeded your current quota"), llm.KindQuota, "insufficient_quota", 0, "add credit"},
		{"402 openrouter numeric code", llmtest.Reply{Status: 402, Body: `{"error":{"code":402,"message":"Insufficient credits","metadata":{"limit_source":"key"}}}`}, llm.KindQuota, "402", 0, "credit"},
		{"408", llmtest.OpenAIError(408, "timeout", "", "timeout"), llm.KindServer, "timeout", 0, ""},
		{"409", llmtest.OpenAIError(409, "conflict", "", "conflict"), llm.KindServer, "conflict", 0, ""},
		{"500", llmtest.OpenAIError(500, "server_error", "", "oops"), llm.KindServer, "server_error", 0, ""},
		{"502 html", llmtest.Reply{Status: 502, Body: "<html>bad gateway</html>"}, llm.KindServer, "", 0, ""},
		{"503", llmtest.OpenAIError(503, "server_error", "", "overloaded"), llm.KindOverloaded, "server_error", 0, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := llmtest.NewOpenAI(t)
			srv.Enqueue(tc.reply)
			_, err := newClient(t, srv, func(c *openai.Config) { c.KeyField = "OPENAI_KEY_FIELD" }).Complete(t.Context(), llm.Request{Messages: dialogue})
			var e *llm.Error
			if !errors.As(err, &e) {
				t.Fatalf("err = %v (%T), want *llm.Error", err, err)
			}
			if e.Kind != tc.kind || e.StatusCode != tc.reply.Status || e.Code != tc.code || e.RetryAfter != tc.retryAfter {
				t.Errorf("got kind=%q status=%d code=%q retryAfter=%v; want %q %d %q %v (%v)",
					e.Kind, e.StatusCode, e.Code, e.RetryAfter, tc.kind, tc.reply.Status, tc.code, tc.retryAfter, e)
			}
			if tc.hint != "" && !strings.Contains(e.Hint, tc.hint) {
				t.Errorf("hint = %q, want it to mention %q", e.Hint, tc.hint)
			}
			if e.RequestID != "req_1" || e.Provider != "openai" || e.Model != "gpt-4o-mini" || e.Usage.Requests != 1 {
				t.Errorf("error context missing: %+v", e)
			}
		})
	}
}

func TestErrorsInsideSuccessfulResponses(t *testing.T) {
	tests := []struct {
		name  string
		reply llmtest.Reply
		kind  llm.ErrorKind
		usage int // input tokens kept on the error
	}{
		{"openrouter error in 200 body", llmtest.Reply{Body: `{"error":{"code":502,"message":"Provider returned error"},"user_id":"u"}`}, llm.KindServer, 0},
		{"openrouter 429 in 200 body", llmtest.Reply{Body: `{"error":{"code":429,"message":"Rate limited upstream"}}`}, llm.KindRateLimit, 0},
		{"error inside choice", llmtest.Reply{Body: `{"id":"x","object":"chat.completion","model":"m","choices":[{"index":0,"finish_reason":"error","message":{"role":"assistant","content":""},"error":{"code":503,"message":"upstream down"}}],"usage":{"prompt_tokens":7,"completion_tokens":0,"total_tokens":7}}`}, llm.KindOverloaded, 7},
		{"null content", llmtest.Text("", llmtest.Usage{Input: 40, Output: 2048, Reasoning: 2048}).WithHeader("x", "y"), llm.KindEmpty, 40},
		{"refusal", llmtest.Reply{Refusal: "I can't help with that.", Usage: &llmtest.Usage{Input: 30, Output: 8}}, llm.KindEmpty, 30},
		{"no choices", llmtest.Reply{Body: `{"id":"x","object":"chat.completion","model":"m","choices":[]}`}, llm.KindEmpty, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := llmtest.NewOpenAI(t)
			srv.Enqueue(tc.reply)
			resp, err := newClient(t, srv, nil).Complete(t.Context(), llm.Request{Messages: dialogue})
			var e *llm.Error
			if !errors.As(err, &e) || e.Kind != tc.kind {
				t.Fatalf("err = %v, want kind %q", err, tc.kind)
			}
			if e.Usage.InputTokens != tc.usage || e.Usage.Requests != 1 {
				t.Errorf("billed usage of the failed call = %+v, want input %d", e.Usage, tc.usage)
			}
			if resp.Usage != (llm.Usage{}) {
				t.Errorf("usage must be on the error only (else callers count it twice): %+v", resp.Usage)
			}
		})
	}
}

func TestConnectionDrop(t *testing.T) {
	srv := llmtest.NewOpenAI(t)
	srv.Enqueue(llmtest.Reply{Drop: true})
	_, err := newClient(t, srv, nil).Complete(t.Context(), llm.Request{Messages: dialogue})
	if llm.KindOf(err) != llm.KindConnection {
		t.Fatalf("err = %v, want connection", err)
	}
}

func TestEnvironmentIsIgnored(t *testing.T) {
	decoy := llmtest.NewOpenAI(t) // must never be called
	t.Setenv("OPENAI_BASE_URL", decoy.BaseURL())
	t.Setenv("OPENAI_API_KEY", "sk-from-env-should-not-be-used")
	t.Setenv("OPENAI_ORG_ID", "org-env")
	t.Setenv("OPENAI_PROJECT_ID", "proj-env")
	t.Setenv("OPENAI_CUSTOM_HEADERS", "X-From-Env: 1")

	srv := llmtest.NewOpenAI(t)
	if _, err := newClient(t, srv, nil).Complete(t.Context(), llm.Request{Messages: dialogue}); err != nil {
		t.Fatal(err)
	}
	if decoy.Calls() != 0 || srv.Calls() != 1 {
		t.Fatalf("calls: configured=%d env=%d", srv.Calls(), decoy.Calls())
	}
	h := srv.Last().Header
	for _, k := range []string{"OpenAI-Organization", "OpenAI-Project", "X-From-Env"} {
		if h.Get(k) != "" {
			t.Errorf("header %s leaked from the environment: %q", k, h.Get(k))
		}
	}
	if h.Get("Authorization") != "Bearer "+srv.APIKey() {
		t.Errorf("Authorization = %q", h.Get("Authorization"))
	}
}

func TestNoKeySendsNoAuthorization(t *testing.T) {
	srv := llmtest.NewOpenAI(t)
	srv.SetAPIKey("")
	c := newClient(t, srv, func(c *openai.Config) { c.APIKey = ""; c.Provider = "ollama" })
	if _, err := c.Complete(t.Context(), llm.Request{Messages: dialogue}); err != nil {
		t.Fatal(err)
	}
	if got := srv.Last().Header.Get("Authorization"); got != "" {
		t.Errorf("Authorization = %q, want none", got)
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	for _, cfg := range []openai.Config{{Model: ""}, {Model: "m", BaseURL: "not a url"}} {
		if _, err := openai.New(cfg); llm.KindOf(err) != llm.KindConfig {
			t.Errorf("New(%+v) err = %v, want config", cfg, err)
		}
	}
}

func TestSchemaName(t *testing.T) {
	tests := map[string]string{
		"":                       "output",
		"gen_metrics":            "gen_metrics",
		"landmark check/v2":      "landmark_check_v2",
		strings.Repeat("a", 100): strings.Repeat("a", 64),
	}
	for in, want := range tests {
		if got := openai.SchemaName(in); got != want {
			t.Errorf("SchemaName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestStrictCompatible(t *testing.T) {
	obj := func(props map[string]any, required []any, ap any) map[string]any {
		m := map[string]any{"type": "object", "properties": props, "required": required}
		if ap != nil {
			m["additionalProperties"] = ap
		}
		return m
	}
	str := map[string]any{"type": "string"}
	tests := []struct {
		name   string
		schema map[string]any
		want   bool
	}{
		{"strict object", obj(map[string]any{"a": str}, []any{"a"}, false), true},
		{"optional property", obj(map[string]any{"a": str, "b": str}, []any{"a"}, false), false},
		{"additional properties allowed", obj(map[string]any{"a": str}, []any{"a"}, nil), false},
		{"map type", obj(map[string]any{"m": map[string]any{"type": "object", "additionalProperties": str}}, []any{"m"}, false), false},
		{"nested strict array", obj(map[string]any{"xs": map[string]any{"type": []any{"null", "array"}, "items": obj(map[string]any{"a": str}, []any{"a"}, false)}}, []any{"xs"}, false), true},
		{"nested loose", obj(map[string]any{"xs": map[string]any{"type": "array", "items": obj(map[string]any{"a": str}, []any{}, false)}}, []any{"xs"}, false), false},
		{"oneOf", map[string]any{"type": "object", "oneOf": []any{}, "additionalProperties": false}, false},
		{"root not object", map[string]any{"type": "array"}, false},
	}
	for _, tc := range tests {
		if got := openai.StrictCompatible(tc.schema); got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestStrictSchemaIsSentStrict(t *testing.T) {
	srv := llmtest.NewOpenAI(t)
	c := newClient(t, srv, func(c *openai.Config) { c.Dialect = openai.DialectOpenAI })
	schema := map[string]any{"type": "object", "additionalProperties": false,
		"properties": map[string]any{"a": map[string]any{"type": "string"}}, "required": []any{"a"}}
	if _, err := c.Complete(t.Context(), llm.Request{Messages: dialogue, JSON: true, Schema: schema, SchemaName: "judge"}); err != nil {
		t.Fatal(err)
	}
	js := srv.Last().Body["response_format"].(map[string]any)["json_schema"].(map[string]any)
	if js["strict"] != true || js["name"] != "judge" || js["schema"] == nil {
		t.Errorf("json_schema = %v", js)
	}
}

func TestConcurrentUse(t *testing.T) {
	srv := llmtest.NewOpenAI(t)
	srv.HandleText(func(r llmtest.ChatRequest) string { return "echo " + r.LastUser() })
	c := newClient(t, srv, nil)
	errs := make(chan error, 20)
	for i := range 20 {
		go func() {
			msg := "m" + strings.Repeat("x", i)
			resp, err := c.Complete(t.Context(), llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: msg}}})
			if err == nil && resp.Text != "echo "+msg {
				err = errors.New("wrong answer " + resp.Text)
			}
			errs <- err
		}()
	}
	for range 20 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	if srv.Calls() != 20 {
		t.Errorf("calls = %d", srv.Calls())
	}
}
