package llmtest_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/impactbench/impactbench/internal/llm/llmtest"
)

// recTB records Errorf calls instead of failing, so the fakes' validation
// can itself be tested.
type recTB struct {
	testing.TB
	mu   sync.Mutex
	errs []string
}

func (r *recTB) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

func (r *recTB) errors() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.errs...)
}

func post(t *testing.T, url string, headers map[string]string, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestValidation(t *testing.T) {
	okOpenAI := map[string]string{"Authorization": "Bearer " + llmtest.DefaultAPIKey}
	okAnthropic := map[string]string{"X-Api-Key": llmtest.DefaultAPIKey, "Anthropic-Version": "2023-06-01"}
	okGemini := map[string]string{"X-Goog-Api-Key": llmtest.DefaultAPIKey}
	tests := []struct {
		name    string
		flavor  llmtest.Flavor
		path    string
		headers map[string]string
		body    string
		status  int
		invalid string // substring of the recorded validation error; "" = valid
	}{
		{"openai ok", llmtest.OpenAI, "/v1/chat/completions", okOpenAI, `{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":5}`, 200, ""},
		{"openai bad role", llmtest.OpenAI, "/v1/chat/completions", okOpenAI, `{"model":"m","messages":[{"role":"robot","content":"hi"}]}`, 400, "role"},
		{"openai both caps", llmtest.OpenAI, "/v1/chat/completions", okOpenAI, `{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":5,"max_completion_tokens":5}`, 400, "both"},
		{"openai bad schema name", llmtest.OpenAI, "/v1/chat/completions", okOpenAI, `{"model":"m","messages":[{"role":"user","content":"hi"}],"response_format":{"type":"json_schema","json_schema":{"name":"a b","schema":{}}}}`, 400, "name"},
		{"openai seed", llmtest.OpenAI, "/v1/chat/completions", okOpenAI, `{"model":"m","messages":[{"role":"user","content":"hi"}],"seed":123}`, 200, ""},
		{"openai fractional seed", llmtest.OpenAI, "/v1/chat/completions", okOpenAI, `{"model":"m","messages":[{"role":"user","content":"hi"}],"seed":1.5}`, 400, "seed"},
		{"openai string seed", llmtest.OpenAI, "/v1/chat/completions", okOpenAI, `{"model":"m","messages":[{"role":"user","content":"hi"}],"seed":"1"}`, 400, "seed"},
		{"openai wrong key", llmtest.OpenAI, "/v1/chat/completions", map[string]string{"Authorization": "Bearer sk-wrong-key-123456"}, `{"model":"m","messages":[{"role":"user","content":"hi"}]}`, 401, ""},
		{"anthropic ok", llmtest.Anthropic, "/v1/messages", okAnthropic, `{"model":"m","max_tokens":10,"system":[{"type":"text","text":"s"}],"messages":[{"role":"user","content":"hi"}]}`, 200, ""},
		{"anthropic no max_tokens", llmtest.Anthropic, "/v1/messages", okAnthropic, `{"model":"m","messages":[{"role":"user","content":"hi"}]}`, 400, "max_tokens"},
		{"anthropic system role", llmtest.Anthropic, "/v1/messages", okAnthropic, `{"model":"m","max_tokens":10,"messages":[{"role":"system","content":"s"},{"role":"user","content":"hi"}]}`, 400, "system"},
		{"anthropic starts with assistant", llmtest.Anthropic, "/v1/messages", okAnthropic, `{"model":"m","max_tokens":10,"messages":[{"role":"assistant","content":"a"},{"role":"user","content":"hi"}]}`, 400, "first"},
		{"anthropic not alternating", llmtest.Anthropic, "/v1/messages", okAnthropic, `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"a"},{"role":"user","content":"b"}]}`, 400, "alternate"},
		{"anthropic empty text", llmtest.Anthropic, "/v1/messages", okAnthropic, `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":[{"type":"text","text":""}]}]}`, 400, "non-empty"},
		{"anthropic no version", llmtest.Anthropic, "/v1/messages", map[string]string{"X-Api-Key": llmtest.DefaultAPIKey}, `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`, 400, "anthropic-version"},
		{"anthropic seed", llmtest.Anthropic, "/v1/messages", okAnthropic, `{"model":"m","max_tokens":10,"seed":1,"messages":[{"role":"user","content":"hi"}]}`, 400, "seed"},
		{"anthropic wrong key", llmtest.Anthropic, "/v1/messages", map[string]string{"X-Api-Key": "nope", "Anthropic-Version": "2023-06-01"}, `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`, 401, ""},
		{"gemini ok", llmtest.Gemini, "/v1beta/models/gemini-2.5-flash:generateContent", okGemini, `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`, 200, ""},
		{"gemini assistant role", llmtest.Gemini, "/v1beta/models/g:generateContent", okGemini, `{"contents":[{"role":"assistant","parts":[{"text":"hi"}]}]}`, 400, "role"},
		{"gemini wrong path", llmtest.Gemini, "/v1/models/g:generateContent", okGemini, `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`, 400, "generateContent"},
		{"gemini seed", llmtest.Gemini, "/v1beta/models/g:generateContent", okGemini, `{"contents":[{"role":"user","parts":[{"text":"hi"}]}],"generationConfig":{"seed":2147483647}}`, 200, ""},
		{"gemini seed over int32", llmtest.Gemini, "/v1beta/models/g:generateContent", okGemini, `{"contents":[{"role":"user","parts":[{"text":"hi"}]}],"generationConfig":{"seed":2147483648}}`, 400, "int32"},
		{"gemini wrong key", llmtest.Gemini, "/v1beta/models/g:generateContent", map[string]string{"X-Goog-Api-Key": "nope"}, `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`, 400, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := &recTB{TB: t}
			srv := llmtest.New(rec, tc.flavor)
			status, body := post(t, srv.URL()+tc.path, tc.headers, tc.body)
			if status != tc.status {
				t.Errorf("status = %d, want %d (%s)", status, tc.status, body)
			}
			errs := rec.errors()
			switch {
			case tc.invalid == "" && len(errs) > 0:
				t.Errorf("valid request reported invalid: %v", errs)
			case tc.invalid != "" && (len(errs) != 1 || !strings.Contains(errs[0], tc.invalid)):
				t.Errorf("validation errors = %v, want one mentioning %q", errs, tc.invalid)
			}
			if srv.Calls() != 1 || len(srv.Requests()) != 1 {
				t.Errorf("calls=%d recorded=%d", srv.Calls(), len(srv.Requests()))
			}
		})
	}
}

func TestQueueThenHandlerThenDefault(t *testing.T) {
	srv := llmtest.NewOpenAI(t)
	h := map[string]string{"Authorization": "Bearer " + srv.APIKey()}
	body := `{"model":"m","messages":[{"role":"user","content":"ping"}]}`
	srv.Enqueue(llmtest.Text("first", llmtest.Usage{Input: 1, Output: 1}), llmtest.OpenAIError(500, "server_error", "", "boom"))

	if _, b := post(t, srv.URL()+"/v1/chat/completions", h, body); !strings.Contains(b, `"first"`) {
		t.Errorf("1st = %s", b)
	}
	if s, _ := post(t, srv.URL()+"/v1/chat/completions", h, body); s != 500 {
		t.Errorf("2nd status = %d", s)
	}
	if _, b := post(t, srv.URL()+"/v1/chat/completions", h, body); !strings.Contains(b, `"ok"`) {
		t.Errorf("default = %s", b)
	}
	srv.HandleText(func(r llmtest.ChatRequest) string { return "echo " + r.LastUser() })
	if _, b := post(t, srv.URL()+"/v1/chat/completions", h, body); !strings.Contains(b, `"echo ping"`) {
		t.Errorf("handler = %s", b)
	}
	if srv.Calls() != 4 || srv.Last().Chat.LastUser() != "ping" {
		t.Errorf("calls=%d last=%+v", srv.Calls(), srv.Last().Chat)
	}
}
