package llm

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/impactbench/impactbench/internal/fault"
	"github.com/impactbench/impactbench/internal/sanitize"
)

// ErrorKind classifies a failed call so the retry loop, the scheduler and the
// CLI can act on it without knowing the provider.
type ErrorKind string

const (
	KindRateLimit   ErrorKind = "rate_limit"   // 429 that clears by waiting
	KindOverloaded  ErrorKind = "overloaded"   // 529 / 503
	KindServer      ErrorKind = "server"       // other 5xx, 408, 409
	KindConnection  ErrorKind = "connection"   // no HTTP response
	KindTimeout     ErrorKind = "timeout"      // per-call timeout hit
	KindAuth        ErrorKind = "auth"         // 401 / 403
	KindBadRequest  ErrorKind = "bad_request"  // 400 / 404 / 413 / 422
	KindQuota       ErrorKind = "quota"        // insufficient_quota, 402: billing, never retried
	KindInvalidJSON ErrorKind = "invalid_json" // structured output failed validation
	KindEmpty       ErrorKind = "empty"        // null/empty content (content filter, refusal)
	KindConfig      ErrorKind = "config"       // missing env var, unknown source…
)

// Retryable reports whether waiting and trying again can help.
func (k ErrorKind) Retryable() bool {
	switch k {
	case KindRateLimit, KindOverloaded, KindServer, KindConnection, KindTimeout, KindInvalidJSON, KindEmpty:
		return true
	}
	return false
}

// Error is the one error type adapters return. Its message never contains an
// API key or a request body.
type Error struct {
	Kind       ErrorKind
	StatusCode int    // 0 when there was no HTTP response
	Provider   string // "openai", "anthropic", …
	Model      string
	Code       string // provider error code/type, e.g. insufficient_quota
	Message    string // provider's message (already free of secrets)
	RequestID  string
	// RetryAfter is the server's hint (retry-after-ms / Retry-After / RetryInfo); 0 if none.
	RetryAfter time.Duration
	// Hint tells the user what to fix for non-retryable errors.
	Hint string
	// Raw keeps the model's raw text for KindInvalidJSON after the last attempt.
	Raw string
	// Usage of the failed attempt(s), if the provider billed them.
	Usage Usage
	Err   error
}

func (e *Error) Error() string {
	// Who answered, when known: CompleteJSON's invalid_json error knows
	// no provider (its caller names the model), and an empty pair would
	// read "judge:  : invalid_json" in scores.json's null_reason.
	var who []string
	for _, w := range []string{e.Provider, e.Model} {
		if w != "" {
			who = append(who, w)
		}
	}
	var head []string
	if len(who) > 0 {
		head = append(head, strings.Join(who, " "))
	}
	if e.StatusCode != 0 {
		head = append(head, fmt.Sprintf("HTTP %d", e.StatusCode))
	}
	s := strings.Join(append(head, string(e.Kind)), ": ")
	if e.Code != "" {
		s += " (" + e.Code + ")"
	}
	if e.Message != "" {
		s += ": " + e.Message
	} else if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	if e.RequestID != "" {
		s += " [request " + e.RequestID + "]"
	}
	if e.Hint != "" {
		s += " — " + e.Hint
	}
	// The last line of defence for URLs: an SDK error or a hint may carry
	// the configured base_url, credentials and all.
	return sanitize.URLsIn(s)
}

func (e *Error) Unwrap() error { return e.Err }

// KindOf returns the kind of err, or "" if it is not an *Error.
func KindOf(err error) ErrorKind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return ""
}

// IsRetryable reports whether err is worth retrying.
func IsRetryable(err error) bool {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind.Retryable()
	}
	return false
}

// ErrBudgetExceeded is returned when a call was not made because it would
// push spending past the configured ceiling.
var ErrBudgetExceeded = errors.New("budget ceiling reached: call not made")

// FaultKind is what a person does about a provider error: fix config.yaml
// (a missing variable, an unknown source), else see the provider.
func (e *Error) FaultKind() fault.Kind {
	if e.Kind == KindConfig {
		return fault.Config
	}
	return fault.Provider
}
