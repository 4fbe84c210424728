package ratelimit

import (
	"context"
	"fmt"
	"math"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/impactbench/impactbench/internal/llm"
)

// Each bucket is charged the estimate before the call and settled to the
// reported usage after it. Time stands still (fixed clock), so every change
// of level is a charge or a refund.
func TestChargeAndReconcile(t *testing.T) {
	const perMin = 60000 // 1000 tokens/s; a full bucket holds a minute: 60000
	full := float64(perMin)
	for _, tc := range []struct {
		name     string
		limits   Limits
		estIn    int
		estOut   int
		resp     llm.Response
		err      error
		wantHeld float64 // level of the one token bucket in use during the call
		wantTok  float64 // … and after it
		wantReq  float64 // level of the request bucket (RPM 60 → burst 1)
	}{
		{
			name: "TPM: charged max(in, out) up front, settled to in+out",
			// 500 up front, actual 120+30=150: 350 comes back.
			limits: Limits{RPM: 60, TPM: perMin}, estIn: 100, estOut: 500,
			resp:     llm.Response{Usage: llm.Usage{InputTokens: 120, OutputTokens: 30}},
			wantHeld: full - 500, wantTok: full - 150,
		},
		{
			name:   "TPM: an under-estimate becomes debt, not a wait",
			limits: Limits{RPM: 60, TPM: perMin}, estIn: 100, estOut: 50,
			resp:     llm.Response{Usage: llm.Usage{InputTokens: 90000, OutputTokens: 10}},
			wantHeld: full - 100, wantTok: full - 90010,
		},
		{
			name:   "ITPM: cached input reads are refunded",
			limits: Limits{RPM: 60, ITPM: perMin}, estIn: 100, estOut: 500,
			resp:     llm.Response{Usage: llm.Usage{InputTokens: 120, CachedInputTokens: 100, OutputTokens: 30}},
			wantHeld: full - 100, wantTok: full - 20,
		},
		{
			name:   "OTPM: max_tokens reserved, actual output kept",
			limits: Limits{RPM: 60, OTPM: perMin}, estIn: 100, estOut: DefaultMaxTokens,
			resp:     llm.Response{Usage: llm.Usage{InputTokens: 120, OutputTokens: 30}},
			wantHeld: full - DefaultMaxTokens, wantTok: full - 30,
		},
		{
			name:   "error without usage keeps the estimate",
			limits: Limits{RPM: 60, TPM: perMin}, estIn: 100, estOut: 500,
			err:      &llm.Error{Kind: llm.KindServer},
			wantHeld: full - 500, wantTok: full - 500,
		},
		{
			name:   "error with billed usage settles to it",
			limits: Limits{RPM: 60, TPM: perMin}, estIn: 100, estOut: 500,
			err:      &llm.Error{Kind: llm.KindTimeout, Usage: llm.Usage{InputTokens: 100, OutputTokens: 7}},
			wantHeld: full - 500, wantTok: full - 107,
		},
		{
			name:   "cached answer refunds everything, the request too",
			limits: Limits{RPM: 60, TPM: perMin}, estIn: 100, estOut: 500,
			resp:     llm.Response{Cached: true, Usage: llm.Usage{InputTokens: 120, OutputTokens: 30}},
			wantHeld: full - 500, wantTok: full, wantReq: 1,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			p := newPool("p", tc.limits, Options{Now: func() time.Time { return now }}.withDefaults())
			tk, err := p.acquire(context.Background(), tc.estIn, tc.estOut, 0)
			if err != nil {
				t.Fatal(err)
			}
			var b *bucket
			for _, c := range []*bucket{p.tok, p.in, p.out} {
				if c != nil {
					b = c
				}
			}
			if math.Abs(b.tokens-tc.wantHeld) > 1e-9 {
				t.Errorf("token bucket at %v during the call, want %v", b.tokens, tc.wantHeld)
			}
			resp := tc.resp
			p.release(tk, &resp, tc.err)

			if math.Abs(b.tokens-tc.wantTok) > 1e-9 {
				t.Errorf("token bucket at %v, want %v", b.tokens, tc.wantTok)
			}
			if math.Abs(p.req.tokens-tc.wantReq) > 1e-9 {
				t.Errorf("request bucket at %v, want %v", p.req.tokens, tc.wantReq)
			}
		})
	}
}

func TestBucket(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	b := newBucket(t0, 600, time.Second) // 10/s, holds 10

	for _, step := range []struct {
		name   string
		at     time.Duration
		take   float64
		delayN float64
		want   time.Duration
	}{
		{"full bucket: no wait", 0, 0, 10, 0},
		{"emptied: one token in 100ms", 0, 10, 1, 100 * time.Millisecond},
		{"refilled half", 500 * time.Millisecond, 0, 5, 0},
		{"demand above burst waits for a full bucket only", 500 * time.Millisecond, 0, 1000, 500 * time.Millisecond},
		{"debt delays the next caller", time.Second, 1000, 1, 99*time.Second + 100*time.Millisecond},
		{"refund clears debt", time.Second, -995, 1, 0},
		{"refunds never overfill", 2 * time.Second, -1e6, 10, 0},
	} {
		if step.take != 0 {
			b.take(at(step.at), step.take)
		}
		if got := b.delay(at(step.at), step.delayN); got != step.want {
			t.Errorf("%s: delay(%v) = %v, want %v (tokens %v)", step.name, step.delayN, got, step.want, b.tokens)
		}
	}
	if b.tokens > b.burst {
		t.Errorf("tokens %v above burst %v", b.tokens, b.burst)
	}
}

func TestNearWall(t *testing.T) {
	for _, tc := range []struct {
		limit, remaining int
		reset            time.Duration
		want             time.Duration
	}{
		{1000, 500, time.Minute, 0},                      // plenty left
		{1000, 11, time.Minute, 0},                       // just above 1%
		{1000, 10, time.Minute, 3030303030},              // 60s · 50/990
		{1000, 0, time.Minute, 3 * time.Second},          // 60s · 50/1000
		{10, 0, 6 * time.Second, 600 * time.Millisecond}, // a twentieth of 10 rounds up to 1 token
		{1, 0, 6 * time.Second, 6 * time.Second},         // can't wait for less than the whole reset
		{0, 0, time.Minute, 0},                           // limit not reported
		{1000, 0, 0, 0},                                  // no reset reported
	} {
		if got := nearWall(tc.limit, tc.remaining, tc.reset); got != tc.want {
			t.Errorf("nearWall(%d, %d, %v) = %v, want %v", tc.limit, tc.remaining, tc.reset, got, tc.want)
		}
	}
}

// Waiting calls are admitted by priority (a conversation's later turn
// first), then in arrival order; whoever frees a slot admits the next.
func TestQueueAdmitsByPriorityThenArrival(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPool("p", Limits{MaxInFlight: 1}, Options{}.withDefaults())
		first, err := p.acquire(t.Context(), 1, 1, 0)
		if err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		var order []string
		for i, prio := range []int{0, 2, 1, 2, 0} {
			name := fmt.Sprintf("priority %d #%d", prio, i)
			go func() {
				tk, err := p.acquire(t.Context(), 1, 1, prio)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				order = append(order, name)
				mu.Unlock()
				p.release(tk, &llm.Response{Text: "ok"}, nil)
			}()
			synctest.Wait() // queued before the next one arrives
		}
		p.release(first, &llm.Response{Text: "ok"}, nil)
		synctest.Wait()
		want := []string{"priority 2 #1", "priority 2 #3", "priority 1 #2", "priority 0 #0", "priority 0 #4"}
		if fmt.Sprint(order) != fmt.Sprint(want) {
			t.Errorf("admitted %v, want %v", order, want)
		}
	})
}

// A release admits the waiter it makes room for itself: the slot is taken
// before the waiter's goroutine runs, so refilling slots never waits for
// one wake-up after another.
func TestReleaseAdmitsTheWaiterAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPool("p", Limits{MaxInFlight: 1}, Options{}.withDefaults())
		first, err := p.acquire(t.Context(), 1, 1, 0)
		if err != nil {
			t.Fatal(err)
		}
		got := make(chan ticket, 1)
		go func() {
			tk, err := p.acquire(t.Context(), 1, 1, 0)
			if err != nil {
				t.Error(err)
			}
			got <- tk
		}()
		synctest.Wait() // the second caller waits in the queue
		p.release(first, &llm.Response{Text: "ok"}, nil)
		p.mu.Lock()
		inFlight, queued := p.inFlight, p.queue.Len()
		p.mu.Unlock()
		if inFlight != 1 || queued != 0 {
			t.Errorf("right after the release: %d in flight, %d queued; want the waiter admitted (1, 0)", inFlight, queued)
		}
		p.release(<-got, &llm.Response{Text: "ok"}, nil)
	})
}
