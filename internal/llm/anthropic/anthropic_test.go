package anthropic_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/impactbench/impactbench/internal/llm"
	"github.com/impactbench/impactbench/internal/llm/anthropic"
	"github.com/impactbench/impactbench/internal/llm/llmtest"
)

func newClient(t *testing.T, srv *llmtest.Server, mod func(*anthropic.Config)) *anthropic.Client {
	t.Helper()
	cfg := anthropic.Config{APIKey: srv.APIKey(), BaseURL: srv.BaseURL(), Model: "claude-haiku-4-5", HTTPClient: srv.Client()}
	if mod != nil {
		mod(&cfg)
	}
	c, err := anthropic.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func S(c string) llm.Message { return llm.Message{Role: llm.RoleSystem, Content: c} }
func U(c string) llm.Message { return llm.Message{Role: llm.RoleUser, Content: c} }
func A(c string) llm.Message { return llm.Message{Role: llm.RoleAssistant, Content: c} }

// cacheMarks lists which system blocks and messages carry cache_control.
func cacheMarks(body map[string]any) (system []int, messages []int) {
	if sys, ok := body["system"].([]any); ok {
		for i, b := range sys {
			if _, ok := b.(map[string]any)["cache_control"]; ok {
				system = append(system, i)
			}
		}
	}
	for i, m := range body["messages"].([]any) {
		for _, b := range m.(map[string]any)["content"].([]any) {
			if _, ok := b.(map[string]any)["cache_control"]; ok {
				messages = append(messages, i)
			}
		}
	}
	return system, messages
}

func TestRequestShape(t *testing.T) {
	conv := []llm.Message{S("be kind"), U("hi"), A("hello"), U("help me")}
	tests := []struct {
		name       string
		req        llm.Request
		wantSystem string
		wantTurns  []llm.Message
		wantMax    float64
		wantSysBP  []int
		wantMsgBP  []int
	}{
		{
			name:       "target dialogue: system top-level, cache on system and on the end of what the next turn re-sends",
			req:        llm.Request{Purpose: llm.PurposeTarget, Cache: llm.Conversation(conv, false), Messages: conv},
			wantSystem: "be kind",
			wantTurns:  []llm.Message{U("hi"), A("hello"), U("help me")},
			wantMax:    2048, wantSysBP: []int{0}, wantMsgBP: []int{2},
		},
		{
			name:       "a conversation's last call reads the previous prompt and writes nothing new",
			req:        llm.Request{Purpose: llm.PurposeTarget, Cache: llm.Conversation(conv, true), Messages: conv},
			wantSystem: "be kind",
			wantTurns:  []llm.Message{U("hi"), A("hello"), U("help me")},
			wantMax:    2048, wantSysBP: []int{0}, wantMsgBP: []int{0},
		},
		{
			name:       "simulated user whose dialogue starts with the assistant gets a kickoff turn",
			req:        llm.Request{Purpose: llm.PurposeUser, MaxTokens: 300, Cache: llm.CachePlan{Write: 3}, Messages: []llm.Message{S("play the user"), A("How can I help?"), U("(continue)")}},
			wantSystem: "play the user",
			wantTurns:  []llm.Message{U(llm.ConversationStart), A("How can I help?"), U("(continue)")},
			wantMax:    300, wantSysBP: []int{0}, wantMsgBP: []int{2},
		},
		{
			name:       "judge: consecutive user turns merged, no cache marks (read once)",
			req:        llm.Request{Purpose: llm.PurposeJudge, Messages: []llm.Message{S("rubric"), U("transcript"), U("score it")}},
			wantSystem: "rubric",
			wantTurns:  []llm.Message{U("transcript\n\nscore it")},
			wantMax:    2048,
		},
		{
			name:      "empty turn replaced (the API rejects empty text)",
			req:       llm.Request{Messages: []llm.Message{U("q"), A(""), U("again")}},
			wantTurns: []llm.Message{U("q"), A("(no content)"), U("again")},
			wantMax:   2048,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := llmtest.NewAnthropic(t)
			c := newClient(t, srv, func(c *anthropic.Config) {
				c.ExtraHeaders = map[string]string{"X-Extra": "1"}
				c.CacheMinTokens = 1 // these prompts are tiny
			})
			if _, err := c.Complete(t.Context(), tc.req); err != nil {
				t.Fatal(err)
			}
			r := srv.Last()
			if r.Path != "/v1/messages" || r.Header.Get("X-Api-Key") != srv.APIKey() ||
				r.Header.Get("Anthropic-Version") != "2023-06-01" || r.Header.Get("X-Extra") != "1" {
				t.Errorf("path/headers wrong: %s %v", r.Path, r.Header)
			}
			if r.Header.Get("Authorization") != "" {
				t.Errorf("Authorization must not be sent to Anthropic: %q", r.Header.Get("Authorization"))
			}
			if r.Chat.System != tc.wantSystem || r.Chat.Model != "claude-haiku-4-5" || float64(r.Chat.MaxTokens) != tc.wantMax {
				t.Errorf("system/model/max = %q/%q/%d", r.Chat.System, r.Chat.Model, r.Chat.MaxTokens)
			}
			if diff := cmp.Diff(tc.wantTurns, r.Chat.Messages); diff != "" {
				t.Errorf("turns (-want +got):\n%s", diff)
			}
			sysBP, msgBP := cacheMarks(r.Body)
			if diff := cmp.Diff(tc.wantSysBP, sysBP); diff != "" {
				t.Errorf("system cache marks (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantMsgBP, msgBP); diff != "" {
				t.Errorf("message cache marks (-want +got):\n%s", diff)
			}
			if _, ok := r.Body["output_config"]; ok {
				t.Error("output_config sent although structured outputs are off")
			}
		})
	}
}

func TestStructuredOutputs(t *testing.T) {
	srv := llmtest.NewAnthropic(t)
	c := newClient(t, srv, func(c *anthropic.Config) { c.StructuredOutputs = true })
	schema := map[string]any{"type": "object", "properties": map[string]any{"a": map[string]any{"type": "string"}}}
	if _, err := c.Complete(t.Context(), llm.Request{Messages: []llm.Message{U("q")}, JSON: true, Schema: schema}); err != nil {
		t.Fatal(err)
	}
	if r := srv.Last(); !r.Chat.JSON || r.Chat.Schema["type"] != "object" {
		t.Errorf("output_config.format not sent: %v", r.Body["output_config"])
	}
}

func TestUsageMapping(t *testing.T) {
	srv := llmtest.NewAnthropic(t)
	// Whole prompt 12000 = 1000 uncached + 9000 read + 2000 written.
	srv.Enqueue(llmtest.Text("fine", llmtest.Usage{Input: 12000, Cached: 9000, CacheWrite: 2000, Output: 150}))
	resp, err := newClient(t, srv, nil).Complete(t.Context(), llm.Request{Messages: []llm.Message{U("q")}})
	if err != nil {
		t.Fatal(err)
	}
	want := llm.Usage{Requests: 1, InputTokens: 12000, CachedInputTokens: 9000, CacheWriteTokens: 2000, OutputTokens: 150}
	if diff := cmp.Diff(want, resp.Usage); diff != "" {
		t.Errorf("usage (-want +got):\n%s", diff)
	}
	if resp.Text != "fine" || resp.FinishReason != "end_turn" || resp.RequestID != "req_1" {
		t.Errorf("resp = %+v", resp)
	}
	if rl := resp.RateLimit; rl == nil || rl.LimitRequests != 4000 || rl.LimitTokens != 2000000 || rl.ResetTokens <= 0 {
		t.Errorf("rate-limit headers not reported: %+v", rl)
	}
}

func TestErrorMapping(t *testing.T) {
	tests := []struct {
		name       string
		reply      llmtest.Reply
		kind       llm.ErrorKind
		retryAfter time.Duration
		hint       string
	}{
		{"400", llmtest.AnthropicError(400, "invalid_request_error", "messages: bad"), llm.KindBadRequest, 0, ""},
		{"400 low credit", llmtest.AnthropicError(400, "invalid_request_error", "Your credit balance is too low to access the Anthropic API."), llm.KindQuota, 0, "add credit"},
		{"401", llmtest.AnthropicError(401, "authentication_error", "invalid x-api-key"), llm.KindAuth, 0, "KEYFIELD"},
		{"402", llmtest.AnthropicError(402, "billing_error", "billing"), llm.KindQuota, 0, "add credit"},
		{"403", llmtest.AnthropicError(403, "permission_error", "no"), llm.KindAuth, 0, "KEYFIELD"},
		{"404", llmtest.AnthropicError(404, "not_found_error", "model: x"), llm.KindBadRequest, 0, "model name"},
		{"413", llmtest.AnthropicError(413, "request_too_large", "too big"), llm.KindBadRequest, 0, "too large"},
		{"429", llmtest.AnthropicError(429, "rate_limit_error", "slow").WithHeader("retry-after", "12"), llm.KindRateLimit, 12 * time.Second, ""},
		{"500", llmtest.AnthropicError(500, "api_error", "oops"), llm.KindServer, 0, ""},
		{"529", llmtest.AnthropicError(529, "overloaded_error", "Overloaded"), llm.KindOverloaded, 0, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := llmtest.NewAnthropic(t)
			srv.Enqueue(tc.reply.WithHeader("request-id", "req_err_1"))
			_, err := newClient(t, srv, func(c *anthropic.Config) { c.KeyField = "KEYFIELD" }).Complete(t.Context(), llm.Request{Messages: []llm.Message{U("q")}})
			var e *llm.Error
			if !errors.As(err, &e) {
				t.Fatalf("err = %v (%T)", err, err)
			}
			if e.Kind != tc.kind || e.StatusCode != tc.reply.Status || e.RetryAfter != tc.retryAfter || e.RequestID != "req_err_1" {
				t.Errorf("got %q %d %v %q, want %q %d %v (%v)", e.Kind, e.StatusCode, e.RetryAfter, e.RequestID, tc.kind, tc.reply.Status, tc.retryAfter, e)
			}
			if e.Message == "" || strings.HasPrefix(e.Message, "{") {
				t.Errorf("message should be the provider's text, got %q", e.Message)
			}
			if tc.hint != "" && !strings.Contains(e.Hint, tc.hint) {
				t.Errorf("hint = %q, want %q", e.Hint, tc.hint)
			}
		})
	}
}

func TestEmptyAndRefusal(t *testing.T) {
	for _, reply := range []llmtest.Reply{
		{Text: "", Usage: &llmtest.Usage{Input: 50, Output: 0}},
		{Refusal: "x", Text: "", Usage: &llmtest.Usage{Input: 50, Output: 3}},
		{Text: "", FinishReason: "max_tokens", Usage: &llmtest.Usage{Input: 50, Output: 2048}},
	} {
		srv := llmtest.NewAnthropic(t)
		srv.Enqueue(reply)
		_, err := newClient(t, srv, nil).Complete(t.Context(), llm.Request{Messages: []llm.Message{U("q")}})
		var e *llm.Error
		if !errors.As(err, &e) || e.Kind != llm.KindEmpty || e.Usage.InputTokens != 50 {
			t.Errorf("reply %+v: err = %v, want KindEmpty with billed usage", reply, err)
		}
	}
}

func TestEnvironmentIsIgnored(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
	}{
		{"api key and base url", map[string]string{"ANTHROPIC_API_KEY": "sk-ant-from-env", "ANTHROPIC_AUTH_TOKEN": "token-from-env"}},
		// Without an env API key the SDK's defaults would add the auth token
		// as an Authorization header next to our x-api-key.
		{"auth token only", map[string]string{"ANTHROPIC_API_KEY": "", "ANTHROPIC_AUTH_TOKEN": "token-from-env"}},
		{"custom headers", map[string]string{"ANTHROPIC_API_KEY": "", "ANTHROPIC_AUTH_TOKEN": "", "ANTHROPIC_CUSTOM_HEADERS": "X-From-Env: 1"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			decoy := llmtest.NewAnthropic(t)
			t.Setenv("ANTHROPIC_BASE_URL", decoy.BaseURL())
			t.Setenv("ANTHROPIC_PROFILE", "")
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			srv := llmtest.NewAnthropic(t)
			if _, err := newClient(t, srv, nil).Complete(t.Context(), llm.Request{Messages: []llm.Message{U("q")}}); err != nil {
				t.Fatal(err)
			}
			if decoy.Calls() != 0 || srv.Calls() != 1 {
				t.Fatalf("calls: configured=%d env=%d", srv.Calls(), decoy.Calls())
			}
			h := srv.Last().Header
			if h.Get("X-Api-Key") != srv.APIKey() || h.Get("Authorization") != "" || h.Get("X-From-Env") != "" {
				t.Errorf("environment leaked into headers: %v", h)
			}
		})
	}
}

func TestNewRequiresKey(t *testing.T) {
	_, err := anthropic.New(anthropic.Config{Model: "claude-haiku-4-5", KeyField: "apikey of user_model"})
	var e *llm.Error
	if !errors.As(err, &e) || e.Kind != llm.KindConfig || !strings.Contains(e.Hint, "apikey of user_model") {
		t.Fatalf("err = %v", err)
	}
}

// Breakpoints go only on prefixes of at least the model's minimum, with
// the configured lifetime; one-hour writes are priced at 2× input.
func TestCacheMinimumAndLifetime(t *testing.T) {
	long := strings.Repeat("x", 3*1100) // ≈1,100 tokens by llm.PromptTokens
	conv := []llm.Message{S(long), U("hi"), A("hello"), U("help me")}
	tests := []struct {
		name      string
		model     string
		min       int
		ttl       string
		wantSysBP []int
		wantMsgBP []int
	}{
		{"Sonnet: 1,024 by default, system and prefix marked", "claude-sonnet-4-6", 0, "", []int{0}, []int{2}},
		{"Haiku 4.5: 4,096 by default, nothing marked", "claude-haiku-4-5", 0, "", nil, nil},
		{"configured minimum wins", "claude-haiku-4-5", 1024, "", []int{0}, []int{2}},
		{"one-hour lifetime", "claude-sonnet-4-6", 0, "1h", []int{0}, []int{2}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := llmtest.NewAnthropic(t)
			srv.Handle(func(llmtest.ChatRequest) llmtest.Reply {
				return llmtest.Text("ok", llmtest.Usage{Input: 1200, Output: 1, CacheWrite: 1000, CacheWriteLong: 1000, Cached: 100})
			})
			c := newClient(t, srv, func(c *anthropic.Config) { c.Model, c.CacheMinTokens, c.CacheTTL = tc.model, tc.min, tc.ttl })
			resp, err := c.Complete(t.Context(), llm.Request{Purpose: llm.PurposeTarget, Cache: llm.Conversation(conv, false), Messages: conv})
			if err != nil {
				t.Fatal(err)
			}
			body := srv.Last().Body
			sysBP, msgBP := cacheMarks(body)
			if !cmp.Equal(sysBP, tc.wantSysBP) || !cmp.Equal(msgBP, tc.wantMsgBP) {
				t.Errorf("marks system %v messages %v, want %v %v", sysBP, msgBP, tc.wantSysBP, tc.wantMsgBP)
			}
			if tc.ttl != "" {
				sys := body["system"].([]any)[0].(map[string]any)["cache_control"].(map[string]any)
				if sys["ttl"] != tc.ttl {
					t.Errorf("ttl %v, want %q", sys["ttl"], tc.ttl)
				}
			}
			if u := resp.Usage; u.CacheWriteTokens != 1000 || u.CacheWriteLongTokens != 1000 || u.CachedInputTokens != 100 {
				t.Errorf("usage %+v", u)
			}
		})
	}
	p := llm.Price{Input: 1, Output: 1, CachedInput: 0.1, CacheWrite: 1.25}
	short := p.Cost(llm.Usage{InputTokens: 1e6, CacheWriteTokens: 1e6}, false)
	hour := p.Cost(llm.Usage{InputTokens: 1e6, CacheWriteTokens: 1e6, CacheWriteLongTokens: 1e6}, false)
	if short != 1.25 || hour != 2 {
		t.Errorf("cache writes cost %v (5 min) and %v (1 h), want 1.25 and 2", short, hour)
	}
}
