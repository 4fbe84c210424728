package progress

import (
	"bytes"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/impactbench/impactbench/internal/llm"
)

// fakeClock is a settable clock shared by a tracker and its test.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) set(t time.Time) {
	c.mu.Lock()
	c.t = t
	c.mu.Unlock()
}

// TestEstimatorMatchesConcurrentPhase replays a phase of rows that each
// take several seconds, run concurrency at a time, and checks the
// estimate against the time the phase really has left.
func TestEstimatorMatchesConcurrentPhase(t *testing.T) {
	cases := []struct {
		name        string
		rows        int
		concurrency int
		rowTime     time.Duration
	}{
		{"serial", 12, 1, 2 * time.Second},
		{"four at a time", 40, 4, 4 * time.Second},
		{"sixteen at a time", 160, 16, 3 * time.Second},
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := estimator{start: t0}
			total := time.Duration(c.rows/c.concurrency) * c.rowTime
			// Check after each wave of rows finishes.
			for wave := 1; wave < c.rows/c.concurrency; wave++ {
				now := t0.Add(time.Duration(wave) * c.rowTime)
				done := int64(wave * c.concurrency)
				got, ok := e.eta(now, done, int64(c.rows))
				want := total - now.Sub(t0)
				if !ok || got != want {
					t.Fatalf("after %d rows at %s: eta %s (ok %v), want %s", done, now.Sub(t0), got, ok, want)
				}
			}
		})
	}
}

func TestEstimatorWithoutData(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	e := estimator{start: t0}
	for _, c := range []struct{ done, total int64 }{{0, 10}, {10, 10}, {12, 10}} {
		if _, ok := e.eta(t0.Add(time.Minute), c.done, c.total); ok {
			t.Errorf("done %d of %d: an estimate without anything to extrapolate or left", c.done, c.total)
		}
	}
	if _, ok := e.eta(t0, 3, 10); ok {
		t.Error("an estimate from zero elapsed time")
	}
}

// syncBuf is a writer mpb's render goroutine and the test can share.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

var ansi = regexp.MustCompile(`\x1b\[[0-9;]*[A-Za-z]`)

// frameLines returns the text lines of everything rendered so far, with
// the cursor movements removed.
func frameLines(s string) []string {
	var out []string
	for _, l := range strings.Split(ansi.ReplaceAllString(s, "\n"), "\n") {
		if strings.TrimSpace(l) != "" {
			out = append(out, strings.TrimRight(l, "\r"))
		}
	}
	return out
}

// TestBarsAndLinesShowTheSameETA: four rows done of twenty after 8s of a
// phase is 2s a row of throughput, so 32s left — in both renderings.
// Before the shared estimator the bars used the per-row duration (here 8s,
// with four rows in flight) and said 2m8s.
func TestBarsAndLinesShowTheSameETA(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, mode := range []Mode{Lines, Bars} {
		clock := &fakeClock{t: t0}
		var buf syncBuf
		refresh := make(chan any)
		tr := newTracker(&buf, mode, time.Hour, testHooks{now: clock.now, refresh: refresh, width: 200})
		b := tr.Start("simulate gpt-4o", 20)
		clock.set(t0.Add(8 * time.Second))
		for range 4 {
			b.Done(false, false, llm.Usage{}, 8*time.Second)
		}
		var out string
		if mode == Lines {
			tr.line(b, false)
			out = buf.String()
		} else {
			deadline := time.Now().Add(5 * time.Second)
			for !strings.Contains(out, "4/20") && time.Now().Before(deadline) {
				refresh <- time.Now()
				time.Sleep(10 * time.Millisecond)
				out = buf.String()
			}
		}
		tr.Close()
		if !strings.Contains(out, "4/20") || !strings.Contains(out, " eta 32s") {
			t.Errorf("mode %d: %q lacks 4/20 and eta 32s", mode, out)
		}
	}
}

// TestColumnsAligned: labels of different lengths are padded so the
// counters start in the same column, on a terminal and in piped lines.
func TestColumnsAligned(t *testing.T) {
	labels := []string{"simulate gpt-4o", "simulate claude-haiku-4-5-20251001", "evaluate o3"}
	for _, mode := range []Mode{Lines, Bars} {
		var buf syncBuf
		tr := newTracker(&buf, mode, time.Hour, testHooks{width: 200})
		bars := make([]*Bar, len(labels))
		for i, l := range labels {
			bars[i] = tr.Start(l, 10+i*100)
		}
		for _, b := range bars {
			b.Done(false, false, llm.Usage{}, 0)
		}
		tr.Close()
		lines := frameLines(buf.String())
		if len(lines) < len(labels) {
			t.Fatalf("mode %d: %d lines: %q", mode, len(lines), buf.String())
		}
		last := lines[len(lines)-len(labels):] // the final frame
		col := -1
		for i, l := range last {
			if !strings.HasPrefix(strings.TrimSpace(l), labels[i]) {
				t.Fatalf("mode %d: line %q is not bar %q", mode, l, labels[i])
			}
			c := strings.Index(l, " 0 tok") // the column after the (right-aligned) counters
			if col == -1 {
				col = c
			}
			if c != col {
				t.Errorf("mode %d: counters not aligned:\n%s", mode, strings.Join(last, "\n"))
				break
			}
		}
	}
}

// TestBarsCloseWhenAPhaseStopsEarly: a phase interrupted or stopped by the
// cost ceiling ends its bar with rows left; Close must still return.
func TestBarsCloseWhenAPhaseStopsEarly(t *testing.T) {
	var buf syncBuf
	tr := newTracker(&buf, Bars, 0, testHooks{width: 200})
	b := tr.Start("simulate gpt-4o", 10)
	b.Done(false, false, llm.Usage{}, 0)
	closed := make(chan struct{})
	go func() { tr.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not return for a bar ended at 1/10")
	}
	// It stays at 1/10 and says so: a stopped phase is not shown as done.
	if out := buf.String(); !strings.Contains(out, "1/10") || !strings.Contains(out, "stopped") || strings.Contains(out, "done") {
		t.Errorf("final frame %q does not show the bar stopped at 1/10", out)
	}
}
