package callstore

import (
	"sync"
	"testing"
	"time"

	"github.com/impactbench/impactbench/internal/callstore/s3test"
)

// clock is a settable clock for the heartbeats' own judgement of age.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func openBeat(t *testing.T, srv *s3test.Server, c *clock) *Heartbeat {
	t.Helper()
	h, err := OpenHeartbeat(t.Context(), srv.URL("calls", "study"), HeartbeatOptions{Every: time.Second, TTL: 5 * time.Second, Now: c.now})
	if err != nil || h == nil {
		t.Fatalf("open heartbeat: %v, %v", h, err)
	}
	if err := h.Beat(t.Context()); err != nil {
		t.Fatal(err)
	}
	return h
}

func countBeats(t *testing.T, h *Heartbeat) int {
	t.Helper()
	n, err := h.Count(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// Workers on one object store count each other by their heartbeats: one
// that leaves is gone at once; one that stops beating (killed) is counted
// until its object has not changed for TTL by the counter's own clock,
// and again once it beats; a heartbeat first seen long dead never counts.
func TestHeartbeatCounts(t *testing.T) {
	srv := s3test.Start(t, "calls")
	s3test.SetEnv(t)
	c := &clock{t: time.Now()}
	me := openBeat(t, srv, c)
	defer me.Close()
	if n := countBeats(t, me); n != 1 {
		t.Fatalf("alone: %d", n)
	}
	other, killed := openBeat(t, srv, c), openBeat(t, srv, c)
	defer killed.b.Close()
	if n := countBeats(t, me); n != 3 {
		t.Fatalf("three beating: %d", n)
	}
	if err := other.Close(); err != nil {
		t.Fatal(err)
	}
	if n := countBeats(t, me); n != 2 {
		t.Fatalf("one left: %d", n)
	}
	c.add(4 * time.Second)
	if n := countBeats(t, me); n != 2 {
		t.Fatalf("4 s without a beat (TTL 5 s): %d", n)
	}
	c.add(2 * time.Second)
	if n := countBeats(t, me); n != 1 {
		t.Fatalf("6 s without a beat: %d, want the silent worker counted out", n)
	}
	time.Sleep(20 * time.Millisecond) // the store's clock moves on
	if err := killed.Beat(t.Context()); err != nil {
		t.Fatal(err)
	}
	if n := countBeats(t, me); n != 2 {
		t.Fatalf("beating again: %d", n)
	}
	late := &clock{t: time.Now().Add(time.Hour)}
	newcomer := openBeat(t, srv, late)
	defer newcomer.Close()
	if n := countBeats(t, newcomer); n != 1 {
		t.Fatalf("a newcomer an hour on: %d, want the others' hour-old beats counted out", n)
	}
}

// A store that is a directory has no heartbeat: its workers show
// themselves by locks (cluster.DirPresence).
func TestHeartbeatNotForADirectory(t *testing.T) {
	for _, raw := range []string{t.TempDir(), "file://" + t.TempDir()} {
		h, err := OpenHeartbeat(t.Context(), raw, HeartbeatOptions{})
		if h != nil || err != nil {
			t.Fatalf("%s: heartbeat %v, %v; want none", raw, h, err)
		}
	}
}
