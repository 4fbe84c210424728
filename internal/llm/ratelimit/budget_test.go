package ratelimit_test

import (
	"context"
	"errors"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/impactbench/impactbench/internal/llm"
	"github.com/impactbench/impactbench/internal/llm/ratelimit"
)

func TestBudgetReserve(t *testing.T) {
	type step struct {
		estimate float64
		wantErr  bool
		settle   float64 // actual cost, settled at once (negative: leave in flight)
	}
	for _, tc := range []struct {
		name                string
		max                 float64
		steps               []step
		wantSpent, wantLeft float64
		wantExhausted       bool
	}{
		{"fits exactly", 1, []step{{0.5, false, 0.5}, {0.5, false, 0.5}}, 1, 0, false},
		{"refuses what would pass the ceiling", 1, []step{{0.6, false, 0.6}, {0.5, true, 0}}, 0.6, 0.4, true},
		{"in-flight reservations count", 1, []step{{0.6, false, -1}, {0.5, true, 0}}, 0, 0.4, true},
		{"cheaper than estimated frees room", 1, []step{{0.9, false, 0.1}, {0.8, false, 0.8}}, 0.9, 0.1, false},
		{"an overrun is kept, then refuses", 1, []step{{0.5, false, 1.2}, {0.01, true, 0}}, 1.2, 0, true},
		{"negative and NaN estimates count as zero", 1, []step{{-3, false, 0.2}, {math.NaN(), false, 0.2}}, 0.4, 0.6, false},
		{"no ceiling never refuses", 0, []step{{1e9, false, 1e9}}, 1e9, math.Inf(1), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := ratelimit.NewBudget(tc.max)
			for i, s := range tc.steps {
				release, err := b.Reserve(s.estimate)
				if (err != nil) != s.wantErr {
					t.Fatalf("step %d: err = %v, want error %v", i, err, s.wantErr)
				}
				if err != nil {
					if !errors.Is(err, llm.ErrBudgetExceeded) {
						t.Errorf("step %d: %v does not wrap llm.ErrBudgetExceeded", i, err)
					}
					release(1) // harmless no-op
					continue
				}
				if s.settle >= 0 {
					release(s.settle)
					release(100) // a second release is ignored
				}
			}
			if got := b.Spent(); math.Abs(got-tc.wantSpent) > 1e-9 {
				t.Errorf("Spent = %v, want %v", got, tc.wantSpent)
			}
			if got := b.Remaining(); math.Abs(got-tc.wantLeft) > 1e-9 && got != tc.wantLeft {
				t.Errorf("Remaining = %v, want %v", got, tc.wantLeft)
			}
			if b.Exhausted() != tc.wantExhausted {
				t.Errorf("Exhausted = %v, want %v", b.Exhausted(), tc.wantExhausted)
			}
		})
	}
}

// Many goroutines spend against one ceiling with costs that miss their
// estimates both ways. Spending may pass the ceiling only by the overruns of
// calls that were in flight, never by a call started after it was reached.
func TestBudgetConcurrentNeverExceeded(t *testing.T) {
	const (
		max        = 10.0
		workers    = 64
		estimate   = 0.001
		worstRatio = 1.5 // actual cost is 0.5–1.5 × the estimate
	)
	b := ratelimit.NewBudget(max)
	var calls atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := 0; ; i++ {
				release, err := b.Reserve(estimate)
				if err != nil {
					return
				}
				calls.Add(1)
				runtime.Gosched()                        // let others reserve while this call is "in flight"
				ratio := 0.5 + float64((w*7+i*13)%11)/10 // 0.5 … 1.5
				release(estimate * ratio)
			}
		})
	}
	wg.Wait()
	spent := b.Spent()
	overrunBound := workers * estimate * (worstRatio - 1)
	if spent > max+overrunBound {
		t.Errorf("spent %.4f, above the ceiling %.2f plus the in-flight overrun bound %.4f", spent, max, overrunBound)
	}
	if spent < max-estimate*worstRatio*workers {
		t.Errorf("spent only %.4f of %.2f: calls were refused too early", spent, max)
	}
	if b.Reserved() != 0 {
		t.Errorf("reserved %v after all calls settled", b.Reserved())
	}
	t.Logf("%d calls, spent %.4f of %.2f", calls.Load(), spent, max)
}

func TestWrapBudget(t *testing.T) {
	price := func(llm.Request) float64 { return 0.10 }
	for _, tc := range []struct {
		name      string
		resp      llm.Response
		err       error
		wantSpent float64
	}{
		{"settles at the reported cost", llm.Response{Usage: llm.Usage{InputTokens: 10, Cost: 0.03, CostKnown: true}}, nil, 0.03},
		{"cached answers cost nothing now", llm.Response{Cached: true, Usage: llm.Usage{InputTokens: 10, Cost: 0.03, CostKnown: true}}, nil, 0},
		{"unknown price falls back to the estimate", llm.Response{Usage: llm.Usage{InputTokens: 10}}, nil, 0.10},
		{"no usage reported falls back to the estimate", llm.Response{}, nil, 0.10},
		{"failed call without usage costs nothing", llm.Response{}, &llm.Error{Kind: llm.KindServer}, 0},
		{"billed failure counts", llm.Response{}, &llm.Error{Kind: llm.KindTimeout, Usage: llm.Usage{InputTokens: 5, Cost: 0.02, CostKnown: true}}, 0.02},
		{"cancelled call costs nothing", llm.Response{}, context.Canceled, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := ratelimit.NewBudget(1)
			c := ratelimit.WrapBudget(b, price, llm.ClientFunc(func(ctx context.Context, req llm.Request) (llm.Response, error) {
				return tc.resp, tc.err
			}))
			_, err := c.Complete(t.Context(), smallReq)
			if !errors.Is(err, tc.err) {
				t.Errorf("err = %v, want %v passed through", err, tc.err)
			}
			if got := b.Spent(); math.Abs(got-tc.wantSpent) > 1e-12 {
				t.Errorf("spent %v, want %v", got, tc.wantSpent)
			}
		})
	}

	t.Run("refused calls never reach the provider", func(t *testing.T) {
		b := ratelimit.NewBudget(0.25)
		var calls int
		c := ratelimit.WrapBudget(b, price, llm.ClientFunc(func(ctx context.Context, req llm.Request) (llm.Response, error) {
			calls++
			return llm.Response{Usage: llm.Usage{Cost: 0.10, CostKnown: true}}, nil
		}))
		var refused int
		for range 5 {
			if _, err := c.Complete(t.Context(), smallReq); errors.Is(err, llm.ErrBudgetExceeded) {
				refused++
			}
		}
		if calls != 2 || refused != 3 {
			t.Errorf("%d calls made, %d refused; want 2 and 3", calls, refused)
		}
	})
}
