package fakeprovider_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/impactbench/impactbench/internal/llm"
	"github.com/impactbench/impactbench/internal/llm/ratelimit/fakeprovider"
)

func TestParseRequest(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		want       fakeprovider.Request
		err        string
	}{
		{name: "string content", body: `{"model":"m","messages":[{"role":"system","content":"be \"brief\"\n"},{"role":"user","content":"hi \u00e9"}],"max_tokens":7}`,
			want: fakeprovider.Request{Model: "m", Messages: []llm.Message{{Role: "system", Content: "be \"brief\"\n"}, {Role: "user", Content: "hi é"}}, MaxTokens: 7}},
		{name: "parts", body: `{"model":"m","messages":[{"content":[{"type":"text","text":"a"},{"type":"text","text":"b"}],"role":"user"}]}`,
			want: fakeprovider.Request{Model: "m", Messages: []llm.Message{{Role: "user", Content: "ab"}}}},
		{name: "null and missing content", body: `{"messages":[{"role":"assistant","content":null},{"role":"user"}]}`,
			want: fakeprovider.Request{Messages: []llm.Message{{Role: "assistant"}, {Role: "user"}}}},
		{name: "max_completion_tokens wins", body: `{"model":"m","messages":[],"max_tokens":9,"max_completion_tokens":0}`,
			want: fakeprovider.Request{Model: "m"}},
		{name: "null max_completion_tokens", body: `{"model":"m","max_completion_tokens":null,"max_tokens":9}`,
			want: fakeprovider.Request{Model: "m", MaxTokens: 9}},
		{name: "invalid JSON", body: `{"model":"m","messages":[`, err: "invalid JSON"},
		{name: "not an object", body: `[1]`, err: "not a JSON object"},
		{name: "messages not an array", body: `{"model":"m","messages":{}}`, err: "'messages' is not an array"},
		{name: "content a number", body: `{"model":"m","messages":[{"role":"user","content":"ok"},{"role":"user","content":3}]}`, err: "messages[1]: content is neither"},
		{name: "part not an object", body: `{"model":"m","messages":[{"role":"user","content":["a"]}]}`, err: "messages[0]: content is neither"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := fakeprovider.ParseRequest([]byte(tc.body))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// The one-pass reader counts what encoding/json decodes: the token counts
// (and so every measured bill) do not depend on which reads the body.
func TestParseRequestMatchesEncodingJSON(t *testing.T) {
	contents := []string{"plain", "line\nbreaks\tand \"quotes\"", "unicode: naïve 日本語 \U0001F600", `back\slash </script> & <b>`, strings.Repeat("tok ", 500), ""}
	for _, c := range contents {
		body, err := json.Marshal(map[string]any{"model": "x", "messages": []map[string]any{{"role": "user", "content": c}}})
		if err != nil {
			t.Fatal(err)
		}
		got, err := fakeprovider.ParseRequest(body)
		if err != nil {
			t.Fatal(err)
		}
		var want struct {
			Messages []struct{ Content string } `json:"messages"`
		}
		if err := json.Unmarshal(body, &want); err != nil {
			t.Fatal(err)
		}
		if got.Messages[0].Content != want.Messages[0].Content {
			t.Errorf("%q: got %q", c, got.Messages[0].Content)
		}
		if a, b := fakeprovider.CountTokens(got.Messages), fakeprovider.CountTokens([]llm.Message{{Content: want.Messages[0].Content}}); a != b {
			t.Errorf("%q: %d tokens, want %d", c, a, b)
		}
	}
}

func FuzzParseRequest(f *testing.F) {
	f.Add([]byte(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`))
	f.Add([]byte(`{"messages":[{"content":[{"text":"a"}]}],"max_tokens":3}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := fakeprovider.ParseRequest(body)
		if err != nil {
			return
		}
		// Whatever it accepts is JSON encoding/json accepts too.
		if !json.Valid(body) {
			t.Fatalf("accepted invalid JSON %q as %+v", body, req)
		}
	})
}
