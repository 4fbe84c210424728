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
	bw := bufio.NewWriter(w)
	if _, err := fmt.Fprintln(bw, "t_ms\tpool\tin_flight\tqueued\tlimit"); err != nil {
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
			ms := now.Sub(start).Milliseconds()
			for _, s := range r.Stats() {
				fmt.Fprintf(bw, "%d\t%s\t%d\t%d\t%d\n", ms, s.Pool, s.InFlight, s.Queued, s.Concurrency)
			}
			// Flushed every sample: the process may end without a word.
			if err := bw.Flush(); err != nil {
				return err
			}
		}
	}
}
