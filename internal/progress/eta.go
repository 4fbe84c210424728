package progress

import "time"

// estimator predicts the time left in a phase from its throughput: rows
// finished per second of wall time since the phase started. Terminal bars
// and piped lines share it, so they agree.
//
// It deliberately ignores how long each row took. Rows run concurrently (a
// phase keeps run.concurrency rows in flight), so the mean row duration
// times the rows left overstates the time left by the concurrency factor —
// the terminal bars once did exactly that (mpb's EwmaETA fed per-row
// durations) and showed ETAs about four times too long, while the piped
// lines, which divided elapsed time by rows done, were right. Throughput
// already includes the concurrency, rate limits and retries.
type estimator struct {
	start time.Time
}

// eta returns the time left when done of total rows are finished at now;
// ok is false while there is nothing to extrapolate from (no row done) or
// nothing left.
func (e estimator) eta(now time.Time, done, total int64) (left time.Duration, ok bool) {
	if done <= 0 || total <= done {
		return 0, false
	}
	elapsed := now.Sub(e.start)
	if elapsed <= 0 {
		return 0, false
	}
	left = time.Duration(float64(elapsed) / float64(done) * float64(total-done))
	return left.Round(time.Second), true
}
