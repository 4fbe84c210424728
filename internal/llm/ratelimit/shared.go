package ratelimit

import (
	"container/heap"
	"context"
	"math"
	"time"
)

// SharedBuckets keeps every pool's request and token buckets in one place
// that all workers reach (package redisrate: a Redis server), so that K
// processes on one key share its limits exactly: a worker that is idle
// leaves its share to the others, which 1/Workers cannot. Concurrency
// stays per worker (max_concurrency is still divided by Workers, and the
// AIMD limit is each worker's own).
//
// Amounts are what one call costs in each bucket, as the local buckets
// charge them: an estimate before the call, reconciled with the reported
// usage after it.
type SharedBuckets interface {
	// Take charges c to the pool's buckets if every bucket with a rate has
	// room for it and returns 0; otherwise it charges nothing and returns
	// how long until they would have. A demand larger than a bucket holds
	// waits only for a full bucket and leaves debt, as the local buckets do.
	Take(ctx context.Context, pool string, r SharedRates, c Charge) (time.Duration, error)
	// Adjust charges c without checking (negative amounts give tokens
	// back; an under-estimate becomes debt).
	Adjust(ctx context.Context, pool string, r SharedRates, c Charge) error
}

// Rate is one shared bucket: its refill per second and how much it holds.
// PerSec 0 means the dimension is unlimited (not charged).
type Rate struct {
	PerSec, Burst float64
}

// SharedRates are a pool's whole-organisation limits (never divided by
// Workers) as bucket rates.
type SharedRates struct {
	Requests, Tokens, Input, Output Rate
}

// Charge is an amount per bucket.
type Charge struct {
	Requests, Tokens, Input, Output float64
}

// DefaultSharedRetry is how long a pool runs on its local share after the
// shared buckets failed before it tries them again.
const DefaultSharedRetry = 5 * time.Second

// sharedTimeout bounds a refund or debt sent after a call, whose own
// context may be gone.
const sharedTimeout = 2 * time.Second

func rateOf(perMinute int, window time.Duration) Rate {
	if perMinute <= 0 {
		return Rate{}
	}
	perSec := float64(perMinute) / 60
	return Rate{PerSec: perSec, Burst: math.Max(1, perSec*window.Seconds())}
}

// sharedRatesLocked are the pool's effective limits as shared buckets.
func (p *pool) sharedRatesLocked() SharedRates {
	rw, tw := p.opts.RequestBurst, p.opts.TokenBurst
	e := p.effective
	return SharedRates{Requests: rateOf(e.RPM, rw), Tokens: rateOf(e.TPM, tw), Input: rateOf(e.ITPM, tw), Output: rateOf(e.OTPM, tw)}
}

// usingSharedLocked reports whether admissions go through the shared
// buckets now: configured, and not within DefaultSharedRetry of a failure.
func (p *pool) usingSharedLocked(now time.Time) bool {
	return p.opts.Shared != nil && !now.Before(p.sharedDownUntil)
}

// sharedChargeLocked is what a call costs in the shared buckets that have
// a rate (the others are not charged, as a nil local bucket is not).
func sharedCharge(r SharedRates, in, out int) Charge {
	creq, ctok, cin, cout := charges(in, out)
	pick := func(r Rate, n float64) float64 {
		if r.PerSec > 0 {
			return n
		}
		return 0
	}
	return Charge{Requests: pick(r.Requests, creq), Tokens: pick(r.Tokens, ctok), Input: pick(r.Input, cin), Output: pick(r.Output, cout)}
}

// takeSharedLocked asks the shared buckets for the head waiter w, with the
// pool unlocked meanwhile (only one such request per pool is in flight:
// sharedBusy). It returns how long w must wait (0 and w.granted: admitted;
// 0 and not granted: the shared buckets failed and the pool went local, so
// look again). An error is only ctx's.
func (p *pool) takeSharedLocked(ctx context.Context, w *waiter) (time.Duration, error) {
	p.sharedBusy = true
	defer func() {
		p.sharedBusy = false
		// A waiter that became the head while w was asking (a higher
		// priority) waits for its turn to ask: this is it.
		if h := p.queue.head(); h != nil && h != w {
			select {
			case h.ready <- struct{}{}:
			default:
			}
		}
	}()
	if p.sharedDown {
		if err := p.rejoinSharedLocked(ctx); err != nil {
			return 0, err
		}
		if p.sharedDown {
			return 0, nil
		}
	}
	r := p.sharedRatesLocked()
	c := sharedCharge(r, w.in, w.out)
	p.mu.Unlock()
	wait, err := p.opts.Shared.Take(ctx, p.name, r, c)
	p.mu.Lock()
	now := p.opts.Now()
	switch {
	case err != nil && ctx.Err() != nil:
		return 0, ctx.Err()
	case err != nil:
		p.sharedFailedLocked(now, err)
		return 0, nil
	}
	p.sharedBackLocked(now)
	if wait > 0 {
		return wait, nil
	}
	// Paid for: admitted even if the limit was cut meanwhile (one call
	// over a limit just cut is what the cut's own calls in flight are).
	heap.Remove(&p.queue, w.index)
	w.t, w.granted = p.admitLocked(now, w.in, w.out, &c), true
	p.noteWaitLocked(now, w)
	return 0, nil
}

// rejoinSharedLocked tries the shared buckets again after a failure by
// charging them what this worker sent from its local share lately (each
// local bucket's deficit: at most a bucket's worth): a Redis that was
// restarted empty would otherwise let every worker send a full bucket on
// top of what they had just sent. If Redis kept its state, this counts
// those calls twice, which only slows the workers a little for a moment.
// An error is only ctx's.
func (p *pool) rejoinSharedLocked(ctx context.Context) error {
	now := p.opts.Now()
	r := p.sharedRatesLocked()
	deficit := func(b *bucket) float64 {
		if b == nil {
			return 0
		}
		b.advance(now)
		return math.Max(0, b.burst-b.tokens)
	}
	seed := sharedGiveBack(r, Charge{Requests: deficit(p.req), Tokens: deficit(p.tok), Input: deficit(p.in), Output: deficit(p.out)})
	p.mu.Unlock()
	err := p.opts.Shared.Adjust(ctx, p.name, r, seed)
	p.mu.Lock()
	now = p.opts.Now()
	switch {
	case err != nil && ctx.Err() != nil:
		return ctx.Err()
	case err != nil:
		p.sharedFailedLocked(now, err)
	default:
		p.sharedBackLocked(now)
	}
	return nil
}

// adjustShared sends a call's reconciliation to the shared buckets.
func (p *pool) adjustShared(r SharedRates, c Charge) {
	ctx, cancel := context.WithTimeout(context.Background(), sharedTimeout)
	defer cancel()
	if err := p.opts.Shared.Adjust(ctx, p.name, r, c); err != nil {
		p.mu.Lock()
		p.sharedFailedLocked(p.opts.Now(), err)
		p.mu.Unlock()
	}
}

// sharedFailedLocked puts the pool on its local share (1/Workers of the
// limits) for DefaultSharedRetry: a run goes on, a little below the
// limit, rather than failing because the shared store went away.
func (p *pool) sharedFailedLocked(now time.Time, err error) {
	p.st.SharedFailures++
	if !p.sharedDown {
		// While the shared buckets were used this worker may have sent
		// more than its share (others idle): start the local share from
		// empty at worst, not from that debt.
		for _, b := range [...]*bucket{p.req, p.tok, p.in, p.out} {
			if b != nil {
				b.forgiveDebt(now)
			}
		}
		p.log.Warn("ratelimit: shared limit unreachable; this worker keeps to its share of the limits until it is back",
			"workers", p.opts.Workers, "retry_in", p.opts.SharedRetry, "err", err)
	}
	p.sharedDown = true
	p.sharedDownUntil = now.Add(p.opts.SharedRetry)
	p.kickLocked()
}

// sharedBackLocked notes that the shared buckets answered.
func (p *pool) sharedBackLocked(now time.Time) {
	if p.sharedDown {
		p.log.Info("ratelimit: shared limit reachable again", "after", now.Sub(p.sharedDownUntil.Add(-p.opts.SharedRetry)).Round(time.Millisecond))
	}
	p.sharedDown = false
	p.sharedDownUntil = time.Time{}
}
