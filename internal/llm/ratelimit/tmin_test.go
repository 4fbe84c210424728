package ratelimit_test

import (
	"math"
	"testing"
	"time"

	"github.com/impactbench/impactbench/internal/llm/ratelimit"
)

func TestTMin(t *testing.T) {
	// The worked example of the providers-and-performance notes §2.3: 5,000
	// conversations of 6 turns and one judge call, 150M input and 18M output
	// tokens, user 4 s, target 8 s, judge 6 s.
	example := ratelimit.Workload{
		Conversations: 5000, Turns: 6, JudgeCalls: 1,
		InputTokens: 150_000_000, OutputTokens: 18_000_000,
		UserLatency: 4 * time.Second, TargetLatency: 8 * time.Second, JudgeLatency: 6 * time.Second,
	}
	min := func(m float64) time.Duration { return time.Duration(m * float64(time.Minute)) }
	for _, tc := range []struct {
		name         string
		w            ratelimit.Workload
		lim          ratelimit.Limits
		latency      time.Duration
		want         time.Duration
		binding      string
		wantInFlight float64         // ±1
		bounds       []time.Duration // request, token, input, output, concurrency
	}{
		{"tier 1", example, ratelimit.Limits{RPM: 1000, ITPM: 450_000, OTPM: 90_000}, 0,
			min(333.33), "input tokens", 19.5, []time.Duration{min(65), 0, min(333.33), min(200), 0}},
		{"tier 2", example, ratelimit.Limits{RPM: 4000, ITPM: 2_000_000, OTPM: 400_000}, 0,
			min(75), "input tokens", 86.7, []time.Duration{min(16.25), 0, min(75), min(45), 0}},
		{"tier 3", example, ratelimit.Limits{RPM: 10_000, ITPM: 10_000_000, OTPM: 2_000_000}, 0,
			min(15), "input tokens", 433.3, []time.Duration{min(6.5), 0, min(15), min(9), 0}},
		{"combined TPM", example, ratelimit.Limits{TPM: 2_000_000}, 0,
			min(84), "tokens", 77.4, []time.Duration{0, min(84), 0, 0, 0}},
		{"concurrency cap", example, ratelimit.Limits{MaxInFlight: 50}, 0,
			min(130), "concurrency", 50, []time.Duration{0, 0, 0, 0, min(130)}},
		{"few conversations: latency-bound", ratelimit.Workload{Conversations: 3, Turns: 6, JudgeCalls: 1, InputTokensPerCall: 2000, OutputTokensPerCall: 300},
			ratelimit.Limits{RPM: 1000, ITPM: 450_000, OTPM: 90_000}, 5 * time.Second,
			65 * time.Second, "critical path", 3, []time.Duration{2340 * time.Millisecond, 0, 10400 * time.Millisecond, 7800 * time.Millisecond, 0}},
		{"no limits", ratelimit.Workload{Conversations: 10, Turns: 2, JudgeCalls: 1}, ratelimit.Limits{}, time.Second,
			5 * time.Second, "critical path", 10, []time.Duration{0, 0, 0, 0, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, b := ratelimit.TMin(tc.w, tc.lim, tc.latency)
			near := func(a, b time.Duration) bool { return math.Abs(float64(a-b)) <= float64(time.Second) }
			if !near(got, tc.want) || b.Binding != tc.binding {
				t.Errorf("TMin = %v bound by %q, want %v by %q", got, b.Binding, tc.want, tc.binding)
			}
			gotBounds := []time.Duration{b.RequestBound, b.TokenBound, b.InputBound, b.OutputBound, b.ConcurrencyBound}
			for i := range gotBounds {
				if !near(gotBounds[i], tc.bounds[i]) {
					t.Errorf("bounds (req, tok, in, out, conc) = %v, want %v", gotBounds, tc.bounds)
					break
				}
			}
			if math.Abs(b.InFlight-tc.wantInFlight) > 1 {
				t.Errorf("in flight needed %.1f, want %.1f", b.InFlight, tc.wantInFlight)
			}
		})
	}

	t.Run("critical path and call count", func(t *testing.T) {
		_, b := ratelimit.TMin(example, ratelimit.Limits{}, 0)
		if b.CriticalPath != 78*time.Second || b.Calls != 65000 || b.MeanLatency != 6*time.Second {
			t.Errorf("critical path %v, calls %d, mean latency %v; want 78s, 65000, 6s", b.CriticalPath, b.Calls, b.MeanLatency)
		}
	})
}
