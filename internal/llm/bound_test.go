package llm

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"unicode/utf8"
)

// readBounded runs body through a boundedBody with the given string limit.
func readBounded(t testing.TB, body string, wantObject bool, maxString int) (string, *BodyWatch, error) {
	t.Helper()
	w := &BodyWatch{}
	b := newBoundedBody(io.NopCloser(strings.NewReader(body)), w, wantObject, maxString)
	out, err := io.ReadAll(b)
	return string(out), w, err
}

func TestBoundedBodyPassesOrdinaryAnswers(t *testing.T) {
	for _, body := range []string{
		`{"choices":[{"message":{"role":"assistant","content":"hi \"there\" \\ \u00e9 é 🙂"}}],"usage":{"prompt_tokens":3}}`,
		`  {"content":[{"type":"text","text":"x"}]}`,
		`{}`,
	} {
		got, w, err := readBounded(t, body, true, 64)
		if err != nil || got != body || w.Cut() {
			t.Errorf("%s: got %q, %v, cut %v; want it unchanged", body, got, err, w.Cut())
		}
	}
}

func TestBoundedBodyCutsLongStrings(t *testing.T) {
	long := strings.Repeat("a", 500)
	body := `{"id":"x","choices":[{"message":{"content":"` + long + `","refusal":null}}],"usage":{"total_tokens":7}}`
	got, w, err := readBounded(t, body, true, 100)
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Choices []struct {
			Message struct{ Content string }
		}
		Usage struct {
			Total int `json:"total_tokens"`
		}
	}
	if err := json.Unmarshal([]byte(got), &v); err != nil {
		t.Fatalf("cut body is not JSON: %v\n%s", err, got)
	}
	if c := v.Choices[0].Message.Content; c != long[:100] {
		t.Errorf("content %d bytes, want the first 100", len(c))
	}
	if v.Usage.Total != 7 {
		t.Errorf("what follows the cut string was lost: %+v", v)
	}
	if !w.Cut("content") || w.Cut("text") {
		t.Errorf("watch: content cut %v, text cut %v; want true, false", w.Cut("content"), w.Cut("text"))
	}
}

// TestBoundedBodyCutsBetweenCharacters: a cut never splits an escape or a
// UTF-8 sequence, so the result decodes to a prefix of the original.
func TestBoundedBodyCutsBetweenCharacters(t *testing.T) {
	for _, unit := range []string{`\\`, `\"`, `\n`, `\u00e9`, `\ud83d\ude42`, "é", "日", "🙂", `a\u0000`} {
		for limit := 1; limit <= 13; limit++ {
			body := `{"text":"` + strings.Repeat(unit, 40) + `","n":1}`
			got, _, err := readBounded(t, body, true, limit)
			if err != nil {
				t.Fatalf("%s/%d: %v", unit, limit, err)
			}
			var v struct {
				Text string
				N    int
			}
			if err := json.Unmarshal([]byte(got), &v); err != nil || v.N != 1 {
				t.Fatalf("%s/%d: cut body %q does not decode: %v", unit, limit, got, err)
			}
			var full struct{ Text string }
			_ = json.Unmarshal([]byte(body), &full)
			if !utf8.ValidString(v.Text) {
				t.Fatalf("%s/%d: invalid UTF-8 %q", unit, limit, v.Text)
			}
			// A surrogate pair cut between its halves decodes to U+FFFD:
			// compare up to the last full character.
			trimmed := strings.TrimSuffix(v.Text, "\uFFFD")
			if !strings.HasPrefix(full.Text, trimmed) {
				t.Fatalf("%s/%d: %q is not a prefix of the original", unit, limit, v.Text)
			}
		}
	}
}

func TestBoundedBodyRefusesNonObjects(t *testing.T) {
	for _, body := range []string{"null", "[]", `"x"`, "  42", "<html>bad gateway</html>", ""} {
		_, _, err := readBounded(t, body, true, 64)
		if !errors.Is(err, ErrNotJSONObject) {
			t.Errorf("2xx %q: err %v, want ErrNotJSONObject", body, err)
		}
		// Error answers are passed on for the SDK to read and report.
		if got, _, err := readBounded(t, body, false, 64); err != nil || got != body {
			t.Errorf("4xx %q: got %q, %v; want it unchanged", body, got, err)
		}
	}
}

// endless is a JSON object whose one string never ends.
type endless struct{ started bool }

var as = bytes.Repeat([]byte("a"), 64<<10)

func (e *endless) Read(p []byte) (int, error) {
	if !e.started {
		e.started = true
		return copy(p, `{"content":"`), nil
	}
	return copy(p, as), nil
}

// TestBoundedBodyLimits: past the wire bound (a string that never ends)
// and past the body bound after cutting (many strings, each cut), reading
// fails with ErrResponseTooLarge. The bounds are scaled down here: the
// same code with MaxWireBytes of input takes seconds under -race.
func TestBoundedBodyLimits(t *testing.T) {
	const maxString, maxBody, maxWire = 100, 64 << 10, 1 << 20
	bounded := func(r io.Reader) *boundedBody {
		b := newBoundedBody(io.NopCloser(r), nil, true, maxString)
		b.maxBody, b.maxWire = maxBody, maxWire
		return b
	}
	n, err := io.Copy(io.Discard, bounded(&endless{}))
	if !errors.Is(err, ErrResponseTooLarge) || n > maxString+64 {
		t.Errorf("endless string: %d bytes passed, err %v; want ErrResponseTooLarge after at most %d", n, err, maxString)
	}
	var body bytes.Buffer
	body.WriteString(`{"content":[`)
	for i := 0; i < maxBody/100+1; i++ {
		if i > 0 {
			body.WriteByte(',')
		}
		body.WriteString(`{"type":"text","text":"` + strings.Repeat("x", 200) + `"}`)
	}
	body.WriteString(`]}`)
	if body.Len() > maxWire {
		t.Fatal("the test body passes the wire bound; it is meant to pass only the body bound")
	}
	if _, err := io.ReadAll(bounded(&body)); !errors.Is(err, ErrResponseTooLarge) {
		t.Errorf("%d KiB of cut strings: err %v, want ErrResponseTooLarge", body.Len()>>10, err)
	}
	// The real bounds are in the order the doc says.
	if !(MaxReplyBytes < MaxWireString && MaxWireString < MaxBodyBytes && MaxBodyBytes < MaxWireBytes) {
		t.Error("bounds out of order")
	}
}

func FuzzBoundedBody(f *testing.F) {
	f.Add(`{"choices":[{"message":{"content":"hello \"you\" \u00e9"}}]}`, 4)
	f.Add(`{"a":"\\\\\\\"","b":["x","yy"]}`, 1)
	f.Add(`{"text":"🙂🙂🙂é"}`, 3)
	f.Fuzz(func(t *testing.T, body string, limit int) {
		limit = 1 + abs(limit)%64
		got, _, err := readBounded(t, body, false, limit)
		if err != nil {
			t.Fatalf("error on %q: %v", body, err)
		}
		if !json.Valid([]byte(body)) {
			return // non-JSON bodies need only not crash
		}
		if !json.Valid([]byte(got)) {
			t.Fatalf("valid %q became invalid %q (limit %d)", body, got, limit)
		}
		if len(got) > len(body) {
			t.Fatalf("output longer than input")
		}
	})
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

func TestReplyCostAndBoundReply(t *testing.T) {
	for _, c := range []struct {
		s    string
		cost int
	}{
		{"abc", 3}, {`"\`, 4}, {"\n\t", 4}, {"\x00", 6}, {"<&>", 18}, {"é", 6}, {"日", 6}, {"🙂", 12}, {"\xff", 6},
	} {
		if got := ReplyCost(c.s); got != c.cost {
			t.Errorf("ReplyCost(%q) = %d, want %d", c.s, got, c.cost)
		}
	}
	short := strings.Repeat("é", 1000)
	if got, cut := BoundReply(short); cut || got != short {
		t.Errorf("a short reply was cut")
	}
	for _, unit := range []string{"a", "é", "🙂", "<", "\x01", "ab\n"} {
		long := strings.Repeat(unit, MaxReplyBytes+1)
		got, cut := BoundReply(long)
		if !cut || ReplyCost(got) > MaxReplyBytes || ReplyCost(got) < MaxReplyBytes-12 || !strings.HasPrefix(long, got) || !utf8.ValidString(got) {
			t.Errorf("%q×%d: cut %v, cost %d (bound %d)", unit, MaxReplyBytes, cut, ReplyCost(got), MaxReplyBytes)
		}
	}
	r := BoundResponse(Response{Text: strings.Repeat("x", MaxReplyBytes+1), FinishReason: "stop"})
	if !r.Truncated || len(r.Text) != MaxReplyBytes || r.FinishReason != "stop" {
		t.Errorf("BoundResponse: truncated %v, %d bytes, finish %q", r.Truncated, len(r.Text), r.FinishReason)
	}
}
