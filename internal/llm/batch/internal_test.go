package batch

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
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

// TestResultLinesNeverPanic: a result line whose answer is null, of the
// wrong type or without content is a failed item (retried), never a crash;
// a reply past llm.MaxReplyBytes comes back cut and marked.
func TestResultLinesNeverPanic(t *testing.T) {
	ctx := context.Background()
	op, err := NewOpenAI(OpenAIConfig{APIKey: "k-0123456789", Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	ap, err := NewAnthropic(AnthropicConfig{APIKey: "k-0123456789", Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	check := func(what string, r Result) {
		t.Helper()
		var e *llm.Error
		if !errors.As(r.Err, &e) || !e.Kind.Retryable() {
			t.Errorf("%s: got %q, %v; want a retryable *llm.Error", what, r.Resp.Text, r.Err)
		}
	}
	decode := func(what, line string) (Result, bool) {
		t.Helper()
		defer func() {
			if p := recover(); p != nil {
				t.Fatalf("%s: panic: %v", what, p)
			}
		}()
		if strings.Contains(line, `"result"`) {
			var l anthropicResultLine
			if err := json.Unmarshal([]byte(line), &l); err != nil {
				t.Fatal(err)
			}
			return ap.decodeLine(ctx, l), true
		}
		var l openAIOutputLine
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			t.Fatal(err)
		}
		return op.decodeLine(ctx, l), true
	}
	for _, body := range []string{`null`, `[]`, `"x"`, `{}`, `{"choices":null}`, `{"choices":[null]}`, `{"choices":[{"message":null}]}`} {
		line := `{"custom_id":"a","response":{"status_code":200,"body":` + body + `}}`
		r, _ := decode(line, line)
		check(line, r)
	}
	for _, line := range []string{`{"custom_id":"a","response":null}`, `{"custom_id":"a","response":{"status_code":200}}`} {
		r, _ := decode(line, line)
		check(line, r)
	}
	for _, msg := range []string{`null`, `[]`, `"x"`, `{}`, `{"content":null}`, `{"content":[null]}`, `{"content":[{"type":"future"}]}`} {
		line := `{"custom_id":"a","result":{"type":"succeeded","message":` + msg + `}}`
		r, _ := decode(line, line)
		check(line, r)
	}
	line := `{"custom_id":"a","result":{"type":"succeeded"}}`
	r, _ := decode(line, line)
	check(line, r)

	huge := strings.Repeat("a", 4<<20)
	for _, line := range []string{
		`{"custom_id":"a","response":{"status_code":200,"body":{"choices":[{"message":{"role":"assistant","content":"` + huge + `"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":2}}}}`,
		`{"custom_id":"a","result":{"type":"succeeded","message":{"type":"message","role":"assistant","content":[{"type":"text","text":"` + huge + `"}],"stop_reason":"end_turn","usage":{"input_tokens":1,"output_tokens":2}}}}`,
	} {
		r, _ := decode("4 MiB reply", line)
		if r.Err != nil || !r.Resp.Truncated || llm.ReplyCost(r.Resp.Text) > llm.MaxReplyBytes || r.Resp.Usage.OutputTokens != 2 {
			t.Errorf("4 MiB batch reply: err %v, truncated %v, %d bytes, usage %+v", r.Err, r.Resp.Truncated, len(r.Resp.Text), r.Resp.Usage)
		}
	}
}

// TestStateIdentityHasNoCredentials: the batch state file names the
// endpoint without the credentials of its base_url, and a state file an
// earlier version wrote with them is resumed (and rewritten without them).
func TestStateIdentityHasNoCredentials(t *testing.T) {
	base := "https://gwuser:hunter2pass@gw.example/v1?api_key=QUERYSECRET"
	op, err := NewOpenAI(OpenAIConfig{APIKey: "k-0123456789", BaseURL: base, Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	ap, err := NewAnthropic(AnthropicConfig{APIKey: "k-0123456789", BaseURL: base, Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{op.Identity(), ap.Identity()} {
		for _, s := range []string{"gwuser", "hunter2pass", "QUERYSECRET"} {
			if strings.Contains(id, s) {
				t.Errorf("identity %q holds %q", id, s)
			}
		}
	}
	path := filepath.Join(t.TempDir(), "state.json")
	old := `{"version":"` + stateVersion + `","provider":"openai ` + base + ` m","batches":[]}`
	if err := os.WriteFile(path, []byte(old), 0o600); err != nil {
		t.Fatal(err)
	}
	st, err := loadState(path, op.Identity())
	if err != nil {
		t.Fatalf("a state file of an earlier version was refused: %v", err)
	}
	if st.Provider != op.Identity() {
		t.Errorf("state provider %q, want %q", st.Provider, op.Identity())
	}
	// Another endpoint is still refused, and the message shows no credentials.
	other := strings.Replace(old, "gw.example", "other.example", 1)
	if err := os.WriteFile(path, []byte(other), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = loadState(path, op.Identity())
	if err == nil || strings.Contains(err.Error(), "hunter2pass") || strings.Contains(err.Error(), "QUERYSECRET") {
		t.Errorf("another endpoint: %v", err)
	}
}

// endless is a results file of one line of n bytes (made as it is read)
// followed by tail.
type endless struct {
	n    int
	tail string
}

func (e *endless) Read(p []byte) (int, error) {
	if e.n > 0 {
		k := min(len(p), e.n)
		for i := range k {
			p[i] = 'x'
		}
		e.n -= k
		return k, nil
	}
	if e.tail == "" {
		return 0, io.EOF
	}
	k := copy(p, e.tail)
	e.tail = e.tail[k:]
	return k, nil
}

// TestResultLinesAreBounded: a results line over maxResultLine is skipped
// (its request is then reported missing) without being read into memory,
// and the lines after it are read. Before, eachLine read a line whole
// however long: a results file of one endless line filled memory.
func TestResultLinesAreBounded(t *testing.T) {
	defer func(old int) { maxResultLine = old }(maxResultLine)
	maxResultLine = 1 << 20
	var got []string
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	err := eachLine(&endless{n: 200 << 20, tail: "\n{\"custom_id\": \"a\"}\n" + strings.Repeat("y", 1<<20) + "\n\n  {\"custom_id\": \"b\"}  "}, func(l []byte) {
		got = append(got, string(l))
	})
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if a := after.TotalAlloc - before.TotalAlloc; a > 16<<20 {
		t.Errorf("reading a 200 MiB line allocated %d MB, want at most 16", a>>20)
	}
	want := []string{`{"custom_id": "a"}`, `{"custom_id": "b"}`}
	if !slices.Equal(got, want) {
		t.Errorf("lines = %.80q, want %q", got, want)
	}
}
