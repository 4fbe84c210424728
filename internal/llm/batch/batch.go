// Package batch sends independent chat requests through the providers' batch
// APIs (OpenAI Batch, Anthropic Message Batches), which cost 50% of the
// real-time price and answer within 24 hours, usually within one.
//
// It has three layers:
//
//   - Provider: one provider's batch endpoints (submit, poll, fetch results),
//     built with NewOpenAI, NewAnthropic or ForModel. Request bodies and
//     answers go through the real-time adapters' own code (see loopback.go),
//     so a batched request is byte for byte the request the real-time path
//     would send, and its answer (text, usage, error kinds and hints) is
//     decoded exactly as a real-time answer. Costs are the batch price.
//   - Run: the resumable driver. It splits items into batches within the
//     provider's limits, records every batch in a state file right after it
//     is created, polls, joins the unordered results by custom_id, resubmits
//     items that failed for transient reasons and returns one Result per
//     item. A process killed at any point and restarted with the same state
//     file and items polls the batches already created instead of paying for
//     them again.
//   - Collector and Replay: glue for a stage that was written for real-time
//     calls (record the requests it would make, then answer them from batch
//     results); see replay.go.
//
// The fakes in the fakebatch sub-package speak both batch APIs in-process.
package batch

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"

	"github.com/impactbench/impactbench/internal/llm"
)

// Item is one request of a batch. CustomID identifies it in the provider's
// results; it must be unique per request (two Items with the same CustomID
// must carry the same request) and valid for the provider (Anthropic:
// ^[a-zA-Z0-9_-]{1,64}$, which a hex SHA-256 such as callstore.Key fits).
type Item struct {
	CustomID string
	Req      llm.Request
}

// Result is the outcome of one Item. Exactly one of Resp (Err == nil) and
// Err is meaningful. Err is an *llm.Error for requests that errored, expired
// or were cancelled; its Kind says whether trying again can help
// (llm.IsRetryable).
type Result struct {
	CustomID string
	Resp     llm.Response
	Err      error
}

// State is a batch's life-cycle state, common to all providers.
type State string

const (
	StateRunning   State = "running"   // validating, queued, in progress, finalizing, cancelling
	StateDone      State = "done"      // ended normally: results for every request
	StateFailed    State = "failed"    // rejected as a whole (OpenAI validation): nothing ran
	StateExpired   State = "expired"   // the 24 h window ended: some requests did not run
	StateCancelled State = "cancelled" // cancelled: some requests did not run
)

// Finished reports whether the batch will not change any more.
func (s State) Finished() bool {
	switch s {
	case StateDone, StateFailed, StateExpired, StateCancelled:
		return true
	}
	return false
}

// Counts tallies a batch's requests. Providers report them differently
// (Anthropic only once the batch ends), so treat them as progress hints.
type Counts struct {
	Total      int `json:"total"`
	Succeeded  int `json:"succeeded"`
	Errored    int `json:"errored"` // errored, expired or cancelled
	Processing int `json:"processing"`
}

// Status is what Poll learns about a batch.
type Status struct {
	State State
	// Raw is the provider's own status word ("in_progress", "finalizing", "ended"…).
	Raw    string
	Counts Counts
	// Failure explains a StateFailed batch; its Kind says whether submitting
	// the same requests again can help (e.g. OpenAI's token_limit_exceeded
	// is a rate limit, a malformed file is a bad request).
	Failure *llm.Error
	// LineErrors are the failures of particular requests of a failed batch,
	// keyed by 1-based position in the submitted items.
	LineErrors map[int]*llm.Error
}

// Provider is one provider's batch API for one model. Implementations must
// keep the order of the submitted items (LineErrors refer to it) and need not
// be safe for concurrent use by several Runs on the same batches.
type Provider interface {
	// Submit creates one batch of items and returns its id. The items fit
	// the provider's limits (Run splits them).
	Submit(ctx context.Context, items []Item) (batchID string, err error)
	// Poll reports the batch's state.
	Poll(ctx context.Context, batchID string) (Status, error)
	// Results returns the results of a finished batch, in any order, one per
	// custom_id the provider reported (duplicates and unknown ids are
	// possible; Run ignores them safely).
	Results(ctx context.Context, batchID string) ([]Result, error)
}

// Limits bound one batch.
type Limits struct {
	MaxRequests int   // requests per batch
	MaxBytes    int64 // encoded size of one batch (JSONL file or request body)
}

// Provider limits as published (§1.9 of the provider notes). Run fills a
// batch to 95% of MaxBytes, like Inspect, to stay clear of rounding and
// envelope overhead.
var (
	OpenAILimits    = Limits{MaxRequests: 50_000, MaxBytes: 200_000_000}
	AnthropicLimits = Limits{MaxRequests: 100_000, MaxBytes: 256_000_000}
)

// Planner is implemented by providers that know their limits and can size
// items before submitting them. Run uses it to split batches; without it
// only Options.MaxRequests / Options.MaxBytes apply (MaxBytes unmeasured).
type Planner interface {
	// Identity names the endpoint and model (never a key); it is written to
	// the state file so that a state file is never resumed against another
	// provider or model.
	Identity() string
	Limits() Limits
	// ItemSize encodes it as it would be submitted and returns its size in
	// bytes. An error means the item cannot be submitted at all (invalid
	// custom_id, a body the adapter refuses to build); Run reports it as
	// that item's result and does not submit it.
	ItemSize(it Item) (int64, error)
}

// requestHash fingerprints everything about a request that reaches the
// model (not Purpose or Meta), so that a state file never answers a changed
// request with the result of the old one.
func requestHash(r llm.Request) string {
	h := sha256.New()
	_ = json.NewEncoder(h).Encode(struct {
		Messages    []llm.Message  `json:"m"`
		MaxTokens   int            `json:"mt"`
		Temperature *float64       `json:"t,omitempty"`
		JSON        bool           `json:"j"`
		Schema      map[string]any `json:"s,omitempty"`
		SchemaName  string         `json:"sn,omitempty"`
		Seed        uint64         `json:"seed"`
		Cache       llm.CachePlan  `json:"ch,omitzero"`
	}{r.Messages, r.MaxTokens, r.Temperature, r.JSON, r.Schema, r.SchemaName, r.Seed, r.Cache}) // hash.Hash never fails to write
	return hex.EncodeToString(h.Sum(nil))[:24]
}

// itemError builds the *llm.Error of one request.
func itemError(provider, model string, kind llm.ErrorKind, code, msg string) *llm.Error {
	return &llm.Error{Kind: kind, Provider: provider, Model: model, Code: code, Message: msg}
}

// errNoBody is returned when an adapter refused to build a request body.
var errNoBody = errors.New("the adapter built no request body")

// pricing fills Usage.Cost at the batch price (half the real-time price).
type pricing struct {
	price llm.Price
	known bool
}

func (p pricing) fill(u llm.Usage) llm.Usage {
	u.Cost, u.CostKnown, u.CacheSaving = 0, p.known, 0
	if p.known {
		u.Cost = p.price.Cost(u, true)
		u.CacheSaving = p.price.CacheSaving(u, true)
	}
	return u
}

// apply prices a result's usage, on success and on billed errors alike.
func (p pricing) apply(r Result) Result {
	if r.Err == nil {
		r.Resp.Usage = p.fill(r.Resp.Usage)
		return r
	}
	var e *llm.Error
	if errors.As(r.Err, &e) && e.Usage.Requests > 0 {
		cp := *e
		cp.Usage = p.fill(e.Usage)
		r.Err = &cp
	}
	return r
}
