package ratelimit

import (
	"testing"
	"time"

	"github.com/impactbench/impactbench/internal/llm"
)

// Each of K workers takes 1/K of every limit, configured or learned:
// per-minute limits exactly, max_concurrency rounded down (the workers
// together stay within it), where an auto pool starts and how far it may
// grow rounded up.
func TestWorkersDivideLimits(t *testing.T) {
	for _, tc := range []struct {
		name      string
		workers   int
		lim       Limits
		learned   *llm.RateLimit // headers of one answer, if any
		wantShare Limits         // per worker, rounded down
		wantRPM   float64        // the request bucket's refill, per minute (0: none)
		wantTPM   float64
		wantLimit int // the AIMD limit it starts at
		wantMax   int // … and its ceiling
	}{
		{
			name: "one worker: unchanged", workers: 1,
			lim:       Limits{MaxInFlight: 48, RPM: 600, TPM: 90000},
			wantShare: Limits{MaxInFlight: 48, RPM: 600, TPM: 90000},
			wantRPM:   600, wantTPM: 90000, wantLimit: 48, wantMax: 48,
		},
		{
			name: "configured limits divided by 4", workers: 4,
			lim:       Limits{MaxInFlight: 48, RPM: 600, TPM: 90000, ITPM: 40000, OTPM: 8000},
			wantShare: Limits{MaxInFlight: 12, RPM: 150, TPM: 22500, ITPM: 10000, OTPM: 2000},
			wantRPM:   150, wantTPM: 22500, wantLimit: 12, wantMax: 12,
		},
		{
			name: "max_concurrency rounds down, per-minute limits do not", workers: 5,
			lim:       Limits{MaxInFlight: 48, RPM: 1000},
			wantShare: Limits{MaxInFlight: 9, RPM: 200},
			wantRPM:   200, wantLimit: 9, wantMax: 9,
		},
		{
			name: "a cap below the worker count still lets each worker send one", workers: 8,
			lim:       Limits{MaxInFlight: 4},
			wantShare: Limits{MaxInFlight: 1},
			wantLimit: 1, wantMax: 1,
		},
		{
			name: "auto: start and ceiling divided, rounded up", workers: 3,
			wantLimit: 11, wantMax: 86, // 32/3, 256/3
		},
		{
			name: "auto with a phase's concurrency as start", workers: 3,
			lim:       Limits{Start: 64},
			wantLimit: 22, wantMax: 86,
		},
		{
			name: "learned from headers: the organisation's limit, divided", workers: 4,
			learned: &llm.RateLimit{LimitRequests: 1000, RemainingRequests: 900, ResetRequests: time.Second,
				LimitTokens: 200000, RemainingTokens: 190000, ResetTokens: time.Second},
			// LearnFraction 0.95 of the reported limit, then a quarter.
			wantShare: Limits{RPM: 237, TPM: 47500},
			wantRPM:   237.5, wantTPM: 47500, wantLimit: 8, wantMax: 64,
		},
		{
			name: "configured above what headers report: the report wins, divided", workers: 2,
			lim:       Limits{RPM: 2000},
			learned:   &llm.RateLimit{LimitRequests: 1000, RemainingRequests: 900, ResetRequests: time.Second},
			wantShare: Limits{RPM: 475},
			wantRPM:   475, wantLimit: 16, wantMax: 128,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			p := newPool("p", tc.lim, Options{Workers: tc.workers, Now: func() time.Time { return now }}.withDefaults())
			if tc.learned != nil {
				p.mu.Lock()
				p.learnLocked(now, tc.learned)
				p.mu.Unlock()
			}
			st := p.stats()
			if st.Share != tc.wantShare || st.Workers != tc.workers {
				t.Errorf("share %+v of %d workers, want %+v", st.Share, st.Workers, tc.wantShare)
			}
			rate := func(b *bucket) float64 {
				if b == nil {
					return 0
				}
				return b.perSec * 60
			}
			if got := rate(p.req); !near(got, tc.wantRPM) {
				t.Errorf("request bucket refills %v per minute, want %v", got, tc.wantRPM)
			}
			if got := rate(p.tok); !near(got, tc.wantTPM) {
				t.Errorf("token bucket refills %v per minute, want %v", got, tc.wantTPM)
			}
			if st.Concurrency != tc.wantLimit || st.MaxConcurrency != tc.wantMax {
				t.Errorf("limit %d, ceiling %d; want %d, %d", st.Concurrency, st.MaxConcurrency, tc.wantLimit, tc.wantMax)
			}
		})
	}
}

func near(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }

// A client that joins the pool with a stricter max_concurrency lowers
// every worker's share of it.
func TestWorkersDivideTightenedCap(t *testing.T) {
	p := newPool("p", Limits{MaxInFlight: 48}, Options{Workers: 4}.withDefaults())
	p.tighten(Limits{MaxInFlight: 20})
	if st := p.stats(); st.MaxConcurrency != 5 || st.Concurrency != 5 {
		t.Fatalf("after tightening to 20 for 4 workers: limit %d, ceiling %d, want 5, 5", st.Concurrency, st.MaxConcurrency)
	}
}

// One of several workers starts its buckets empty, configured or
// learned, so that a worker joining a running study sends no burst on top
// of the others' rate; a process alone keeps its full bucket.
func TestWorkerStartsWithoutABurst(t *testing.T) {
	for _, tc := range []struct {
		name    string
		workers int
		lim     Limits
		learned *llm.RateLimit
		want    float64 // request tokens at the start
	}{
		{"alone, configured", 1, Limits{RPM: 600, TPM: 90000}, nil, 10},
		{"one of 4, configured", 4, Limits{RPM: 600, TPM: 90000}, nil, 0},
		{"one of 4, learned", 4, Limits{}, &llm.RateLimit{LimitRequests: 6000, RemainingRequests: 6000, ResetRequests: time.Second}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			p := newPool("p", tc.lim, Options{Workers: tc.workers, Now: func() time.Time { return now }}.withDefaults())
			p.mu.Lock()
			defer p.mu.Unlock()
			if tc.learned != nil {
				p.learnLocked(now, tc.learned)
			}
			if p.req == nil || !near(p.req.tokens, tc.want) {
				t.Fatalf("request bucket %+v, want %v tokens", p.req, tc.want)
			}
			if p.tok != nil && tc.want == 0 && p.tok.tokens != 0 {
				t.Errorf("token bucket starts with %v tokens, want 0", p.tok.tokens)
			}
			// The rate is unchanged: a second later a worker has its share.
			if d := p.req.delay(now.Add(time.Second), 1); d > 0 {
				t.Errorf("a second in, one request still waits %s", d)
			}
		})
	}
}
