package ratelimit

import (
	"container/heap"
	"context"
	"errors"
	"log/slog"
	"math"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/impactbench/impactbench/internal/llm"
	safe "github.com/impactbench/impactbench/internal/sanitize"
)

// pool is the shared limiter of one pool key. One mutex guards everything:
// admissions are a few comparisons, and a single lock makes "check every
// bucket, then charge them all" atomic without ordering rules.
type pool struct {
	name string
	opts Options
	log  *slog.Logger
	// workers is what this worker divides every limit by: Options.Workers,
	// or fewer while fewer workers run (SetLive; see live.go).
	workers int

	mu         sync.Mutex
	configured Limits
	effective  Limits

	// Buckets, nil when that dimension is unlimited.
	req, tok, in, out *bucket

	limit     int // current AIMD concurrency limit
	maxLimit  int
	slowStart bool
	inFlight  int
	queue     waitQueue // by priority, then arrival
	arrivals  uint64    // numbers the waiters in arrival order

	// The shared buckets (Options.Shared): whether the head waiter is
	// asking them now, and while they fail, until when the pool keeps to
	// its local buckets.
	sharedBusy      bool
	sharedDown      bool
	sharedDownUntil time.Time

	pausedUntil time.Time
	holdUntil   time.Time // no growth before it (Cooldown after a back-off)
	// admitted numbers the calls admitted so far. Which calls were sent
	// before or after a change of the limit is told by these numbers, not
	// by clock readings: calls admitted together by one release share an
	// instant, and a coarse clock gives many calls the same one.
	admitted uint64
	// decreaseAt is admitted at the last back-off: calls admitted up to it
	// cannot trigger another back-off.
	decreaseAt uint64

	// Probing past the level of the last back-off (see AIMD).
	ceiling   int // calls in flight when the last back-off happened; 0: none yet
	probeStep int
	nextProbe time.Time
	preProbe  int // the limit before the last probe (0: no probe since the last back-off)

	// Growth window: completions since it began, the in-flight peak in it,
	// whether any 429 or server trouble happened in it, and the latencies
	// of its successful calls (at most maxWindowSamples).
	winDone  int
	winPeak  int
	winDirty bool
	winLat   []time.Duration

	// Latency signal: the pool's baseline latency (0: not measured yet);
	// during a run of latency back-offs, the calls in flight when it began
	// and the median of the last window measured after one of its cuts.
	latBase  time.Duration
	latLevel int // 0: no run under way
	latPrev  time.Duration
	// fineLevel is the most calls in flight a clean, saturated window has
	// had at normal latency: a level the provider is known to take. A
	// slow window at or below it cannot be our overshoot (we sent no
	// more than when it was fast), so it is the machine or the calls
	// that got slower, never a reason to cut.
	fineLevel int
	// changeAt is admitted when the limit last changed: only calls
	// admitted since then tell what the current limit does to latency.
	changeAt uint64

	st Stats
}

type waiter struct {
	ready    chan struct{} // buffered(1): "something changed, look again"
	prio     int           // llm.Request.Priority: higher goes first
	seq      uint64        // arrival order among equal priorities
	index    int           // place in the heap (container/heap keeps it)
	in, out  int
	enqueued time.Time
	// granted: a slot was taken for this waiter (its ticket is t) by
	// whoever freed it, so admissions never wait on a waiter's wake-up.
	granted bool
	t       ticket
}

// ticket remembers what a call was charged so release can reconcile it,
// and when and at which level of in-flight calls it was admitted.
type ticket struct {
	seq               uint64 // the pool's admitted count with this call
	start             time.Time
	inFlight          int
	req, tok, in, out float64
	shared            bool // charged to the shared buckets, not the local ones
}

// maxWindowSamples bounds the latencies a window keeps for its median.
const maxWindowSamples = 256

// minWindowSamples is the fewest latencies a window needs to say anything
// about latency (a median of fewer is mostly noise).
const minWindowSamples = 8

func newPool(name string, lim Limits, opts Options) *pool {
	lim = sanitize(lim)
	start := lim.Start
	lim.Start = 0 // a hint at creation, not a limit: tighten compares the rest
	now := opts.Now()
	p := &pool{
		name: name,
		opts: opts,
		// A pool key may hold the base_url (credentials and all): the log
		// line shows it redacted.
		log:        opts.Logger.With("pool", safe.URLsIn(name)),
		configured: lim,
		effective:  lim,
		slowStart:  !opts.AIMD.NoSlowStart,
		probeStep:  1,
		workers:    opts.Workers,
	}
	k := opts.Workers
	p.limit, p.maxLimit = ceilDiv(opts.InitialConcurrency, k), ceilDiv(opts.MaxConcurrency, k)
	if start > 0 {
		p.limit = min(ceilDiv(start, k), p.maxLimit)
	}
	if lim.MaxInFlight > 0 {
		p.limit = p.inFlightShare(lim.MaxInFlight)
		p.maxLimit = p.limit
	}
	p.setBucketsLocked(now)
	p.st.Pool = name
	p.recordLocked(now, "initial")
	return p
}

// ceilDiv is n/k rounded up, at least 1: a worker's share of a soft
// number (where a pool starts, how far it may grow).
func ceilDiv(n, k int) int { return max(1, (n+k-1)/k) }

// inFlightShare is this worker's share of a hard cap on calls in flight:
// rounded down so the workers together stay within it, but at least 1.
func (p *pool) inFlightShare(n int) int { return max(1, n/p.workers) }

// share is this worker's share of a per-minute limit.
func (p *pool) share(perMinute int) float64 { return float64(perMinute) / float64(p.workers) }

// shareLocked is the limits this worker's buckets and cap run at: its
// share of the effective limits.
func (p *pool) shareLocked() Limits {
	if p.workers == 1 {
		return p.effective
	}
	e := p.effective
	div := func(n int) int {
		if n == 0 {
			return 0
		}
		return max(1, n/p.workers)
	}
	return Limits{MaxInFlight: div(e.MaxInFlight), RPM: div(e.RPM), TPM: div(e.TPM), ITPM: div(e.ITPM), OTPM: div(e.OTPM)}
}

func sanitize(l Limits) Limits {
	l.MaxInFlight = max(l.MaxInFlight, 0)
	l.RPM, l.TPM, l.ITPM, l.OTPM = max(l.RPM, 0), max(l.TPM, 0), max(l.ITPM, 0), max(l.OTPM, 0)
	return l
}

// setBucketsLocked makes the buckets match p.effective, keeping the tokens of
// buckets that already exist.
func (p *pool) setBucketsLocked(now time.Time) {
	set := func(b **bucket, limit int, window time.Duration) {
		perMinute := p.share(limit)
		switch {
		case limit <= 0:
			*b = nil
		case *b == nil:
			*b = newBucket(now, perMinute, window)
			if p.opts.Workers > 1 {
				// One of several workers on one limit starts with no
				// burst of its own: the others have been spending the
				// provider's bucket (a worker the scheduler starts when
				// another exits finds it nearly empty), so a full bucket
				// here would be answered 429 (issue 33's cluster presets:
				// 0.3–1.9 % of requests, all at worker starts).
				(*b).tokens = 0
			}
		default:
			(*b).setRate(now, perMinute, window)
		}
	}
	rw, tw := p.opts.RequestBurst, p.opts.TokenBurst
	set(&p.req, p.effective.RPM, rw)
	set(&p.tok, p.effective.TPM, tw)
	set(&p.in, p.effective.ITPM, tw)
	set(&p.out, p.effective.OTPM, tw)
}

// tighten merges another client's limits into the pool: for each dimension
// the strictest non-zero value wins.
func (p *pool) tighten(lim Limits) {
	lim = sanitize(lim)
	strict := func(a, b int) int {
		if a == 0 || (b != 0 && b < a) {
			return b
		}
		return a
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	c := p.configured
	n := Limits{
		MaxInFlight: strict(c.MaxInFlight, lim.MaxInFlight),
		RPM:         strict(c.RPM, lim.RPM),
		TPM:         strict(c.TPM, lim.TPM),
		ITPM:        strict(c.ITPM, lim.ITPM),
		OTPM:        strict(c.OTPM, lim.OTPM),
	}
	if n == c {
		return
	}
	p.log.Debug("ratelimit: pool limits tightened by another client", "limits", n)
	now := p.opts.Now()
	e := &p.effective
	if n.RPM != c.RPM {
		e.RPM = strict(e.RPM, n.RPM)
	}
	if n.TPM != c.TPM {
		e.TPM = strict(e.TPM, n.TPM)
	}
	e.ITPM, e.OTPM, e.MaxInFlight = n.ITPM, n.OTPM, n.MaxInFlight
	p.configured = n
	p.setBucketsLocked(now)
	if n.MaxInFlight > 0 {
		p.maxLimit = p.inFlightShare(n.MaxInFlight)
		if p.limit > p.maxLimit {
			p.limit = p.maxLimit
			p.recordLocked(now, "config")
		}
	}
}

// charges are what a call with this estimate costs in each bucket. Combined
// TPM takes max(in, out) up front because that is what OpenAI checks.
func charges(in, out int) (req, tok, inTok, outTok float64) {
	return 1, float64(max(in, out)), float64(in), float64(out)
}

// delayLocked is how long the head of the queue must still wait for pauses
// and buckets (0: go now). With the shared buckets in use only the pause
// is local.
func (p *pool) delayLocked(now time.Time, in, out int) time.Duration {
	creq, ctok, cin, cout := charges(in, out)
	d := p.pausedUntil.Sub(now)
	if p.usingSharedLocked(now) {
		return max(d, 0)
	}
	for _, bc := range [...]struct {
		b *bucket
		n float64
	}{{p.req, creq}, {p.tok, ctok}, {p.in, cin}, {p.out, cout}} {
		if bc.b != nil {
			d = max(d, bc.b.delay(now, bc.n))
		}
	}
	return max(d, 0)
}

// admitLocked takes a slot for a call and charges it: to the local
// buckets, or, when shared is set, records what the shared buckets were
// charged.
func (p *pool) admitLocked(now time.Time, in, out int, shared *Charge) ticket {
	p.admitted++
	t := ticket{seq: p.admitted, start: now}
	creq, ctok, cin, cout := charges(in, out)
	p.chargeLocalLocked(now, &t, creq, ctok, cin, cout)
	if shared != nil {
		// The local buckets are charged too, though not consulted: if the
		// shared ones fail, they say what this worker sent lately.
		t.shared = true
		t.req, t.tok, t.in, t.out = shared.Requests, shared.Tokens, shared.Input, shared.Output
	}
	p.inFlight++
	t.inFlight = p.inFlight
	p.st.Calls++
	p.st.PeakInFlight = max(p.st.PeakInFlight, p.inFlight)
	p.winPeak = max(p.winPeak, p.inFlight)
	return t
}

// chargeLocalLocked charges the local buckets that exist and records it.
func (p *pool) chargeLocalLocked(now time.Time, t *ticket, creq, ctok, cin, cout float64) {
	if p.req != nil {
		p.req.take(now, creq)
		t.req = creq
	}
	if p.tok != nil {
		p.tok.take(now, ctok)
		t.tok = ctok
	}
	if p.in != nil {
		p.in.take(now, cin)
		t.in = cin
	}
	if p.out != nil {
		p.out.take(now, cout)
		t.out = cout
	}
}

// acquire waits for a slot, for the buckets and for any pause, in FIFO order.
// Only the head of the queue watches the clock; everyone behind it sleeps on
// its channel. Whoever frees a slot admits the waiters it makes room for on
// the spot (admitQueuedLocked), so refilling k slots takes one wake-up per
// waiter in parallel, not a chain of k wake-ups one after another: on a
// busy machine each wake-up waits for a processor, and the chain left a
// pool's slots idle.
func (p *pool) acquire(ctx context.Context, in, out, prio int) (ticket, error) {
	if err := ctx.Err(); err != nil {
		return ticket{}, err
	}
	p.mu.Lock()
	now := p.opts.Now()
	if p.queue.Len() == 0 && p.inFlight < p.limit && !p.usingSharedLocked(now) && p.delayLocked(now, in, out) == 0 {
		t := p.admitLocked(now, in, out, nil)
		p.mu.Unlock()
		return t, nil
	}
	p.arrivals++
	w := &waiter{ready: make(chan struct{}, 1), prio: prio, seq: p.arrivals, in: in, out: out, enqueued: now}
	heap.Push(&p.queue, w)
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	wait := func(d time.Duration) <-chan time.Time {
		if timer == nil {
			timer = time.NewTimer(d)
		} else {
			timer.Reset(d)
		}
		return timer.C
	}
	for {
		var wake <-chan time.Time
		if !w.granted && p.queue.head() == w && p.inFlight < p.limit {
			now = p.opts.Now()
			d := p.delayLocked(now, in, out)
			switch {
			case d > 0:
				wake = wait(d)
			case !p.usingSharedLocked(now):
				p.admitQueuedLocked(now)
			case !p.sharedBusy:
				sd, err := p.takeSharedLocked(ctx, w)
				if err != nil {
					return ticket{}, p.abandonLocked(w, err)
				}
				if sd > 0 {
					wake = wait(sd)
				} else if !w.granted {
					continue // the shared buckets failed: look again, locally
				}
			}
		}
		if w.granted {
			p.mu.Unlock()
			return w.t, nil
		}
		p.mu.Unlock()
		select {
		case <-w.ready:
		case <-wake:
		case <-ctx.Done():
			p.mu.Lock()
			if w.granted {
				// Admitted as the context ended: the call goes on and
				// ends at once, releasing its slot like any other.
				p.mu.Unlock()
				return w.t, nil
			}
			return ticket{}, p.abandonLocked(w, ctx.Err())
		}
		p.mu.Lock()
	}
}

// abandonLocked takes a waiter whose context ended out of the queue,
// unlocks the pool and returns err.
func (p *pool) abandonLocked(w *waiter, err error) error {
	wasHead := p.queue.head() == w
	heap.Remove(&p.queue, w.index)
	if wasHead {
		p.kickLocked()
	}
	p.mu.Unlock()
	return err
}

// admitQueuedLocked admits waiters from the head of the queue while there
// is a free slot and nothing (a pause, a bucket) makes the head wait, and
// tells each it was admitted; then, if a slot is still free, it tells the
// new head to look again (it may have to wait for a bucket). It returns how
// many it admitted.
//
// A full pool does not wake the head: it would only find the pool full and
// sleep again, and a saturated pool did that on every release (a wake-up,
// a lock and a trip through the run queue per call, competing with the
// calls that hold slots for the processor). The next release or a raised
// limit admits it.
//
// With the shared buckets in use it only tells the head: each admission
// then needs their answer, which the head asks for unlocked.
func (p *pool) admitQueuedLocked(now time.Time) (admitted int) {
	if p.usingSharedLocked(now) {
		p.kickLocked()
		return 0
	}
	for w := p.queue.head(); w != nil && p.inFlight < p.limit; w = p.queue.head() {
		if p.delayLocked(now, w.in, w.out) > 0 {
			break
		}
		heap.Pop(&p.queue)
		w.t, w.granted = p.admitLocked(now, w.in, w.out, nil), true
		p.noteWaitLocked(now, w)
		admitted++
		select {
		case w.ready <- struct{}{}:
		default:
		}
	}
	if p.inFlight < p.limit {
		p.kickLocked()
	}
	return admitted
}

// noteWaitLocked counts how long an admitted waiter waited.
func (p *pool) noteWaitLocked(now time.Time, w *waiter) {
	waited := now.Sub(w.enqueued)
	p.st.Waited++
	p.st.WaitTotal += waited
	p.st.WaitMax = max(p.st.WaitMax, waited)
}

// waitQueue is the callers waiting for room: a heap by priority (higher
// first), then arrival. Equal priorities are FIFO, as the queue always was.
type waitQueue []*waiter

func (q waitQueue) Len() int { return len(q) }
func (q waitQueue) Less(i, j int) bool {
	if q[i].prio != q[j].prio {
		return q[i].prio > q[j].prio
	}
	return q[i].seq < q[j].seq
}
func (q waitQueue) Swap(i, j int) {
	q[i], q[j] = q[j], q[i]
	q[i].index, q[j].index = i, j
}
func (q *waitQueue) Push(x any) {
	w := x.(*waiter)
	w.index = len(*q)
	*q = append(*q, w)
}
func (q *waitQueue) Pop() any {
	old := *q
	w := old[len(old)-1]
	old[len(old)-1] = nil
	*q = old[:len(old)-1]
	return w
}

// head is the waiter to admit next (nil: none).
func (q waitQueue) head() *waiter {
	if len(q) == 0 {
		return nil
	}
	return q[0]
}

// kickLocked tells the head of the queue to look again.
func (p *pool) kickLocked() {
	if w := p.queue.head(); w != nil {
		select {
		case w.ready <- struct{}{}:
		default:
		}
	}
}

// release ends a call: it frees the slot, reconciles token charges with the
// reported usage, feeds the outcome to AIMD and learns from headers.
func (p *pool) release(t ticket, resp *llm.Response, err error) {
	p.mu.Lock()
	now := p.opts.Now()
	p.inFlight--
	back, ok := p.reconcileLocked(t, resp, err)
	var r SharedRates
	if ok {
		p.giveBackLocked(now, back)
	}
	if ok && t.shared {
		r = p.sharedRatesLocked()
		// A bucket learned during the call was charged nothing and now
		// takes the full actual amount; one without a rate takes nothing.
		back = sharedGiveBack(r, back)
	}
	p.observeLocked(now, t, resp, err)
	admitted := p.admitQueuedLocked(now)
	p.mu.Unlock()
	if ok && t.shared && back != (Charge{}) {
		p.adjustShared(r, Charge{Requests: -back.Requests, Tokens: -back.Tokens, Input: -back.Input, Output: -back.Output})
	}
	if admitted > 0 {
		// The call just admitted holds a slot but is not on the wire yet,
		// and the processor is ours: the caller goes on to store its answer
		// and build its next request, work that holds no slot. Yield, so
		// the admitted call (woken onto this processor's next slot) is sent
		// first: a saturated pool's slots then idle only for the wire.
		runtime.Gosched()
	}
}

// reconcileLocked is what a call's charge gives back, given what it
// really used (negative: it used more); ok is false when nothing changes.
func (p *pool) reconcileLocked(t ticket, resp *llm.Response, err error) (back Charge, ok bool) {
	var u llm.Usage
	if err == nil {
		if resp.Cached {
			// Answered from a local store below us: the provider saw nothing.
			return Charge{Requests: t.req, Tokens: t.tok, Input: t.in, Output: t.out}, true
		}
		u = resp.Usage
	} else if e := (*llm.Error)(nil); errors.As(err, &e) {
		u = e.Usage
	}
	if u.InputTokens == 0 && u.OutputTokens == 0 {
		// Unknown usage (failed call, adapter without usage): keep the
		// estimate charged. Over-charging during an error episode only slows
		// us down when slowing down is the right thing to do.
		return Charge{}, false
	}
	p.st.InputTokens += int64(u.InputTokens)
	p.st.OutputTokens += int64(u.OutputTokens)
	uncached := max(u.InputTokens-u.CachedInputTokens, 0)
	return Charge{
		Tokens: t.tok - float64(u.InputTokens+u.OutputTokens),
		Input:  t.in - float64(uncached),
		Output: t.out - float64(u.OutputTokens),
	}, true
}

// sharedGiveBack keeps the amounts of the shared buckets that have a rate.
func sharedGiveBack(r SharedRates, c Charge) Charge {
	keep := func(r Rate, n float64) float64 {
		if r.PerSec > 0 {
			return n
		}
		return 0
	}
	return Charge{Requests: keep(r.Requests, c.Requests), Tokens: keep(r.Tokens, c.Tokens), Input: keep(r.Input, c.Input), Output: keep(r.Output, c.Output)}
}

// giveBackLocked returns tokens to buckets (negative amounts charge extra,
// as debt, so the caller never blocks). A bucket learned during the call was
// charged nothing and now takes the full actual amount.
func (p *pool) giveBackLocked(now time.Time, c Charge) {
	req, tok, in, out := c.Requests, c.Tokens, c.Input, c.Output
	for _, bc := range [...]struct {
		b *bucket
		n float64
	}{{p.req, req}, {p.tok, tok}, {p.in, in}, {p.out, out}} {
		if bc.b != nil && bc.n != 0 {
			bc.b.take(now, -bc.n)
		}
	}
}

func (p *pool) observeLocked(now time.Time, t ticket, resp *llm.Response, err error) {
	if err == nil {
		p.st.Succeeded++
		p.winDone++
		if !resp.Cached && t.seq > p.changeAt && len(p.winLat) < maxWindowSamples {
			// A stored answer's latency says nothing about the provider,
			// and a call sent under another limit nothing about this one.
			p.winLat = append(p.winLat, now.Sub(t.start))
		}
		if resp.RateLimit != nil {
			p.learnLocked(now, resp.RateLimit)
		}
	} else {
		// Classified only here: llm.KindOf allocates, and the success path
		// is the hot one.
		p.observeErrorLocked(now, t, err)
	}
	p.closeWindowLocked(now)
}

func (p *pool) observeErrorLocked(now time.Time, t ticket, err error) {
	var e *llm.Error
	errors.As(err, &e)
	switch kind := llm.KindOf(err); {
	case kind == llm.KindRateLimit:
		p.st.RateLimited++
		p.winDirty = true
		if e.RetryAfter > 0 {
			// Stop the whole pool: the other in-flight callers would hit the
			// same wall and each extend the provider's penalty.
			p.pauseLocked(now, now.Add(e.RetryAfter), "retry-after")
		}
		p.backOffLocked(now, t, e.RetryAfter, "429")
	case kind == llm.KindOverloaded:
		// 529/503 "overloaded": the provider as a whole has no room, so
		// sending fewer at once is the one thing that helps. No pause: it
		// is not our quota, and the retry loop already waits.
		p.st.Overloaded++
		p.winDirty = true
		p.backOffLocked(now, t, e.RetryAfter, "overloaded")
	case kind == llm.KindServer, kind == llm.KindTimeout, kind == llm.KindConnection:
		// Other provider trouble says nothing about our share of its
		// limits: never shrink for it, but do not grow into it either.
		p.st.Overloaded++
		p.winDirty = true
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		// Our own cancellation: no signal about the provider.
	default:
		// Answered, just not usefully (bad request, invalid JSON…): the
		// provider had capacity for it.
		p.winDone++
	}
}

// backOffLocked cuts the limit to Decrease × the calls in flight. A call admitted before the last back-off is ignored:
// it was sent under the old limit and cannot tell whether the new one is
// low enough (the rule TCP uses for one reduction per window). Growth then
// waits for the cooldown (or the provider's Retry-After, if longer).
func (p *pool) backOffLocked(now time.Time, t ticket, hold time.Duration, reason string) {
	p.slowStart = false
	if t.seq <= p.decreaseAt {
		return
	}
	a := p.opts.AIMD
	// The level is what the provider was being sent: the calls in flight
	// when t was admitted or now (this one included), whichever is more.
	// With fewer calls in flight than the limit allows, cutting the limit
	// alone would change nothing.
	level := min(p.limit, max(t.inFlight, p.inFlight+1))
	n := int(float64(level) * a.Decrease)
	if p.preProbe > 0 && p.preProbe < level {
		// A probe failed: the level before it held for a whole
		// ProbeInterval, so go back there rather than below it. If it is
		// too high after all (a bucket that drained slowly), the next
		// refused call cuts again.
		n = max(n, p.preProbe)
	}
	if n >= p.limit {
		n = p.limit - 1
	}
	n = max(n, a.Min)
	p.preProbe = 0
	p.ceiling = level
	p.probeStep = 1
	p.decreaseAt = p.admitted
	p.holdUntil = now.Add(max(a.Cooldown, hold))
	// Stay just below the ceiling a while before testing it again: each
	// probe that fails costs a 429.
	p.nextProbe = p.holdUntil.Add(a.ProbeInterval)
	p.resetWindowLocked()
	if n != p.limit {
		p.limit = n
		p.st.BackOffs++
		p.recordLocked(now, reason)
	}
}

// closeWindowLocked closes a window once it has seen as many completions
// as the limit (about one round trip of every slot): it backs off if the
// window's latency says the provider is congested, and grows the limit if
// the window was clean and saturated.
func (p *pool) closeWindowLocked(now time.Time) {
	if p.winDone < p.limit {
		return
	}
	a := p.opts.AIMD
	saturated := float64(p.winPeak) >= a.Saturation*float64(p.limit)
	switch p.latencyLocked(now, saturated) {
	case latCut:
		return // backed off; the window was reset
	case latFine:
		if !p.winDirty && saturated {
			p.fineLevel = max(p.fineLevel, p.winPeak)
		}
	case latStalled:
		// Slow at a level known to be fast: hold, or growth would go
		// into the stall and the next window would look like our
		// overshoot.
		p.resetWindowLocked()
		return
	}
	if !p.winDirty && saturated && !now.Before(p.holdUntil) && p.limit < p.maxLimit {
		p.growLocked(now)
	}
	p.resetWindowLocked()
}

// latencyVerdict is what a window's latency says.
type latencyVerdict int

const (
	latUnknown latencyVerdict = iota // too few samples, or the signal is off
	latFine                          // at or near the baseline
	latCut                           // congestion: the pool backed off
	latStalled                       // slow at a level known to be fast: not ours
)

// growLocked raises the limit after a clean, saturated window: doubling in
// slow start, else by Increase, but only to just below the ceiling; past
// it only by a probe per ProbeInterval.
func (p *pool) growLocked(now time.Time) {
	a := p.opts.AIMD
	step := max(1, int(math.Round(float64(p.limit)*a.Increase)))
	n, reason := p.limit+step, "increase"
	switch {
	case p.slowStart:
		n, reason = p.limit*2, "slow start"
	case p.ceiling > 0 && p.limit < p.ceiling-1:
		n = min(n, p.ceiling-1)
	case p.ceiling > 0:
		if now.Before(p.nextProbe) {
			return
		}
		n, reason = p.limit+p.probeStep, "probe"
		p.preProbe = p.limit
		p.probeStep *= 2 // it is only sent if the last probe was taken
		p.nextProbe = now.Add(a.ProbeInterval)
		p.ceiling = n + 1 // the next step past the new limit is a probe too
	}
	p.limit = min(n, p.maxLimit)
	p.recordLocked(now, reason)
	p.kickLocked()
}

// latencyLocked compares the median latency of the window's calls sent
// under the current limit with the pool's baseline, and backs off when a
// saturated window's median has passed LatencyFactor × baseline at a level
// of calls in flight never measured fast before. The baseline follows the
// medians of uncongested windows, quickly down and slowly up (and not at
// all from windows close to the threshold), so it stays near the
// provider's latency without load. When backing off does not help — the
// median did not fall from one cut to the next, or the limit is down to
// half the level where the rise began — the calls themselves got slower
// (longer replies, another phase), not the provider busier, and the
// baseline moves to the new level.
//
// A slow window at or below fineLevel is not congestion we caused: that
// many calls in flight were fast before, and sending no more cannot have
// made the provider queue. On a busy machine this process (or a server on
// the same machine) stalls for a fraction of a second to a few seconds at
// a time, every call of a window comes back two or three times slower, and
// cutting for it cost a tenth of the limit each time while the ceiling
// ratcheted down with every cut (auto-inflight: the user pool spent most
// of a run at 31–40 of 48).
//
// A pool whose MaxInFlight is configured (max_concurrency) is not cut for
// latency at all: its owner said how many calls the server takes. A 429 or
// an overloaded answer still cuts it.
func (p *pool) latencyLocked(now time.Time, saturated bool) latencyVerdict {
	a := p.opts.AIMD
	if a.LatencyFactor < 0 || p.configured.MaxInFlight > 0 || len(p.winLat) < minWindowSamples {
		return latUnknown
	}
	med := median(p.winLat)
	switch {
	case p.latBase == 0:
		p.latBase = med
		return latFine
	case saturated && float64(med) > a.LatencyFactor*float64(p.latBase):
		if p.winPeak <= p.fineLevel {
			p.log.Debug("ratelimit: slow window at a level known to be fast; holding",
				"median", med, "baseline", p.latBase, "in_flight", p.winPeak, "fine", p.fineLevel)
			return latStalled
		}
		switch {
		case p.latLevel == 0:
			p.latLevel = p.winPeak // the first cut of a run
		case (p.latPrev > 0 && med >= p.latPrev) || 2*p.limit <= p.latLevel:
			p.latBase, p.latLevel, p.latPrev = med, 0, 0
			return latUnknown
		default:
			p.latPrev = med
		}
		p.log.Debug("ratelimit: latency above the baseline", "median", med, "baseline", p.latBase, "in_flight", p.winPeak)
		// The level is the window's peak: what made the provider slow.
		p.backOffLocked(now, ticket{seq: p.admitted + 1, start: now, inFlight: p.winPeak}, 0, "latency")
		return latCut
	}
	p.latLevel, p.latPrev = 0, 0
	switch {
	case med < p.latBase:
		p.latBase += (med - p.latBase) / 2
	case float64(med) <= (1+a.LatencyFactor)/2*float64(p.latBase):
		// Clearly uncongested: drift up slowly. Nearer the threshold the
		// baseline stays put, or growth would drag it along.
		p.latBase += (med - p.latBase) / 20
	}
	return latFine
}

// median sorts d in place and returns its middle value.
func median(d []time.Duration) time.Duration {
	slices.Sort(d)
	return d[len(d)/2]
}

func (p *pool) resetWindowLocked() {
	p.winDone, p.winPeak, p.winDirty = 0, p.inFlight, false
	p.winLat = p.winLat[:0]
}

func (p *pool) recordLocked(now time.Time, reason string) {
	if len(p.st.History) >= historyCap {
		drop := historyCap / 10
		p.st.History = append(p.st.History[:0], p.st.History[drop:]...)
		p.st.HistoryDropped += drop
	}
	p.st.History = append(p.st.History, LimitChange{At: now, Limit: p.limit, Reason: reason})
	p.changeAt = p.admitted
	p.log.Debug("ratelimit: concurrency limit", "limit", p.limit, "reason", reason)
}

func (p *pool) pauseLocked(now, until time.Time, reason string) {
	if !until.After(p.pausedUntil) {
		return
	}
	p.pausedUntil = until
	p.st.Pauses++
	level := slog.LevelDebug
	if until.Sub(now) >= time.Minute {
		level = slog.LevelWarn
	}
	p.log.Log(context.Background(), level, "ratelimit: pool paused", "for", until.Sub(now).Round(time.Millisecond), "reason", reason)
}

// learnLocked adopts limits the provider reports and pauses the pool before
// a nearly spent quota runs into a wall.
func (p *pool) learnLocked(now time.Time, rl *llm.RateLimit) {
	changed := false
	adopt := func(eff *int, configured, reported int) {
		if reported <= 0 {
			return
		}
		v := max(1, int(p.opts.LearnFraction*float64(reported)))
		switch {
		case configured == 0 && *eff != v:
			*eff = v // unknown in the config: take the provider's word
		case configured > 0 && reported < configured && v < *eff:
			*eff = v // the config promised more than the provider grants
		default:
			return
		}
		changed = true
	}
	adopt(&p.effective.RPM, p.configured.RPM, rl.LimitRequests)
	// LimitTokens is combined or input tokens depending on the provider;
	// treating it as combined is the safe reading. A configured ITPM means
	// the pool already knows its token limits in the other shape.
	if p.configured.ITPM == 0 {
		adopt(&p.effective.TPM, p.configured.TPM, rl.LimitTokens)
	}
	if changed {
		p.setBucketsLocked(now)
		p.log.Debug("ratelimit: limits from headers", "limits", p.effective)
	}
	if d := nearWall(rl.LimitRequests, rl.RemainingRequests, rl.ResetRequests); d > 0 {
		p.pauseLocked(now, now.Add(d), "requests nearly spent")
	}
	if d := nearWall(rl.LimitTokens, rl.RemainingTokens, rl.ResetTokens); d > 0 {
		p.pauseLocked(now, now.Add(d), "tokens nearly spent")
	}
}

// nearWall returns how long to pause when at most 1% of a limit remains.
// RateLimit's zero fields mean "not reported", but providers send limit,
// remaining and reset together, so a reported limit and reset with remaining
// 0 is read as a spent quota, not as a missing header.
// Providers report reset as the time until the bucket is full again, and
// refill continuously, so waiting for a twentieth of the limit to come back
// (linear refill) is enough; waiting for all of it would idle the pool.
func nearWall(limit, remaining int, reset time.Duration) time.Duration {
	if limit <= 0 || reset <= 0 || remaining > limit/100 {
		return 0
	}
	deficit := float64(limit - remaining)
	want := math.Max(1, float64(limit)/20)
	if want >= deficit {
		return reset
	}
	return time.Duration(float64(reset) * want / deficit)
}

func (p *pool) stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.st
	s.History = append([]LimitChange(nil), p.st.History...)
	s.Configured, s.Effective = p.configured, p.effective
	s.Workers, s.Live, s.Share = p.opts.Workers, p.workers, p.shareLocked()
	s.SharedDown = p.sharedDown
	s.Concurrency = p.limit
	s.MaxConcurrency = p.maxLimit
	s.Ceiling = p.ceiling
	s.LatencyBaseline = p.latBase
	s.InFlight = p.inFlight
	s.Queued = p.queue.Len()
	s.PausedUntil = p.pausedUntil
	return s
}
