package ratelimit_test

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/impactbench/impactbench/internal/llm"
)

// retry puts the project's retry loop above c, as production does: the
// limiter sits below it and sees every attempt. Jitter is fixed so runs are
// reproducible; attempts are generous so workers ride out 429 storms.
func retry(c llm.Client) llm.Client {
	return llm.WithRetry(c, llm.RetryPolicy{MaxRetries: 100, Max: 8 * time.Second, Rand: func() float64 { return 0.5 }})
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// drive runs workers goroutines that call c back to back until d has passed
// (virtual time inside a synctest bubble) and waits for them.
// The end is a cancellation, not a deadline, so the retry loop does not
// give up early on waits that would pass it (those are not failures).
func drive(workers int, d time.Duration, c llm.Client, req llm.Request) (ok, failed int64) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stop := time.AfterFunc(d, cancel)
	defer stop.Stop()
	var wg sync.WaitGroup
	var nOK, nFail atomic.Int64
	for range workers {
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

// recorder wraps a client and records when calls reach it and how many are
// inside it at once: what the provider would observe.
type recorder struct {
	next llm.Client

	mu       sync.Mutex
	starts   []time.Time
	inFlight int
	peak     int
}

func (r *recorder) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	r.mu.Lock()
	r.starts = append(r.starts, time.Now())
	r.inFlight++
	r.peak = max(r.peak, r.inFlight)
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		r.inFlight--
		r.mu.Unlock()
	}()
	return r.next.Complete(ctx, req)
}

// perMinute counts recorded starts in each whole minute after t0.
func (r *recorder) perMinute(t0 time.Time, minutes int) []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]int, minutes)
	for _, s := range r.starts {
		if i := int(s.Sub(t0) / time.Minute); i >= 0 && i < minutes {
			out[i]++
		}
	}
	return out
}

func (r *recorder) startsSince(t time.Time) []time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []time.Time
	for _, s := range r.starts {
		if !s.Before(t) {
			out = append(out, s)
		}
	}
	return out
}

// answer is a client that takes latency and reports usage.
func answer(latency time.Duration, u llm.Usage) llm.Client {
	return llm.ClientFunc(func(ctx context.Context, req llm.Request) (llm.Response, error) {
		if latency > 0 {
			if err := sleep(ctx, latency); err != nil {
				return llm.Response{}, err
			}
		}
		return llm.Response{Text: "ok", Usage: u}, nil
	})
}

func rateLimited(retryAfter time.Duration) error {
	return &llm.Error{Kind: llm.KindRateLimit, StatusCode: 429, Provider: "test", RetryAfter: retryAfter}
}

var smallReq = llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "hello"}}, MaxTokens: 16}
