package ratelimit

import (
	"context"
	"log/slog"
	"math"
	"time"
)

// A share that follows the workers running.
//
// Options.Workers K is how many workers the cluster runs at once, and each
// takes 1/K of every limit. That is right while K run, and wasteful once
// fewer are left: the last indexes of a study run at 1/K of the limit while
// the finished workers' shares lie unused (issue 33's cluster presets: the
// wall's excess over the limit's bound was that tail). SetLive divides by
// the workers running now instead, never below 1 and never above K, and
// FollowLive keeps it up to date from a count the caller provides (the
// held presence locks on a shared directory, the fresh heartbeats on an
// object store). The 429 cuts, the pause at ≤ 1 % remaining and the
// shared buckets (Options.Shared) are unchanged: headers and 429s still
// see every worker's calls.

// SetLive divides every pool's limits by n workers from now on (clamped
// to 1…Options.Workers) and returns the n applied. A pool's request and
// token buckets change rate at once (keeping their tokens), its in-flight
// share becomes 1/n of max_concurrency, and its concurrency limit, its
// ceiling and its known-fine level scale by old/new, so a limit cut by a
// 429 stays cut in proportion.
func (r *Registry) SetLive(n int) int {
	n = min(max(n, 1), r.opts.Workers)
	r.mu.Lock()
	if n == r.live {
		r.mu.Unlock()
		return n
	}
	r.opts.Logger.Info("ratelimit: provider limits divided among the workers running", "workers", n, "of", r.opts.Workers)
	r.live = n
	pools := make([]*pool, 0, len(r.pools))
	for _, p := range r.pools {
		pools = append(pools, p)
	}
	r.mu.Unlock()
	for _, p := range pools {
		p.setLive(n)
	}
	return n
}

// Live is the workers the pools' limits are divided by now.
func (r *Registry) Live() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.live
}

func (p *pool) setLive(n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	old := p.workers
	if n == old {
		return
	}
	now := p.opts.Now()
	oldMax := p.maxLimit
	p.workers = n
	p.setBucketsLocked(now)
	if p.configured.MaxInFlight > 0 {
		p.maxLimit = p.inFlightShare(p.configured.MaxInFlight)
	} else {
		p.maxLimit = ceilDiv(p.opts.MaxConcurrency, n)
	}
	scale := func(v int) int {
		if v <= 0 {
			return v
		}
		return max(1, int(math.Round(float64(v)*float64(old)/float64(n))))
	}
	if p.limit >= oldMax {
		p.limit = p.maxLimit // at its share's cap: at the new one
	} else {
		p.limit = min(max(scale(p.limit), p.opts.AIMD.Min), p.maxLimit)
	}
	p.ceiling, p.fineLevel, p.preProbe = scale(p.ceiling), scale(p.fineLevel), 0
	p.log.Debug("ratelimit: share follows the workers running", "workers", n, "was", old, "limit", p.limit)
	p.recordLocked(now, "workers")
	p.admitQueuedLocked(now) // a larger share may admit waiters at once
}

// LiveCount counts the workers running now, this one included.
type LiveCount func(ctx context.Context) (int, error)

// FollowOptions tune FollowLive. Zero fields take the defaults.
type FollowOptions struct {
	// Every is how often the workers are counted (default 500ms).
	Every time.Duration
	// Settle is how long a lower count must hold before the share grows
	// (default 1s). A cluster's scheduler starts the next index when one
	// exits, and the new process takes a moment to show itself (0.1–0.5 s
	// on one machine): growing at once would give the others a share the
	// newcomer then takes too. Much longer and the last worker finishes
	// before its share grows (an index of the cluster presets takes 5–8 s).
	// A higher count applies at once (the side of fewer 429s).
	Settle time.Duration
}

func (o FollowOptions) withDefaults() FollowOptions {
	if o.Every <= 0 {
		o.Every = 500 * time.Millisecond
	}
	if o.Settle <= 0 {
		o.Settle = time.Second
	}
	return o
}

// FollowLive counts the workers every o.Every and divides the limits by
// the count (SetLive) until ctx ends. Until it has once counted two or
// more workers it keeps Options.Workers: workers that cannot see each
// other (each on its own disk with no shared store) count one, and must
// not each take the whole limit. A count that fails keeps the share as it
// is (logged once per run of failures). With Options.Workers 1 it returns
// at once.
func (r *Registry) FollowLive(ctx context.Context, count LiveCount, o FollowOptions) {
	if r.opts.Workers <= 1 {
		return
	}
	f := follower{r: r, o: o.withDefaults(), log: r.opts.Logger}
	tick := time.NewTicker(f.o.Every)
	defer tick.Stop()
	for {
		f.step(ctx, count)
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// follower is FollowLive's state between counts.
type follower struct {
	r       *Registry
	o       FollowOptions
	log     *slog.Logger
	trusted bool      // a count of two or more was seen
	failing bool      // the last count failed (logged)
	lowFrom time.Time // when the counts fell below the share in force (zero: they did not)
}

func (f *follower) step(ctx context.Context, count LiveCount) {
	n, err := count(ctx)
	if err != nil {
		if !f.failing && ctx.Err() == nil {
			f.log.Warn("ratelimit: cannot count the workers running; the share stays as it is", "err", err)
		}
		f.failing = true
		return
	}
	f.failing = false
	n = min(max(n, 1), f.r.opts.Workers)
	f.trusted = f.trusted || n >= 2
	if !f.trusted {
		return
	}
	cur := f.r.Live()
	now := f.r.opts.Now()
	switch {
	case n >= cur:
		f.lowFrom = time.Time{}
		f.r.SetLive(n)
	case f.lowFrom.IsZero():
		f.lowFrom = now
	case now.Sub(f.lowFrom) >= f.o.Settle:
		// The counts stayed below the share for Settle: the latest
		// holds (at the end of a study they fall one after another,
		// and each waiting its own Settle would leave the last worker
		// at a small share until it ends).
		f.r.SetLive(n)
		f.lowFrom = time.Time{}
	}
}
