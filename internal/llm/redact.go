package llm

import (
	"context"
	"errors"
	"slices"
	"strings"
)

// MinSecretLen is the shortest secret WithRedaction removes: shorter
// values ("test", "1234") occur in ordinary text, and replacing them would
// mangle answers instead of protecting anything.
const MinSecretLen = 8

// redactedText replaces a secret found in model text or provider messages.
const redactedText = "[redacted]"

// WithRedaction returns c with every secret replaced by "[redacted]" in
// what it returns: the text of its answers and the message, raw text and
// hint of its errors. A model can be made to repeat what it saw, and a
// gateway can echo a request's headers: either way a configured key would
// otherwise reach conversations.json, the call store, report.html and
// exports, all of which get their model text from here. Secrets shorter
// than MinSecretLen are ignored; with none left, c is returned unchanged.
func WithRedaction(c Client, secrets []string) Client {
	r := NewRedactor(secrets)
	if r == nil {
		return c
	}
	return &redactClient{next: c, r: r}
}

// Redactor replaces a fixed set of secrets in text, in one pass.
type Redactor struct {
	rep *strings.Replacer
	min int // length of the shortest secret: shorter text holds none
}

// NewRedactor returns a Redactor for the secrets at least MinSecretLen
// long, or nil when there are none.
func NewRedactor(secrets []string) *Redactor {
	var keep []string
	for _, s := range secrets {
		if len(s) >= MinSecretLen && !slices.Contains(keep, s) {
			keep = append(keep, s)
		}
	}
	if len(keep) == 0 {
		return nil
	}
	// At one position the Replacer tries its pairs in order: longest first,
	// so a key that contains another is replaced whole.
	slices.SortStableFunc(keep, func(a, b string) int { return len(b) - len(a) })
	pairs := make([]string, 0, 2*len(keep))
	for _, s := range keep {
		pairs = append(pairs, s, redactedText)
	}
	return &Redactor{rep: strings.NewReplacer(pairs...), min: len(keep[len(keep)-1])}
}

// Replace returns s with every secret replaced.
func (r *Redactor) Replace(s string) string {
	if r == nil || len(s) < r.min {
		return s
	}
	return r.rep.Replace(s)
}

type redactClient struct {
	next Client
	r    *Redactor
}

func (w *redactClient) Complete(ctx context.Context, req Request) (Response, error) {
	resp, err := w.next.Complete(ctx, req)
	resp.Text = w.r.Replace(resp.Text)
	// "[redacted]" may be longer than what it replaced.
	if t, cut := BoundReply(resp.Text); cut {
		resp.Text, resp.Truncated = t, true
	}
	var e *Error
	if errors.As(err, &e) {
		e.Message = w.r.Replace(e.Message)
		e.Raw = w.r.Replace(e.Raw)
		e.Hint = w.r.Replace(e.Hint)
	}
	return resp, err
}
