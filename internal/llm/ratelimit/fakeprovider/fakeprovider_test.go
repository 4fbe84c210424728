package fakeprovider_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/impactbench/impactbench/internal/llm"
	"github.com/impactbench/impactbench/internal/llm/ratelimit/fakeprovider"
)

func msg(s string) []llm.Message { return []llm.Message{{Role: llm.RoleUser, Content: s}} }

func TestClientRequestLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := fakeprovider.New(fakeprovider.Config{RPM: 60, Burst: time.Second}) // one per second
		ctx := t.Context()
		if _, err := p.Complete(ctx, llm.Request{Messages: msg("a")}); err != nil {
			t.Fatal(err)
		}
		_, err := p.Complete(ctx, llm.Request{Messages: msg("b")})
		var e *llm.Error
		if !errors.As(err, &e) || e.Kind != llm.KindRateLimit || e.StatusCode != 429 {
			t.Fatalf("second call: %v, want a 429", err)
		}
		if e.RetryAfter != time.Second {
			t.Errorf("RetryAfter = %v, want 1s", e.RetryAfter)
		}
		time.Sleep(e.RetryAfter)
		if _, err := p.Complete(ctx, llm.Request{Messages: msg("c")}); err != nil {
			t.Errorf("after waiting RetryAfter: %v", err)
		}
		want := fakeprovider.Counts{Requests: 3, Accepted: 2, RateLimited: 1, ByRequests: 1, PeakInFlight: 1,
			InputTokens: 2 * int64(fakeprovider.CountTokens(msg("a"))), OutputTokens: 2 * 64}
		if got := p.Counts(); got != want {
			t.Errorf("counts %+v, want %+v", got, want)
		}
	})
}

// Tokens are checked against max(max_tokens, prompt) on admission and
// settled to prompt+completion at the end, as OpenAI documents.
func TestClientTokenLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := fakeprovider.New(fakeprovider.Config{TPM: 6000, Latency: 10 * time.Second, OutputTokens: 10}) // 100/s, holds 6000
		ctx := t.Context()
		var wg sync.WaitGroup
		wg.Go(func() {
			if _, err := p.Complete(ctx, llm.Request{Messages: msg("x"), MaxTokens: 5000}); err != nil {
				t.Errorf("first call: %v", err)
			}
		})
		synctest.Wait() // the first call holds 5000 of 6000
		_, err := p.Complete(ctx, llm.Request{Messages: msg("y"), MaxTokens: 5000})
		var e *llm.Error
		if !errors.As(err, &e) || e.Kind != llm.KindRateLimit {
			t.Fatalf("second call: %v, want a 429", err)
		}
		if e.RetryAfter != 40*time.Second { // 4000 missing at 100/s
			t.Errorf("RetryAfter = %v, want 40s", e.RetryAfter)
		}
		wg.Wait()
		// The first call used prompt+10 tokens, so the rest of its 5000 came
		// back: a second 5000 fits at once.
		if _, err := p.Complete(ctx, llm.Request{Messages: msg("z"), MaxTokens: 5000}); err != nil {
			t.Errorf("after settlement: %v", err)
		}
		if c := p.Counts(); c.ByTokens != 1 || c.Accepted != 2 {
			t.Errorf("counts %+v, want 1 token refusal and 2 accepted", c)
		}
	})
}

func TestClientConcurrencyCap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := fakeprovider.New(fakeprovider.Config{MaxInFlight: 2, Latency: time.Second})
		var wg sync.WaitGroup
		errs := make(chan error, 5)
		for range 5 {
			wg.Go(func() {
				_, err := p.Complete(t.Context(), llm.Request{Messages: msg("q")})
				errs <- err
			})
		}
		wg.Wait()
		close(errs)
		refused := 0
		for err := range errs {
			var e *llm.Error
			if errors.As(err, &e) {
				refused++
				if e.Kind != llm.KindRateLimit || e.RetryAfter != 0 {
					t.Errorf("refusal %+v, want a 429 without Retry-After", e)
				}
			}
		}
		if c := p.Counts(); refused != 3 || c.ByConcurrent != 3 || c.PeakInFlight != 2 {
			t.Errorf("%d refused, counts %+v; want 3 refused by concurrency, peak 2", refused, c)
		}
	})
}

func TestClientReplyAndLatency(t *testing.T) {
	for _, tc := range []struct {
		name       string
		maxTokens  int
		wantTokens int
		wantFinish string
	}{
		{"full reply", 0, 20, "stop"},
		{"cut by max_tokens", 5, 5, "length"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := fakeprovider.New(fakeprovider.Config{Latency: time.Second, PerOutputToken: 100 * time.Millisecond, OutputTokens: 20, RPM: 600})
				start := time.Now()
				resp, err := p.Complete(t.Context(), llm.Request{Messages: msg("hello"), MaxTokens: tc.maxTokens})
				if err != nil {
					t.Fatal(err)
				}
				if d, want := time.Since(start), time.Second+time.Duration(tc.wantTokens)*100*time.Millisecond; d != want {
					t.Errorf("took %v, want %v", d, want)
				}
				if got := len(strings.Fields(resp.Text)); got != tc.wantTokens || resp.Usage.OutputTokens != tc.wantTokens {
					t.Errorf("reply of %d words, usage %d, want %d", got, resp.Usage.OutputTokens, tc.wantTokens)
				}
				if resp.FinishReason != tc.wantFinish {
					t.Errorf("finish %q, want %q", resp.FinishReason, tc.wantFinish)
				}
				rl := resp.RateLimit
				if rl == nil || rl.LimitRequests != 600 || rl.RemainingRequests != 599 || rl.ResetRequests <= 0 {
					t.Errorf("rate limit %+v, want 600 limit, 599 left, a reset", rl)
				}
			})
		})
	}
}

// The handler speaks OpenAI's wire format well enough for the official SDK.
func TestHandlerWithOpenAISDK(t *testing.T) {
	p := fakeprovider.New(fakeprovider.Config{Model: "gpt-fake", RPM: 60, TPM: 100000, Burst: time.Second, OutputTokens: 7})
	srv := httptest.NewServer(p)
	defer srv.Close()
	client := openai.NewClient(option.WithBaseURL(srv.URL+"/v1"), option.WithAPIKey("test"), option.WithMaxRetries(0))
	params := openai.ChatCompletionNewParams{
		Model:               "gpt-fake",
		Messages:            []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("be brief"), openai.UserMessage("hello")},
		MaxCompletionTokens: openai.Int(100),
	}

	var hr *http.Response
	resp, err := client.Chat.Completions.New(context.Background(), params, option.WithResponseInto(&hr))
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.Choices[0].Message.Content; got != strings.TrimSpace(strings.Repeat("tok ", 7)) {
		t.Errorf("content %q", got)
	}
	wantIn := int64(fakeprovider.CountTokens([]llm.Message{{Content: "be brief"}, {Content: "hello"}}))
	if resp.Usage.PromptTokens != wantIn || resp.Usage.CompletionTokens != 7 || resp.Usage.TotalTokens != wantIn+7 {
		t.Errorf("usage %+v, want %d prompt + 7 completion", resp.Usage, wantIn)
	}
	if resp.Model != "gpt-fake" || resp.Choices[0].FinishReason != "stop" {
		t.Errorf("model %q finish %q", resp.Model, resp.Choices[0].FinishReason)
	}
	for k, want := range map[string]string{
		"x-ratelimit-limit-requests":     "60",
		"x-ratelimit-remaining-requests": "0",
		"x-ratelimit-limit-tokens":       "100000",
	} {
		if got := hr.Header.Get(k); got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
	if hr.Header.Get("x-ratelimit-reset-requests") == "" || hr.Header.Get("x-ratelimit-reset-tokens") == "" {
		t.Errorf("reset headers missing: %v", hr.Header)
	}

	// The request bucket (one a second) is spent: the next call is a 429 the
	// SDK recognises, with both retry hints.
	_, err = client.Chat.Completions.New(context.Background(), params, option.WithResponseInto(&hr))
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusTooManyRequests || apiErr.Code != "rate_limit_exceeded" {
		t.Fatalf("second call: %v, want a 429 rate_limit_exceeded", err)
	}
	h := apiErr.Response.Header
	if h.Get("Retry-After") != "1" || h.Get("retry-after-ms") == "" || h.Get("x-ratelimit-remaining-requests") != "0" {
		t.Errorf("429 headers: %v", h)
	}
}

// Inside a bubble the handler sleeps in virtual time, and reset durations
// are Go duration strings like OpenAI's ("6s", "1m0s").
func TestHandlerHeadersAndErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		post := func(p *fakeprovider.Provider) *httptest.ResponseRecorder {
			body := `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}],"max_tokens":5}`
			rec := httptest.NewRecorder()
			p.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/v1/chat/completions", strings.NewReader(body)))
			return rec
		}
		slow := fakeprovider.New(fakeprovider.Config{Latency: 3 * time.Second})
		start := time.Now()
		if rec := post(slow); rec.Code != http.StatusOK || time.Since(start) != 3*time.Second {
			t.Errorf("status %d after %v, want 200 after 3s", rec.Code, time.Since(start))
		}

		p := fakeprovider.New(fakeprovider.Config{RPM: 10}) // holds 10, refills one per 6s
		var last *httptest.ResponseRecorder
		for range 10 {
			if last = post(p); last.Code != http.StatusOK {
				t.Fatalf("status %d: %s", last.Code, last.Body)
			}
		}
		for k, want := range map[string]string{"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "1m0s"} {
			if got := last.Header().Get(k); got != want {
				t.Errorf("after 10 calls %s = %q, want %q", k, got, want)
			}
		}
		rec := post(p)
		if rec.Code != http.StatusTooManyRequests || !strings.Contains(rec.Body.String(), "rate_limit_exceeded") {
			t.Fatalf("11th call: status %d %s, want a 429", rec.Code, rec.Body)
		}
		for k, want := range map[string]string{"Retry-After": "6", "retry-after-ms": "6000", "x-ratelimit-reset-requests": "1m0s"} {
			if got := rec.Header().Get(k); got != want {
				t.Errorf("429 %s = %q, want %q", k, got, want)
			}
		}
		time.Sleep(6 * time.Second)
		if rec := post(p); rec.Code != http.StatusOK {
			t.Errorf("after Retry-After: status %d", rec.Code)
		}

		for _, tc := range []struct {
			name, method, path, body string
			want                     int
		}{
			{"bad JSON", http.MethodPost, "/v1/chat/completions", "{", http.StatusBadRequest},
			{"no messages", http.MethodPost, "/v1/chat/completions", `{"messages":[]}`, http.StatusBadRequest},
			{"bad content", http.MethodPost, "/v1/chat/completions", `{"messages":[{"role":"user","content":5}]}`, http.StatusBadRequest},
			{"wrong path", http.MethodPost, "/v1/embeddings", "{}", http.StatusNotFound},
			{"wrong method", http.MethodGet, "/v1/chat/completions", "", http.StatusNotFound},
		} {
			rec := httptest.NewRecorder()
			p.ServeHTTP(rec, httptest.NewRequest(tc.method, tc.path, strings.NewReader(tc.body)))
			if rec.Code != tc.want || !strings.Contains(rec.Body.String(), `"error"`) {
				t.Errorf("%s: status %d body %s, want %d with an error envelope", tc.name, rec.Code, rec.Body, tc.want)
			}
		}
	})
}
