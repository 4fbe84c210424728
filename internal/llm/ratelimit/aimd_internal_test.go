package ratelimit

import (
	"context"
	"testing"
	"time"

	"github.com/impactbench/impactbench/internal/llm"
)

// ctlHarness drives one pool's controller by hand on a fake clock: calls
// are admitted with acquire and finished with release at chosen instants,
// so each test states exactly which windows were clean, saturated, slow or
// refused.
type ctlHarness struct {
	t   *testing.T
	now time.Time
	p   *pool
}

func newCtl(t *testing.T, lim Limits, opts Options) *ctlHarness {
	h := &ctlHarness{t: t, now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	opts.Now = func() time.Time { return h.now }
	if opts.InitialConcurrency == 0 {
		// The controller's steps below are written from a start of 16.
		opts.InitialConcurrency = 16
	}
	h.p = newPool("p", lim, opts.withDefaults())
	return h
}

func (h *ctlHarness) limit() int {
	h.p.mu.Lock()
	defer h.p.mu.Unlock()
	return h.p.limit
}

// admit takes n slots at the current instant (they must be free).
func (h *ctlHarness) admit(n int) []ticket {
	h.t.Helper()
	ts := make([]ticket, n)
	for i := range ts {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		tk, err := h.p.acquire(ctx, 10, 10, 0)
		cancel()
		if err != nil {
			h.t.Fatalf("admit %d of %d at limit %d: %v", i+1, n, h.limit(), err)
		}
		ts[i] = tk
	}
	return ts
}

func (h *ctlHarness) finish(ts []ticket, err error) {
	for _, tk := range ts {
		var resp llm.Response
		if err == nil {
			resp = llm.Response{Text: "ok"}
		}
		h.p.release(tk, &resp, err)
	}
}

// window admits k calls at once, lets latency pass and finishes them all
// with err (nil: success): one window when k equals the limit.
func (h *ctlHarness) window(k int, latency time.Duration, err error) {
	h.t.Helper()
	ts := h.admit(k)
	h.now = h.now.Add(latency)
	h.finish(ts, err)
}

// full runs a saturated window at the current limit.
func (h *ctlHarness) full(latency time.Duration) { h.window(h.limit(), latency, nil) }

func (h *ctlHarness) lastReason() string {
	h.p.mu.Lock()
	defer h.p.mu.Unlock()
	return h.p.st.History[len(h.p.st.History)-1].Reason
}

func rl429() error { return &llm.Error{Kind: llm.KindRateLimit, StatusCode: 429} }

func TestControllerGrowsWhenCleanAndSaturated(t *testing.T) {
	h := newCtl(t, Limits{}, Options{})
	if h.limit() != 16 {
		t.Fatalf("start at %d, want 16", h.limit())
	}
	h.full(100 * time.Millisecond)
	if h.limit() != 32 || h.lastReason() != "slow start" {
		t.Fatalf("after a clean saturated window: %d (%s), want 32 by slow start", h.limit(), h.lastReason())
	}
	h.full(100 * time.Millisecond)
	h.full(100 * time.Millisecond)
	if h.limit() != 128 {
		t.Fatalf("after three clean windows: %d, want 128", h.limit())
	}

	// Without slow start: +5 % (at least 1) per clean saturated window.
	h = newCtl(t, Limits{}, Options{AIMD: AIMD{NoSlowStart: true}})
	h.full(100 * time.Millisecond)
	if h.limit() != 17 || h.lastReason() != "increase" {
		t.Fatalf("additive increase: %d (%s), want 17", h.limit(), h.lastReason())
	}
}

func TestControllerHoldsWhenNotSaturated(t *testing.T) {
	h := newCtl(t, Limits{}, Options{})
	// 16 completions, never more than 4 in flight: the limit was not used,
	// so nothing says a higher one would work.
	for range 4 {
		h.window(4, 100*time.Millisecond, nil)
	}
	if h.limit() != 16 {
		t.Fatalf("limit %d after unsaturated windows, want 16", h.limit())
	}
}

func TestControllerBacksOffOn429(t *testing.T) {
	h := newCtl(t, Limits{}, Options{})
	ts := h.admit(16)
	h.now = h.now.Add(50 * time.Millisecond)
	h.finish(ts[:1], rl429())
	if h.limit() != 14 || h.lastReason() != "429" {
		t.Fatalf("after a 429 with 16 in flight: %d (%s), want 14 (0.9 × 16)", h.limit(), h.lastReason())
	}
	// The other 15 were sent under the old limit: their 429s are the same
	// episode.
	h.finish(ts[1:], rl429())
	if h.limit() != 14 {
		t.Fatalf("429s of calls sent before the cut cut again: %d, want 14", h.limit())
	}
	// A call sent after the cut that is refused too: the new limit is still
	// too high.
	h.now = h.now.Add(time.Millisecond)
	h.window(14, 50*time.Millisecond, rl429())
	if h.limit() != 12 {
		t.Fatalf("429 of a call sent after the cut: %d, want 12", h.limit())
	}
	// Clean saturated windows during the cooldown do not grow the limit.
	h.full(100 * time.Millisecond)
	if h.limit() != 12 {
		t.Fatalf("grew to %d inside the cooldown", h.limit())
	}
	// After it: additive (slow start ended with the first 429), and only up
	// to just below the level of the last back-off (14 in flight).
	h.now = h.now.Add(5 * time.Second)
	h.full(100 * time.Millisecond)
	h.full(100 * time.Millisecond)
	h.full(100 * time.Millisecond)
	if h.limit() != 13 {
		t.Fatalf("after the cooldown: %d, want 13 (ceiling 14 - 1)", h.limit())
	}
	// Past the ceiling only by probes, one per ProbeInterval, each doubling
	// the next.
	h.now = h.now.Add(5 * time.Second)
	h.full(100 * time.Millisecond)
	if h.limit() != 14 || h.lastReason() != "probe" {
		t.Fatalf("first probe: %d (%s), want 14", h.limit(), h.lastReason())
	}
	h.full(100 * time.Millisecond)
	if h.limit() != 14 {
		t.Fatalf("probed again within ProbeInterval: %d", h.limit())
	}
	h.now = h.now.Add(5 * time.Second)
	h.full(100 * time.Millisecond)
	if h.limit() != 16 {
		t.Fatalf("second probe: %d, want 16 (+2)", h.limit())
	}
}

// Calls admitted in the same instant as a cut (a release admits every
// waiter that fits at once, and a coarse clock gives many calls one
// reading) are told apart from later ones by admission order, not time:
// a 429 of a call sent before the cut is the same episode, a 429 of one
// sent after it at the same instant cuts again.
func TestControllerOrdersBackOffsByAdmissionNotClock(t *testing.T) {
	h := newCtl(t, Limits{}, Options{})
	before := h.admit(16)
	h.finish(before[:1], rl429()) // same instant: cut to 14
	if h.limit() != 14 {
		t.Fatalf("after a 429 with 16 in flight: %d, want 14", h.limit())
	}
	h.finish(before[1:2], rl429())
	if h.limit() != 14 {
		t.Fatalf("a 429 of a call admitted before the cut, in the same instant, cut again: %d", h.limit())
	}
	h.finish(before[2:3], nil) // 13 in flight under the limit of 14
	after := h.admit(1)        // still the same instant, but admitted after the cut
	h.finish(after, rl429())
	if h.limit() != 12 {
		t.Fatalf("a 429 of a call admitted after the cut did not cut: %d, want 12 (0.9 × 14)", h.limit())
	}
}

func TestControllerNeverBelowMin(t *testing.T) {
	for _, minLimit := range []int{0, 3} { // 0: the default floor, 1
		h := newCtl(t, Limits{}, Options{AIMD: AIMD{Min: minLimit}})
		for range 60 {
			h.now = h.now.Add(time.Millisecond)
			h.window(h.limit(), 10*time.Millisecond, rl429())
		}
		want := max(minLimit, 1)
		if h.limit() != want {
			t.Errorf("Min %d: limit %d after 60 refused rounds, want %d", minLimit, h.limit(), want)
		}
	}
}

func TestControllerRespectsCap(t *testing.T) {
	for _, tc := range []struct {
		name string
		lim  Limits
		opts Options
		want int
	}{
		{"max_concurrency", Limits{MaxInFlight: 40}, Options{}, 40},
		{"registry ceiling", Limits{}, Options{MaxConcurrency: 100}, 100},
		{"default ceiling", Limits{}, Options{}, DefaultMaxConcurrency},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newCtl(t, tc.lim, tc.opts)
			for range 30 {
				h.full(100 * time.Millisecond)
			}
			if h.limit() != tc.want {
				t.Errorf("limit %d after 30 clean windows, want the cap %d", h.limit(), tc.want)
			}
		})
	}
}

func TestControllerBacksOffOnLatencyRise(t *testing.T) {
	h := newCtl(t, Limits{}, Options{})
	h.full(100 * time.Millisecond) // baseline 100ms at 16 in flight; 32 by slow start
	// Twice the baseline is still fine…
	h.full(190 * time.Millisecond)
	if h.limit() != 64 {
		t.Fatalf("backed off at 1.9× the baseline: limit %d, want 64 by slow start", h.limit())
	}
	// …more, at a level never measured before, is congestion.
	h.full(300 * time.Millisecond)
	if h.limit() != 57 || h.lastReason() != "latency" {
		t.Fatalf("at 3× the baseline with 64 in flight: %d (%s), want 57 (0.9 × 64) by latency", h.limit(), h.lastReason())
	}
	// Better after the cut but still too slow, and still above the 32
	// known to be fast: cut again.
	h.full(250 * time.Millisecond)
	if h.limit() != 51 {
		t.Fatalf("2.5× the baseline after a cut: %d, want 51 (0.9 × 57)", h.limit())
	}
	// Back under the threshold: the limit holds (cooldown), then grows.
	h.full(150 * time.Millisecond)
	if h.limit() != 51 {
		t.Fatalf("latency recovered, limit 51 → %d inside the cooldown", h.limit())
	}
	h.now = h.now.Add(5 * time.Second)
	h.full(150 * time.Millisecond)
	if h.limit() <= 51 {
		t.Fatalf("no growth after the cooldown with latency back to normal: %d", h.limit())
	}
}

// Calls that are simply slower (longer replies, another phase) are not
// congestion: when backing off does not bring latency down, the baseline
// moves to the new level instead of the limit falling further.
func TestControllerLatencyRebaselines(t *testing.T) {
	h := newCtl(t, Limits{}, Options{})
	h.full(100 * time.Millisecond) // 16 → 32
	h.full(100 * time.Millisecond) // 32 → 64
	h.full(400 * time.Millisecond) // cut to 57
	h.full(400 * time.Millisecond) // measured after the cut, still slow: cut again
	cut := h.limit()
	h.full(400 * time.Millisecond) // no better after that cut either: rebaseline
	h.full(400 * time.Millisecond)
	if h.limit() != cut {
		t.Fatalf("limit %d, want it held at %d once the slower calls became the baseline", h.limit(), cut)
	}
	h.p.mu.Lock()
	base := h.p.latBase
	h.p.mu.Unlock()
	if base != 400*time.Millisecond {
		t.Fatalf("baseline %v, want it moved to the new latency 400ms", base)
	}
}

// A slow window at a level of calls in flight that was fast before is not
// congestion we caused (we sent no more than then): on a busy machine the
// process itself stalls, and every call of a window comes back slow. The
// limit neither falls nor grows into the stall; once latency is back it
// grows again. The code this replaced cut by a tenth for each such window.
func TestControllerHoldsThroughStallAtKnownLevel(t *testing.T) {
	h := newCtl(t, Limits{}, Options{MaxConcurrency: 32})
	h.full(100 * time.Millisecond) // baseline at 16; 32 by slow start (the cap)
	h.full(100 * time.Millisecond) // 32 in flight measured fast
	for range 3 {
		h.full(300 * time.Millisecond)
		if h.limit() != 32 {
			t.Fatalf("a stall at the 32 in flight known to be fast cut the limit to %d (%s)", h.limit(), h.lastReason())
		}
	}
	// After a 429 cut (32 → 28) the pool would grow back after the
	// cooldown, but not during a stall: growing into it would make the
	// next window look like our overshoot.
	h.window(32, 50*time.Millisecond, rl429())
	if h.limit() != 28 {
		t.Fatalf("after a 429: %d, want 28", h.limit())
	}
	h.now = h.now.Add(5 * time.Second)
	h.full(300 * time.Millisecond)
	if h.limit() != 28 {
		t.Fatalf("grew to %d during a stall", h.limit())
	}
	h.full(100 * time.Millisecond)
	if h.limit() <= 28 || h.lastReason() != "increase" {
		t.Fatalf("no growth once the stall ended: %d (%s)", h.limit(), h.lastReason())
	}
}

// A configured max_concurrency is the owner's word for what the server
// takes: slower calls do not cut below it, a 429 still does.
func TestControllerConfiguredCapIgnoresLatency(t *testing.T) {
	h := newCtl(t, Limits{MaxInFlight: 16}, Options{AIMD: AIMD{NoSlowStart: true}})
	for range 3 {
		h.full(100 * time.Millisecond)
	}
	for range 3 {
		h.full(time.Second)
	}
	if h.limit() != 16 {
		t.Fatalf("limit %d after slow windows, want the configured 16", h.limit())
	}
	h.window(16, 100*time.Millisecond, rl429())
	if h.limit() >= 16 || h.lastReason() != "429" {
		t.Fatalf("after a 429: limit %d (%s), want a cut by 429", h.limit(), h.lastReason())
	}
}

func TestControllerLatencySignalOff(t *testing.T) {
	h := newCtl(t, Limits{}, Options{AIMD: AIMD{NoSlowStart: true, LatencyFactor: -1}})
	for range 3 {
		h.full(100 * time.Millisecond)
	}
	before := h.limit()
	h.full(time.Second)
	if h.limit() < before {
		t.Fatalf("backed off on latency with the signal off: %d → %d", before, h.limit())
	}
}

func TestControllerOverloadBacksOffServerErrorDoesNot(t *testing.T) {
	h := newCtl(t, Limits{}, Options{})
	h.window(16, 50*time.Millisecond, &llm.Error{Kind: llm.KindServer, StatusCode: 500})
	if h.limit() != 16 {
		t.Fatalf("500s cut the limit to %d", h.limit())
	}
	h.window(16, 50*time.Millisecond, &llm.Error{Kind: llm.KindOverloaded, StatusCode: 529})
	if h.limit() != 14 || h.lastReason() != "overloaded" {
		t.Fatalf("after 529s: %d (%s), want 14 by overloaded", h.limit(), h.lastReason())
	}
}

// A failed probe returns to the level before it (which held a whole
// ProbeInterval), not to 0.9 × the probe; a refusal after that cuts as usual.
func TestControllerFailedProbeFallsBack(t *testing.T) {
	h := newCtl(t, Limits{}, Options{InitialConcurrency: 100})
	h.window(100, 50*time.Millisecond, rl429()) // 90, ceiling 100
	h.now = h.now.Add(5 * time.Second)
	for range 3 {
		h.full(100 * time.Millisecond) // 95, 99, 99
	}
	for _, want := range []int{100, 102, 106} {
		h.now = h.now.Add(5 * time.Second)
		h.full(100 * time.Millisecond)
		if h.limit() != want || h.lastReason() != "probe" {
			t.Fatalf("probe: %d (%s), want %d", h.limit(), h.lastReason(), want)
		}
	}
	h.now = h.now.Add(time.Millisecond)
	h.window(106, 50*time.Millisecond, rl429())
	if h.limit() != 102 {
		t.Fatalf("failed probe from 102 to 106: limit %d, want 102", h.limit())
	}
	h.now = h.now.Add(time.Millisecond)
	h.window(102, 50*time.Millisecond, rl429())
	if h.limit() != 91 {
		t.Fatalf("refused again at 102: limit %d, want 91 (0.9 ×)", h.limit())
	}
}
