package llm_test

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/impactbench/impactbench/internal/llm"
)

func TestKindForStatus(t *testing.T) {
	tests := map[int]llm.ErrorKind{
		400: llm.KindBadRequest, 401: llm.KindAuth, 402: llm.KindQuota, 403: llm.KindAuth,
		404: llm.KindBadRequest, 408: llm.KindServer, 409: llm.KindServer, 413: llm.KindBadRequest,
		422: llm.KindBadRequest, 429: llm.KindRateLimit, 500: llm.KindServer, 502: llm.KindServer,
		503: llm.KindOverloaded, 504: llm.KindServer, 529: llm.KindOverloaded,
	}
	for status, want := range tests {
		if got := llm.KindForStatus(status); got != want {
			t.Errorf("KindForStatus(%d) = %q, want %q", status, got, want)
		}
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		h    map[string]string
		want time.Duration
	}{
		{"none", nil, 0},
		{"ms wins", map[string]string{"retry-after-ms": "1500", "retry-after": "9"}, 1500 * time.Millisecond},
		{"seconds", map[string]string{"retry-after": "20"}, 20 * time.Second},
		{"fractional seconds", map[string]string{"retry-after": "0.25"}, 250 * time.Millisecond},
		{"http date", map[string]string{"retry-after": now.Add(90 * time.Second).Format(http.TimeFormat)}, 90 * time.Second},
		{"date in the past", map[string]string{"retry-after": now.Add(-time.Minute).Format(http.TimeFormat)}, 0},
		{"garbage", map[string]string{"retry-after": "soon"}, 0},
		{"bad ms falls back", map[string]string{"retry-after-ms": "x", "retry-after": "2"}, 2 * time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			for k, v := range tc.h {
				h.Set(k, v)
			}
			if got := llm.ParseRetryAfter(h, now); got != tc.want {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestParseRateLimit(t *testing.T) {
	now := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		h    map[string]string
		want *llm.RateLimit
	}{
		{"none", map[string]string{"content-type": "application/json"}, nil},
		{"openai", map[string]string{
			"x-ratelimit-limit-requests": "10000", "x-ratelimit-limit-tokens": "2000000",
			"x-ratelimit-remaining-requests": "9999", "x-ratelimit-remaining-tokens": "1999000",
			"x-ratelimit-reset-requests": "6ms", "x-ratelimit-reset-tokens": "1m30.5s",
		}, &llm.RateLimit{LimitRequests: 10000, LimitTokens: 2000000, RemainingRequests: 9999, RemainingTokens: 1999000,
			ResetRequests: 6 * time.Millisecond, ResetTokens: 90500 * time.Millisecond}},
		{"anthropic prefers input tokens", map[string]string{
			"anthropic-ratelimit-requests-limit": "4000", "anthropic-ratelimit-requests-remaining": "3990",
			"anthropic-ratelimit-requests-reset": now.Add(2 * time.Second).Format(time.RFC3339),
			"anthropic-ratelimit-tokens-limit":   "999", "anthropic-ratelimit-tokens-remaining": "1",
			"anthropic-ratelimit-input-tokens-limit": "400000", "anthropic-ratelimit-input-tokens-remaining": "350000",
			"anthropic-ratelimit-input-tokens-reset": now.Add(time.Minute).Format(time.RFC3339),
		}, &llm.RateLimit{LimitRequests: 4000, LimitTokens: 400000, RemainingRequests: 3990, RemainingTokens: 350000,
			ResetRequests: 2 * time.Second, ResetTokens: time.Minute}},
		{"proxy sends -1", map[string]string{"x-ratelimit-limit-requests": "-1", "x-ratelimit-remaining-requests": "-1"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			for k, v := range tc.h {
				h.Set(k, v)
			}
			if diff := cmp.Diff(tc.want, llm.ParseRateLimit(h, now)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestRedact(t *testing.T) {
	key := "sk-proj-SECRETSECRET123"
	got := llm.Redact("Incorrect API key provided: sk-pr****T123 and "+key+" again", key)
	if strings.Contains(got, "SECRET") || strings.Contains(got, "T123") {
		t.Errorf("Redact left key material: %q", got)
	}
	long := strings.Repeat("<html>", 200)
	if got := llm.Redact(long); len(got) > 410 {
		t.Errorf("Redact did not shorten a %d-byte message (got %d)", len(long), len(got))
	}
	if got := llm.Redact("plain message"); got != "plain message" {
		t.Errorf("Redact changed a harmless message: %q", got)
	}
}

func TestTurns(t *testing.T) {
	S := func(c string) llm.Message { return llm.Message{Role: llm.RoleSystem, Content: c} }
	U := func(c string) llm.Message { return llm.Message{Role: llm.RoleUser, Content: c} }
	A := func(c string) llm.Message { return llm.Message{Role: llm.RoleAssistant, Content: c} }
	tests := []struct {
		name       string
		in         []llm.Message
		wantSystem []string
		wantTurns  []llm.Message
	}{
		{"plain", []llm.Message{S("sys"), U("hi"), A("hello"), U("bye")}, []string{"sys"}, []llm.Message{U("hi"), A("hello"), U("bye")}},
		{"merge same role", []llm.Message{U("a"), U("b"), A("c"), A("d")}, nil, []llm.Message{U("a\n\nb"), A("c\n\nd")}},
		{"assistant first gets kickoff", []llm.Message{S("s"), A("opening"), U("reply")}, []string{"s"},
			[]llm.Message{U(llm.ConversationStart), A("opening"), U("reply")}},
		{"only system", []llm.Message{S("s1"), S("s2")}, []string{"s1", "s2"}, []llm.Message{U(llm.ConversationStart)}},
		{"system in the middle is lifted", []llm.Message{U("a"), S("late"), U("b")}, []string{"late"}, []llm.Message{U("a\n\nb")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sys, turns := llm.Turns(tc.in)
			if diff := cmp.Diff(tc.wantSystem, sys); diff != "" {
				t.Errorf("system (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantTurns, turns); diff != "" {
				t.Errorf("turns (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNewHTTPClient(t *testing.T) {
	c := llm.NewHTTPClient(300)
	if c.Timeout != 0 {
		t.Errorf("Timeout = %v, want none (per-call timeouts come from ctx)", c.Timeout)
	}
	tr, ok := c.Transport.(*http.Transport)
	if !ok {
		t.Fatalf("transport %T", c.Transport)
	}
	if tr.MaxIdleConnsPerHost < 300 || !tr.ForceAttemptHTTP2 || tr.TLSHandshakeTimeout == 0 || tr.IdleConnTimeout == 0 {
		t.Errorf("transport not sized/tuned: idle/host=%d h2=%v tls=%v idle=%v",
			tr.MaxIdleConnsPerHost, tr.ForceAttemptHTTP2, tr.TLSHandshakeTimeout, tr.IdleConnTimeout)
	}
	if d := llm.NewHTTPClient(0).Transport.(*http.Transport).MaxIdleConnsPerHost; d != llm.DefaultMaxConnsPerHost {
		t.Errorf("default idle/host = %d", d)
	}
}

func TestWithLogging(t *testing.T) {
	var buf bytes.Buffer
	l := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	ok := llm.ClientFunc(func(context.Context, llm.Request) (llm.Response, error) {
		return llm.Response{Text: "secret answer text", RequestID: "req_9", Usage: llm.Usage{Requests: 1, InputTokens: 12, OutputTokens: 3}}, nil
	})
	bad := llm.ClientFunc(func(context.Context, llm.Request) (llm.Response, error) {
		return llm.Response{}, &llm.Error{Kind: llm.KindAuth, StatusCode: 401, Provider: "openai", Model: "m", RequestID: "req_10"}
	})
	req := llm.Request{Purpose: llm.PurposeJudge, Messages: []llm.Message{{Role: llm.RoleUser, Content: "prompt body text"}}}
	if _, err := llm.WithLogging(ok, l, "openai", "gpt-x").Complete(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	_, _ = llm.WithLogging(bad, l, "openai", "gpt-x").Complete(t.Context(), req)
	out := buf.String()
	for _, want := range []string{"provider=openai", "model=gpt-x", "purpose=judge", "status=200", "request_id=req_9", "input_tokens=12", "status=401", "kind=auth", "request_id=req_10", "latency="} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
	for _, never := range []string{"prompt body text", "secret answer text"} {
		if strings.Contains(out, never) {
			t.Errorf("log contains a body (%q):\n%s", never, out)
		}
	}

	// Above debug level nothing is logged.
	buf.Reset()
	quiet := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo}))
	_, _ = llm.WithLogging(ok, quiet, "openai", "gpt-x").Complete(t.Context(), req)
	if buf.Len() != 0 {
		t.Errorf("logged at info level: %s", buf.String())
	}
}
