package fakebatch_test

import (
	"bytes"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/impactbench/impactbench/internal/llm/batch/fakebatch"
)

// recorder is a testing.TB that collects the fake's complaints instead of
// failing, to check that the fake rejects what the real API rejects.
type recorder struct {
	testing.TB
	mu   sync.Mutex
	errs []string
}

func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

func (r *recorder) complaints() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.errs, "\n")
}

func upload(t *testing.T, srv *fakebatch.Server, purpose, name, content string) *http.Response {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	_ = mw.WriteField("purpose", purpose)
	fw, _ := mw.CreateFormFile("file", name)
	_, _ = io.WriteString(fw, content)
	_ = mw.Close()
	req, _ := http.NewRequest("POST", srv.BaseURL()+"/files", &buf)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("Authorization", "Bearer "+srv.APIKey())
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func post(t *testing.T, srv *fakebatch.Server, path string, headers map[string]string, body string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest("POST", srv.URL()+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

const goodLine = `{"custom_id":"a","method":"POST","url":"/v1/chat/completions","body":{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}}`

func TestOpenAIFakeRejects(t *testing.T) {
	cases := []struct {
		name, purpose, file, content, want string
	}{
		{"purpose", "assistants", "b.jsonl", goodLine, "purpose"},
		{"file name", "batch", "b.json", goodLine, ".jsonl"},
		{"custom_id", "batch", "b.jsonl", strings.Replace(goodLine, `"custom_id":"a",`, "", 1), "custom_id is missing"},
		{"duplicate id", "batch", "b.jsonl", goodLine + "\n" + goodLine, "not unique"},
		{"url", "batch", "b.jsonl", strings.Replace(goodLine, "/v1/chat/completions", "/v1/responses", 1), "url"},
		{"method", "batch", "b.jsonl", strings.Replace(goodLine, "POST", "GET", 1), "method"},
		{"model", "batch", "b.jsonl", strings.Replace(goodLine, `"model":"gpt-4o-mini",`, "", 1), "model is missing"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec := &recorder{TB: t}
			srv := fakebatch.NewOpenAI(rec, fakebatch.Options{})
			resp := upload(t, srv, tc.purpose, tc.file, tc.content)
			resp.Body.Close()
			if resp.StatusCode != 400 || !strings.Contains(rec.complaints(), tc.want) {
				t.Errorf("status %d, complaints %q, want %q", resp.StatusCode, rec.complaints(), tc.want)
			}
		})
	}
	t.Run("completion window", func(t *testing.T) {
		rec := &recorder{TB: t}
		srv := fakebatch.NewOpenAI(rec, fakebatch.Options{})
		resp := upload(t, srv, "batch", "b.jsonl", goodLine)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("good upload: %d %s", resp.StatusCode, rec.complaints())
		}
		auth := map[string]string{"Authorization": "Bearer " + srv.APIKey()}
		resp = post(t, srv, "/v1/batches", auth, `{"input_file_id":"file-in1","endpoint":"/v1/chat/completions","completion_window":"48h"}`)
		resp.Body.Close()
		if resp.StatusCode != 400 || !strings.Contains(rec.complaints(), "24h") {
			t.Errorf("48h window: status %d, complaints %q", resp.StatusCode, rec.complaints())
		}
	})
	t.Run("auth", func(t *testing.T) {
		srv := fakebatch.NewOpenAI(t, fakebatch.Options{})
		resp := post(t, srv, "/v1/batches", map[string]string{"Authorization": "Bearer nope"}, `{}`)
		resp.Body.Close()
		if resp.StatusCode != 401 {
			t.Errorf("status %d", resp.StatusCode)
		}
	})
}

func TestAnthropicFakeRejects(t *testing.T) {
	good := map[string]string{"X-Api-Key": "", "Anthropic-Version": "2023-06-01"}
	params := `{"model":"claude-haiku-4-5","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`
	cases := []struct {
		name    string
		headers map[string]string
		body    string
		want    string
	}{
		{"version header", map[string]string{"Anthropic-Version": ""}, `{"requests":[{"custom_id":"a","params":` + params + `}]}`, "anthropic-version"},
		{"custom_id pattern", nil, `{"requests":[{"custom_id":"a b","params":` + params + `}]}`, "custom_id"},
		{"duplicate", nil, `{"requests":[{"custom_id":"a","params":` + params + `},{"custom_id":"a","params":` + params + `}]}`, "not unique"},
		{"empty", nil, `{"requests":[]}`, "empty"},
		{"unknown field", nil, `{"requests":[{"custom_id":"a","params":` + params + `,"extra":1}]}`, "unknown field"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec := &recorder{TB: t}
			srv := fakebatch.NewAnthropic(rec, fakebatch.Options{})
			h := map[string]string{}
			for k, v := range good {
				h[k] = v
			}
			h["X-Api-Key"] = srv.APIKey()
			for k, v := range tc.headers {
				h[k] = v
			}
			resp := post(t, srv, "/v1/messages/batches", h, tc.body)
			resp.Body.Close()
			if resp.StatusCode != 400 || !strings.Contains(rec.complaints(), tc.want) {
				t.Errorf("status %d, complaints %q, want %q", resp.StatusCode, rec.complaints(), tc.want)
			}
		})
	}
	t.Run("auth", func(t *testing.T) {
		srv := fakebatch.NewAnthropic(t, fakebatch.Options{})
		resp := post(t, srv, "/v1/messages/batches", map[string]string{"X-Api-Key": "nope", "Anthropic-Version": "2023-06-01"}, `{}`)
		resp.Body.Close()
		if resp.StatusCode != 401 {
			t.Errorf("status %d", resp.StatusCode)
		}
	})
}
