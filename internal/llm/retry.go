package llm

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"
)

// Retry defaults. A benchmark run outlives short provider hiccups, so the
// budget is larger than the SDKs' own (2 retries, 8 s cap).
const (
	DefaultMaxRetries    = 4
	DefaultRetryBase     = 500 * time.Millisecond
	DefaultRetryMax      = 60 * time.Second
	DefaultMaxRetryAfter = 5 * time.Minute
)

// RetryPolicy is the one retry policy for every provider (the SDKs' own
// retries are switched off).
type RetryPolicy struct {
	// MaxRetries is the number of retries after the first attempt:
	// 0 means DefaultMaxRetries (5 attempts in all), negative means none.
	MaxRetries int
	// Base is the first backoff; each retry doubles it up to Max.
	Base time.Duration
	Max  time.Duration
	// MaxRetryAfter caps the server's wait hint: a longer hint (a daily quota
	// in disguise) fails the call with a clear message instead of sleeping.
	MaxRetryAfter time.Duration
	// Sleep waits d or until ctx is done (injectable so tests need not wait).
	Sleep func(ctx context.Context, d time.Duration) error
	// Rand returns a number in [0,1) for jitter; it must be safe for
	// concurrent use (the default, math/rand/v2's Float64, is).
	Rand func() float64
	// OnRetry, if set, is called before each wait, e.g. to slow a shared
	// rate limiter after a 429. attempt is the attempt that just failed (1-based).
	OnRetry func(attempt int, err error, wait time.Duration)
}

func (p RetryPolicy) withDefaults() RetryPolicy {
	switch {
	case p.MaxRetries == 0:
		p.MaxRetries = DefaultMaxRetries
	case p.MaxRetries < 0:
		p.MaxRetries = 0
	}
	if p.Base <= 0 {
		p.Base = DefaultRetryBase
	}
	if p.Max <= 0 {
		p.Max = DefaultRetryMax
	}
	if p.MaxRetryAfter <= 0 {
		p.MaxRetryAfter = DefaultMaxRetryAfter
	}
	if p.Sleep == nil {
		p.Sleep = sleepCtx
	}
	if p.Rand == nil {
		p.Rand = rand.Float64
	}
	return p
}

// backoff is the wait after failed attempt n (1-based): Base·2^(n-1) capped
// at Max, with ±25% jitter so workers that failed together do not retry together.
func (p RetryPolicy) backoff(n int) time.Duration {
	d := p.Base
	for i := 1; i < n && d < p.Max; i++ {
		d *= 2
	}
	d = min(d, p.Max)
	return time.Duration(float64(d) * (0.75 + 0.5*p.Rand()))
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// retryable says whether the retry loop tries again. Invalid JSON is left to
// CompleteJSON, which retries with the validation error shown to the model.
func retryable(k ErrorKind) bool {
	return k.Retryable() && k != KindInvalidJSON
}

// WithRetry wraps c with p. Usage of every attempt, including billed failed
// ones, is summed into the final Response.Usage or Error.Usage, and
// Usage.Requests counts every attempt. Errors that are not *Error are
// returned as they are (they are programming errors, not provider trouble).
func WithRetry(c Client, p RetryPolicy) Client {
	return &retryClient{next: c, p: p.withDefaults()}
}

type retryClient struct {
	next Client
	p    RetryPolicy
}

func (r *retryClient) Complete(ctx context.Context, req Request) (Response, error) {
	start := time.Now()
	var total Usage
	for attempt := 1; ; attempt++ {
		resp, err := r.next.Complete(ctx, req)
		if err == nil {
			total = total.Add(attemptUsage(resp.Usage))
			resp.Usage = total
			if attempt > 1 {
				// Wall time the caller waited, backoff included.
				resp.Latency = time.Since(start)
			}
			return resp, nil
		}
		var e *Error
		if !errors.As(err, &e) {
			return Response{}, err
		}
		total = total.Add(attemptUsage(e.Usage))
		out := *e
		out.Usage = total
		if ctx.Err() != nil || !retryable(e.Kind) {
			return Response{}, &out
		}
		if attempt > r.p.MaxRetries {
			out.Message = note(out.Message, fmt.Sprintf("gave up after %d attempts", attempt))
			return Response{}, &out
		}
		wait := r.p.backoff(attempt)
		if e.RetryAfter > 0 {
			if e.RetryAfter > r.p.MaxRetryAfter {
				out.Message = note(out.Message, fmt.Sprintf("server asked to wait %s before retrying, more than the %s limit", e.RetryAfter.Round(time.Second), r.p.MaxRetryAfter))
				if out.Hint == "" {
					out.Hint = "this looks like a quota that resets later (e.g. per day): wait, raise the limit, or use another key"
				}
				return Response{}, &out
			}
			if e.RetryAfter > wait {
				// Honour the hint, plus up to 10% so callers told the same
				// instant do not all come back at once.
				wait = e.RetryAfter + time.Duration(0.1*r.p.Rand()*float64(e.RetryAfter))
			}
		}
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < wait {
			out.Message = note(out.Message, fmt.Sprintf("not retried: waiting %s would pass the deadline", wait.Round(time.Millisecond)))
			return Response{}, &out
		}
		if r.p.OnRetry != nil {
			r.p.OnRetry(attempt, &out, wait)
		}
		if err := r.p.Sleep(ctx, wait); err != nil {
			out.Err = errors.Join(out.Err, err)
			out.Message = note(out.Message, "interrupted while waiting to retry")
			return Response{}, &out
		}
	}
}

// attemptUsage makes sure every attempt counts as a request, even one that
// failed before the provider could report usage.
func attemptUsage(u Usage) Usage {
	if u.Requests == 0 {
		u.Requests = 1
	}
	return u
}

func note(msg, n string) string {
	if msg == "" {
		return n
	}
	return msg + " (" + n + ")"
}

// WithTimeout limits each call to c (each attempt, when inside WithRetry) to
// d. A call cut off by this limit, while the caller's own context is still
// live, fails with KindTimeout, which WithRetry retries. d <= 0 disables it.
func WithTimeout(c Client, d time.Duration) Client {
	if d <= 0 {
		return c
	}
	return &timeoutClient{next: c, d: d}
}

type timeoutClient struct {
	next Client
	d    time.Duration
}

func (t *timeoutClient) Complete(ctx context.Context, req Request) (Response, error) {
	actx, cancel := context.WithTimeout(ctx, t.d)
	defer cancel()
	resp, err := t.next.Complete(actx, req)
	if err == nil || ctx.Err() != nil || !errors.Is(actx.Err(), context.DeadlineExceeded) {
		return resp, err
	}
	msg := fmt.Sprintf("no response within the per-call timeout of %s", t.d)
	var e *Error
	if errors.As(err, &e) {
		out := *e
		out.Kind = KindTimeout
		out.Message = msg
		return Response{}, &out
	}
	return Response{}, &Error{Kind: KindTimeout, Message: msg, Err: err}
}
