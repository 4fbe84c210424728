// Package ratelimit keeps a benchmark run inside its providers' limits while
// driving each provider as close to those limits as it allows.
//
// Every provider+model+key combination is a pool. All clients wrapped with the
// same pool key share one limiter made of:
//
//   - an admission queue (by llm.Request.Priority, then FIFO; work-conserving:
//     a finished call frees its slot at once, there are no rounds);
//   - a concurrency limit found by AIMD: it backs off on 429s, on 529/503
//     overload answers and when calls get markedly slower than the pool's
//     baseline latency, and grows while calls succeed, latency holds and the
//     limit is actually used, never above Limits.MaxInFlight (see AIMD for
//     the parameters and why);
//   - continuously refilled token buckets for requests, combined tokens, input
//     tokens and output tokens, charged with an estimate before a call and
//     reconciled with the provider's Usage after it;
//   - a pool-wide pause: a 429 with Retry-After, or rate-limit headers saying
//     the quota is nearly spent, stop every caller of the pool, not only the
//     one that hit the wall.
//
// Limits left at zero are learned from the providers' rate-limit headers
// (llm.Response.RateLimit). The wrapper belongs below the retry loop so that
// it sees every attempt and every 429.
//
// Several processes on one key (shards of a study on a cluster) share its
// limits: with Options.Workers K each takes 1/K of them, configured or
// learned, or 1/n while only n of them run (Registry.FollowLive).
//
// Waits use the time package's timers and Options.Now (default time.Now), so
// tests run minutes of traffic instantly inside a testing/synctest bubble.
package ratelimit

import (
	"cmp"
	"context"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/impactbench/impactbench/internal/llm"
)

// Limits are one pool's provider limits. Zero means unlimited or unknown;
// unknown request and token limits are learned from response headers.
type Limits struct {
	// MaxInFlight caps concurrent calls (a server's slot count, a provider's
	// concurrency cap). The AIMD limit never exceeds it.
	MaxInFlight int
	// RPM is requests per minute.
	RPM int
	// TPM is input+output tokens per minute (OpenAI style). Calls are charged
	// max(input estimate, max_tokens) up front, as OpenAI does, and
	// input+output actually used afterwards.
	TPM int
	// ITPM is input tokens per minute (Anthropic style). Cached input reads
	// are refunded after the call because Anthropic does not count them.
	ITPM int
	// OTPM is output tokens per minute, charged max_tokens up front.
	OTPM int
	// Start is where the limit of a pool without MaxInFlight starts, when
	// the caller knows how many calls it means to send at once (a
	// configured phase concurrency: upstream sent that many from the
	// first call); 0 starts at Options.InitialConcurrency. Only the call
	// that creates the pool sets it.
	Start int
}

// Estimator predicts a request's input tokens and its output reservation.
type Estimator func(req llm.Request) (in, out int)

// DefaultMaxConcurrency is the AIMD ceiling of a pool without MaxInFlight:
// far above what a rate-limited key sustains at usual latencies, low enough
// that a provider without limits is not flooded.
const DefaultMaxConcurrency = 256

// DefaultInitialConcurrency is where a pool without max_concurrency
// starts (concurrency: auto); config.yaml's scaffold says so.
const DefaultInitialConcurrency = 32

// DefaultMaxTokens is the output reservation for a request with MaxTokens 0,
// matching the adapters' default cap.
const DefaultMaxTokens = 2048

// EstimateTokens is the default Estimator: about four bytes per token plus a
// small per-message framing overhead; output is MaxTokens (or
// DefaultMaxTokens). Over-estimates are harmless beyond a short delay because
// every charge is reconciled with the real usage.
func EstimateTokens(req llm.Request) (in, out int) {
	const perMessage, perRequest = 4, 3
	n := 0
	for _, m := range req.Messages {
		n += len(m.Content)
	}
	in = (n+3)/4 + perMessage*len(req.Messages) + perRequest
	out = req.MaxTokens
	if out <= 0 {
		out = DefaultMaxTokens
	}
	return in, out
}

// AIMD tunes the concurrency controller. Zero fields take the defaults.
//
// The controller is TCP's congestion control applied to calls in flight:
// slow start (doubling per clean window) until the first sign of
// congestion, then additive increase and multiplicative decrease. Three
// signs count as congestion: a 429, a 529/503 "overloaded" answer, and a
// window whose median latency exceeds LatencyFactor × the pool's baseline
// (the latency of the uncongested provider; the HyStart idea, which also
// ends slow start before the first loss). Each back-off remembers the level
// it happened at (the ceiling): growth goes quickly back to just below it
// and then past it only in probes, one per ProbeInterval, because a
// provider's token bucket answers an overshoot only after it has drained,
// so fast growth there would overshoot by many calls.
type AIMD struct {
	// Min is the floor of the limit (default 1).
	Min int
	// Decrease multiplies the calls in flight on a back-off (default 0.9).
	// A back-off counts only for a call sent after the previous one (calls
	// sent under the old limit cannot tell whether the new one is low
	// enough: TCP's one reduction per window), so a limit still too high
	// is cut again within a round trip; a gentle factor then costs little
	// and keeps the limit close to what the provider takes.
	Decrease float64
	// Increase is the additive step per clean, saturated window as a fraction
	// of the limit, at least +1 (default 0.05).
	Increase float64
	// Cooldown is how long the limit holds after a back-off before it may
	// grow again (default 5s); a 429's Retry-After extends it.
	Cooldown time.Duration
	// Saturation is the share of the limit that in-flight calls must have
	// reached during a window for it to count toward growth (default 0.8):
	// an unused limit says nothing about whether a higher one would work.
	Saturation float64
	// NoSlowStart disables doubling per clean window before the first
	// back-off.
	NoSlowStart bool
	// ProbeInterval is the time between two steps past the ceiling (the
	// level of the last back-off; default 5s). The first probe adds one
	// call, each probe that the provider takes doubles the next.
	ProbeInterval time.Duration
	// LatencyFactor is how many times the pool's baseline latency a
	// saturated window's median latency may reach before the pool backs off
	// (default 2; negative: latency is not a signal). The baseline follows
	// the windows' medians, quickly down and slowly up; when a back-off does
	// not bring latency down, the calls themselves got slower (longer
	// replies, another phase) and the baseline moves to the new level.
	LatencyFactor float64
}

// Options configure a Registry. Zero fields take the defaults.
type Options struct {
	// Now is the clock (default time.Now). Waits use time's timers, so tests
	// fake time with testing/synctest rather than with Now alone.
	Now func() time.Time
	// Logger receives limit changes and pauses (default: discard).
	Logger *slog.Logger
	// Estimator predicts token charges (default EstimateTokens).
	Estimator Estimator
	// InitialConcurrency is the starting limit of a pool without MaxInFlight
	// (default 32).
	InitialConcurrency int
	// MaxConcurrency caps AIMD growth of a pool without MaxInFlight
	// (default DefaultMaxConcurrency).
	MaxConcurrency int
	// AIMD tunes the concurrency controller.
	AIMD AIMD
	// RequestBurst is how much refill the request bucket holds (default
	// 1s): OpenAI enforces per-minute request limits in per-second quanta, so
	// bursting more than a second's worth invites 429s.
	RequestBurst time.Duration
	// TokenBurst is how much refill a token bucket holds (default 1m, like
	// the providers' own buckets). It must hold the max_tokens reservations
	// of every call in flight: with a one-second bucket, reserving 2048
	// output tokens against 90k OTPM would allow about one call in flight.
	TokenBurst time.Duration
	// LearnFraction is the share of a header-reported limit the pool adopts
	// (default 0.95), leaving headroom for clock skew and other clients.
	LearnFraction float64
	// Workers is how many processes run at once against the same provider
	// limits (shards of a study on a cluster: Kubernetes' parallelism,
	// Slurm's %N; default 1). Each pool of this process takes 1/Workers of
	// every limit, configured or learned from headers: requests and tokens
	// per minute, max_concurrency (rounded down, at least 1) and the
	// concurrency an auto pool starts at and may grow to (rounded up).
	// Headers report what the whole organisation has left, so the pause at
	// ≤ 1 % remaining and the cuts on 429 still see every worker's calls.
	// While fewer run, Registry.SetLive (FollowLive) divides by fewer.
	Workers int
	// Shared, when set, holds every pool's request and token buckets for
	// all workers at once (see SharedBuckets); the local buckets, at
	// 1/Workers of the limits, take over while it fails.
	Shared SharedBuckets
	// SharedRetry is how long a pool keeps to its local share after Shared
	// failed before it tries again (default DefaultSharedRetry).
	SharedRetry time.Duration
}

func (o Options) withDefaults() Options {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Estimator == nil {
		o.Estimator = EstimateTokens
	}
	if o.Workers <= 0 {
		o.Workers = 1
	}
	if o.SharedRetry <= 0 {
		o.SharedRetry = DefaultSharedRetry
	}
	if o.InitialConcurrency <= 0 {
		o.InitialConcurrency = DefaultInitialConcurrency
	}
	if o.MaxConcurrency <= 0 {
		o.MaxConcurrency = DefaultMaxConcurrency
	}
	o.MaxConcurrency = max(o.MaxConcurrency, o.InitialConcurrency)
	a := &o.AIMD
	if a.Min <= 0 {
		a.Min = 1
	}
	if a.Decrease <= 0 || a.Decrease >= 1 {
		a.Decrease = 0.9
	}
	if a.Increase <= 0 {
		a.Increase = 0.05
	}
	if a.Cooldown <= 0 {
		a.Cooldown = 5 * time.Second
	}
	if a.Saturation <= 0 || a.Saturation > 1 {
		a.Saturation = 0.8
	}
	if a.ProbeInterval <= 0 {
		a.ProbeInterval = 5 * time.Second
	}
	if a.LatencyFactor == 0 || (a.LatencyFactor > 0 && a.LatencyFactor <= 1) {
		a.LatencyFactor = 2 // a factor ≤ 1 would back off on every window
	}
	if o.RequestBurst <= 0 {
		o.RequestBurst = time.Second
	}
	if o.TokenBurst <= 0 {
		o.TokenBurst = time.Minute
	}
	if o.LearnFraction <= 0 || o.LearnFraction > 1 {
		o.LearnFraction = 0.95
	}
	return o
}

// Registry holds one limiter per pool key. It is safe for concurrent use.
type Registry struct {
	opts  Options
	mu    sync.Mutex
	pools map[string]*pool
	live  int // the workers the limits are divided by now (SetLive)
}

// NewRegistry returns an empty Registry.
func NewRegistry(opts Options) *Registry {
	o := opts.withDefaults()
	return &Registry{opts: o, pools: make(map[string]*pool), live: o.Workers}
}

// Wrap returns c limited by the pool named key. The caller builds the key from
// whatever shares provider limits (provider, model or model family, API key);
// every client wrapped with the same key shares one limiter. When clients of
// one pool bring different limits, the strictest non-zero value of each wins.
func (r *Registry) Wrap(key string, lim Limits, c llm.Client) llm.Client {
	r.mu.Lock()
	p, ok := r.pools[key]
	if !ok {
		p = newPool(key, lim, r.opts)
		r.pools[key] = p
	}
	live := r.live
	r.mu.Unlock()
	if !ok && live != r.opts.Workers {
		p.setLive(live)
	}
	if ok {
		p.tighten(lim)
	}
	return &limitedClient{p: p, next: c, estimate: r.opts.Estimator}
}

// Stats returns a snapshot of every pool, sorted by key.
func (r *Registry) Stats() []Stats {
	r.mu.Lock()
	ps := make([]*pool, 0, len(r.pools))
	for _, p := range r.pools {
		ps = append(ps, p)
	}
	r.mu.Unlock()
	out := make([]Stats, 0, len(ps))
	for _, p := range ps {
		out = append(out, p.stats())
	}
	slices.SortFunc(out, func(a, b Stats) int { return cmp.Compare(a.Pool, b.Pool) })
	return out
}

// PoolStats returns a snapshot of one pool.
func (r *Registry) PoolStats(key string) (Stats, bool) {
	r.mu.Lock()
	p, ok := r.pools[key]
	r.mu.Unlock()
	if !ok {
		return Stats{}, false
	}
	return p.stats(), true
}

type limitedClient struct {
	p        *pool
	next     llm.Client
	estimate Estimator
}

func (l *limitedClient) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	in, out := l.estimate(req)
	t, err := l.p.acquire(ctx, in, out, req.Priority)
	if err != nil {
		return llm.Response{}, err
	}
	resp, err := l.next.Complete(ctx, req)
	l.p.release(t, &resp, err)
	return resp, err
}
