package llm

import (
	"context"
	"errors"
	"testing"
)

// TestErrorMessageNamesOnlyWhatItKnows: an Error without a provider or a
// model (CompleteJSON's invalid_json after its last attempt) starts with
// its kind, not with an empty "  : " that callers then print inside
// "judge gpt-5.4-mini: judge:  : invalid_json" (scores.json's null_reason).
func TestErrorMessageNamesOnlyWhatItKnows(t *testing.T) {
	for _, tt := range []struct {
		err  *Error
		want string
	}{
		{&Error{Kind: KindInvalidJSON, Message: "no valid JSON"}, "invalid_json: no valid JSON"},
		{&Error{Kind: KindRateLimit, Provider: "openai", Model: "gpt-4o", StatusCode: 429, Message: "slow down"}, "openai gpt-4o: HTTP 429: rate_limit: slow down"},
		{&Error{Kind: KindServer, Model: "gpt-4o", StatusCode: 500}, "gpt-4o: HTTP 500: server"},
		{&Error{Kind: KindServer, StatusCode: 500}, "HTTP 500: server"},
	} {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
	}
	// The error CompleteJSON returns once every attempt is invalid.
	c := ClientFunc(func(context.Context, Request) (Response, error) { return Response{Text: `{"present": tr`}, nil })
	var out struct {
		Present bool `json:"present"`
	}
	_, err := CompleteJSON(context.Background(), c, Request{}, &out, JSONOptions{Attempts: 2})
	var le *Error
	if !errors.As(err, &le) || le.Kind != KindInvalidJSON {
		t.Fatalf("CompleteJSON: %v, want an invalid_json *Error", err)
	}
	if got := err.Error(); len(got) < 13 || got[:13] != "invalid_json:" {
		t.Errorf("CompleteJSON's error %q does not start with its kind", got)
	}
}
