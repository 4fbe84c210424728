package ratelimit_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/impactbench/impactbench/internal/llm"
	"github.com/impactbench/impactbench/internal/llm/ratelimit"
)

// SetLive divides every limit by the workers running, clamped to
// 1…Workers: the request bucket's rate, the in-flight share and the AIMD
// limit follow.
func TestSetLiveRescalesTheShare(t *testing.T) {
	for _, tc := range []struct {
		name      string
		lim       ratelimit.Limits
		live      int
		wantLive  int
		wantShare ratelimit.Limits
		wantLimit int
	}{
		{"4 of 4", ratelimit.Limits{MaxInFlight: 48, RPM: 6000}, 4, 4, ratelimit.Limits{MaxInFlight: 12, RPM: 1500}, 12},
		{"2 of 4", ratelimit.Limits{MaxInFlight: 48, RPM: 6000}, 2, 2, ratelimit.Limits{MaxInFlight: 24, RPM: 3000}, 24},
		{"alone", ratelimit.Limits{MaxInFlight: 48, RPM: 6000}, 1, 1, ratelimit.Limits{MaxInFlight: 48, RPM: 6000}, 48},
		{"never below 1", ratelimit.Limits{MaxInFlight: 48, RPM: 6000}, 0, 1, ratelimit.Limits{MaxInFlight: 48, RPM: 6000}, 48},
		{"never above K", ratelimit.Limits{MaxInFlight: 48, RPM: 6000}, 9, 4, ratelimit.Limits{MaxInFlight: 12, RPM: 1500}, 12},
		{"3 of 4, cap rounds down", ratelimit.Limits{MaxInFlight: 48, RPM: 6000}, 3, 3, ratelimit.Limits{MaxInFlight: 16, RPM: 2000}, 16},
		{"auto: start scales", ratelimit.Limits{}, 2, 2, ratelimit.Limits{}, 16}, // 32/4 = 8, × 4/2
	} {
		t.Run(tc.name, func(t *testing.T) {
			reg := ratelimit.NewRegistry(ratelimit.Options{Workers: 4})
			reg.Wrap("p", tc.lim, answer(0, llm.Usage{}))
			if got := reg.SetLive(tc.live); got != tc.wantLive {
				t.Fatalf("SetLive(%d) applied %d, want %d", tc.live, got, tc.wantLive)
			}
			st, _ := reg.PoolStats("p")
			if st.Live != tc.wantLive || st.Workers != 4 {
				t.Errorf("stats: live %d of %d, want %d of 4", st.Live, st.Workers, tc.wantLive)
			}
			if st.Share != tc.wantShare || st.Concurrency != tc.wantLimit {
				t.Errorf("share %+v, limit %d; want %+v, %d", st.Share, st.Concurrency, tc.wantShare, tc.wantLimit)
			}
			// A pool made after the change starts at the same share.
			reg.Wrap("q", tc.lim, answer(0, llm.Usage{}))
			if q, _ := reg.PoolStats("q"); q.Share != tc.wantShare || q.Live != tc.wantLive {
				t.Errorf("new pool: share %+v, live %d; want %+v, %d", q.Share, q.Live, tc.wantShare, tc.wantLive)
			}
		})
	}
}

// Each change of the share is logged at Info — what -v shows, as
// docs/workers.md says — with the count and K; a count that changes
// nothing logs nothing.
func TestSetLiveLogsEachChange(t *testing.T) {
	var logs bytes.Buffer
	reg := ratelimit.NewRegistry(ratelimit.Options{Workers: 4,
		Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))})
	reg.Wrap("p", ratelimit.Limits{RPM: 6000}, answer(0, llm.Usage{}))
	for _, n := range []int{4, 2, 2, 9, 1} {
		reg.SetLive(n)
	}
	const msg = `level=INFO msg="ratelimit: provider limits divided among the workers running"`
	var got []string
	for line := range strings.Lines(logs.String()) {
		if !strings.Contains(line, msg) {
			t.Errorf("unexpected log line %q", line)
			continue
		}
		got = append(got, line[strings.Index(line, "workers="):len(line)-1])
	}
	// 4 of 4 is the share a registry starts at; 9 is clamped to 4.
	if want := []string{"workers=2 of=4", "workers=4 of=4", "workers=1 of=4"}; !slices.Equal(got, want) {
		t.Errorf("logged %q, want %q", got, want)
	}
}

// A worker's throughput follows its share: at 1 of 4 it sends a quarter of
// the limit, once the others are gone the whole of it (virtual time).
func TestSetLiveGrowsThroughput(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg := ratelimit.NewRegistry(ratelimit.Options{Workers: 4})
		rec := &recorder{next: answer(100*time.Millisecond, llm.Usage{InputTokens: 10, OutputTokens: 5})}
		c := reg.Wrap("p", ratelimit.Limits{RPM: 600, MaxInFlight: 40}, rec)
		t0 := time.Now()
		drive(20, time.Minute, c, smallReq)
		reg.SetLive(1)
		drive(20, time.Minute, c, smallReq)
		got := rec.perMinute(t0, 2)
		// 150 a minute at a quarter (its bucket starts empty), 600 alone
		// (plus the second's burst the larger bucket holds).
		if got[0] < 145 || got[0] > 151 || got[1] < 595 || got[1] > 611 {
			t.Fatalf("calls per minute %v, want about [150 600]", got)
		}
	})
}

// FollowLive keeps Options.Workers until it has counted two workers (one
// that sees only itself may be on its own disk), divides by a higher
// count at once, by a lower one only once the counts stayed below the
// share for Settle (then by the latest), and keeps
// the share when the count fails.
func TestFollowLive(t *testing.T) {
	type step struct {
		count int
		err   bool
		want  int // the divisor after this count
	}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"alone from the start: stays at K", []step{{1, false, 4}, {1, false, 4}, {1, false, 4}, {1, false, 4}, {1, false, 4}}},
		{"all four, then the tail", []step{{4, false, 4}, {3, false, 4}, {3, false, 4}, {3, false, 4}, {3, false, 3}, {1, false, 3}, {1, false, 3}, {1, false, 3}, {1, false, 1}}},
		{"a dip shorter than Settle (the next index starting) changes nothing", []step{{4, false, 4}, {3, false, 4}, {4, false, 4}, {3, false, 4}, {3, false, 4}, {4, false, 4}}},
		{"the latest count after Settle wins", []step{{4, false, 4}, {2, false, 4}, {3, false, 4}, {2, false, 4}, {2, false, 2}}},
		{"counts falling one after another", []step{{4, false, 4}, {3, false, 4}, {3, false, 4}, {2, false, 4}, {1, false, 1}}},
		{"a higher count applies at once", []step{{2, false, 4}, {2, false, 4}, {2, false, 4}, {2, false, 2}, {4, false, 4}}},
		{"counts above K are K", []step{{9, false, 4}, {2, false, 4}, {2, false, 4}, {2, false, 4}, {2, false, 2}, {7, false, 4}}},
		{"a failed count keeps the share", []step{{4, false, 4}, {0, true, 4}, {0, true, 4}, {0, true, 4}, {0, true, 4}, {0, true, 4}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				reg := ratelimit.NewRegistry(ratelimit.Options{Workers: 4})
				var mu sync.Mutex
				i := 0
				count := func(context.Context) (int, error) {
					mu.Lock()
					defer mu.Unlock()
					s := tc.steps[min(i, len(tc.steps)-1)]
					i++
					if s.err {
						return 0, errors.New("store unreachable")
					}
					return s.count, nil
				}
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan struct{})
				go func() {
					reg.FollowLive(ctx, count, ratelimit.FollowOptions{Every: time.Second, Settle: 3 * time.Second})
					close(done)
				}()
				defer func() { cancel(); <-done }()
				for k, s := range tc.steps {
					synctest.Wait() // count k has been applied
					if got := reg.Live(); got != s.want {
						t.Fatalf("after count %d (%d): divided by %d, want %d", k, s.count, got, s.want)
					}
					time.Sleep(time.Second)
				}
			})
		})
	}
}

// One worker alone returns at once: there is nothing to follow.
func TestFollowLiveAlone(t *testing.T) {
	reg := ratelimit.NewRegistry(ratelimit.Options{Workers: 1})
	called := false
	reg.FollowLive(context.Background(), func(context.Context) (int, error) { called = true; return 1, nil }, ratelimit.FollowOptions{})
	if called || reg.Live() != 1 {
		t.Fatalf("a single worker counted (%v) or divides by %d", called, reg.Live())
	}
}
