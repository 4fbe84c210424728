package llm_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/impactbench/impactbench/internal/llm"
)

// sleeps records the waits WithRetry asks for instead of sleeping.
type sleeps struct {
	mu sync.Mutex
	d  []time.Duration
}

func (s *sleeps) sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	s.d = append(s.d, d)
	s.mu.Unlock()
	return ctx.Err()
}

func (s *sleeps) all() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.d...)
}

func half() float64 { return 0.5 } // jitter factor 1.0 exactly

// failing returns a client that fails with errs in turn, then succeeds.
func failing(calls *int, errs ...*llm.Error) llm.Client {
	return llm.ClientFunc(func(ctx context.Context, req llm.Request) (llm.Response, error) {
		*calls++
		if *calls <= len(errs) {
			e := *errs[*calls-1]
			return llm.Response{}, &e
		}
		return llm.Response{Text: "ok", Usage: llm.Usage{Requests: 1, InputTokens: 10, OutputTokens: 5}}, nil
	})
}

func repeat(n int, e *llm.Error) []*llm.Error {
	out := make([]*llm.Error, n)
	for i := range out {
		out[i] = e
	}
	return out
}

func TestWithRetryAttemptsByKind(t *testing.T) {
	tests := []struct {
		kind llm.ErrorKind
		want int // attempts with MaxRetries 4 and a server that always fails
	}{
		{llm.KindRateLimit, 5},
		{llm.KindOverloaded, 5},
		{llm.KindServer, 5},
		{llm.KindConnection, 5},
		{llm.KindTimeout, 5},
		{llm.KindEmpty, 5},
		{llm.KindAuth, 1},
		{llm.KindBadRequest, 1},
		{llm.KindQuota, 1},
		{llm.KindConfig, 1},
		{llm.KindInvalidJSON, 1}, // left to CompleteJSON
	}
	for _, tc := range tests {
		t.Run(string(tc.kind), func(t *testing.T) {
			calls := 0
			var s sleeps
			c := llm.WithRetry(failing(&calls, repeat(10, &llm.Error{Kind: tc.kind})...),
				llm.RetryPolicy{Sleep: s.sleep, Rand: half})
			_, err := c.Complete(t.Context(), llm.Request{})
			if got := llm.KindOf(err); got != tc.kind {
				t.Fatalf("kind = %q, want %q (err %v)", got, tc.kind, err)
			}
			if calls != tc.want {
				t.Errorf("attempts = %d, want %d", calls, tc.want)
			}
			if len(s.all()) != tc.want-1 {
				t.Errorf("waits = %d, want %d", len(s.all()), tc.want-1)
			}
			var e *llm.Error
			errors.As(err, &e)
			if e.Usage.Requests != tc.want {
				t.Errorf("Usage.Requests = %d, want %d", e.Usage.Requests, tc.want)
			}
		})
	}
}

func TestWithRetryBackoffAndCap(t *testing.T) {
	calls := 0
	var s sleeps
	c := llm.WithRetry(failing(&calls, repeat(20, &llm.Error{Kind: llm.KindServer})...),
		llm.RetryPolicy{MaxRetries: 8, Base: 500 * time.Millisecond, Max: 4 * time.Second, Sleep: s.sleep, Rand: half})
	_, err := c.Complete(t.Context(), llm.Request{})
	if err == nil || !strings.Contains(err.Error(), "gave up after 9 attempts") {
		t.Fatalf("err = %v, want gave up after 9 attempts", err)
	}
	want := []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second, 4 * time.Second, 4 * time.Second, 4 * time.Second, 4 * time.Second}
	if diff := cmp.Diff(want, s.all()); diff != "" {
		t.Errorf("waits (-want +got):\n%s", diff)
	}
}

func TestWithRetryJitterBounds(t *testing.T) {
	for _, r := range []float64{0, 0.999} {
		calls := 0
		var s sleeps
		c := llm.WithRetry(failing(&calls, &llm.Error{Kind: llm.KindServer}),
			llm.RetryPolicy{Base: time.Second, Sleep: s.sleep, Rand: func() float64 { return r }})
		if _, err := c.Complete(t.Context(), llm.Request{}); err != nil {
			t.Fatal(err)
		}
		got := s.all()[0]
		if got < 750*time.Millisecond || got > 1250*time.Millisecond {
			t.Errorf("rand %v: wait %v outside ±25%% of 1s", r, got)
		}
	}
}

func TestWithRetryHonoursRetryAfter(t *testing.T) {
	calls := 0
	var s sleeps
	c := llm.WithRetry(failing(&calls, &llm.Error{Kind: llm.KindRateLimit, RetryAfter: 7 * time.Second}),
		llm.RetryPolicy{Sleep: s.sleep, Rand: half})
	if _, err := c.Complete(t.Context(), llm.Request{}); err != nil {
		t.Fatal(err)
	}
	got := s.all()
	if len(got) != 1 || got[0] < 7*time.Second || got[0] > 7700*time.Millisecond {
		t.Errorf("waits = %v, want one wait in [7s, 7.7s]", got)
	}

	// A hint shorter than the backoff does not shorten the backoff.
	calls = 0
	s = sleeps{}
	c = llm.WithRetry(failing(&calls, &llm.Error{Kind: llm.KindRateLimit, RetryAfter: time.Millisecond}),
		llm.RetryPolicy{Base: time.Second, Sleep: s.sleep, Rand: half})
	if _, err := c.Complete(t.Context(), llm.Request{}); err != nil {
		t.Fatal(err)
	}
	if got := s.all(); len(got) != 1 || got[0] != time.Second {
		t.Errorf("waits = %v, want [1s]", got)
	}
}

func TestWithRetryRetryAfterBeyondCapFails(t *testing.T) {
	calls := 0
	var s sleeps
	c := llm.WithRetry(failing(&calls, &llm.Error{Kind: llm.KindRateLimit, RetryAfter: 6 * time.Hour}),
		llm.RetryPolicy{Sleep: s.sleep})
	_, err := c.Complete(t.Context(), llm.Request{})
	if err == nil || calls != 1 || len(s.all()) != 0 {
		t.Fatalf("err=%v calls=%d waits=%v: want an immediate failure", err, calls, s.all())
	}
	var e *llm.Error
	if !errors.As(err, &e) || !strings.Contains(e.Message, "6h0m0s") || e.Hint == "" {
		t.Errorf("want a message naming the 6h wait and a hint, got %v", err)
	}
}

func TestWithRetryStopsBeforeDeadline(t *testing.T) {
	calls := 0
	var s sleeps
	c := llm.WithRetry(failing(&calls, &llm.Error{Kind: llm.KindRateLimit, RetryAfter: time.Minute}),
		llm.RetryPolicy{Sleep: s.sleep})
	ctx, cancel := context.WithTimeout(t.Context(), time.Second)
	defer cancel()
	_, err := c.Complete(ctx, llm.Request{})
	if err == nil || calls != 1 || len(s.all()) != 0 || !strings.Contains(err.Error(), "deadline") {
		t.Fatalf("err=%v calls=%d waits=%v: want no retry past the deadline", err, calls, s.all())
	}
}

func TestWithRetryCancelledWhileWaiting(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	calls := 0
	c := llm.WithRetry(failing(&calls, repeat(5, &llm.Error{Kind: llm.KindServer, Usage: llm.Usage{Requests: 1, InputTokens: 3}})...),
		llm.RetryPolicy{Sleep: func(ctx context.Context, d time.Duration) error { cancel(); return ctx.Err() }})
	_, err := c.Complete(ctx, llm.Request{})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want it to wrap context.Canceled", err)
	}
	var e *llm.Error
	if !errors.As(err, &e) || e.Usage.InputTokens != 3 {
		t.Errorf("the failed attempt's usage must survive cancellation: %+v", e)
	}
	if calls != 1 {
		t.Errorf("calls = %d, want 1", calls)
	}
}

func TestWithRetryNegativeMaxRetriesMeansOneAttempt(t *testing.T) {
	calls := 0
	c := llm.WithRetry(failing(&calls, repeat(3, &llm.Error{Kind: llm.KindServer})...), llm.RetryPolicy{MaxRetries: -1})
	if _, err := c.Complete(t.Context(), llm.Request{}); err == nil || calls != 1 {
		t.Fatalf("err=%v calls=%d, want one failed attempt", err, calls)
	}
}

func TestWithRetrySumsUsageOfEveryAttempt(t *testing.T) {
	calls := 0
	var s sleeps
	billed := &llm.Error{Kind: llm.KindEmpty, Usage: llm.Usage{Requests: 1, InputTokens: 100, OutputTokens: 20, ReasoningTokens: 20}}
	unbilled := &llm.Error{Kind: llm.KindConnection} // no usage: still counts as a request
	var retried []int
	c := llm.WithRetry(failing(&calls, billed, unbilled),
		llm.RetryPolicy{Sleep: s.sleep, OnRetry: func(a int, err error, w time.Duration) { retried = append(retried, a) }})
	resp, err := c.Complete(t.Context(), llm.Request{})
	if err != nil {
		t.Fatal(err)
	}
	want := llm.Usage{Requests: 3, InputTokens: 110, OutputTokens: 25, ReasoningTokens: 20}
	if diff := cmp.Diff(want, resp.Usage); diff != "" {
		t.Errorf("usage (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]int{1, 2}, retried); diff != "" {
		t.Errorf("OnRetry attempts (-want +got):\n%s", diff)
	}
}

func TestWithRetryPassesForeignErrors(t *testing.T) {
	boom := errors.New("boom")
	calls := 0
	c := llm.WithRetry(llm.ClientFunc(func(context.Context, llm.Request) (llm.Response, error) {
		calls++
		return llm.Response{}, boom
	}), llm.RetryPolicy{})
	if _, err := c.Complete(t.Context(), llm.Request{}); !errors.Is(err, boom) || calls != 1 {
		t.Fatalf("err=%v calls=%d", err, calls)
	}
}

func TestWithTimeout(t *testing.T) {
	hang := llm.ClientFunc(func(ctx context.Context, req llm.Request) (llm.Response, error) {
		<-ctx.Done()
		return llm.Response{}, &llm.Error{Kind: llm.KindConnection, Provider: "p", Model: "m", Err: ctx.Err()}
	})
	_, err := llm.WithTimeout(hang, 20*time.Millisecond).Complete(t.Context(), llm.Request{})
	var e *llm.Error
	if !errors.As(err, &e) || e.Kind != llm.KindTimeout || e.Provider != "p" || !strings.Contains(e.Message, "20ms") {
		t.Fatalf("err = %v, want KindTimeout naming 20ms and keeping provider", err)
	}

	// The caller's own cancellation is not a timeout.
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err = llm.WithTimeout(hang, time.Hour).Complete(ctx, llm.Request{})
	if llm.KindOf(err) != llm.KindConnection {
		t.Errorf("cancelled call: kind = %q, want connection", llm.KindOf(err))
	}

	// d <= 0 disables the layer.
	if c := llm.WithTimeout(hang, 0); c == nil {
		t.Fatal("nil client")
	}
}

func TestWithRetryAndTimeoutRetriesTimeouts(t *testing.T) {
	calls := 0
	hang := llm.ClientFunc(func(ctx context.Context, req llm.Request) (llm.Response, error) {
		calls++
		<-ctx.Done()
		return llm.Response{}, &llm.Error{Kind: llm.KindConnection, Err: ctx.Err()}
	})
	var s sleeps
	c := llm.WithRetry(llm.WithTimeout(hang, 5*time.Millisecond), llm.RetryPolicy{MaxRetries: 2, Sleep: s.sleep})
	_, err := c.Complete(t.Context(), llm.Request{})
	if llm.KindOf(err) != llm.KindTimeout || calls != 3 {
		t.Fatalf("kind=%q calls=%d, want timeout after 3 attempts", llm.KindOf(err), calls)
	}
}
