package ratelimit_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/impactbench/impactbench/internal/llm"
	"github.com/impactbench/impactbench/internal/llm/ratelimit"
)

func TestInFlightNeverExceedsMaxInFlight(t *testing.T) {
	for _, tc := range []struct {
		name        string
		maxInFlight int
		every429    int // every n-th call fails with 429 (0: never)
	}{
		{"one slot", 1, 0},
		{"five slots", 5, 0},
		{"five slots with 429s", 5, 7},
		{"cap above default start", 40, 0},
		{"cap above default start with 429s", 40, 11},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var n atomic.Int64
				inner := llm.ClientFunc(func(ctx context.Context, req llm.Request) (llm.Response, error) {
					i := n.Add(1)
					// Varied latencies so slots free up out of order.
					if err := sleep(ctx, time.Duration(50+i%7*40)*time.Millisecond); err != nil {
						return llm.Response{}, err
					}
					if tc.every429 > 0 && i%int64(tc.every429) == 0 {
						return llm.Response{}, rateLimited(0)
					}
					return llm.Response{Text: "ok"}, nil
				})
				rec := &recorder{next: inner}
				reg := ratelimit.NewRegistry(ratelimit.Options{})
				c := retry(reg.Wrap("p", ratelimit.Limits{MaxInFlight: tc.maxInFlight}, rec))
				drive(3*tc.maxInFlight+10, 2*time.Minute, c, smallReq)

				st, _ := reg.PoolStats("p")
				if rec.peak > tc.maxInFlight || st.PeakInFlight > tc.maxInFlight {
					t.Errorf("peak in flight: provider saw %d, limiter %d; want ≤ %d", rec.peak, st.PeakInFlight, tc.maxInFlight)
				}
				if tc.every429 == 0 && rec.peak != tc.maxInFlight {
					t.Errorf("peak in flight %d, want the full %d (enough workers were waiting)", rec.peak, tc.maxInFlight)
				}
				for _, h := range st.History {
					if h.Limit > tc.maxInFlight {
						t.Errorf("limit %d at %v (%s) exceeds MaxInFlight %d", h.Limit, h.At, h.Reason, tc.maxInFlight)
					}
				}
			})
		})
	}
}

// A provider answers 429 (Retry-After 1s) to everything for 20 s, then
// recovers. The limit must fall during the storm, at most once per round
// (only a call sent after the last cut counts, and the pool pauses for the
// Retry-After), not once per 429, and grow back afterwards.
func TestAIMDDecreasesOnStormAndRecovers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Now()
		const storm = 20 * time.Second
		inner := llm.ClientFunc(func(ctx context.Context, req llm.Request) (llm.Response, error) {
			if time.Since(t0) < storm {
				if err := sleep(ctx, 50*time.Millisecond); err != nil {
					return llm.Response{}, err
				}
				return llm.Response{}, rateLimited(time.Second)
			}
			if err := sleep(ctx, time.Second); err != nil {
				return llm.Response{}, err
			}
			return llm.Response{Text: "ok"}, nil
		})
		reg := ratelimit.NewRegistry(ratelimit.Options{})
		c := retry(reg.Wrap("p", ratelimit.Limits{}, inner))
		drive(64, 5*time.Minute, c, smallReq)

		st, _ := reg.PoolStats("p")
		if st.RateLimited < 50 {
			t.Fatalf("only %d 429s: the storm did not happen", st.RateLimited)
		}
		decreases, low := 0, st.History[0].Limit
		for _, h := range st.History {
			if h.Reason == "429" {
				decreases++
				if h.At.Sub(t0) > storm+2*time.Second {
					t.Errorf("decrease at +%v, after the storm ended", h.At.Sub(t0))
				}
			}
			low = min(low, h.Limit)
		}
		// One round per Retry-After pause: at most 21 cuts in a 20 s storm
		// however many 429s it produced.
		if decreases < 2 || decreases > 21 || int64(decreases) > st.RateLimited/4 {
			t.Errorf("%d decreases for %d 429s in a %v storm, want 2..21 and at most one per 4 429s", decreases, st.RateLimited, storm)
		}
		if low >= 16 {
			t.Errorf("limit never went below its start of 16 (lowest %d)", low)
		}
		if st.Concurrency < 16 {
			t.Errorf("limit %d after 4½ quiet minutes, want recovered to ≥ 16; history %v", st.Concurrency, st.History)
		}
	})
}

// Provider trouble other than 429 and overload must never shrink the limit.
func TestServerErrorsNeverShrink(t *testing.T) {
	for _, kind := range []llm.ErrorKind{llm.KindServer, llm.KindTimeout, llm.KindConnection} {
		t.Run(string(kind), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				t0 := time.Now()
				inner := llm.ClientFunc(func(ctx context.Context, req llm.Request) (llm.Response, error) {
					if err := sleep(ctx, 200*time.Millisecond); err != nil {
						return llm.Response{}, err
					}
					if time.Since(t0) < 30*time.Second {
						return llm.Response{}, &llm.Error{Kind: kind, StatusCode: 503, RetryAfter: time.Second}
					}
					return llm.Response{Text: "ok"}, nil
				})
				reg := ratelimit.NewRegistry(ratelimit.Options{})
				c := retry(reg.Wrap("p", ratelimit.Limits{}, inner))
				drive(32, time.Minute, c, smallReq)

				st, _ := reg.PoolStats("p")
				if st.Overloaded == 0 {
					t.Fatal("no errors were seen")
				}
				for _, h := range st.History {
					if h.Limit < 16 {
						t.Errorf("limit fell to %d (%s) on %s errors", h.Limit, h.Reason, kind)
					}
				}
				if st.Pauses != 0 {
					t.Errorf("%d pool pauses on %s; only 429s pause the pool", st.Pauses, kind)
				}
			})
		})
	}
}

// Zero-latency calls from many workers: the request bucket alone decides
// how many calls reach the provider each minute.
func TestRPMBucketEnforcesRate(t *testing.T) {
	for _, rpm := range []int{60, 600, 6000} {
		t.Run(fmt.Sprint(rpm), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rec := &recorder{next: answer(0, llm.Usage{})}
				reg := ratelimit.NewRegistry(ratelimit.Options{})
				c := reg.Wrap("p", ratelimit.Limits{RPM: rpm}, rec)
				t0 := time.Now()
				drive(50, 5*time.Minute, c, smallReq)

				burst := max(1, rpm/60) // one second's worth
				for i, n := range rec.perMinute(t0, 5) {
					// The first minute may add the initial burst; later ones
					// must sit at the rate (work-conserving: not below it).
					hi := rpm
					if i == 0 {
						hi += burst
					}
					if n > hi || n < rpm-1 {
						t.Errorf("minute %d: %d calls, want %d..%d", i, n, rpm-1, hi)
					}
				}
			})
		})
	}
}

// Output tokens are reserved at max_tokens and refunded to actual usage, so
// throughput follows what calls really produce, not their caps.
func TestOutputReservationIsRefunded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const otpm, maxTokens, used = 6000, 1000, 10
		rec := &recorder{next: answer(time.Second, llm.Usage{InputTokens: 5, OutputTokens: used})}
		reg := ratelimit.NewRegistry(ratelimit.Options{})
		c := reg.Wrap("p", ratelimit.Limits{OTPM: otpm}, rec)
		req := smallReq
		req.MaxTokens = maxTokens
		t0 := time.Now()
		drive(20, 4*time.Minute, c, req)

		// Charges left at max_tokens would allow otpm/maxTokens = 6 calls a
		// minute. Refunded, the bucket (a minute's worth) holds at least 6
		// reservations at any time, so at least 6 calls per second of
		// latency: 360 a minute. Real usage would allow 600.
		for i, n := range rec.perMinute(t0, 4)[1:] {
			if n < 360 || n > otpm/used {
				t.Errorf("minute %d: %d calls, want 360..%d (reservations must be refunded)", i+1, n, otpm/used)
			}
		}
		st, _ := reg.PoolStats("p")
		if st.OutputTokens == 0 || st.OutputTokens/max(st.Succeeded, 1) != used {
			t.Errorf("stats: %d output tokens over %d calls, want %d each", st.OutputTokens, st.Succeeded, used)
		}
	})
}

// A 429 with Retry-After stops every caller of the pool, not just the one
// that received it.
func TestRetryAfterPausesWholePool(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const retryAfter = 30 * time.Second
		var first atomic.Bool
		inner := llm.ClientFunc(func(ctx context.Context, req llm.Request) (llm.Response, error) {
			if first.CompareAndSwap(false, true) {
				return llm.Response{}, rateLimited(retryAfter)
			}
			return llm.Response{Text: "ok"}, sleep(ctx, 100*time.Millisecond)
		})
		rec := &recorder{next: inner}
		reg := ratelimit.NewRegistry(ratelimit.Options{})
		c := reg.Wrap("p", ratelimit.Limits{}, rec)

		t0 := time.Now()
		if _, err := c.Complete(t.Context(), smallReq); llm.KindOf(err) != llm.KindRateLimit {
			t.Fatalf("first call: %v, want the 429", err)
		}
		time.Sleep(time.Second)
		// Other workers arrive during the pause; none may reach the provider
		// before it ends.
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				if _, err := c.Complete(t.Context(), smallReq); err != nil {
					t.Errorf("call after pause: %v", err)
				}
			})
		}
		wg.Wait()
		later := rec.startsSince(t0.Add(time.Nanosecond))
		if len(later) != 8 {
			t.Fatalf("%d calls reached the provider after the 429, want 8", len(later))
		}
		for _, s := range later {
			if d := s.Sub(t0); d < retryAfter {
				t.Errorf("a call reached the provider %v after the 429, inside the %v pause", d, retryAfter)
			}
		}
		if st, _ := reg.PoolStats("p"); st.Pauses != 1 {
			t.Errorf("pauses = %d, want 1", st.Pauses)
		}
	})
}

func TestHeaderLearning(t *testing.T) {
	for _, tc := range []struct {
		name     string
		config   ratelimit.Limits
		reported llm.RateLimit
		want     ratelimit.Limits // effective after one response
	}{
		{"adopts unknown RPM at 95%", ratelimit.Limits{}, llm.RateLimit{LimitRequests: 600, RemainingRequests: 599}, ratelimit.Limits{RPM: 570}},
		{"adopts unknown TPM at 95%", ratelimit.Limits{}, llm.RateLimit{LimitTokens: 100000, RemainingTokens: 90000}, ratelimit.Limits{TPM: 95000}},
		{"lowers a config the provider does not grant", ratelimit.Limits{RPM: 1000}, llm.RateLimit{LimitRequests: 600, RemainingRequests: 500}, ratelimit.Limits{RPM: 570}},
		{"keeps a config below the provider's limit", ratelimit.Limits{RPM: 500}, llm.RateLimit{LimitRequests: 600, RemainingRequests: 500}, ratelimit.Limits{RPM: 500}},
		{"keeps a config equal to the provider's limit", ratelimit.Limits{RPM: 600}, llm.RateLimit{LimitRequests: 600, RemainingRequests: 500}, ratelimit.Limits{RPM: 600}},
		{"input-token config: tokens header not adopted as TPM", ratelimit.Limits{ITPM: 50000}, llm.RateLimit{LimitTokens: 80000, RemainingTokens: 70000}, ratelimit.Limits{ITPM: 50000}},
		{"nothing reported", ratelimit.Limits{}, llm.RateLimit{}, ratelimit.Limits{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rl := tc.reported
				inner := llm.ClientFunc(func(ctx context.Context, req llm.Request) (llm.Response, error) {
					return llm.Response{Text: "ok", RateLimit: &rl}, nil
				})
				reg := ratelimit.NewRegistry(ratelimit.Options{})
				c := reg.Wrap("p", tc.config, inner)
				if _, err := c.Complete(t.Context(), smallReq); err != nil {
					t.Fatal(err)
				}
				st, _ := reg.PoolStats("p")
				if st.Effective != tc.want {
					t.Errorf("effective limits %+v, want %+v", st.Effective, tc.want)
				}
				if st.Configured != tc.config {
					t.Errorf("configured limits changed to %+v", st.Configured)
				}
			})
		})
	}
}

// A learned RPM is enforced from then on.
func TestLearnedRPMIsEnforced(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		inner := llm.ClientFunc(func(ctx context.Context, req llm.Request) (llm.Response, error) {
			return llm.Response{Text: "ok", RateLimit: &llm.RateLimit{LimitRequests: 120, RemainingRequests: 100}}, nil
		})
		rec := &recorder{next: inner}
		reg := ratelimit.NewRegistry(ratelimit.Options{})
		c := reg.Wrap("p", ratelimit.Limits{}, rec)
		t0 := time.Now()
		drive(10, 3*time.Minute, c, smallReq)
		for i, n := range rec.perMinute(t0, 3)[1:] {
			if n < 113 || n > 114 { // 95% of 120 = 114 per minute
				t.Errorf("minute %d: %d calls, want 113..114", i+1, n)
			}
		}
	})
}

// Headers saying the quota is nearly spent pause the pool until enough of
// it has refilled, instead of sending into the wall.
func TestNearlySpentQuotaPausesPool(t *testing.T) {
	for _, tc := range []struct {
		name      string
		rl        llm.RateLimit
		wantPause time.Duration // minimum gap before the next call
	}{
		// 1000 RPM, 5 left, full in 60 s: a twentieth (50) is back after 60·50/995 s.
		{"requests", llm.RateLimit{LimitRequests: 1000, RemainingRequests: 5, ResetRequests: time.Minute}, 3015 * time.Millisecond},
		{"tokens", llm.RateLimit{LimitTokens: 10000, RemainingTokens: 0, ResetTokens: 10 * time.Second}, 500 * time.Millisecond},
		{"plenty left", llm.RateLimit{LimitRequests: 1000, RemainingRequests: 900, ResetRequests: 6 * time.Second}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var n atomic.Int64
				inner := llm.ClientFunc(func(ctx context.Context, req llm.Request) (llm.Response, error) {
					if n.Add(1) == 1 {
						rl := tc.rl
						return llm.Response{Text: "ok", RateLimit: &rl}, nil
					}
					return llm.Response{Text: "ok"}, nil
				})
				rec := &recorder{next: inner}
				// Configured limits high enough that buckets never delay.
				reg := ratelimit.NewRegistry(ratelimit.Options{})
				c := reg.Wrap("p", ratelimit.Limits{RPM: 1_000_000, TPM: 1_000_000_000}, rec)
				for range 2 {
					if _, err := c.Complete(t.Context(), smallReq); err != nil {
						t.Fatal(err)
					}
				}
				gap := rec.starts[1].Sub(rec.starts[0])
				if gap < tc.wantPause || gap > tc.wantPause+time.Millisecond {
					t.Errorf("second call %v after the first, want %v", gap, tc.wantPause)
				}
			})
		})
	}
}

// Waits return ctx.Err() as soon as the context ends, wherever the caller
// is waiting, and leave the pool usable.
func TestContextCancelWhileWaiting(t *testing.T) {
	for _, tc := range []struct {
		name   string
		limits ratelimit.Limits
		// block puts the pool into the waiting state; it must be done when
		// ctx ends.
		block func(ctx context.Context, c llm.Client)
	}{
		{"for a slot", ratelimit.Limits{MaxInFlight: 1}, func(ctx context.Context, c llm.Client) {
			c.Complete(ctx, smallReq) // holds the only slot for an hour
		}},
		{"for the request bucket", ratelimit.Limits{RPM: 1}, func(ctx context.Context, c llm.Client) {
			c.Complete(ctx, llm.Request{Meta: map[string]string{"quick": "1"}})
		}},
		{"for a pause", ratelimit.Limits{}, func(ctx context.Context, c llm.Client) {
			c.Complete(ctx, llm.Request{Meta: map[string]string{"429": "1"}})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				inner := llm.ClientFunc(func(ctx context.Context, req llm.Request) (llm.Response, error) {
					switch {
					case req.Meta["429"] != "":
						return llm.Response{}, rateLimited(time.Hour)
					case req.Meta["quick"] != "":
						return llm.Response{Text: "ok"}, nil
					}
					return llm.Response{Text: "ok"}, sleep(ctx, time.Hour)
				})
				reg := ratelimit.NewRegistry(ratelimit.Options{})
				c := reg.Wrap("p", tc.limits, inner)
				blockCtx, unblock := context.WithCancel(context.Background())
				var blocker sync.WaitGroup
				blocker.Go(func() { tc.block(blockCtx, c) })
				defer blocker.Wait()
				defer unblock()
				synctest.Wait()

				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan error)
				go func() {
					_, err := c.Complete(ctx, smallReq)
					done <- err
				}()
				synctest.Wait()
				if st, _ := reg.PoolStats("p"); st.Queued != 1 {
					t.Fatalf("queued = %d, want the caller waiting", st.Queued)
				}
				start := time.Now()
				cancel()
				err := <-done
				if !errors.Is(err, context.Canceled) {
					t.Errorf("err = %v, want context.Canceled", err)
				}
				if d := time.Since(start); d != 0 {
					t.Errorf("returned %v after cancel, want at once", d)
				}
				if st, _ := reg.PoolStats("p"); st.Queued != 0 {
					t.Errorf("queued = %d after cancel, want 0", st.Queued)
				}
			})
		})
	}
}

// Clients wrapped with one key share one limiter; the strictest limits win.
func TestPoolIsSharedAcrossWraps(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{next: answer(time.Second, llm.Usage{})}
		reg := ratelimit.NewRegistry(ratelimit.Options{})
		a := reg.Wrap("same", ratelimit.Limits{MaxInFlight: 4}, rec)
		b := reg.Wrap("same", ratelimit.Limits{MaxInFlight: 3, RPM: 6000}, rec)
		other := reg.Wrap("other", ratelimit.Limits{MaxInFlight: 4}, answer(time.Second, llm.Usage{}))

		var wg sync.WaitGroup
		for _, c := range []llm.Client{a, b, other} {
			wg.Go(func() { drive(10, 30*time.Second, c, smallReq) })
		}
		wg.Wait()
		if rec.peak != 3 {
			t.Errorf("two wraps of one pool had %d calls in flight together, want 3 (the stricter cap)", rec.peak)
		}
		st, _ := reg.PoolStats("same")
		if want := (ratelimit.Limits{MaxInFlight: 3, RPM: 6000}); st.Configured != want {
			t.Errorf("merged limits %+v, want %+v", st.Configured, want)
		}
		if got := len(reg.Stats()); got != 2 {
			t.Errorf("%d pools, want 2", got)
		}
	})
}

// Cancelled calls and cached answers give everything back.
func TestCachedResponseRefundsCharges(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		inner := llm.ClientFunc(func(ctx context.Context, req llm.Request) (llm.Response, error) {
			return llm.Response{Text: "ok", Cached: true, Usage: llm.Usage{InputTokens: 10, OutputTokens: 10}}, nil
		})
		rec := &recorder{next: inner}
		reg := ratelimit.NewRegistry(ratelimit.Options{})
		c := reg.Wrap("p", ratelimit.Limits{RPM: 60}, rec) // one request per second
		for range 100 {
			if _, err := c.Complete(t.Context(), smallReq); err != nil {
				t.Fatal(err)
			}
		}
		if rec.starts[99].Sub(rec.starts[0]) != 0 {
			t.Errorf("100 cached answers took %v, want no waiting", rec.starts[99].Sub(rec.starts[0]))
		}
	})
}

func TestEstimateTokens(t *testing.T) {
	for _, tc := range []struct {
		name    string
		req     llm.Request
		in, out int
	}{
		{"empty", llm.Request{}, 3, ratelimit.DefaultMaxTokens},
		{"one message", llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "12345678"}}, MaxTokens: 100}, 2 + 4 + 3, 100},
		{"rounds up", llm.Request{Messages: []llm.Message{{Content: "123456789"}}}, 3 + 4 + 3, ratelimit.DefaultMaxTokens},
		{"two messages", llm.Request{Messages: []llm.Message{{Content: "abcd"}, {Content: "efgh"}}, MaxTokens: 7}, 2 + 8 + 3, 7},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in, out := ratelimit.EstimateTokens(tc.req)
			if in != tc.in || out != tc.out {
				t.Errorf("EstimateTokens = (%d, %d), want (%d, %d)", in, out, tc.in, tc.out)
			}
		})
	}
}

func BenchmarkWrapOverhead(b *testing.B) {
	inner := llm.ClientFunc(func(ctx context.Context, req llm.Request) (llm.Response, error) {
		return llm.Response{}, nil
	})
	req := llm.Request{Messages: []llm.Message{{Role: llm.RoleSystem, Content: "You are helpful."}, {Role: llm.RoleUser, Content: "Hello there."}}}
	for _, bc := range []struct {
		name string
		lim  ratelimit.Limits
	}{
		{"unlimited", ratelimit.Limits{}},
		// Limits too high to ever wait: the cost of the bucket arithmetic.
		{"buckets", ratelimit.Limits{RPM: 1e9, TPM: 1e12, ITPM: 1e12, OTPM: 1e12}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			c := ratelimit.NewRegistry(ratelimit.Options{}).Wrap("bench", bc.lim, inner)
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.Complete(ctx, req); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(bc.name+"/parallel", func(b *testing.B) {
			c := ratelimit.NewRegistry(ratelimit.Options{}).Wrap("bench", bc.lim, inner)
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				ctx := context.Background()
				for pb.Next() {
					if _, err := c.Complete(ctx, req); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

// A pool starts where its creator says (a configured phase concurrency),
// within max_concurrency; a later client's hint changes nothing.
func TestPoolStartsAtTheConfiguredConcurrency(t *testing.T) {
	ok := llm.ClientFunc(func(context.Context, llm.Request) (llm.Response, error) { return llm.Response{}, nil })
	cases := []struct {
		name string
		lim  ratelimit.Limits
		want int
	}{
		{"default start", ratelimit.Limits{}, 32},
		{"configured phase concurrency", ratelimit.Limits{Start: 64}, 64},
		{"above the default ceiling", ratelimit.Limits{Start: 1000}, ratelimit.DefaultMaxConcurrency},
		{"max_concurrency wins", ratelimit.Limits{Start: 64, MaxInFlight: 10}, 10},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			reg := ratelimit.NewRegistry(ratelimit.Options{})
			reg.Wrap("p", c.lim, ok)
			reg.Wrap("p", ratelimit.Limits{Start: 3}, ok) // another role joining later
			st, found := reg.PoolStats("p")
			if !found || st.Concurrency != c.want {
				t.Fatalf("limit %d (found %v), want %d", st.Concurrency, found, c.want)
			}
		})
	}
}

// The config.yaml that `impactbench init` writes says where `auto` starts.
func TestScaffoldSaysWhereAutoStarts(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "config", "scaffold", "config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("(starts at %d,", ratelimit.DefaultInitialConcurrency); !strings.Contains(string(b), want) {
		t.Errorf("scaffold config.yaml does not say %q", want)
	}
}
