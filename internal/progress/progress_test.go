package progress

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/impactbench/impactbench/internal/llm"
)

func TestLinesModeReportsCountsCostAndFailures(t *testing.T) {
	var buf bytes.Buffer
	tr := New(&buf, Lines, time.Hour)
	b := tr.Start("simulate gpt-4o", 3)
	b.Done(false, false, llm.Usage{Requests: 2, InputTokens: 100, OutputTokens: 20, Cost: 0.5, CostKnown: true}, time.Millisecond)
	b.Done(true, false, llm.Usage{}, time.Millisecond)
	b.Done(false, true, llm.Usage{}, time.Millisecond)
	tr.Close()
	out := buf.String()
	for _, want := range []string{"simulate gpt-4o: 3/3", "1 failed", "120 tok", "$0.5000", "done in"} {
		if !strings.Contains(out, want) {
			t.Errorf("output %q lacks %q", out, want)
		}
	}
	if d, f, r := b.Counts(); d != 3 || f != 1 || r != 1 {
		t.Errorf("counts = %d %d %d", d, f, r)
	}
}

// A bar's note (the runner's concurrency limits) is read each time the line
// is drawn, so it shows the current value.
func TestLinesModeShowsNote(t *testing.T) {
	var buf bytes.Buffer
	tr := New(&buf, Lines, time.Hour)
	b := tr.Start("simulate t1", 1)
	limit := "limit 16"
	b.SetNote(func() string { return limit })
	limit = "limit 48"
	b.Done(false, false, llm.Usage{}, time.Millisecond)
	tr.Close()
	if out := buf.String(); !strings.Contains(out, " · limit 48") {
		t.Errorf("output %q lacks the current note", out)
	}
}

func TestQuietWritesNothing(t *testing.T) {
	var buf bytes.Buffer
	tr := New(&buf, Quiet, 0)
	b := tr.Start("x", 1)
	b.Done(false, false, llm.Usage{}, 0)
	tr.Printf("hello")
	tr.Close()
	if buf.Len() != 0 {
		t.Fatalf("quiet mode wrote %q", buf.String())
	}
}

func TestDollarsUnknownPrice(t *testing.T) {
	if got := Dollars(llm.Usage{Requests: 1, CostKnown: false}); !strings.Contains(got, "unknown") {
		t.Errorf("unknown price shown as %q", got)
	}
	if got := Dollars(llm.Usage{Requests: 1, Cost: 0.25, CostKnown: true}); got != "$0.2500" {
		t.Errorf("got %q", got)
	}
}

// syncBuffer is a terminal stand-in the renderer and the test can share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// stuckTerminal takes no output, like a tty stopped with Ctrl-S or a
// terminal window that hangs: every write blocks until the test ends.
type stuckTerminal struct{ release chan struct{} }

func (s stuckTerminal) Write(p []byte) (int, error) {
	<-s.release
	return len(p), nil
}

// within fails the test unless fn returns within limit, and says how long it took.
func within(t *testing.T, what string, limit time.Duration, fn func()) time.Duration {
	t.Helper()
	start := time.Now()
	done := make(chan struct{})
	go func() { fn(); close(done) }()
	select {
	case <-done:
		return time.Since(start)
	case <-time.After(limit):
		t.Fatalf("%s still blocked after %v", what, limit)
		return 0
	}
}

// A phase that stops short of its total (interrupted, over budget, failed)
// must not keep the bars waiting: mpb completes a bar with a positive total
// only when its count reaches that total, and Close used to wait for that
// for ever — the Ctrl-C hang on a terminal.
func TestBarsCloseWithUnfinishedBars(t *testing.T) {
	var out syncBuffer
	tr := New(&out, Bars, 0)
	short := tr.Start("simulate gpt-4o", 5)
	short.Done(false, false, llm.Usage{}, time.Millisecond)
	full := tr.Start("gen_scenarios", 1)
	full.Done(false, false, llm.Usage{}, time.Millisecond)
	empty := tr.Start("evaluate gpt-4o", 0)
	// Well under closeWait: the bars really finish, Close does not just give up.
	took := within(t, "Close", closeWait/2, tr.Close)
	t.Logf("Close took %v", took)
	// Off a terminal mpb draws 32 columns: the counts fit, the state is asked.
	s := out.String()
	for _, want := range []string{"1/5", "1/1", "0/0"} {
		if !strings.Contains(s, want) {
			t.Errorf("final frame lacks %q:\n%s", want, s)
		}
	}
	if !short.mb.Aborted() {
		t.Errorf("the bar short of its total is not shown as stopped")
	}
	if !full.mb.Completed() || !empty.mb.Completed() {
		t.Errorf("finished bars not shown as done: %v %v", full.mb.Completed(), empty.mb.Completed())
	}
	within(t, "second Close", time.Second, tr.Close)
}

// Abort, for an interrupt, stops at once and never waits on the terminal.
func TestBarsAbortNeverBlocksOnTheTerminal(t *testing.T) {
	term := stuckTerminal{release: make(chan struct{})}
	defer close(term.release)
	tr := New(term, Bars, 0)
	b := tr.Start("simulate gpt-4o", 10)
	b.Done(false, false, llm.Usage{}, time.Millisecond)
	time.Sleep(300 * time.Millisecond) // the renderer is now stuck writing a frame
	took := within(t, "Abort", 3*shutdownWait, tr.Abort)
	t.Logf("Abort with a stuck terminal took %v", took)
	within(t, "Close after Abort", 3*shutdownWait, tr.Close)
	within(t, "Done after Abort", time.Second, func() { b.Done(false, false, llm.Usage{}, 0) })
}

// After Abort the display is gone; bars started by a phase still winding
// down count without drawing (mpb's AddBar would panic) and log lines are
// written plainly.
func TestBarsAfterAbort(t *testing.T) {
	var out syncBuffer
	tr := New(&out, Bars, 0)
	tr.Start("simulate gpt-4o", 3)
	within(t, "Abort", time.Second, tr.Abort)
	b := tr.Start("evaluate gpt-4o", 2)
	b.Done(true, false, llm.Usage{}, 0)
	b.End()
	if d, f, _ := b.Counts(); d != 1 || f != 1 {
		t.Errorf("counts after Abort = %d done %d failed, want 1 1", d, f)
	}
	tr.Printf("evaluate: %s", "stopped")
	if !strings.Contains(out.String(), "evaluate: stopped\n") {
		t.Errorf("log line after Abort lost:\n%s", out.String())
	}
}

func TestLinesCloseTwice(t *testing.T) {
	var buf syncBuffer
	tr := New(&buf, Lines, time.Hour)
	tr.Start("x", 2).Done(false, false, llm.Usage{}, 0)
	within(t, "Abort", time.Second, tr.Abort)
	within(t, "Close", time.Second, tr.Close)
	if !strings.Contains(buf.String(), "x: 1/2") || !strings.Contains(buf.String(), "stopped after") {
		t.Errorf("final line of a bar short of its total: %q, want 1/2 … stopped after", buf.String())
	}
}

// TestUnfinishedRowsAreNotDone: a row cut short (Ctrl-C, cost ceiling)
// adds what it spent but is not counted, so the bar ends "stopped" short of
// its total instead of showing the phase done.
func TestUnfinishedRowsAreNotDone(t *testing.T) {
	var buf bytes.Buffer
	tr := New(&buf, Lines, time.Hour)
	b := tr.Start("simulate gpt-4o", 3)
	b.Done(false, false, llm.Usage{Requests: 1, Cost: 0.5, CostKnown: true}, 0)
	b.Unfinished(llm.Usage{Requests: 2, Cost: 0.25, CostKnown: true})
	if done, _, _ := b.Counts(); done != 1 {
		t.Errorf("done = %d, want 1", done)
	}
	if u := b.Usage(); u.Requests != 3 || u.Cost != 0.75 {
		t.Errorf("usage = %+v, want both rows' spend", u)
	}
	tr.Close()
	if out := buf.String(); !strings.Contains(out, "1/3") || !strings.Contains(out, "stopped after") {
		t.Errorf("final line %q does not say stopped at 1/3", out)
	}
}
