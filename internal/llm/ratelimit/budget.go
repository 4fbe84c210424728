package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"

	"github.com/impactbench/impactbench/internal/llm"
)

// Budget is a spending ceiling shared by concurrent calls. Every call reserves
// its estimated cost before it is made and settles the actual cost after, so
// the ceiling can only be overshot by the estimation error of the calls in
// flight at the moment it is reached, never by a call started after it.
type Budget struct {
	mu       sync.Mutex
	max      float64
	spent    float64
	reserved float64
	inFlight int
	refused  bool
}

// NewBudget returns a Budget of maxUSD. maxUSD <= 0 means no ceiling (Reserve
// never refuses, spending is still counted).
func NewBudget(maxUSD float64) *Budget {
	return &Budget{max: maxUSD}
}

// Reserve sets aside estimate dollars for one call. It fails with an error
// wrapping llm.ErrBudgetExceeded when spent + reserved + estimate would pass
// the ceiling. release settles the call with its actual cost; it must be
// called exactly once (later calls are ignored). On error release is a no-op.
func (b *Budget) Reserve(estimate float64) (release func(actual float64), err error) {
	estimate = nonNegative(estimate)
	b.mu.Lock()
	if b.max > 0 && b.spent+b.reserved+estimate > b.max {
		spent, reserved := b.spent, b.reserved
		b.refused = true
		b.mu.Unlock()
		return func(float64) {}, fmt.Errorf("%w: $%.4f spent + $%.4f in flight + $%.4f for this call > $%.4f",
			llm.ErrBudgetExceeded, spent, reserved, estimate, b.max)
	}
	b.reserved += estimate
	b.inFlight++
	b.mu.Unlock()
	var once sync.Once
	return func(actual float64) {
		once.Do(func() {
			b.mu.Lock()
			defer b.mu.Unlock()
			b.inFlight--
			b.reserved -= estimate
			if b.inFlight == 0 {
				b.reserved = 0 // drop float drift instead of letting it accumulate
			}
			b.spent += nonNegative(actual)
		})
	}, nil
}

// nonNegative maps negative and NaN amounts to 0 and caps +Inf, so that
// subtracting a released reservation can never produce Inf−Inf = NaN.
func nonNegative(x float64) float64 {
	switch {
	case !(x > 0):
		return 0
	case math.IsInf(x, 1):
		return math.MaxFloat64 / 4
	}
	return x
}

// Max is the ceiling in dollars (0: none).
func (b *Budget) Max() float64 { return b.max }

// Exhausted reports whether the ceiling has stopped at least one call, i.e.
// whether the run was cut short by the budget.
func (b *Budget) Exhausted() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.refused
}

// Spent is the settled cost so far.
func (b *Budget) Spent() float64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.spent
}

// Reserved is the estimated cost of the calls in flight.
func (b *Budget) Reserved() float64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.reserved
}

// Remaining is what new calls may still reserve: max − spent − reserved, at
// least 0; +Inf without a ceiling.
func (b *Budget) Remaining() float64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.max <= 0 {
		return math.Inf(1)
	}
	return math.Max(0, b.max-b.spent-b.reserved)
}

// WrapBudget returns c behind b: each call reserves price(req) and settles
// with the cost the response reports. Responses served from the local store
// (Cached) cost nothing now. Place it where every paid attempt passes through
// it but cache hits do not need a reservation, e.g. below the cache and above
// or below the retry loop (Usage covers all attempts either way).
func WrapBudget(b *Budget, price func(req llm.Request) float64, c llm.Client) llm.Client {
	return llm.ClientFunc(func(ctx context.Context, req llm.Request) (llm.Response, error) {
		est := 0.0
		if price != nil {
			est = price(req)
		}
		release, err := b.Reserve(est)
		if err != nil {
			return llm.Response{}, err
		}
		resp, err := c.Complete(ctx, req)
		release(settledCost(est, resp, err))
		return resp, err
	})
}

// settledCost is the actual cost of one call for the budget.
func settledCost(estimate float64, resp llm.Response, err error) float64 {
	var u llm.Usage
	switch e := (*llm.Error)(nil); {
	case err == nil && resp.Cached:
		return 0
	case err == nil:
		u = resp.Usage
		if u == (llm.Usage{}) {
			return estimate // an adapter that reports nothing: assume the estimate
		}
	case errors.As(err, &e):
		u = e.Usage // failed attempts count only if the provider billed them
	default:
		return 0 // never reached the provider (budget, cancellation, …)
	}
	if !u.CostKnown && (u.InputTokens > 0 || u.OutputTokens > 0) {
		// Tokens were billed at a price we do not know: the estimate is the
		// best bound we have, and under-counting would let the ceiling slip.
		return math.Max(u.Cost, estimate)
	}
	return u.Cost
}
