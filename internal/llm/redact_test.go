package llm

import (
	"context"
	"errors"
	"strings"
	"testing"
)

func TestRedactor(t *testing.T) {
	if NewRedactor([]string{"short", ""}) != nil {
		t.Error("secrets under MinSecretLen made a redactor")
	}
	r := NewRedactor([]string{"key-12345678", "key-12345678-long-part"})
	if got := r.Replace("a key-12345678-long-part and key-12345678."); got != "a [redacted] and [redacted]." {
		t.Errorf("Replace = %q: a key containing another must go whole", got)
	}
	var nilR *Redactor
	if nilR.Replace("x") != "x" {
		t.Error("a nil redactor changed text")
	}
}

// TestWithRedactionCoversErrors: the message, raw answer and hint of a
// failed call lose the secrets too, and a reply grown past MaxReplyBytes
// by the replacement is bounded again.
func TestWithRedactionCoversErrors(t *testing.T) {
	const key = "sk-live-0123456789"
	fail := ClientFunc(func(context.Context, Request) (Response, error) {
		return Response{}, &Error{Kind: KindInvalidJSON, Message: "bad " + key, Raw: `{"k":"` + key + `"`, Hint: "key " + key}
	})
	_, err := WithRedaction(fail, []string{key}).Complete(context.Background(), Request{})
	var e *Error
	if !errors.As(err, &e) || strings.Contains(e.Message+e.Raw+e.Hint+err.Error(), key) {
		t.Errorf("error kept the key: %+v", e)
	}
	secret := strings.Repeat("z", MinSecretLen)
	grow := ClientFunc(func(context.Context, Request) (Response, error) {
		return Response{Text: strings.Repeat(secret, MaxReplyBytes/MinSecretLen)}, nil
	})
	resp, err := WithRedaction(grow, []string{secret}).Complete(context.Background(), Request{})
	if err != nil || ReplyCost(resp.Text) > MaxReplyBytes || !resp.Truncated {
		t.Errorf("a reply grown by redaction: %d bytes, truncated %v, %v", len(resp.Text), resp.Truncated, err)
	}
}
