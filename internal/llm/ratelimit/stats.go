package ratelimit

import "time"

// Stats is a snapshot of one pool, for progress display and the run record.
type Stats struct {
	Pool string
	// Configured are the limits the pool was built with; Effective adds what
	// response headers taught (learned or lowered limits).
	Configured, Effective Limits
	// Workers is Options.Workers; Live the workers its share is divided
	// by now (Workers, or fewer while fewer run: Registry.SetLive); Share
	// is this worker's part of Effective, what its buckets and cap run at
	// (Effective when Live is 1).
	Workers int
	Live    int
	Share   Limits
	// Concurrency is the current AIMD limit (the learned one); History how
	// it got there. MaxConcurrency is the ceiling it may grow to (the
	// configured max_concurrency, or Options.MaxConcurrency).
	Concurrency    int
	MaxConcurrency int
	History        []LimitChange
	// BackOffs counts cuts of the limit (429, overloaded, latency).
	BackOffs int64
	// Ceiling is the number of calls in flight at the last back-off (or
	// just above the last probe): the level growth approaches carefully.
	// 0 until the first back-off.
	Ceiling int
	// LatencyBaseline is the pool's uncongested latency as the controller
	// sees it (0 until a window has measured it).
	LatencyBaseline time.Duration
	// HistoryDropped counts old History entries discarded to bound memory.
	HistoryDropped int

	InFlight     int
	PeakInFlight int
	Queued       int

	Calls       int64 // calls admitted
	Succeeded   int64
	RateLimited int64 // 429s seen
	Overloaded  int64 // 5xx, overloaded, timeouts, connection errors
	// Waited counts calls that queued; WaitTotal and WaitMax time they spent.
	Waited    int64
	WaitTotal time.Duration
	WaitMax   time.Duration
	// SharedDown: the shared buckets (Options.Shared) failed and the pool
	// keeps to its local share until SharedFailures stop; SharedFailures
	// counts the failed requests to them.
	SharedDown     bool
	SharedFailures int64
	// Pauses counts pool-wide pauses (Retry-After, exhausted quota headers).
	Pauses      int64
	PausedUntil time.Time

	// Actual token usage reported by the calls.
	InputTokens  int64
	OutputTokens int64
}

// LimitChange is one step of the concurrency limit.
type LimitChange struct {
	At     time.Time
	Limit  int
	Reason string // "initial", "429", "overloaded", "latency", "slow start", "increase", "probe", "config"
}

// historyCap bounds LimitHistory; a long run adjusts at most once per window,
// and the recent past is what explains the current limit.
const historyCap = 1000
