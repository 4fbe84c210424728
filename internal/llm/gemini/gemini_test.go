package gemini_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/impactbench/impactbench/internal/llm"
	"github.com/impactbench/impactbench/internal/llm/gemini"
	"github.com/impactbench/impactbench/internal/llm/llmtest"
)

func newClient(t *testing.T, srv *llmtest.Server, mod func(*gemini.Config)) *gemini.Client {
	t.Helper()
	cfg := gemini.Config{APIKey: srv.APIKey(), BaseURL: srv.BaseURL(), Model: "gemini-2.5-flash", HTTPClient: srv.Client()}
	if mod != nil {
		mod(&cfg)
	}
	c, err := gemini.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestRequestShape(t *testing.T) {
	srv := llmtest.NewGemini(t)
	temp := 0.7
	c := newClient(t, srv, func(c *gemini.Config) {
		c.ExtraHeaders = map[string]string{"X-Extra": "1"}
		c.StructuredOutputs = true
		c.Temperature = &temp
	})
	schema := map[string]any{"type": "object"}
	req := llm.Request{
		JSON: true, Schema: schema, MaxTokens: 512,
		Messages: []llm.Message{
			{Role: llm.RoleSystem, Content: "sys"},
			{Role: llm.RoleAssistant, Content: "opening"},
			{Role: llm.RoleUser, Content: "a"},
			{Role: llm.RoleUser, Content: "b"},
		},
	}
	if _, err := c.Complete(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	r := srv.Last()
	if r.Path != "/v1beta/models/gemini-2.5-flash:generateContent" {
		t.Errorf("path = %q", r.Path)
	}
	if r.Header.Get("X-Goog-Api-Key") != srv.APIKey() || r.Header.Get("X-Extra") != "1" {
		t.Errorf("headers: %v", r.Header)
	}
	if strings.Contains(r.Path+"?"+r.Header.Get("X-Goog-Api-Key"), "key=") {
		t.Error("key must travel in the header, not the URL")
	}
	want := []llm.Message{
		{Role: llm.RoleUser, Content: llm.ConversationStart},
		{Role: llm.RoleAssistant, Content: "opening"},
		{Role: llm.RoleUser, Content: "a\n\nb"},
	}
	if diff := cmp.Diff(want, r.Chat.Messages); diff != "" {
		t.Errorf("contents (-want +got):\n%s", diff)
	}
	if r.Chat.System != "sys" || r.Chat.MaxTokens != 512 || !r.Chat.JSON || r.Chat.Schema["type"] != "object" {
		t.Errorf("chat = %+v", r.Chat)
	}
	if r.Chat.Temperature == nil || *r.Chat.Temperature < 0.69 || *r.Chat.Temperature > 0.71 {
		t.Errorf("temperature = %v", r.Chat.Temperature)
	}
	roles := []string{}
	for _, c := range r.Body["contents"].([]any) {
		roles = append(roles, c.(map[string]any)["role"].(string))
	}
	if diff := cmp.Diff([]string{"user", "model", "user"}, roles); diff != "" {
		t.Errorf("wire roles (-want +got):\n%s", diff)
	}
}

func TestUsageMapping(t *testing.T) {
	srv := llmtest.NewGemini(t)
	srv.Enqueue(llmtest.Text("hi", llmtest.Usage{Input: 3000, Cached: 2048, Output: 900, Reasoning: 800}))
	resp, err := newClient(t, srv, nil).Complete(t.Context(), llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "q"}}})
	if err != nil {
		t.Fatal(err)
	}
	// 100 candidate tokens + 800 thoughts are all billed as output.
	want := llm.Usage{Requests: 1, InputTokens: 3000, CachedInputTokens: 2048, OutputTokens: 900, ReasoningTokens: 800}
	if diff := cmp.Diff(want, resp.Usage); diff != "" {
		t.Errorf("usage (-want +got):\n%s", diff)
	}
	if resp.Text != "hi" || resp.FinishReason != "STOP" || resp.RequestID != "req_1" {
		t.Errorf("resp = %+v", resp)
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
		{"429 per minute with RetryInfo", llmtest.GeminiError(429, "RESOURCE_EXHAUSTED", "quota",
			llmtest.QuotaFailure("GenerateContentInputTokensPerModelPerMinute-FreeTier"), llmtest.RetryInfo("26s")),
			llm.KindRateLimit, 26 * time.Second, ""},
		{"429 per day", llmtest.GeminiError(429, "RESOURCE_EXHAUSTED", "quota",
			llmtest.QuotaFailure("GenerateRequestsPerDayPerProjectPerModel-FreeTier"), llmtest.RetryInfo("3600s")),
			llm.KindQuota, 0, "per-day"},
		{"400 bad key", llmtest.GeminiError(400, "INVALID_ARGUMENT", "API key not valid. Please pass a valid API key.",
			map[string]any{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID"}), llm.KindAuth, 0, "KEYFIELD"},
		{"400", llmtest.GeminiError(400, "INVALID_ARGUMENT", "bad"), llm.KindBadRequest, 0, ""},
		{"403", llmtest.GeminiError(403, "PERMISSION_DENIED", "denied"), llm.KindAuth, 0, "KEYFIELD"},
		{"404", llmtest.GeminiError(404, "NOT_FOUND", "models/x is not found"), llm.KindBadRequest, 0, "model name"},
		{"500", llmtest.GeminiError(500, "INTERNAL", "oops"), llm.KindServer, 0, ""},
		{"503", llmtest.GeminiError(503, "UNAVAILABLE", "The model is overloaded."), llm.KindOverloaded, 0, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := llmtest.NewGemini(t)
			srv.Enqueue(tc.reply)
			_, err := newClient(t, srv, func(c *gemini.Config) { c.KeyField = "KEYFIELD" }).Complete(t.Context(), llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "q"}}})
			var e *llm.Error
			if !errors.As(err, &e) {
				t.Fatalf("err = %v (%T)", err, err)
			}
			if e.Kind != tc.kind || e.StatusCode != tc.reply.Status || e.RetryAfter != tc.retryAfter {
				t.Errorf("got %q %d %v, want %q %d %v (%v)", e.Kind, e.StatusCode, e.RetryAfter, tc.kind, tc.reply.Status, tc.retryAfter, e)
			}
			if tc.hint != "" && !strings.Contains(e.Hint, tc.hint) {
				t.Errorf("hint = %q, want %q", e.Hint, tc.hint)
			}
		})
	}
}

func TestEmptyAnswer(t *testing.T) {
	for _, body := range []string{
		`{"candidates":[{"content":{"parts":[],"role":"model"},"finishReason":"SAFETY"}],"usageMetadata":{"promptTokenCount":40,"totalTokenCount":40}}`,
		`{"promptFeedback":{"blockReason":"SAFETY"},"usageMetadata":{"promptTokenCount":40,"totalTokenCount":40}}`,
		`{"candidates":[{"content":{"parts":[{"text":"thinking…","thought":true}],"role":"model"},"finishReason":"MAX_TOKENS"}],"usageMetadata":{"promptTokenCount":40,"thoughtsTokenCount":2048}}`,
	} {
		srv := llmtest.NewGemini(t)
		srv.Enqueue(llmtest.Reply{Body: body})
		_, err := newClient(t, srv, nil).Complete(t.Context(), llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "q"}}})
		var e *llm.Error
		if !errors.As(err, &e) || e.Kind != llm.KindEmpty || e.Usage.InputTokens != 40 {
			t.Errorf("%s: err = %v, want KindEmpty with billed usage", body, err)
		}
	}
}

func TestEnvironmentIsIgnored(t *testing.T) {
	decoy := llmtest.NewGemini(t)
	t.Setenv("GEMINI_API_KEY", "env-gemini-key")
	t.Setenv("GOOGLE_API_KEY", "env-google-key")
	t.Setenv("GOOGLE_GEMINI_BASE_URL", decoy.BaseURL())
	t.Setenv("GOOGLE_GENAI_USE_VERTEXAI", "true")

	srv := llmtest.NewGemini(t)
	if _, err := newClient(t, srv, nil).Complete(t.Context(), llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "q"}}}); err != nil {
		t.Fatal(err)
	}
	if decoy.Calls() != 0 || srv.Calls() != 1 || srv.Last().Header.Get("X-Goog-Api-Key") != srv.APIKey() {
		t.Fatalf("env leaked: configured=%d decoy=%d key=%q", srv.Calls(), decoy.Calls(), srv.Last().Header.Get("X-Goog-Api-Key"))
	}
	// An empty configured key must not fall back to the environment.
	if _, err := gemini.New(gemini.Config{Model: "gemini-2.5-flash"}); llm.KindOf(err) != llm.KindConfig {
		t.Errorf("empty key: err = %v, want config error", err)
	}
}

func TestConnectionDrop(t *testing.T) {
	srv := llmtest.NewGemini(t)
	srv.Enqueue(llmtest.Reply{Drop: true})
	_, err := newClient(t, srv, nil).Complete(t.Context(), llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "q"}}})
	if llm.KindOf(err) != llm.KindConnection {
		t.Fatalf("err = %v, want connection", err)
	}
}
