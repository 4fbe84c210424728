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

// A killed worker's heartbeat is deleted by a worker that counts it once
// it has not changed for 10 TTLs — not before, so a worker merely paused
// keeps its object while it may resume; a paused worker whose object was
// deleted writes it again at its next beat and counts again.
func TestStaleHeartbeatDeleted(t *testing.T) {
	srv := s3test.Start(t, "calls")
	s3test.SetEnv(t)
	c := &clock{t: time.Now()}
	me := openBeat(t, srv, c) // TTL 5 s
	defer me.Close()
	paused := openBeat(t, srv, c)
	defer paused.b.Close()
	exists := func() bool {
		ok, err := me.b.Exists(t.Context(), paused.key)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	if n := countBeats(t, me); n != 2 {
		t.Fatalf("two beating: %d", n)
	}
	for _, step := range []struct {
		add   time.Duration
		count int
		kept  bool
	}{
		{6 * time.Second, 1, true},   // counted out after one TTL, kept
		{14 * time.Second, 1, true},  // 20 s: kept (a pause may end)
		{29 * time.Second, 1, true},  // 49 s: kept
		{2 * time.Second, 1, false},  // 51 s > 10 TTLs: deleted
		{10 * time.Second, 1, false}, // and stays so until it beats
	} {
		c.add(step.add)
		if n := countBeats(t, me); n != step.count {
			t.Fatalf("+%v: %d counted, want %d", step.add, n, step.count)
		}
		if exists() != step.kept {
			t.Fatalf("+%v: the silent worker's heartbeat kept %v, want %v", step.add, !step.kept, step.kept)
		}
	}
	// The paused worker resumes: its next beat writes its object again.
	if err := paused.Beat(t.Context()); err != nil {
		t.Fatal(err)
	}
	if !exists() {
		t.Fatal("the resumed worker's beat did not write its heartbeat again")
	}
	if n := countBeats(t, me); n != 2 {
		t.Fatalf("the resumed worker: %d counted, want 2", n)
	}
	// A worker killed when no other outlived it leaves its object; the
	// first worker on the store an hour on deletes it at first sight.
	if err := me.b.Delete(t.Context(), me.key); err != nil {
		t.Fatal(err)
	}
	newcomer := openBeat(t, srv, &clock{t: time.Now().Add(time.Hour)})
	defer newcomer.Close()
	if n := countBeats(t, newcomer); n != 1 {
		t.Fatalf("a newcomer an hour on: %d counted, want 1", n)
	}
	if exists() {
		t.Fatal("a newcomer an hour on kept an hour-old heartbeat")
	}
}
