package ratelimit

import (
	"math"
	"time"
)

// bucket is a continuously refilled token bucket that, unlike
// golang.org/x/time/rate.Limiter, can take tokens back after the fact. We need
// that because a call is charged an estimate before it is sent (max_tokens for
// output, a character count for input) and reconciled with the provider's
// usage afterwards: max_tokens=2048 against a 300-token answer would otherwise
// cap output throughput at a seventh of OTPM. rate.Reservation.CancelAt is a
// no-op once the reservation's time has passed, so it cannot express refunds.
//
// tokens may go negative (debt): a request larger than the burst is admitted
// once the bucket is full and pushes everyone behind it back by its excess, so
// the long-run rate is exact and no request size ever makes a wait fail.
//
// bucket is not safe for concurrent use; the pool's mutex guards it.
type bucket struct {
	perSec float64 // refill rate, tokens per second
	burst  float64 // capacity
	tokens float64
	last   time.Time
}

// newBucket returns a full bucket refilled at perMinute/60 per second that
// holds window's worth of refill (at least one token, so a single request can
// always pass).
func newBucket(now time.Time, perMinute float64, window time.Duration) *bucket {
	b := &bucket{last: now}
	b.setRate(now, perMinute, window)
	b.tokens = b.burst
	return b
}

func (b *bucket) setRate(now time.Time, perMinute float64, window time.Duration) {
	b.advance(now)
	b.perSec = perMinute / 60
	b.burst = math.Max(1, b.perSec*window.Seconds())
	b.tokens = math.Min(b.tokens, b.burst)
}

func (b *bucket) advance(now time.Time) {
	if now.After(b.last) {
		b.tokens = math.Min(b.burst, b.tokens+b.perSec*now.Sub(b.last).Seconds())
		b.last = now
	}
}

// epsilon absorbs float rounding so a waiter woken exactly on time is admitted
// instead of sleeping another nanosecond.
const epsilon = 1e-6

// delay is how long until n tokens can be taken. Demands above the burst only
// wait for a full bucket (see the type comment).
func (b *bucket) delay(now time.Time, n float64) time.Duration {
	b.advance(now)
	need := math.Min(n, b.burst)
	if b.tokens+epsilon >= need {
		return 0
	}
	secs := (need - b.tokens) / b.perSec
	return time.Duration(math.Ceil(secs * float64(time.Second)))
}

// take removes n tokens (n < 0 gives them back). It never blocks: an
// under-estimate discovered after a call becomes debt that delays later calls.
func (b *bucket) take(now time.Time, n float64) {
	b.advance(now)
	b.tokens = math.Min(b.burst, b.tokens-n)
}

// forgiveDebt raises a negative level to 0.
func (b *bucket) forgiveDebt(now time.Time) {
	b.advance(now)
	b.tokens = math.Max(b.tokens, 0)
}
