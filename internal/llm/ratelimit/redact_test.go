package ratelimit_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/impactbench/impactbench/internal/llm"
	"github.com/impactbench/impactbench/internal/llm/ratelimit"
)

// TestPoolLogHidesBaseURLCredentials: a pool key holds the endpoint; the
// -v log line that names the pool must not show its credentials.
func TestPoolLogHidesBaseURLCredentials(t *testing.T) {
	var logs bytes.Buffer
	reg := ratelimit.NewRegistry(ratelimit.Options{Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	ok := llm.ClientFunc(func(context.Context, llm.Request) (llm.Response, error) {
		return llm.Response{Text: "ok", Usage: llm.Usage{Requests: 1}}, nil
	})
	key := "openai_compatible|https://user:hunter2pass@gw.example/v1?api_key=QUERYSECRET|gpt-x|6c2b82b5"
	c := reg.Wrap(key, ratelimit.Limits{MaxInFlight: 4}, ok)
	if _, err := c.Complete(t.Context(), llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}}); err != nil {
		t.Fatal(err)
	}
	out := logs.String()
	if !strings.Contains(out, "pool=") || !strings.Contains(out, "gw.example") {
		t.Fatalf("no pool log line: %s", out)
	}
	for _, s := range []string{"hunter2pass", "QUERYSECRET", "user:"} {
		if strings.Contains(out, s) {
			t.Errorf("pool log shows %q: %s", s, out)
		}
	}
}
