package redisrate_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/impactbench/impactbench/internal/llm"
	"github.com/impactbench/impactbench/internal/llm/ratelimit"
	"github.com/impactbench/impactbench/internal/llm/ratelimit/fakeprovider"
	"github.com/impactbench/impactbench/internal/llm/ratelimit/redisrate"
	"github.com/impactbench/impactbench/internal/redisserver"
)

// startRedis runs a private redis-server for one test, or skips the test
// when the binary is not installed (and only then).
func startRedis(t *testing.T) *redisserver.Server {
	t.Helper()
	s, err := redisserver.Start(context.Background(), t.TempDir())
	if errors.Is(err, redisserver.ErrNotInstalled) {
		t.Skip("redis-server is not installed (apt-get install -y redis-server): the shared rate limit is not tested")
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	return s
}

func open(t *testing.T, s *redisserver.Server) *redisrate.Buckets {
	t.Helper()
	b, err := redisrate.Open(context.Background(), s.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// A rate_backend that cannot be used is a typed error before any call,
// and never shows the password.
func TestOpenRefusesBadBackends(t *testing.T) {
	for _, tc := range []struct {
		name, url, op string
	}{
		{"unknown scheme", "http://127.0.0.1:6379", "parse"},
		{"database not a number", "redis://127.0.0.1:6379/zero", "parse"},
		{"nobody listening", "redis://worker:s3cret-pass@127.0.0.1:1/0", "connect"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := redisrate.Open(context.Background(), tc.url)
			var e *redisrate.Error
			if !errors.As(err, &e) || e.Op != tc.op {
				t.Fatalf("Open(%q) = %v, want a *redisrate.Error with Op %q", tc.url, err, tc.op)
			}
			if strings.Contains(err.Error(), "s3cret") || strings.Contains(e.URL, "s3cret") {
				t.Fatalf("the password reached the error: %v", err)
			}
		})
	}
}

// The script's buckets: a take refused leaves the bucket as it was and
// says how long to wait; a refund makes room at once; debt delays.
func TestBucketsTakeRefundDebt(t *testing.T) {
	b := open(t, startRedis(t))
	ctx := context.Background()
	const pool = "openai||gpt-x|0badc0de"
	r := ratelimit.SharedRates{
		Requests: ratelimit.Rate{PerSec: 1, Burst: 2},
		Tokens:   ratelimit.Rate{PerSec: 100, Burst: 1000},
	}
	take := func(req, tok float64) time.Duration {
		t.Helper()
		d, err := b.Take(ctx, pool, r, ratelimit.Charge{Requests: req, Tokens: tok})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	adjust := func(tok float64) {
		t.Helper()
		if err := b.Adjust(ctx, pool, r, ratelimit.Charge{Tokens: tok}); err != nil {
			t.Fatal(err)
		}
	}
	if d := take(1, 900); d != 0 {
		t.Fatalf("first take waits %v on full buckets", d)
	}
	// 100 tokens left: 500 more is 4 s of refill away.
	if d := take(1, 500); d < 3900*time.Millisecond || d > 4100*time.Millisecond {
		t.Fatalf("take of 500 with 100 left: wait %v, want about 4s", d)
	}
	// The refused take charged nothing: one request is still there.
	adjust(-800) // the first call used 100 of its 900
	if d := take(1, 500); d != 0 {
		t.Fatalf("after a refund of 800: wait %v, want 0", d)
	}
	// Both requests spent; a refund of tokens does not bring a request back.
	if d := take(1, 1); d < 500*time.Millisecond {
		t.Fatalf("third request within a second: wait %v, want about 1s", d)
	}
	// Debt: an answer 2,000 tokens longer than charged puts the bucket
	// below zero, and the next call waits for it to be repaid.
	adjust(2000)
	time.Sleep(time.Second) // a request comes back
	if d := take(1, 100); d < 15*time.Second {
		t.Fatalf("after 2,000 tokens of debt: wait %v, want ≥ 15s", d)
	}
	// Another pool has buckets of its own.
	d, err := b.Take(ctx, "another pool", r, ratelimit.Charge{Requests: 1, Tokens: 900})
	if err != nil || d != 0 {
		t.Fatalf("another pool: wait %v, %v", d, err)
	}
}

// The pool key can hold a base_url with credentials: only its hash goes to
// Redis.
func TestKeyHidesPoolName(t *testing.T) {
	k := redisrate.Key("openai|url:https://user:sk-live-123@gw.example/v1|abcd")
	if strings.Contains(k, "sk-live") || strings.Contains(k, "gw.example") || !strings.HasPrefix(k, redisrate.KeyPrefix) {
		t.Fatalf("key %q", k)
	}
}

// workerRun drives one worker's registry for d with callers goroutines and
// returns the calls that succeeded and failed.
func workerRun(ctx context.Context, reg *ratelimit.Registry, pool string, lim ratelimit.Limits, fake llm.Client, callers int, d time.Duration, req llm.Request) (ok, failed int64) {
	c := llm.WithRetry(reg.Wrap(pool, lim, fake), llm.RetryPolicy{MaxRetries: 50, Max: 2 * time.Second})
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var nOK, nFail atomic.Int64
	var wg sync.WaitGroup
	for range callers {
		wg.Go(func() {
			for ctx.Err() == nil {
				if _, err := c.Complete(ctx, req); err == nil {
					nOK.Add(1)
				} else if ctx.Err() == nil {
					nFail.Add(1)
				}
			}
		})
	}
	wg.Wait()
	return nOK.Load(), nFail.Load()
}

var smallReq = llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "hello"}}, MaxTokens: 64}

// Four registries (four workers of one study), each with its own Redis
// connection, share one provider limit exactly: all four busy, they stay
// within it; one busy and three idle, that one gets the whole limit, where
// dividing by the workers would give it a quarter.
//
// The cases run at once (each its own fake and pool, so its own keys), as do
// the tests below with their own Redis: they wait on the clock, not the CPU.
func TestWorkersShareOneLimitThroughRedis(t *testing.T) {
	t.Parallel()
	srv := startRedis(t)
	const workers, rpm = 4, 1200 // 20 calls/s, in per-second quanta
	for _, tc := range []struct {
		name   string
		active int
		shared bool
		min    float64 // share of the limit reached
		max    float64
	}{
		{"all four busy, shared through Redis", 4, true, 0.85, 1.02},
		{"one busy, shared through Redis", 1, true, 0.85, 1.02},
		{"one busy, divided by four", 1, false, 0.2, 0.27},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fake := fakeprovider.New(fakeprovider.Config{RPM: rpm, Burst: time.Second, Latency: 50 * time.Millisecond})
			const d = 6 * time.Second
			var wg sync.WaitGroup
			failed := make([]int64, tc.active)
			for i := range tc.active {
				opts := ratelimit.Options{Workers: workers}
				if tc.shared {
					opts.Shared = open(t, srv)
				}
				reg := ratelimit.NewRegistry(opts)
				wg.Go(func() {
					_, failed[i] = workerRun(context.Background(), reg, tc.name, ratelimit.Limits{RPM: rpm}, fake, 16, d, smallReq)
				})
			}
			wg.Wait()
			c := fake.Counts()
			// The buckets start full: one burst (a second's worth) on top.
			bound := float64(rpm)/60*d.Seconds() + float64(rpm)/60
			share := float64(c.Accepted) / bound
			t.Logf("%d accepted of %.0f possible (%.2f), %d 429s of %d requests", c.Accepted, bound, share, c.RateLimited, c.Requests)
			for i, f := range failed {
				if f > 0 {
					t.Errorf("worker %d: %d calls failed", i, f)
				}
			}
			if share < tc.min || share > tc.max {
				t.Errorf("reached %.2f of the limit, want %.2f–%.2f", share, tc.min, tc.max)
			}
			if float64(c.RateLimited) > 0.02*float64(c.Requests) {
				t.Errorf("%d of %d requests refused, want ≤ 2%%", c.RateLimited, c.Requests)
			}
		})
	}
}

// Token charges are estimates (max_tokens up front) reconciled with the
// usage after each call: through Redis the difference comes back, so a
// token limit is used for the tokens really spent, not the reservations.
func TestRedisRefundsOverEstimates(t *testing.T) {
	t.Parallel()
	srv := startRedis(t)
	// 1,000 tokens a second in a one-second bucket; each call reserves
	// max_tokens 512 and uses about 70 (a short prompt, 64 tokens out).
	const tpm = 60000
	fake := fakeprovider.New(fakeprovider.Config{Latency: 20 * time.Millisecond})
	req := llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "hello"}}, MaxTokens: 512}
	var wg sync.WaitGroup
	for range 2 {
		reg := ratelimit.NewRegistry(ratelimit.Options{Workers: 2, Shared: open(t, srv), TokenBurst: time.Second})
		wg.Go(func() {
			workerRun(context.Background(), reg, "fake", ratelimit.Limits{TPM: tpm}, fake, 8, 4*time.Second, req)
		})
	}
	wg.Wait()
	c := fake.Counts()
	perCall := float64(c.InputTokens+c.OutputTokens) / float64(c.Accepted)
	perSec := float64(c.Accepted) / 4
	t.Logf("%d calls in 4s (%.1f/s), %.0f tokens each; without refunds at most %.1f/s", c.Accepted, perSec, perCall, 1000.0/512)
	if perSec < 0.7*1000/perCall {
		t.Errorf("%.1f calls/s, want ≥ 70%% of the %.1f the tokens really spent allow", perSec, 1000/perCall)
	}
	if used := float64(c.InputTokens + c.OutputTokens); used > 1000*4+1000+512 {
		t.Errorf("%.0f tokens used in 4s, above the limit (4,000 + one bucket)", used)
	}
}

// A Redis that goes away mid-run does not fail the run: each worker keeps
// to its share of the limit (1/Workers), says so once in the log, and goes
// back to the shared buckets when Redis answers again (here restarted,
// empty, on the same port).
func TestRedisOutageFallsBackToLocalShare(t *testing.T) {
	t.Parallel()
	srv := startRedis(t)
	const workers, rpm = 2, 1200
	fake := fakeprovider.New(fakeprovider.Config{RPM: rpm, Burst: time.Second, Latency: 20 * time.Millisecond})
	var logs bytes.Buffer
	var logMu sync.Mutex
	logger := slog.New(slog.NewTextHandler(&lockedWriter{w: &logs, mu: &logMu}, &slog.HandlerOptions{Level: slog.LevelInfo}))
	regs := make([]*ratelimit.Registry, workers)
	for i := range regs {
		regs[i] = ratelimit.NewRegistry(ratelimit.Options{Workers: workers, Shared: open(t, srv), SharedRetry: 300 * time.Millisecond, Logger: logger})
	}
	phase := func(name string, d time.Duration) int64 {
		before := fake.Counts().Accepted
		var wg sync.WaitGroup
		for _, reg := range regs {
			wg.Go(func() {
				if _, failed := workerRun(context.Background(), reg, "fake", ratelimit.Limits{RPM: rpm}, fake, 8, d, smallReq); failed > 0 {
					t.Errorf("%s: %d calls failed", name, failed)
				}
			})
		}
		wg.Wait()
		c := fake.Counts()
		t.Logf("%s: %d calls, %d 429s so far", name, c.Accepted-before, c.RateLimited)
		return c.Accepted - before
	}
	phase("Redis up", 2*time.Second)
	srv.Stop()
	down := phase("Redis down", 3*time.Second)
	for i, reg := range regs {
		if st, _ := reg.PoolStats("fake"); !st.SharedDown || st.SharedFailures == 0 {
			t.Errorf("worker %d with Redis stopped: SharedDown %v, %d failures", i, st.SharedDown, st.SharedFailures)
		}
	}
	if err := srv.Restart(context.Background()); err != nil {
		t.Fatal(err)
	}
	phase("Redis back", 2*time.Second)
	for i, reg := range regs {
		if st, _ := reg.PoolStats("fake"); st.SharedDown {
			t.Errorf("worker %d still on its local share after Redis came back", i)
		}
	}
	c := fake.Counts()
	t.Logf("while Redis was down: %d calls in 3s (limit %d); in all %d 429s of %d requests", down, rpm/20, c.RateLimited, c.Requests)
	// Redis restarted empty: without the workers charging it what they
	// had just sent, each would add a full bucket (20 429s here).
	if float64(c.RateLimited) > 0.05*float64(c.Requests) {
		t.Errorf("%d of %d requests refused, want ≤ 5%%", c.RateLimited, c.Requests)
	}
	if float64(down) > 1.1*float64(rpm)/60*3+float64(rpm)/60 {
		t.Errorf("%d calls in 3s without Redis: the workers did not keep to their shares", down)
	}
	logMu.Lock()
	out := logs.String()
	logMu.Unlock()
	if n := strings.Count(out, "shared limit unreachable"); n != workers {
		t.Errorf("%d warnings about the outage, want one per worker's pool (%d):\n%s", n, workers, out)
	}
	if n := strings.Count(out, "shared limit reachable again"); n != workers {
		t.Errorf("%d notes that Redis is back, want %d", n, workers)
	}
}

type lockedWriter struct {
	w  *bytes.Buffer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
