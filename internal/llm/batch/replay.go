package batch

import (
	"context"
	"sync"

	"github.com/impactbench/impactbench/internal/llm"
)

// A stage written for real-time calls (build a request, call a Client,
// validate, maybe retry) can use batch pricing in two passes:
//
//  1. Run the stage with a Collector as its client: it records each request
//     and answers with a placeholder, so the stage runs to the end and every
//     request it would make (every judge of a panel, say) is recorded. Throw
//     the stage's output away.
//  2. batch.Run the collected items, then run the stage again with
//     Replay(results, key, realtime) as its client: each request is answered
//     with its batch result, and whatever the batch did not answer (a
//     failed item, a validation retry with a new prompt) goes to the
//     real-time client.
//
// The key function must be the same in both passes; callstore.Key with the
// model's identity is the natural choice (64 hex characters, valid as an
// Anthropic custom_id, and it changes whenever the request does).

// Collector is an llm.Client that records requests instead of sending them.
// Safe for concurrent use.
type Collector struct {
	key    func(llm.Request) string
	answer string

	mu    sync.Mutex
	items []Item
	seen  map[string]bool
}

// NewCollector records requests under key(req) and answers each with text
// answer (which must satisfy the stage, e.g. a valid judge JSON object).
func NewCollector(key func(llm.Request) string, answer string) *Collector {
	return &Collector{key: key, answer: answer, seen: map[string]bool{}}
}

// Complete implements llm.Client: it records req and returns the placeholder
// (no usage, no cost).
func (c *Collector) Complete(_ context.Context, req llm.Request) (llm.Response, error) {
	k := c.key(req)
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.seen[k] {
		c.seen[k] = true
		c.items = append(c.items, Item{CustomID: k, Req: req})
	}
	return llm.Response{Text: c.answer}, nil
}

// Items returns the distinct requests recorded so far, in first-seen order.
func (c *Collector) Items() []Item {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Item(nil), c.items...)
}

// Replay returns an llm.Client that answers each request whose key(req) has
// a successful result with that result's response, once: the response is
// fresh (Cached false) and its Usage.Cost is the batch price, so put Replay
// inside the call store (which then stores it) and outside any cost layer
// (which would re-price it at the real-time rate). Every other request goes
// to fallback; with a nil fallback it gets the item's batch error, or a
// KindConfig error for a request that was not in the batch.
func Replay(results []Result, key func(llm.Request) string, fallback llm.Client) llm.Client {
	m := make(map[string]Result, len(results))
	for _, r := range results {
		if prev, ok := m[r.CustomID]; ok && prev.Err == nil {
			continue
		}
		m[r.CustomID] = r
	}
	return &replay{results: m, key: key, fallback: fallback}
}

type replay struct {
	key      func(llm.Request) string
	fallback llm.Client

	mu      sync.Mutex
	results map[string]Result
}

func (r *replay) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	k := r.key(req)
	r.mu.Lock()
	res, ok := r.results[k]
	if ok && res.Err == nil {
		delete(r.results, k) // served once: a repeat is paid for where it is made
	}
	r.mu.Unlock()
	if ok && res.Err == nil {
		resp := res.Resp
		resp.Cached = false
		return resp, nil
	}
	if r.fallback != nil {
		return r.fallback.Complete(ctx, req)
	}
	if ok {
		return llm.Response{}, res.Err
	}
	return llm.Response{}, &llm.Error{Kind: llm.KindConfig, Message: "request " + k + " was not in the batch, and there is no real-time client to send it to"}
}
