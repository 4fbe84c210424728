package llm_test

// End-to-end tests of the provider-neutral layers (retry, per-call timeout,
// logging, cost, CompleteJSON) over the real adapters talking to the fake
// servers in llmtest.

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/impactbench/impactbench/internal/llm"
	"github.com/impactbench/impactbench/internal/llm/anthropic"
	"github.com/impactbench/impactbench/internal/llm/gemini"
	"github.com/impactbench/impactbench/internal/llm/llmtest"
	"github.com/impactbench/impactbench/internal/llm/openai"
)

type flavor struct {
	name    string
	server  func(testing.TB) *llmtest.Server
	adapter func(t *testing.T, srv *llmtest.Server, key string) llm.Client
	model   string
	// Replies in the flavor's own wire format.
	rateLimit  func(retryAfter string) llmtest.Reply
	server500  llmtest.Reply
	overloaded llmtest.Reply
	badRequest llmtest.Reply
	auth       llmtest.Reply
	forbidden  llmtest.Reply
	notFound   llmtest.Reply
	quota      llmtest.Reply // billing: never retried
}

var flavors = []flavor{
	{
		name:   "openai",
		server: func(t testing.TB) *llmtest.Server { return llmtest.NewOpenAI(t) },
		adapter: func(t *testing.T, srv *llmtest.Server, key string) llm.Client {
			c, err := openai.New(openai.Config{APIKey: key, BaseURL: srv.BaseURL(), Model: "gpt-4o-mini", HTTPClient: srv.Client(),
				ExtraHeaders: map[string]string{"User-Agent": "Test"}})
			if err != nil {
				t.Fatal(err)
			}
			return c
		},
		model: "gpt-4o-mini",
		rateLimit: func(ra string) llmtest.Reply {
			return llmtest.OpenAIError(429, "requests", "rate_limit_exceeded", "Rate limit reached").WithHeader("retry-after", ra)
		},
		server500:  llmtest.OpenAIError(500, "server_error", "", "The server had an error"),
		overloaded: llmtest.OpenAIError(503, "server_error", "", "overloaded"),
		badRequest: llmtest.OpenAIError(400, "invalid_request_error", "", "bad"),
		auth:       llmtest.OpenAIError(401, "invalid_request_error", "invalid_api_key", "Incorrect API key"),
		forbidden:  llmtest.OpenAIError(403, "permission_error", "unsupported_country_region_territory", "Country not supported"),
		notFound:   llmtest.OpenAIError(404, "invalid_request_error", "model_not_found", "The model does not exist"),
		quota:      llmtest.OpenAIError(429, "insufficient_quota", "insufficient_quota", "You exceeded your current quota"),
	},
	{
		name:   "anthropic",
		server: func(t testing.TB) *llmtest.Server { return llmtest.NewAnthropic(t) },
		adapter: func(t *testing.T, srv *llmtest.Server, key string) llm.Client {
			c, err := anthropic.New(anthropic.Config{APIKey: key, BaseURL: srv.BaseURL(), Model: "claude-haiku-4-5", HTTPClient: srv.Client(),
				ExtraHeaders: map[string]string{"User-Agent": "Test"}})
			if err != nil {
				t.Fatal(err)
			}
			return c
		},
		model: "claude-haiku-4-5",
		rateLimit: func(ra string) llmtest.Reply {
			return llmtest.AnthropicError(429, "rate_limit_error", "rate limited").WithHeader("retry-after", ra)
		},
		server500:  llmtest.AnthropicError(500, "api_error", "Internal server error"),
		overloaded: llmtest.AnthropicError(529, "overloaded_error", "Overloaded"),
		badRequest: llmtest.AnthropicError(400, "invalid_request_error", "bad"),
		auth:       llmtest.AnthropicError(401, "authentication_error", "invalid x-api-key"),
		forbidden:  llmtest.AnthropicError(403, "permission_error", "no access"),
		notFound:   llmtest.AnthropicError(404, "not_found_error", "model: nope"),
		quota:      llmtest.AnthropicError(402, "billing_error", "billing"),
	},
	{
		name:   "gemini",
		server: func(t testing.TB) *llmtest.Server { return llmtest.NewGemini(t) },
		adapter: func(t *testing.T, srv *llmtest.Server, key string) llm.Client {
			c, err := gemini.New(gemini.Config{APIKey: key, BaseURL: srv.BaseURL(), Model: "gemini-2.5-flash", HTTPClient: srv.Client(),
				ExtraHeaders: map[string]string{"User-Agent": "Test"}})
			if err != nil {
				t.Fatal(err)
			}
			return c
		},
		model: "gemini-2.5-flash",
		rateLimit: func(ra string) llmtest.Reply {
			return llmtest.GeminiError(429, "RESOURCE_EXHAUSTED", "quota",
				llmtest.QuotaFailure("GenerateRequestsPerMinutePerProjectPerModel"), llmtest.RetryInfo(ra+"s"))
		},
		server500:  llmtest.GeminiError(500, "INTERNAL", "internal"),
		overloaded: llmtest.GeminiError(503, "UNAVAILABLE", "The model is overloaded."),
		badRequest: llmtest.GeminiError(400, "INVALID_ARGUMENT", "bad"),
		auth:       llmtest.GeminiError(401, "UNAUTHENTICATED", "unauthenticated"),
		forbidden:  llmtest.GeminiError(403, "PERMISSION_DENIED", "denied"),
		notFound:   llmtest.GeminiError(404, "NOT_FOUND", "not found"),
		quota: llmtest.GeminiError(429, "RESOURCE_EXHAUSTED", "daily quota",
			llmtest.QuotaFailure("GenerateRequestsPerDayPerProjectPerModel-FreeTier"), llmtest.RetryInfo("40000s")),
	},
}

// stack builds what provider.New builds: cost → retry → log → timeout → adapter.
func stack(inner llm.Client, s *sleeps, timeout time.Duration, l *slog.Logger, model string) llm.Client {
	c := llm.WithTimeout(inner, timeout)
	c = llm.WithLogging(c, l, "test", model)
	c = llm.WithRetry(c, llm.RetryPolicy{MaxRetries: 3, Sleep: s.sleep, Rand: half})
	price, known := llm.DefaultPrices().Lookup(model)
	return llm.WithCost(c, price, known)
}

var question = []llm.Message{{Role: llm.RoleSystem, Content: "sys"}, {Role: llm.RoleUser, Content: "q"}}

func TestStackRetriesTransientErrorsUpToTheCap(t *testing.T) {
	for _, f := range flavors {
		cases := map[string]llmtest.Reply{
			"429":        f.rateLimit("1"),
			"500":        f.server500,
			"overloaded": f.overloaded,
			"reset":      {Drop: true},
		}
		for name, reply := range cases {
			t.Run(f.name+"/"+name, func(t *testing.T) {
				srv := f.server(t)
				srv.Enqueue(reply, reply, reply, reply, reply) // more than the 4 attempts
				var s sleeps
				_, err := stack(f.adapter(t, srv, srv.APIKey()), &s, time.Minute, nil, f.model).Complete(t.Context(), llm.Request{Messages: question})
				var e *llm.Error
				if !errors.As(err, &e) || !e.Kind.Retryable() {
					t.Fatalf("err = %v, want a retryable *llm.Error", err)
				}
				if srv.Calls() != 4 || e.Usage.Requests != 4 || len(s.all()) != 3 {
					t.Errorf("calls=%d requests=%d waits=%d, want 4/4/3", srv.Calls(), e.Usage.Requests, len(s.all()))
				}
				if !strings.Contains(e.Error(), "gave up after 4 attempts") {
					t.Errorf("message should say it gave up: %v", e)
				}
			})
		}
	}
}

func TestStackRecoversAndHonoursRetryAfter(t *testing.T) {
	for _, f := range flavors {
		t.Run(f.name, func(t *testing.T) {
			srv := f.server(t)
			srv.Enqueue(f.rateLimit("20"), llmtest.Text("done", llmtest.Usage{Input: 100, Output: 10}))
			var s sleeps
			resp, err := stack(f.adapter(t, srv, srv.APIKey()), &s, time.Minute, nil, f.model).Complete(t.Context(), llm.Request{Messages: question})
			if err != nil {
				t.Fatal(err)
			}
			if w := s.all(); len(w) != 1 || w[0] < 20*time.Second || w[0] > 22*time.Second {
				t.Errorf("waits = %v, want one wait of 20s (+ at most 10%%)", w)
			}
			if resp.Text != "done" || resp.Usage.Requests != 2 || resp.Usage.InputTokens != 100 {
				t.Errorf("resp = %+v", resp)
			}
			if !resp.Usage.CostKnown || resp.Usage.Cost <= 0 {
				t.Errorf("cost not filled: %+v", resp.Usage)
			}
		})
	}
}

func TestStackDoesNotRetryPermanentErrors(t *testing.T) {
	for _, f := range flavors {
		cases := map[string]struct {
			reply llmtest.Reply
			kind  llm.ErrorKind
			hint  bool
		}{
			"400":   {f.badRequest, llm.KindBadRequest, false},
			"401":   {f.auth, llm.KindAuth, true},
			"403":   {f.forbidden, llm.KindAuth, true},
			"404":   {f.notFound, llm.KindBadRequest, true},
			"quota": {f.quota, llm.KindQuota, true},
		}
		for name, tc := range cases {
			t.Run(f.name+"/"+name, func(t *testing.T) {
				srv := f.server(t)
				srv.Enqueue(tc.reply, llmtest.Text("should not be reached", llmtest.Usage{}))
				var s sleeps
				_, err := stack(f.adapter(t, srv, srv.APIKey()), &s, time.Minute, nil, f.model).Complete(t.Context(), llm.Request{Messages: question})
				var e *llm.Error
				if !errors.As(err, &e) || e.Kind != tc.kind {
					t.Fatalf("err = %v, want kind %q", err, tc.kind)
				}
				if srv.Calls() != 1 || len(s.all()) != 0 {
					t.Errorf("calls=%d waits=%v, want exactly one attempt", srv.Calls(), s.all())
				}
				if tc.hint && e.Hint == "" {
					t.Errorf("no hint for %s: %v", name, e)
				}
			})
		}
	}
}

func TestStackTimeoutIsRetriedThenFails(t *testing.T) {
	for _, f := range flavors {
		t.Run(f.name, func(t *testing.T) {
			srv := f.server(t)
			for range 4 {
				srv.Enqueue(llmtest.Reply{Hang: true})
			}
			var s sleeps
			start := time.Now()
			// 250 ms: long enough that a loaded machine still gets each
			// attempt to the server before its timeout, short enough that
			// four of them stay well under the bound below.
			_, err := stack(f.adapter(t, srv, srv.APIKey()), &s, 250*time.Millisecond, nil, f.model).Complete(t.Context(), llm.Request{Messages: question})
			if llm.KindOf(err) != llm.KindTimeout {
				t.Fatalf("err = %v, want timeout", err)
			}
			if srv.Calls() != 4 {
				t.Errorf("calls = %d, want 4 (timeouts are retried)", srv.Calls())
			}
			if el := time.Since(start); el > 5*time.Second {
				t.Errorf("took %v; the per-call timeout did not cut the calls short", el)
			}
		})
	}
}

type verdict struct {
	Score  int    `json:"score"`
	Reason string `json:"reason"`
}

func TestStackCompleteJSON(t *testing.T) {
	for _, f := range flavors {
		t.Run(f.name+"/invalid then valid", func(t *testing.T) {
			srv := f.server(t)
			srv.Enqueue(
				llmtest.Text("Sure! here you go: {score: 3", llmtest.Usage{Input: 100, Output: 10}),
				llmtest.Text("```json\n{\"score\": 3, \"reason\": \"ok\"}\n```", llmtest.Usage{Input: 130, Output: 12}),
			)
			var s sleeps
			var v verdict
			resp, err := llm.CompleteJSON(t.Context(), stack(f.adapter(t, srv, srv.APIKey()), &s, time.Minute, nil, f.model),
				llm.Request{Purpose: llm.PurposeJudge, Messages: question}, &v, llm.JSONOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if v != (verdict{3, "ok"}) || srv.Calls() != 2 {
				t.Errorf("v=%+v calls=%d", v, srv.Calls())
			}
			if resp.Usage.Requests != 2 || resp.Usage.InputTokens != 230 || resp.Usage.OutputTokens != 22 {
				t.Errorf("usage of both answers must be counted: %+v", resp.Usage)
			}
			// The retry shows the model its output and the problem.
			second := srv.Requests()[1].Chat
			// Anthropic has no JSON mode without structured outputs (off by default).
			wantJSON := f.name != "anthropic"
			if len(second.Messages) < 3 || !strings.Contains(second.LastUser(), "not valid") || second.JSON != wantJSON {
				t.Errorf("correction request = %+v", second)
			}
		})
		t.Run(f.name+"/always invalid", func(t *testing.T) {
			srv := f.server(t)
			srv.HandleText(func(llmtest.ChatRequest) string { return "no json here" })
			var s sleeps
			var v verdict
			_, err := llm.CompleteJSON(t.Context(), stack(f.adapter(t, srv, srv.APIKey()), &s, time.Minute, nil, f.model),
				llm.Request{Purpose: llm.PurposeJudge, Messages: question}, &v, llm.JSONOptions{Attempts: 3})
			var e *llm.Error
			if !errors.As(err, &e) || e.Kind != llm.KindInvalidJSON || e.Raw != "no json here" {
				t.Fatalf("err = %v, want KindInvalidJSON with Raw kept", err)
			}
			if srv.Calls() != 3 || e.Usage.Requests != 3 || len(s.all()) != 0 {
				t.Errorf("calls=%d requests=%d waits=%d: invalid JSON must be retried by CompleteJSON only",
					srv.Calls(), e.Usage.Requests, len(s.all()))
			}
		})
	}
}

func TestStackCountsBilledFailedAttempts(t *testing.T) {
	for _, f := range flavors {
		t.Run(f.name, func(t *testing.T) {
			srv := f.server(t)
			// An empty answer is billed, retried, then the second succeeds.
			srv.Enqueue(
				llmtest.Text("", llmtest.Usage{Input: 1000, Output: 300, Reasoning: 300}),
				llmtest.Text("fine", llmtest.Usage{Input: 1000, Output: 20}),
			)
			var s sleeps
			resp, err := stack(f.adapter(t, srv, srv.APIKey()), &s, time.Minute, nil, f.model).Complete(t.Context(), llm.Request{Messages: question})
			if err != nil {
				t.Fatal(err)
			}
			if resp.Usage.Requests != 2 || resp.Usage.InputTokens != 2000 || resp.Usage.OutputTokens != 320 {
				t.Errorf("usage = %+v, want both attempts", resp.Usage)
			}
			price, _ := llm.DefaultPrices().Lookup(f.model)
			if want := price.Cost(resp.Usage, false); resp.Usage.Cost != want {
				t.Errorf("cost = %v, want %v (both attempts priced)", resp.Usage.Cost, want)
			}
		})
	}
}

func TestStackNeverLogsTheKey(t *testing.T) {
	const secret = "sk-SUPERSECRET-abcdef123456" // shaped like a real key, so gateways echo it
	for _, f := range flavors {
		t.Run(f.name, func(t *testing.T) {
			srv := f.server(t) // accepts only its own key, so ours gets the real 401/400
			var buf bytes.Buffer
			l := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
			var s sleeps
			_, err := stack(f.adapter(t, srv, secret), &s, time.Minute, l, f.model).Complete(t.Context(), llm.Request{Messages: question})
			if llm.KindOf(err) != llm.KindAuth {
				t.Fatalf("err = %v, want auth", err)
			}
			var e *llm.Error
			errors.As(err, &e)
			texts := []string{buf.String(), err.Error(), e.Message, e.Hint}
			if e.Err != nil {
				texts = append(texts, e.Err.Error())
			}
			for _, s := range texts {
				for _, part := range []string{secret, "SUPERSECRET", "abcdef123456", "3456"} {
					if strings.Contains(s, part) {
						t.Errorf("key material %q found in %q", part, s)
					}
				}
			}
			if !strings.Contains(buf.String(), `"status":`) {
				t.Errorf("attempt was not logged: %s", buf.String())
			}
		})
	}
}

func TestStackExtraHeadersReachTheServer(t *testing.T) {
	for _, f := range flavors {
		t.Run(f.name, func(t *testing.T) {
			srv := f.server(t)
			var s sleeps
			if _, err := stack(f.adapter(t, srv, srv.APIKey()), &s, time.Minute, nil, f.model).Complete(t.Context(), llm.Request{Messages: question}); err != nil {
				t.Fatal(err)
			}
			if got := srv.Last().Header.Get("User-Agent"); got != "Test" {
				t.Errorf("User-Agent = %q, want the configured extra header", got)
			}
		})
	}
}

func TestStackCallerCancellationStopsRetries(t *testing.T) {
	srv := llmtest.NewOpenAI(t)
	for range 5 {
		srv.Enqueue(llmtest.OpenAIError(500, "server_error", "", "x"))
	}
	ctx, cancel := context.WithCancel(t.Context())
	c := llm.WithRetry(flavors[0].adapter(t, srv, srv.APIKey()), llm.RetryPolicy{
		Sleep: func(ctx context.Context, d time.Duration) error { cancel(); return ctx.Err() },
	})
	_, err := c.Complete(ctx, llm.Request{Messages: question})
	if !errors.Is(err, context.Canceled) || srv.Calls() != 1 {
		t.Fatalf("err=%v calls=%d", err, srv.Calls())
	}
}
