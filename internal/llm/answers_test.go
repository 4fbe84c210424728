package llm_test

// No provider answer may crash the process: every adapter is fed answers
// that are null, of the wrong JSON type, missing their content, holding
// content blocks of unknown types or null usage, over the real wire formats
// (llmtest servers). An unusable answer must come back as a retryable
// *llm.Error (a failed attempt); a usable one as its text.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/impactbench/impactbench/internal/llm"
	"github.com/impactbench/impactbench/internal/llm/anthropic"
	"github.com/impactbench/impactbench/internal/llm/gemini"
	"github.com/impactbench/impactbench/internal/llm/llmtest"
	"github.com/impactbench/impactbench/internal/llm/openai"
)

// answerCase is one 200 answer and what the adapter must make of it: the
// text, or "" for a retryable failure.
type answerCase struct {
	body string
	text string
}

var commonBad = []string{`null`, `[]`, `"x"`, `42`, `true`, `{}`, ` null `, `{"usage":null}`, `<html>502</html>`, `{"error":null}`}

var answerCases = map[llmtest.Flavor][]answerCase{
	llmtest.OpenAI: {
		{body: `{"choices":null}`},
		{body: `{"choices":[]}`},
		{body: `{"choices":[null]}`},
		{body: `{"choices":[{}]}`},
		{body: `{"choices":"x"}`},
		{body: `{"choices":[{"message":null}]}`},
		{body: `{"choices":[{"message":{"content":null}}]}`},
		{body: `{"choices":[{"message":{"content":[{"type":"text","text":"hi"},{"type":"image_url","image_url":{}}]}}]}`, text: "hi"},
		{body: `{"choices":[{"message":{"content":[null,{"type":"text"}]}}]}`},
		{body: `{"choices":[{"message":{"content":"hi"}}],"usage":null}`, text: "hi"},
		{body: `{"choices":[{"message":{"content":"hi"}}],"usage":"x"}`, text: "hi"},
		{body: `{"choices":[{"message":{"content":"hi"}}],"usage":{"prompt_tokens_details":null,"completion_tokens_details":null}}`, text: "hi"},
		{body: `{"choices":[{"message":{"content":"hi","tool_calls":[{"type":"future"}]}}]}`, text: "hi"},
	},
	llmtest.Anthropic: {
		{body: `{"content":null}`},
		{body: `{"content":[]}`},
		{body: `{"content":[null]}`},
		{body: `{"content":"x"}`},
		{body: `{"content":[{"type":"weird","foo":1}]}`},
		{body: `{"content":[{"type":"text"}]}`},
		{body: `{"content":[{"type":"text","text":null}]}`},
		{body: `{"content":[{"type":"text","text":"hi"}],"usage":null}`, text: "hi"},
		{body: `{"content":[{"type":"text","text":"hi"}],"usage":[]}`, text: "hi"},
		{body: `{"content":[{"type":"thinking","thinking":"hmm"},{"type":"future_block","x":1},{"type":"text","text":"hi"}]}`, text: "hi"},
	},
	llmtest.Gemini: {
		{body: `{"candidates":null}`},
		{body: `{"candidates":[]}`},
		{body: `{"candidates":[null]}`},
		{body: `{"candidates":{}}`},
		{body: `{"candidates":[{"content":null}]}`},
		{body: `{"candidates":[{"content":{"parts":null}}]}`},
		{body: `{"candidates":[{"content":{"parts":[null]}}]}`},
		{body: `{"candidates":[{"content":{"parts":[{"inlineData":{"mimeType":"image/png","data":""}}]}}]}`},
		{body: `{"candidates":[{"content":{"parts":[{"text":"hi"}]}}],"usageMetadata":null}`, text: "hi"},
		{body: `{"candidates":[{"content":{"parts":[{"text":"hi"}]}}],"usageMetadata":[]}`},
		{body: `{"candidates":[{"content":{"parts":[{"thought":true,"text":"hmm"},{"futurePart":{}},{"text":"hi"}]}}]}`, text: "hi"},
	},
}

func newAdapter(t testing.TB, f llmtest.Flavor, baseURL, key string, hc *http.Client) llm.Client {
	t.Helper()
	var c llm.Client
	var err error
	switch f {
	case llmtest.OpenAI:
		c, err = openai.New(openai.Config{APIKey: key, BaseURL: baseURL, Model: "m", HTTPClient: hc})
	case llmtest.Anthropic:
		c, err = anthropic.New(anthropic.Config{APIKey: key, BaseURL: baseURL, Model: "m", HTTPClient: hc})
	default:
		c, err = gemini.New(gemini.Config{APIKey: key, BaseURL: baseURL, Model: "m", HTTPClient: hc})
	}
	if err != nil {
		t.Fatal(err)
	}
	return c
}

var hi = llm.Request{Purpose: llm.PurposeTarget, Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}}

// complete calls c and turns a panic into a test failure naming the body.
func complete(t testing.TB, c llm.Client, what string) (resp llm.Response, err error) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Fatalf("%s: panic: %v", what, r)
		}
	}()
	return c.Complete(context.Background(), hi)
}

func checkAnswer(t testing.TB, what string, resp llm.Response, err error, wantText string) {
	t.Helper()
	if wantText != "" {
		if err != nil || resp.Text != wantText {
			t.Errorf("%s: got %q, %v; want %q", what, resp.Text, err, wantText)
		}
		return
	}
	var e *llm.Error
	if !errors.As(err, &e) {
		t.Errorf("%s: got %q, err %v; want an *llm.Error", what, resp.Text, err)
		return
	}
	if !e.Kind.Retryable() {
		t.Errorf("%s: kind %s is not retried; an unusable answer is a failed attempt: %v", what, e.Kind, err)
	}
	if e.Usage.Requests != 1 {
		t.Errorf("%s: the failed attempt counts %d requests, want 1", what, e.Usage.Requests)
	}
}

func TestNoAnswerPanics(t *testing.T) {
	for _, f := range []llmtest.Flavor{llmtest.OpenAI, llmtest.Anthropic, llmtest.Gemini} {
		t.Run(string(f), func(t *testing.T) {
			srv := llmtest.New(t, f)
			c := newAdapter(t, f, srv.BaseURL(), srv.APIKey(), nil)
			cases := answerCases[f]
			for _, b := range commonBad {
				cases = append(cases, answerCase{body: b})
			}
			for _, tc := range cases {
				srv.Enqueue(llmtest.Reply{Body: tc.body})
				resp, err := complete(t, c, string(f)+" "+tc.body)
				checkAnswer(t, string(f)+" "+tc.body, resp, err, tc.text)
			}
		})
	}
}

// TestNullAnswerIsRetried: through the retry layer, a null answer is one
// failed attempt and the next good answer is the result.
func TestNullAnswerIsRetried(t *testing.T) {
	for _, f := range []llmtest.Flavor{llmtest.OpenAI, llmtest.Anthropic, llmtest.Gemini} {
		srv := llmtest.New(t, f)
		srv.Enqueue(llmtest.Reply{Body: "null"}, llmtest.Reply{Body: "[]"}, llmtest.Text("fine", llmtest.Usage{Input: 3, Output: 1}))
		c := llm.WithRetry(newAdapter(t, f, srv.BaseURL(), srv.APIKey(), nil), llm.RetryPolicy{MaxRetries: 3, Sleep: func(context.Context, time.Duration) error { return nil }})
		resp, err := complete(t, c, string(f))
		if err != nil || resp.Text != "fine" || srv.Calls() != 3 || resp.Usage.Requests != 3 {
			t.Errorf("%s: got %q, %v after %d calls (%d requests counted); want \"fine\" on the third", f, resp.Text, err, srv.Calls(), resp.Usage.Requests)
		}
	}
}

// bodyTransport answers every request with one 200 body, in process.
type bodyTransport struct{ body []byte }

func (b bodyTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		_, _ = io.Copy(io.Discard, r.Body)
		_ = r.Body.Close()
	}
	return &http.Response{
		StatusCode: 200, Status: "200 OK", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:  http.Header{"Content-Type": {"application/json"}},
		Body:    io.NopCloser(bytes.NewReader(b.body)),
		Request: r, ContentLength: int64(len(b.body)),
	}, nil
}

// FuzzAdapterAnswers feeds arbitrary 200 bodies to every adapter's
// response decoding: none may panic, and any answer is either text or an
// *llm.Error.
func FuzzAdapterAnswers(f *testing.F) {
	for _, b := range commonBad {
		f.Add([]byte(b))
	}
	for _, cs := range answerCases {
		for _, c := range cs {
			f.Add([]byte(c.body))
		}
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		hc := &http.Client{Transport: bodyTransport{body}}
		for _, fl := range []llmtest.Flavor{llmtest.OpenAI, llmtest.Anthropic, llmtest.Gemini} {
			base := "http://fuzz.invalid/"
			if fl == llmtest.OpenAI {
				base += "v1"
			}
			c := newAdapter(t, fl, base, "fuzz-key-0123456789", hc)
			resp, err := complete(t, c, fmt.Sprintf("%s %q", fl, body))
			var e *llm.Error
			if err == nil && strings.TrimSpace(resp.Text) == "" || err != nil && !errors.As(err, &e) {
				t.Fatalf("%s %q: got %q, %v", fl, body, resp.Text, err)
			}
		}
	})
}

// hugeBody is a 200 answer of each wire format whose text is n bytes of
// "a", with usage after it (as the real APIs order it).
func hugeBody(f llmtest.Flavor, n int) string {
	text := strings.Repeat("a", n)
	switch f {
	case llmtest.OpenAI:
		return `{"id":"c","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"` + text +
			`"},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":` + fmt.Sprint(n/4) + `,"total_tokens":9}}`
	case llmtest.Anthropic:
		return `{"id":"m","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"` + text +
			`"}],"stop_reason":"end_turn","usage":{"input_tokens":5,"output_tokens":` + fmt.Sprint(n/4) + `}}`
	default:
		return `{"candidates":[{"content":{"role":"model","parts":[{"text":"` + text + `"}]},"finishReason":"STOP"}],` +
			`"usageMetadata":{"promptTokenCount":5,"candidatesTokenCount":` + fmt.Sprint(n/4) + `}}`
	}
}

// TestHugeReplyIsTruncated: a reply of 4 or 40 MiB comes back cut to
// MaxReplyBytes and marked Truncated, with its usage, and reading it
// allocates a small part of its size (the body is cut as it is read, not
// decoded whole first), the same for 40 MiB as for 4. Every adapter gets
// 4 MiB; one gets 40 (the cut is the same code, and 40 MiB through
// net/http takes seconds under -race). cmd/impactbench's
// TestHugeRepliesAreCut runs 4 and 40 MiB through a whole run.
func TestHugeReplyIsTruncated(t *testing.T) {
	sizes := map[llmtest.Flavor][]int{llmtest.OpenAI: {4 << 20, 40 << 20}, llmtest.Anthropic: {4 << 20}, llmtest.Gemini: {4 << 20}}
	for _, f := range []llmtest.Flavor{llmtest.OpenAI, llmtest.Anthropic, llmtest.Gemini} {
		for _, size := range sizes[f] {
			srv := llmtest.New(t, f)
			c := newAdapter(t, f, srv.BaseURL(), srv.APIKey(), nil)
			srv.Enqueue(llmtest.Reply{Body: hugeBody(f, size)})
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			resp, err := complete(t, c, fmt.Sprintf("%s %d MiB", f, size>>20))
			runtime.ReadMemStats(&after)
			what := fmt.Sprintf("%s, %d MiB reply", f, size>>20)
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			if !resp.Truncated || llm.ReplyCost(resp.Text) > llm.MaxReplyBytes || len(resp.Text) < llm.MaxReplyBytes/2 || strings.Trim(resp.Text, "a") != "" {
				t.Errorf("%s: truncated %v, %d bytes; want the first %d bytes, marked truncated", what, resp.Truncated, len(resp.Text), llm.MaxReplyBytes)
			}
			if resp.Usage.OutputTokens != size/4 || resp.Usage.InputTokens != 5 {
				t.Errorf("%s: usage %+v lost (it follows the cut text)", what, resp.Usage)
			}
			// The server's own copy of the body is written, not allocated,
			// during the call; everything allocated is the client's.
			t.Logf("%s: %d KiB allocated", what, (after.TotalAlloc-before.TotalAlloc)>>10)
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 24<<20 {
				t.Errorf("%s: reading it allocated %d MiB; the body must be cut as it is read", what, alloc>>20)
			}
		}
	}
}
