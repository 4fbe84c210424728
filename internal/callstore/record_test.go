package callstore

import (
	"bytes"
	"encoding/json"
	"testing"
)

// A result json.Marshal made is stored in exactly the bytes Marshal of the
// whole record gave: segment files written before and after the shortcut
// are alike.
func TestEncodeResultBodyMatchesMarshal(t *testing.T) {
	type turn struct {
		Role    string   `json:"role"`
		Content string   `json:"content"`
		Score   *float64 `json:"score,omitempty"`
	}
	half := 0.5
	values := []any{
		nil,
		"",
		[]turn{{Role: "user", Content: "<b>A & B</b> \u2028 line\u2029 \x7f \u00e9 日本 \U0001F600 \"q\" \\ \t\n"}, {Role: "assistant", Content: "ok", Score: &half}},
		map[string]any{"z": 1, "a": []int{}, "m": map[string]string{"<": ">"}},
		json.RawMessage(`{"already":"raw"}`),
		string([]byte{0xff, 'x'}), // invalid UTF-8: Marshal's U+FFFD either way
	}
	for _, key := range []string{"", "0f3a", "k<&>\u2028"} {
		for _, v := range values {
			raw, err := json.Marshal(v)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range []json.RawMessage{raw, nil} {
				want, err := json.Marshal(resultBody{Result: r, ResultKey: key})
				if err != nil {
					t.Fatal(err)
				}
				got, err := encodeResultBody(event{Result: r, ResultKey: key, Marshaled: true})
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, want) {
					t.Errorf("result %s key %q:\n got %s\nwant %s", r, key, got, want)
				}
			}
		}
	}
}

func FuzzEncodeResultBody(f *testing.F) {
	f.Add("<a&b>", "key")
	f.Fuzz(func(t *testing.T, content, key string) {
		raw, err := json.Marshal(map[string]string{"content": content})
		if err != nil {
			return
		}
		want, _ := json.Marshal(resultBody{Result: raw, ResultKey: key})
		got, err := encodeResultBody(event{Result: raw, ResultKey: key, Marshaled: true})
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("got %s (%v), want %s", got, err, want)
		}
	})
}
