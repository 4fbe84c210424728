// Package progress shows live progress of a run on stderr: mpb bars on a
// terminal, plain periodic lines when stderr is a file or pipe, nothing in
// quiet mode. Every bar shows done/total, failures, ETA, tokens and dollars.
// Both renderings take their ETA from one estimator (eta.go) and pad the
// label column to the longest label, so the bars line up.
package progress

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"

	"github.com/impactbench/impactbench/internal/llm"
	"github.com/impactbench/impactbench/internal/sanitize"
)

// Mode selects the rendering.
type Mode int

const (
	Quiet Mode = iota // nothing
	Lines             // a plain line per bar every Interval and at the end
	Bars              // interactive multi-bar display
)

// How long stopping the display may take. The bars only decorate a run:
// an interrupted or finishing run never waits on them longer than this,
// whatever the terminal does (a stopped or vanished tty blocks writes).
const (
	closeWait    = 2 * time.Second        // Close: for the final frames of completed bars
	shutdownWait = 300 * time.Millisecond // Abort, and Close past closeWait: for the renderer to stop
)

// Tracker creates bars. Safe for concurrent use.
type Tracker struct {
	mode     Mode
	w        io.Writer
	interval time.Duration
	p        *mpb.Progress
	now      func() time.Time // the clock of every ETA; tests replace it

	mu   sync.Mutex
	bars []*Bar
	stop chan struct{}
	done chan struct{}

	stopOnce   sync.Once
	waitOnce   sync.Once
	renderDone chan struct{} // Bars: closed when mpb has stopped rendering
	shutdown   atomic.Bool   // Bars: the renderer was told to stop at once
}

// New returns a tracker writing to w. interval applies to Lines mode.
func New(w io.Writer, mode Mode, interval time.Duration) *Tracker {
	return newTracker(w, mode, interval, testHooks{})
}

// testHooks replace what tests cannot control: the clock, mpb's refresh
// ticker, and the line width mpb assumes when w is not a terminal.
type testHooks struct {
	now     func() time.Time
	refresh chan any // nil: mpb's ticker
	width   int      // 0: barWidth (a terminal uses its own width)
}

// barWidth is the width of the bar itself; the line is as wide as the terminal.
const barWidth = 32

func newTracker(w io.Writer, mode Mode, interval time.Duration, h testHooks) *Tracker {
	if h.now == nil {
		h.now = time.Now
	}
	if h.width == 0 {
		h.width = barWidth
	}
	refresh := h.refresh
	t := &Tracker{mode: mode, w: w, interval: interval, now: h.now}
	if interval <= 0 {
		t.interval = 10 * time.Second
	}
	switch mode {
	case Bars:
		opts := []mpb.ContainerOption{mpb.WithOutput(w), mpb.WithWidth(h.width), mpb.WithAutoRefresh()}
		if refresh != nil {
			opts = append(opts, mpb.WithManualRefresh(refresh))
		}
		t.p = mpb.New(opts...)
		t.renderDone = make(chan struct{})
	case Lines:
		t.stop, t.done = make(chan struct{}), make(chan struct{})
		go t.tick()
	}
	return t
}

// Bar tracks one phase (for one target).
type Bar struct {
	t       *Tracker
	label   string
	total   atomic.Int64
	done    atomic.Int64
	failed  atomic.Int64
	reused  atomic.Int64
	est     estimator
	mb      *mpb.Bar
	mu      sync.Mutex
	usage   llm.Usage
	ended   atomic.Bool
	printed atomic.Int64 // done count at the last printed line
	note    atomic.Pointer[func() string]
}

// SetNote adds f's text to the bar's line every time it is drawn (e.g. the
// provider pools' current concurrency limits). f must be cheap and safe
// for concurrent use; "" shows nothing.
func (b *Bar) SetNote(f func() string) {
	if f != nil {
		b.note.Store(&f)
	}
}

// Start adds a bar labelled e.g. "simulate gpt-4o" with total rows.
func (t *Tracker) Start(label string, total int) *Bar {
	b := &Bar{t: t, label: sanitize.Line(label), est: estimator{start: t.now()}}
	label = b.label
	b.total.Store(int64(total))
	b.printed.Store(-1)
	// Added under t.mu so the bars appear in the order Lines mode lists them.
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.mode == Bars {
		// DSyncWidth pads a column to its widest cell across all bars: the
		// labels and counters line up however long the target ids are.
		// Built with total 0, then given its total: mpb ignores SetTotal on
		// a bar built with a total, so End could not complete a phase that
		// stopped early and Close would wait for it forever.
		// Add, not AddBar: after Abort the display is gone and AddBar
		// would panic; the bar then just counts.
		b.mb, _ = t.p.Add(0, mpb.BarStyle().Build(), mpb.BarWidth(barWidth),
			mpb.PrependDecorators(decor.Name(label, decor.WC{C: decor.DSyncWidthR | decor.DextraSpace})),
			mpb.AppendDecorators(
				decor.CountersNoUnit("%d/%d", decor.WC{C: decor.DSyncWidth}),
				decor.Any(func(decor.Statistics) string { return " " + b.extra() }, decor.WC{C: decor.DSyncWidthR}),
				decor.OnAbort(decor.OnComplete(decor.Any(func(decor.Statistics) string { return b.etaText() }), " done"), " stopped"),
			))
		if b.mb != nil {
			b.mb.SetTotal(int64(total), false)
		}
	}
	t.bars = append(t.bars, b)
	return b
}

// SetTotal changes the number of rows the bar expects (a phase that
// started before its row count was known).
func (b *Bar) SetTotal(total int) {
	b.total.Store(int64(total))
	if b.mb != nil {
		b.mb.SetTotal(int64(total), false)
	}
}

// etaText is the bar's " eta 1m5s", or "" while there is no estimate.
func (b *Bar) etaText() string {
	left, ok := b.est.eta(b.t.now(), b.done.Load(), b.total.Load())
	if !ok {
		return ""
	}
	return " eta " + left.String()
}

func (b *Bar) extra() string {
	b.mu.Lock()
	u := b.usage
	b.mu.Unlock()
	s := ""
	if f := b.failed.Load(); f > 0 {
		s += fmt.Sprintf("%d failed ", f)
	}
	s += fmt.Sprintf("%s tok %s", humanTokens(u.InputTokens+u.OutputTokens), Dollars(u))
	if f := b.note.Load(); f != nil {
		if n := sanitize.Line((*f)()); n != "" {
			s += " · " + n
		}
	}
	return s
}

// Done records one finished row, its outcome and what it cost now
// (fresh calls only; reused answers cost nothing). The ETA does not use
// took: rows run concurrently, so one row's duration says nothing about how
// fast the phase advances (see estimator).
func (b *Bar) Done(failed, reused bool, spent llm.Usage, took time.Duration) {
	if failed {
		b.failed.Add(1)
	}
	if reused {
		b.reused.Add(1)
	}
	b.mu.Lock()
	b.usage = b.usage.Add(spent)
	b.mu.Unlock()
	b.done.Add(1)
	if b.mb != nil {
		b.mb.Increment()
	}
}

// Unfinished records what a row that did not finish (interrupted, stopped
// by the cost ceiling) spent, without counting it done: the bar then ends
// "stopped" short of its total instead of claiming the row.
func (b *Bar) Unfinished(spent llm.Usage) {
	b.mu.Lock()
	b.usage = b.usage.Add(spent)
	b.mu.Unlock()
}

// End completes the bar, or marks it stopped when rows were skipped or the
// phase stopped early; either way mpb stops waiting for it.
func (b *Bar) End() {
	if b.ended.Swap(true) {
		return
	}
	if b.mb != nil {
		// mpb completes a bar made with a positive total only when its count
		// reaches that total (SetTotal is then a no-op), so a bar short of
		// its total must be aborted or Wait never returns.
		if b.done.Load() < b.total.Load() {
			b.mb.Abort(false)
		} else {
			b.mb.SetTotal(-1, true) // a total of 0 completes only this way
		}
	}
	if b.t.mode == Lines {
		b.t.line(b, true)
	}
}

// Counts returns done, failed and reused rows.
func (b *Bar) Counts() (done, failed, reused int) {
	return int(b.done.Load()), int(b.failed.Load()), int(b.reused.Load())
}

// Usage returns what the bar's rows cost in this execution.
func (b *Bar) Usage() llm.Usage {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.usage
}

// Printf writes a log line without tearing the bars. The line is shown,
// never acted on: its arguments carry provider messages and file contents,
// so every control character but newline and tab is removed
// (sanitize.Terminal).
func (t *Tracker) Printf(format string, args ...any) {
	if t.mode == Quiet {
		return
	}
	line := sanitize.Terminal(fmt.Sprintf(format, args...)) + "\n"
	if t.mode == Bars {
		if _, err := io.WriteString(t.p, line); err == nil {
			return
		}
		// The display has stopped (Close, Abort): write plainly.
	}
	t.mu.Lock()
	_, _ = io.WriteString(t.w, line) // a log line: nothing to do if stderr is gone
	t.mu.Unlock()
}

// Close ends all bars and lets the display draw their final state, waiting
// at most closeWait (then as Abort). Safe to call more than once, and after
// or during Abort.
func (t *Tracker) Close() { t.finish(closeWait) }

// Abort ends all bars and stops the display at once, for an interrupted
// run: it draws the last frame if the terminal takes it within
// shutdownWait and never blocks longer. Bars started afterwards only count.
func (t *Tracker) Abort() { t.finish(0) }

func (t *Tracker) finish(grace time.Duration) {
	t.mu.Lock()
	bars := append([]*Bar(nil), t.bars...)
	t.mu.Unlock()
	for _, b := range bars {
		b.End()
	}
	switch t.mode {
	case Bars:
		t.waitOnce.Do(func() {
			go func() {
				t.p.Wait() // returns once every bar is done and the renderer stopped
				close(t.renderDone)
			}()
		})
		if grace > 0 && !t.shutdown.Load() && waitFor(t.renderDone, grace) {
			return
		}
		if !t.shutdown.Swap(true) {
			go t.p.Shutdown() // cancels every bar; Wait above then returns
		}
		waitFor(t.renderDone, shutdownWait)
	case Lines:
		t.stopOnce.Do(func() { close(t.stop) })
		waitFor(t.done, shutdownWait)
	}
}

// waitFor reports whether ch closed within d.
func waitFor(ch <-chan struct{}, d time.Duration) bool {
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-ch:
		return true
	case <-tm.C:
		return false
	}
}

func (t *Tracker) tick() {
	defer close(t.done)
	tk := time.NewTicker(t.interval)
	defer tk.Stop()
	for {
		select {
		case <-t.stop:
			return
		case <-tk.C:
			t.mu.Lock()
			bars := append([]*Bar(nil), t.bars...)
			t.mu.Unlock()
			for _, b := range bars {
				if !b.ended.Load() {
					t.line(b, false)
				}
			}
		}
	}
}

func (t *Tracker) line(b *Bar, final bool) {
	done := b.done.Load()
	if !final && b.printed.Load() == done {
		return // nothing new since the last line: stay quiet
	}
	b.printed.Store(done)
	total := b.total.Load()
	state := ""
	if final {
		verb := " done in "
		if done < total {
			verb = " stopped after " // interrupted, over budget, or rows skipped
		}
		state = verb + t.now().Sub(b.est.start).Round(100*time.Millisecond).String()
	} else {
		state = b.etaText()
	}
	t.mu.Lock()
	width, cwidth := 0, 0
	for _, o := range t.bars {
		width = max(width, utf8.RuneCountInString(o.label))
		n := len(strconv.FormatInt(o.total.Load(), 10))
		cwidth = max(cwidth, 2*n+1) // "done/total" at its widest
	}
	pad := strings.Repeat(" ", width-utf8.RuneCountInString(b.label))
	fmt.Fprintf(t.w, "%s:%s %*s %s%s\n", b.label, pad, cwidth, fmt.Sprintf("%d/%d", done, total), b.extra(), state)
	t.mu.Unlock()
}

// Dollars formats a cost, saying "unknown" when a price was missing.
func Dollars(u llm.Usage) string {
	if u.Requests > 0 && !u.CostKnown {
		if u.Cost > 0 {
			return fmt.Sprintf("≥$%.4f (some prices unknown)", u.Cost)
		}
		return "$? (price unknown)"
	}
	return fmt.Sprintf("$%.4f", u.Cost)
}

func humanTokens(n int) string {
	switch {
	case n >= 1_000_000:
		return fmt.Sprintf("%.1fM", float64(n)/1e6)
	case n >= 10_000:
		return fmt.Sprintf("%.0fk", float64(n)/1e3)
	default:
		return fmt.Sprint(n)
	}
}
