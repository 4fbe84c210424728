package batch

import (
	"encoding/json"
	"testing"

	"github.com/impactbench/impactbench/internal/llm"
)

func TestSameOrigin(t *testing.T) {
	base := "https://api.anthropic.com"
	for u, want := range map[string]bool{
		"https://api.anthropic.com/v1/messages/batches/x/results": true,
		"https://API.anthropic.com/v1/x":                          true,
		"http://api.anthropic.com/v1/x":                           false, // never downgrade
		"https://evil.example/v1/x":                               false, // the key stays home
		"/v1/messages/batches/x/results":                          false,
	} {
		if got := sameOrigin(u, base); got != want {
			t.Errorf("sameOrigin(%q) = %v", u, got)
		}
	}
}

func TestAnthropicErrorBody(t *testing.T) {
	for raw, want := range map[string]int{
		`{"type":"error","error":{"type":"invalid_request_error","message":"x"}}`: 400,
		`{"type":"overloaded_error","message":"busy"}`:                            529,
		`{"type":"error","error":{"type":"something_new","message":"x"}}`:         500,
		`{}`: 500,
	} {
		status, body := anthropicErrorBody(json.RawMessage(raw))
		var env struct {
			Type  string `json:"type"`
			Error struct {
				Type string `json:"type"`
			} `json:"error"`
		}
		if status != want || json.Unmarshal(body, &env) != nil || env.Type != "error" || env.Error.Type == "" {
			t.Errorf("%s: status %d body %s", raw, status, body)
		}
	}
}

func TestRequestHash(t *testing.T) {
	a := llm.Request{Purpose: llm.PurposeJudge, Messages: []llm.Message{{Role: llm.RoleUser, Content: "x"}}, Meta: map[string]string{"k": "v"}}
	b := a
	b.Purpose, b.Meta = llm.PurposeUser, nil
	if requestHash(a) != requestHash(b) {
		t.Error("Purpose or Meta changes the hash: they never reach the model")
	}
	b.Seed = 1
	if requestHash(a) == requestHash(b) {
		t.Error("Seed does not change the hash")
	}
}
