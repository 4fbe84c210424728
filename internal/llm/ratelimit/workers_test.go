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

// K registries with Workers K, as K processes would run them, each driven
// by its own callers against one provider limit for ten virtual minutes:
// together they stay within it (≤ 1 % refused after the first minute) and
// still use it (≥ 90 % of the bound). Without the division every process
// adopts the whole learned limit, and only the pause at ≤ 1 % remaining
// and the 429s hold them back.
func TestWorkersShareOneProviderLimit(t *testing.T) {
	const workers, callers = 4, 60
	const latency = 2 * time.Second
	req := llm.Request{
		Messages:  []llm.Message{{Role: llm.RoleUser, Content: strings.Repeat("lorem ipsum ", 64)}},
		MaxTokens: 128,
	}
	perCall := float64(fakeprovider.CountTokens(req.Messages) + 64)
	for _, tc := range []struct {
		name   string
		fake   fakeprovider.Config
		limits ratelimit.Limits
		bound  float64 // accepted calls per minute the provider allows
	}{
		{"RPM learned from headers", fakeprovider.Config{RPM: 600}, ratelimit.Limits{}, 600},
		{"RPM configured, enforced per second", fakeprovider.Config{RPM: 600, Burst: time.Second},
			ratelimit.Limits{RPM: 600}, 600},
		{"TPM learned from headers", fakeprovider.Config{RPM: 6000, TPM: 120000}, ratelimit.Limits{}, 120000 / perCall},
		{"max_concurrency configured", fakeprovider.Config{MaxInFlight: 24}, ratelimit.Limits{MaxInFlight: 24},
			24 * float64(time.Minute) / float64(latency)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tc.fake.Latency = latency
				fake := fakeprovider.New(tc.fake)
				var atMinute fakeprovider.Counts
				var wg sync.WaitGroup
				wg.Go(func() {
					time.Sleep(time.Minute)
					atMinute = fake.Counts()
				})
				failed := make([]int64, workers)
				for i := range workers {
					wg.Go(func() {
						reg := ratelimit.NewRegistry(ratelimit.Options{Workers: workers})
						_, failed[i] = drive(callers, 10*time.Minute, retry(reg.Wrap("fake", tc.limits, fake)), req)
					})
				}
				wg.Wait()
				end := fake.Counts()
				requests, refused := end.Requests-atMinute.Requests, end.RateLimited-atMinute.RateLimited
				perMin := float64(end.Accepted-atMinute.Accepted) / 9
				t.Logf("after minute 1: %d requests, %d 429s (%.2f%%), %.0f calls/min of %.0f (%.1f%%); first minute %d 429s",
					requests, refused, 100*float64(refused)/float64(requests), perMin, tc.bound, 100*perMin/tc.bound, atMinute.RateLimited)
				for i, f := range failed {
					if f > 0 {
						t.Errorf("worker %d: %d calls failed after retries", i, f)
					}
				}
				if float64(refused) > 0.01*float64(requests) {
					t.Errorf("%d of %d requests refused after the first minute, want ≤ 1%%", refused, requests)
				}
				if perMin < 0.9*tc.bound {
					t.Errorf("%.0f calls/min, want ≥ 90%% of the %.0f possible", perMin, tc.bound)
				}
			})
		})
	}
}
