package ratelimit_test

import (
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
			workers: 100, bound: 24 * float64(time.Minute) / float64(latency+64*perToken), minShare: 0.75,
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
