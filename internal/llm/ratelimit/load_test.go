package ratelimit_test

import (
	"context"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/impactbench/impactbench/internal/llm"
	"github.com/impactbench/impactbench/internal/llm/ratelimit"
	"github.com/impactbench/impactbench/internal/llm/ratelimit/fakeprovider"
)

// Many workers drive the fake provider through the retry loop and the
// limiter for ten virtual minutes. After the first minute (learning, ramp)
// at most 1% of requests may be refused, and throughput must stay near the
// binding limit: the limiter is neither a wall-hitter nor a brake.
func TestFakeProviderLoad(t *testing.T) {
	const latency, perToken = 2 * time.Second, 5 * time.Millisecond
	req := llm.Request{
		Messages:  []llm.Message{{Role: llm.RoleSystem, Content: "You are a helpful assistant."}, {Role: llm.RoleUser, Content: strings.Repeat("lorem ipsum ", 64)}},
		MaxTokens: 128,
	}
	perCall := fakeprovider.CountTokens(req.Messages) + 64 // the fake answers 64 tokens

	for _, tc := range []struct {
		name    string
		fake    fakeprovider.Config
		limits  ratelimit.Limits
		workers int
		// bound is the best possible accepted calls per minute; after the
		// first minute each run must reach minShare of it.
		bound    float64
		minShare float64
	}{
		{
			name:    "RPM learned from headers",
			fake:    fakeprovider.Config{RPM: 600},
			workers: 200, bound: 600, minShare: 0.93,
		},
		{
			// The first 16 calls hit a one-per-second wall before any
			// header arrives: a storm to learn from, then quiet.
			name:    "low RPM learned, provider enforces per second",
			fake:    fakeprovider.Config{RPM: 60, Burst: time.Second},
			workers: 100, bound: 60, minShare: 0.93,
		},
		{
			name:    "RPM configured, provider enforces per second",
			fake:    fakeprovider.Config{RPM: 600, Burst: time.Second},
			limits:  ratelimit.Limits{RPM: 600},
			workers: 200, bound: 600, minShare: 0.97,
		},
		{
			name:    "TPM binds, learned from headers",
			fake:    fakeprovider.Config{RPM: 3000, TPM: 60000},
			workers: 200, bound: 60000 / float64(perCall), minShare: 0.93,
		},
		{
			name:    "TPM configured",
			fake:    fakeprovider.Config{TPM: 60000},
			limits:  ratelimit.Limits{TPM: 60000},
			workers: 200, bound: 60000 / float64(perCall), minShare: 0.97,
		},
		{
			name:    "concurrency cap found by AIMD",
			fake:    fakeprovider.Config{MaxInFlight: 24},
			workers: 100, bound: 24 * float64(time.Minute) / float64(latency+64*perToken), minShare: 0.9,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tc.fake.Latency, tc.fake.PerOutputToken = latency, perToken
				fake := fakeprovider.New(tc.fake)
				reg := ratelimit.NewRegistry(ratelimit.Options{})
				c := retry(reg.Wrap("fake", tc.limits, fake))

				var atMinute fakeprovider.Counts
				var wg sync.WaitGroup
				wg.Go(func() {
					time.Sleep(time.Minute)
					atMinute = fake.Counts()
				})
				_, failed := drive(tc.workers, 10*time.Minute, c, req)
				wg.Wait()
				end := fake.Counts()

				requests := end.Requests - atMinute.Requests
				refused := end.RateLimited - atMinute.RateLimited
				perMin := float64(end.Accepted-atMinute.Accepted) / 9
				st, _ := reg.PoolStats("fake")
				t.Logf("after minute 1: %d requests, %d 429s (%.2f%%), %.0f calls/min of %.0f possible (%.1f%%); first minute: %d 429s; limit %d, effective %+v",
					requests, refused, 100*float64(refused)/float64(requests), perMin, tc.bound, 100*perMin/tc.bound,
					atMinute.RateLimited, st.Concurrency, st.Effective)
				if failed > 0 {
					t.Errorf("%d calls failed after retries", failed)
				}
				if float64(refused) > 0.01*float64(requests) {
					t.Errorf("%d of %d requests refused after the first minute, want ≤ 1%%", refused, requests)
				}
				if perMin < tc.minShare*tc.bound {
					t.Errorf("%.0f calls/min, want ≥ %.0f%% of the %.0f possible", perMin, 100*tc.minShare, tc.bound)
				}
				// The provider's bucket may carry up to one burst (at most a
				// minute's worth) from the first minute into the nine measured.
				if hi := tc.bound * 10 / 9; perMin > hi {
					t.Errorf("%.0f calls/min is above the %.0f the provider can accept: the fake is not enforcing", perMin, hi)
				}
			})
		})
	}
}

// concurrency auto: many more callers than the provider takes, no limits
// configured and none reported in headers. The controller alone must find
// the unknown in-flight cap or request rate: after the first minute at
// least 1/1.15 of the possible throughput (the acceptance bound of issue
// 15) with at most 2% of requests refused.
func TestAutoConcurrencyFindsUnknownLimits(t *testing.T) {
	const latency = 200 * time.Millisecond
	req := llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "hello"}}, MaxTokens: 64}
	for _, tc := range []struct {
		name  string
		fake  fakeprovider.Config
		bound float64 // calls per minute the provider can accept
	}{
		{"in-flight cap 48", fakeprovider.Config{MaxInFlight: 48}, 48 * float64(time.Minute) / float64(latency)},
		{"in-flight cap 8", fakeprovider.Config{MaxInFlight: 8}, 8 * float64(time.Minute) / float64(latency)},
		{"hidden RPM 6000, per-second quanta", fakeprovider.Config{RPM: 6000, Burst: time.Second, HideLimits: true}, 6000},
		{"hidden RPM 600, one-minute bucket", fakeprovider.Config{RPM: 600, HideLimits: true}, 600},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tc.fake.Latency = latency
				fake := fakeprovider.New(tc.fake)
				reg := ratelimit.NewRegistry(ratelimit.Options{})
				c := retry(reg.Wrap("fake", ratelimit.Limits{}, fake))
				var atMinute fakeprovider.Counts
				var wg sync.WaitGroup
				wg.Go(func() {
					time.Sleep(time.Minute)
					atMinute = fake.Counts()
				})
				const minutes = 6
				_, failed := drive(512, minutes*time.Minute, c, req)
				wg.Wait()
				end := fake.Counts()
				requests := end.Requests - atMinute.Requests
				refused := end.RateLimited - atMinute.RateLimited
				perMin := float64(end.Accepted-atMinute.Accepted) / (minutes - 1)
				st, _ := reg.PoolStats("fake")
				t.Logf("after minute 1: %d requests, %d 429s (%.2f%%), %.0f calls/min of %.0f (%.1f%%); first minute %d 429s; limit %d, ceiling %d, back-offs %d",
					requests, refused, 100*float64(refused)/float64(requests), perMin, tc.bound, 100*perMin/tc.bound,
					atMinute.RateLimited, st.Concurrency, st.Ceiling, st.BackOffs)
				if failed > 0 {
					t.Errorf("%d calls failed after retries", failed)
				}
				if float64(refused) > 0.02*float64(requests) {
					t.Errorf("%d of %d requests refused after the first minute, want ≤ 2%%", refused, requests)
				}
				if perMin < tc.bound/1.15 {
					t.Errorf("%.0f calls/min, want ≥ %.0f (1/1.15 of %.0f)", perMin, tc.bound/1.15, tc.bound)
				}
			})
		})
	}
}

// A server that never refuses but shares its capacity among the calls it
// holds (32 slots' worth, 200ms each: with k > 32 calls in flight each takes
// k/32 × 200ms). It sends no 429, so only latency can tell the controller
// that more calls in flight buy nothing but queueing: the limit must settle
// where latency stays near the uncongested 200ms (below 2×, the default
// LatencyFactor, plus a step), without giving up throughput.
func TestAutoConcurrencyHoldsLatency(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const slots, base = 32, 200 * time.Millisecond
		var mu sync.Mutex
		inFlight := 0
		server := llm.ClientFunc(func(ctx context.Context, req llm.Request) (llm.Response, error) {
			mu.Lock()
			inFlight++
			d := base * time.Duration(max(inFlight, slots)) / slots
			mu.Unlock()
			defer func() {
				mu.Lock()
				inFlight--
				mu.Unlock()
			}()
			if err := sleep(ctx, d); err != nil {
				return llm.Response{}, err
			}
			return llm.Response{Text: "ok"}, nil
		})
		reg := ratelimit.NewRegistry(ratelimit.Options{})
		c := retry(reg.Wrap("p", ratelimit.Limits{}, server))
		ok, failed := drive(512, 3*time.Minute, c, smallReq)
		st, _ := reg.PoolStats("p")
		perSec := float64(ok) / 180
		t.Logf("limit %d, baseline %v, %.0f calls/s of %d possible, back-offs %d", st.Concurrency, st.LatencyBaseline, perSec, slots*5, st.BackOffs)
		if failed > 0 {
			t.Errorf("%d calls failed", failed)
		}
		if st.Concurrency > 2*slots+slots/4 {
			t.Errorf("limit %d: calls wait in the server's queue (latency %.1f× the uncongested); history %v", st.Concurrency, float64(st.Concurrency)/slots, st.History)
		}
		if perSec < 0.9*slots*float64(time.Second)/float64(base) {
			t.Errorf("%.0f calls/s, want ≥ 90%% of %d", perSec, slots*5)
		}
	})
}

// stalls freezes a client for seeded episodes (gaps of 2–8 s, each
// 0.3–1.5 s long), as a busy machine freezes a process: a call that starts
// or ends during an episode is held until it is over.
type stalls struct {
	next llm.Client
	eps  [][2]time.Time
}

func newStalls(next llm.Client, seed uint64, d time.Duration) *stalls {
	r := rand.New(rand.NewPCG(seed, 0))
	s := &stalls{next: next}
	for at := time.Now(); at.Before(time.Now().Add(d)); {
		at = at.Add(2*time.Second + time.Duration(r.Int64N(int64(6*time.Second))))
		end := at.Add(300*time.Millisecond + time.Duration(r.Int64N(int64(1200*time.Millisecond))))
		s.eps = append(s.eps, [2]time.Time{at, end})
		at = end
	}
	return s
}

// hold sleeps until the episode now falls in (if any) is over.
func (s *stalls) hold(ctx context.Context) error {
	now := time.Now()
	for _, e := range s.eps {
		if !now.Before(e[0]) && now.Before(e[1]) {
			return sleep(ctx, e[1].Sub(now))
		}
	}
	return nil
}

func (s *stalls) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	if err := s.hold(ctx); err != nil {
		return llm.Response{}, err
	}
	resp, err := s.next.Complete(ctx, req)
	if herr := s.hold(ctx); herr != nil && err == nil {
		err = herr
	}
	return resp, err
}

// concurrency auto on a busy machine: the process freezes now and then
// (the stalls above), and every call of a window comes back two to eight
// times slower than the provider's 200ms although the provider is not
// congested. Against an unknown cap of 48 in flight, auto must keep within
// 1.10× of what a pool told the cap (max_concurrency 48, never cut for
// latency) achieves under the same stalls, with ≤ 2 % of requests refused
// after the first minute. The controller this replaced cut the limit by a
// tenth for each stall and lowered its ceiling each time.
func TestAutoConcurrencyRidesOutStalls(t *testing.T) {
	const latency, minutes = 200 * time.Millisecond, 6
	req := llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "hello"}}, MaxTokens: 64}
	run := func(lim ratelimit.Limits) (perMin float64, requests, refused int64, st ratelimit.Stats) {
		synctest.Test(t, func(t *testing.T) {
			fake := fakeprovider.New(fakeprovider.Config{MaxInFlight: 48, Latency: latency})
			reg := ratelimit.NewRegistry(ratelimit.Options{})
			c := retry(reg.Wrap("fake", lim, newStalls(fake, 7, minutes*time.Minute)))
			var atMinute fakeprovider.Counts
			var wg sync.WaitGroup
			wg.Go(func() {
				time.Sleep(time.Minute)
				atMinute = fake.Counts()
			})
			_, failed := drive(512, minutes*time.Minute, c, req)
			wg.Wait()
			if failed > 0 {
				t.Errorf("%d calls failed after retries", failed)
			}
			end := fake.Counts()
			perMin = float64(end.Accepted-atMinute.Accepted) / (minutes - 1)
			requests, refused = end.Requests-atMinute.Requests, end.RateLimited-atMinute.RateLimited
			st, _ = reg.PoolStats("fake")
		})
		return perMin, requests, refused, st
	}
	told, _, _, _ := run(ratelimit.Limits{MaxInFlight: 48})
	auto, requests, refused, st := run(ratelimit.Limits{})
	t.Logf("after minute 1: auto %.0f calls/min, told the cap %.0f (%.3f×); %d 429s of %d requests; limit %d, ceiling %d, back-offs %d",
		auto, told, told/auto, refused, requests, st.Concurrency, st.Ceiling, st.BackOffs)
	if auto < told/1.10 {
		t.Errorf("auto reached %.0f calls/min, want ≥ %.0f (1/1.10 of the %.0f with the cap told)", auto, told/1.10, told)
	}
	if float64(refused) > 0.02*float64(requests) {
		t.Errorf("%d of %d requests refused after the first minute, want ≤ 2%%", refused, requests)
	}
}
