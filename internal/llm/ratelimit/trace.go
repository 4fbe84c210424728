package ratelimit

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"time"
)

// Trace writes, every `every` until ctx ends, one line per pool: the time
// since the trace began, the pool's key, its calls in flight, the calls
// queued for a slot and the concurrency limit (tab-separated, with a
// header). It is a debugging aid for the scheduler: a pool below its limit
// with nothing queued lacks work to send (the rows ahead of it starve it);
// one at its limit with calls queued is the bottleneck. It returns w's
// first write error, or nil when ctx ends.
func (r *Registry) Trace(ctx context.Context, w io.Writer, every time.Duration) error {
	return TraceLoop(ctx, w, "t_ms\tpool\tin_flight\tqueued\tlimit", every, func(w io.Writer, ms int64) {
		for _, s := range r.Stats() {
			fmt.Fprintf(w, "%d\t%s\t%d\t%d\t%d\n", ms, s.Pool, s.InFlight, s.Queued, s.Concurrency)
		}
	})
}

// TraceLoop writes header and then, every `every` until ctx ends, what
// sample writes for the milliseconds since the loop began, flushing after
// each sample: a trace is read while the run goes on, and the process may
// end without a word. It returns w's first write error, or nil when ctx
// ends. The fake provider's trace of the same pools (the harness's) shares
// it, so the two sides' lines line up in time.
func TraceLoop(ctx context.Context, w io.Writer, header string, every time.Duration, sample func(w io.Writer, ms int64)) error {
	bw := bufio.NewWriter(w)
	if _, err := fmt.Fprintln(bw, header); err != nil {
		return err
	}
	start := time.Now()
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return bw.Flush()
		case now := <-tick.C:
			sample(bw, now.Sub(start).Milliseconds())
			if err := bw.Flush(); err != nil {
				return err
			}
		}
	}
}
