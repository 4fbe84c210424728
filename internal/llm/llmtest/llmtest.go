// Package llmtest provides in-process fake servers that speak the real wire
// formats of OpenAI Chat Completions, Anthropic Messages and Gemini
// generateContent, for tests of any package that makes LLM calls.
//
// A server answers from a queue of scripted replies (status, headers, body
// or text + usage), then from a handler function, then with "ok". It checks
// the request the way the real API would (auth header, required fields,
// role rules): a malformed request fails the test and gets a 400; a wrong
// API key gets the provider's real 401 (or Gemini's 400) error. Every request
// is recorded for assertions.
//
//	srv := llmtest.NewOpenAI(t)
//	srv.Enqueue(llmtest.OpenAIError(429, "requests", "rate_limit_exceeded", "slow down").WithHeader("retry-after-ms", "20"))
//	srv.HandleText(func(r llmtest.ChatRequest) string { return "echo: " + r.LastUser() })
//	client := openai.New(openai.Config{BaseURL: srv.BaseURL(), APIKey: srv.APIKey(), Model: "gpt-4o"})
package llmtest

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/impactbench/impactbench/internal/llm"
)

// DefaultAPIKey is the key a new server accepts.
const DefaultAPIKey = "test-key-0123456789"

// Flavor is the wire format a Server speaks.
type Flavor string

const (
	OpenAI    Flavor = "openai"
	Anthropic Flavor = "anthropic"
	Gemini    Flavor = "gemini"
)

// Usage is the token usage a reply reports, rendered in the provider's own
// fields (Anthropic: Input is the whole prompt; the server reports
// input_tokens = Input-Cached-CacheWrite like the real API).
type Usage struct {
	Input, Output, Cached, CacheWrite, Reasoning int
	// CacheWriteLong is the part of CacheWrite written with the one-hour
	// lifetime (Anthropic's cache_creation.ephemeral_1h_input_tokens).
	CacheWriteLong int
}

// Reply is one scripted answer.
type Reply struct {
	// Status defaults to 200.
	Status int
	// Header is added to the response (e.g. retry-after, retry-after-ms).
	Header map[string]string
	// Body, when set, is sent verbatim (Content-Type application/json).
	Body string
	// Text is the model's answer for a 200 reply; empty means the model
	// returned no content (null content for OpenAI).
	Text string
	// Refusal sets OpenAI's message.refusal; for Anthropic it makes the
	// stop_reason "refusal".
	Refusal      string
	FinishReason string
	// Usage defaults to a rough count (4 characters per token).
	Usage *Usage
	// Delay waits before answering (cut short if the client goes away).
	Delay time.Duration
	// Hang never answers: the client must time out.
	Hang bool
	// Drop closes the connection without any response (a connection reset).
	Drop bool
}

// WithHeader returns r with header k: v added.
func (r Reply) WithHeader(k, v string) Reply {
	h := make(map[string]string, len(r.Header)+1)
	for kk, vv := range r.Header {
		h[kk] = vv
	}
	h[k] = v
	r.Header = h
	return r
}

// Text is a successful reply with text and usage.
func Text(text string, u Usage) Reply { return Reply{Text: text, Usage: &u} }

// ChatRequest is a provider-neutral view of a recorded request.
type ChatRequest struct {
	Model string
	// System is the system prompt (all system parts joined by a blank line).
	System string
	// Messages are the dialogue turns (Gemini "model" shows as assistant).
	Messages    []llm.Message
	MaxTokens   int
	Temperature *float64
	// Seed is the sampling seed sent (OpenAI seed, Gemini
	// generationConfig.seed), nil when none. Anthropic has no seed
	// parameter: a request carrying one is refused like the real API does.
	Seed *int64
	// JSON is true when JSON output was requested (response_format,
	// responseMimeType or output_config); Schema is the schema sent, if any.
	JSON   bool
	Schema map[string]any
}

// LastUser returns the content of the last user turn.
func (c ChatRequest) LastUser() string {
	for i := len(c.Messages) - 1; i >= 0; i-- {
		if c.Messages[i].Role == llm.RoleUser {
			return c.Messages[i].Content
		}
	}
	return ""
}

// Request is one recorded HTTP request.
type Request struct {
	Method string
	Path   string
	Header http.Header
	// Body is the decoded JSON body; Raw the bytes as received.
	Body map[string]any
	Raw  []byte
	Chat ChatRequest
}

// Server is a fake provider. Safe for concurrent use.
type Server struct {
	flavor Flavor
	t      testing.TB
	srv    *httptest.Server
	done   chan struct{}

	calls atomic.Int64

	mu      sync.Mutex
	apiKey  string
	queue   []Reply
	reqs    []Request
	handler func(ChatRequest) Reply
}

// NewOpenAI starts a fake OpenAI Chat Completions server.
func NewOpenAI(t testing.TB) *Server { return newServer(t, OpenAI) }

// NewAnthropic starts a fake Anthropic Messages server.
func NewAnthropic(t testing.TB) *Server { return newServer(t, Anthropic) }

// NewGemini starts a fake Gemini generateContent server.
func NewGemini(t testing.TB) *Server { return newServer(t, Gemini) }

// New starts a fake server of the given flavor.
func New(t testing.TB, f Flavor) *Server { return newServer(t, f) }

func newServer(t testing.TB, f Flavor) *Server {
	t.Helper()
	s := &Server{flavor: f, t: t, done: make(chan struct{}), apiKey: DefaultAPIKey}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(func() {
		close(s.done) // release hanging handlers so Close does not wait for them
		s.srv.Close()
	})
	return s
}

// URL is the server's root URL.
func (s *Server) URL() string { return s.srv.URL }

// BaseURL is what to configure as base_url: with /v1 for OpenAI (whose SDK
// paths are relative to it), the root for Anthropic and Gemini (whose SDKs
// add /v1 and /v1beta themselves).
func (s *Server) BaseURL() string {
	switch s.flavor {
	case OpenAI:
		return s.srv.URL + "/v1"
	case Gemini:
		return s.srv.URL + "/"
	}
	return s.srv.URL
}

// Client returns an HTTP client for the server.
func (s *Server) Client() *http.Client { return s.srv.Client() }

// APIKey is the key the server accepts.
func (s *Server) APIKey() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.apiKey
}

// SetAPIKey changes the accepted key; "" accepts requests without any key
// (Ollama, vLLM).
func (s *Server) SetAPIKey(k string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.apiKey = k
}

// Enqueue adds scripted replies, answered in order before the handler.
func (s *Server) Enqueue(r ...Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queue = append(s.queue, r...)
}

// Handle answers requests (once the queue is empty) with f.
func (s *Server) Handle(f func(ChatRequest) Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.handler = f
}

// HandleText answers requests (once the queue is empty) with f's text.
func (s *Server) HandleText(f func(ChatRequest) string) {
	s.Handle(func(r ChatRequest) Reply { return Reply{Text: f(r)} })
}

// Requests returns every request received so far, in arrival order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.reqs...)
}

// Last returns the most recent request (zero Request if none).
func (s *Server) Last() Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.reqs) == 0 {
		return Request{}
	}
	return s.reqs[len(s.reqs)-1]
}

// Calls is the number of requests received.
func (s *Server) Calls() int { return int(s.calls.Load()) }

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	n := s.calls.Add(1)
	raw, _ := io.ReadAll(r.Body) // a short body fails validation below
	rec := Request{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Raw: raw}
	_ = json.Unmarshal(raw, &rec.Body) // nil Body fails validation below

	s.mu.Lock()
	key := s.apiKey
	s.mu.Unlock()

	problem := ""
	switch s.flavor {
	case OpenAI:
		rec.Chat, problem = parseOpenAI(r, rec.Body)
	case Anthropic:
		rec.Chat, problem = parseAnthropic(r, rec.Body)
	case Gemini:
		rec.Chat, problem = parseGemini(r, rec.Body)
	}

	s.mu.Lock()
	s.reqs = append(s.reqs, rec)
	var reply Reply
	haveReply := false
	if problem == "" && s.keyOK(r, key) {
		if len(s.queue) > 0 {
			reply, s.queue = s.queue[0], s.queue[1:]
			haveReply = true
		} else if s.handler != nil {
			h := s.handler
			s.mu.Unlock()
			reply = h(rec.Chat)
			s.mu.Lock()
			haveReply = true
		}
	}
	s.mu.Unlock()

	reqID := fmt.Sprintf("req_%d", n)
	switch {
	case problem != "":
		s.t.Errorf("llmtest: invalid %s request to %s: %s", s.flavor, r.URL.Path, problem)
		s.write(w, s.invalidReply(problem), rec.Chat, reqID)
		return
	case !s.keyOK(r, key):
		s.write(w, s.authReply(r), rec.Chat, reqID)
		return
	case !haveReply:
		reply = Reply{Text: "ok"}
	}

	if reply.Delay > 0 {
		select {
		case <-time.After(reply.Delay):
		case <-r.Context().Done():
			return
		case <-s.done:
			return
		}
	}
	if reply.Hang {
		select {
		case <-r.Context().Done():
		case <-s.done:
		}
		return
	}
	if reply.Drop {
		if hj, ok := w.(http.Hijacker); ok {
			if conn, _, err := hj.Hijack(); err == nil {
				_ = conn.Close() // the point is an abrupt close
				return
			}
		}
		panic(http.ErrAbortHandler) // fallback: net/http aborts the response
	}
	s.write(w, reply, rec.Chat, reqID)
}

func (s *Server) keyOK(r *http.Request, key string) bool {
	if key == "" {
		return true
	}
	switch s.flavor {
	case OpenAI:
		return r.Header.Get("Authorization") == "Bearer "+key
	case Anthropic:
		return r.Header.Get("X-Api-Key") == key
	case Gemini:
		return r.Header.Get("X-Goog-Api-Key") == key
	}
	return false
}

// authReply is what the real API answers to a wrong key.
func (s *Server) authReply(r *http.Request) Reply {
	switch s.flavor {
	case OpenAI:
		// OpenAI echoes a masked key; clients must not log even that.
		got := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		return OpenAIError(401, "invalid_request_error", "invalid_api_key",
			"Incorrect API key provided: "+mask(got)+". You can find your API key at https://platform.openai.com/account/api-keys.")
	case Anthropic:
		return AnthropicError(401, "authentication_error", "invalid x-api-key")
	default:
		return GeminiError(400, "INVALID_ARGUMENT", "API key not valid. Please pass a valid API key.",
			map[string]any{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID", "domain": "googleapis.com"})
	}
}

func mask(k string) string {
	if len(k) <= 8 {
		return "****"
	}
	return k[:3] + strings.Repeat("*", 4) + k[len(k)-4:]
}

func (s *Server) invalidReply(problem string) Reply {
	msg := "llmtest: " + problem
	switch s.flavor {
	case OpenAI:
		return OpenAIError(400, "invalid_request_error", "", msg)
	case Anthropic:
		return AnthropicError(400, "invalid_request_error", msg)
	default:
		return GeminiError(400, "INVALID_ARGUMENT", msg)
	}
}

func (s *Server) write(w http.ResponseWriter, reply Reply, chat ChatRequest, reqID string) {
	status := reply.Status
	if status == 0 {
		status = http.StatusOK
	}
	body := reply.Body
	if body == "" && status == http.StatusOK {
		body = s.render(reply, chat, reqID)
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	switch s.flavor {
	case OpenAI:
		h.Set("x-request-id", reqID)
		h.Set("openai-processing-ms", "12")
		h.Set("x-ratelimit-limit-requests", "10000")
		h.Set("x-ratelimit-remaining-requests", "9999")
		h.Set("x-ratelimit-reset-requests", "6ms")
		h.Set("x-ratelimit-limit-tokens", "2000000")
		h.Set("x-ratelimit-remaining-tokens", "1999000")
		h.Set("x-ratelimit-reset-tokens", "30ms")
	case Anthropic:
		h.Set("request-id", reqID)
		reset := time.Now().Add(time.Minute).UTC().Format(time.RFC3339)
		h.Set("anthropic-ratelimit-requests-limit", "4000")
		h.Set("anthropic-ratelimit-requests-remaining", "3999")
		h.Set("anthropic-ratelimit-requests-reset", reset)
		h.Set("anthropic-ratelimit-input-tokens-limit", "2000000")
		h.Set("anthropic-ratelimit-input-tokens-remaining", "1999000")
		h.Set("anthropic-ratelimit-input-tokens-reset", reset)
	}
	for k, v := range reply.Header {
		h.Set(k, v)
	}
	w.WriteHeader(status)
	_, _ = io.WriteString(w, body) // the client may be gone; nothing to do
}

func (s *Server) render(r Reply, chat ChatRequest, reqID string) string {
	u := Usage{}
	if r.Usage != nil {
		u = *r.Usage
	} else {
		chars := len(chat.System)
		for _, m := range chat.Messages {
			chars += len(m.Content)
		}
		u.Input = chars/4 + 1
		u.Output = len(r.Text)/4 + 1
	}
	var v any
	switch s.flavor {
	case OpenAI:
		finish := r.FinishReason
		if finish == "" {
			finish = "stop"
		}
		var content, refusal any
		if r.Text != "" {
			content = r.Text
		}
		if r.Refusal != "" {
			refusal = r.Refusal
		}
		v = map[string]any{
			"id": "chatcmpl-" + reqID, "object": "chat.completion", "created": time.Now().Unix(), "model": chat.Model,
			"choices": []any{map[string]any{
				"index":         0,
				"message":       map[string]any{"role": "assistant", "content": content, "refusal": refusal, "annotations": []any{}},
				"logprobs":      nil,
				"finish_reason": finish,
			}},
			"usage": map[string]any{
				"prompt_tokens": u.Input, "completion_tokens": u.Output, "total_tokens": u.Input + u.Output,
				"prompt_tokens_details":     map[string]any{"cached_tokens": u.Cached, "audio_tokens": 0},
				"completion_tokens_details": map[string]any{"reasoning_tokens": u.Reasoning, "audio_tokens": 0, "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0},
			},
			"service_tier":       "default",
			"system_fingerprint": "fp_llmtest",
		}
	case Anthropic:
		stop := r.FinishReason
		if stop == "" {
			stop = "end_turn"
		}
		if r.Refusal != "" {
			stop = "refusal"
		}
		content := []any{}
		if r.Text != "" {
			content = append(content, map[string]any{"type": "text", "text": r.Text})
		}
		v = map[string]any{
			"id": "msg_" + reqID, "type": "message", "role": "assistant", "model": chat.Model,
			"content": content, "stop_reason": stop, "stop_sequence": nil,
			"usage": map[string]any{
				"input_tokens":                max(u.Input-u.Cached-u.CacheWrite, 0),
				"cache_creation_input_tokens": u.CacheWrite,
				"cache_read_input_tokens":     u.Cached,
				"cache_creation":              map[string]any{"ephemeral_5m_input_tokens": u.CacheWrite - u.CacheWriteLong, "ephemeral_1h_input_tokens": u.CacheWriteLong},
				"output_tokens":               u.Output,
				"service_tier":                "standard",
			},
		}
	case Gemini:
		finish := r.FinishReason
		if finish == "" {
			finish = "STOP"
		}
		parts := []any{}
		if r.Text != "" {
			parts = append(parts, map[string]any{"text": r.Text})
		}
		usage := map[string]any{
			"promptTokenCount":     u.Input,
			"candidatesTokenCount": max(u.Output-u.Reasoning, 0),
			"totalTokenCount":      u.Input + u.Output,
		}
		if u.Cached > 0 {
			usage["cachedContentTokenCount"] = u.Cached
		}
		if u.Reasoning > 0 {
			usage["thoughtsTokenCount"] = u.Reasoning
		}
		v = map[string]any{
			"candidates": []any{map[string]any{
				"content":      map[string]any{"parts": parts, "role": "model"},
				"finishReason": finish,
				"index":        0,
			}},
			"usageMetadata": usage,
			"modelVersion":  chat.Model,
			"responseId":    reqID,
		}
	}
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // only maps of plain values above
	}
	return string(b)
}

// OpenAIError is an OpenAI error reply: {"error":{"message","type","param","code"}}.
func OpenAIError(status int, typ, code, msg string) Reply {
	var c any
	if code != "" {
		c = code
	}
	b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": msg, "type": typ, "param": nil, "code": c}})
	return Reply{Status: status, Body: string(b)}
}

// AnthropicError is an Anthropic error reply: {"type":"error","error":{"type","message"}}.
func AnthropicError(status int, typ, msg string) Reply {
	b, _ := json.Marshal(map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": msg}, "request_id": "req_err"})
	return Reply{Status: status, Body: string(b)}
}

// GeminiError is a google.rpc.Status error reply.
func GeminiError(status int, grpcStatus, msg string, details ...map[string]any) Reply {
	e := map[string]any{"code": status, "message": msg, "status": grpcStatus}
	if len(details) > 0 {
		e["details"] = details
	}
	b, _ := json.Marshal(map[string]any{"error": e})
	return Reply{Status: status, Body: string(b)}
}

// RetryInfo is a google.rpc.RetryInfo detail, e.g. RetryInfo("26s").
func RetryInfo(delay string) map[string]any {
	return map[string]any{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": delay}
}

// QuotaFailure is a google.rpc.QuotaFailure detail naming quotaID, e.g.
// "GenerateRequestsPerDayPerProjectPerModel-FreeTier".
func QuotaFailure(quotaID string) map[string]any {
	return map[string]any{"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": []any{
		map[string]any{"quotaMetric": "generativelanguage.googleapis.com/generate_content_free_tier_requests", "quotaId": quotaID},
	}}
}

// --- request parsing and validation -------------------------------------

func parseOpenAI(r *http.Request, b map[string]any) (ChatRequest, string) {
	var c ChatRequest
	if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/chat/completions") {
		return c, "want POST …/chat/completions, got " + r.Method + " " + r.URL.Path
	}
	if b == nil {
		return c, "body is not a JSON object"
	}
	c.Model, _ = b["model"].(string)
	if c.Model == "" {
		return c, "model is missing"
	}
	msgs, _ := b["messages"].([]any)
	if len(msgs) == 0 {
		return c, "messages is missing or empty"
	}
	var system []string
	for i, m := range msgs {
		mm, _ := m.(map[string]any)
		role, _ := mm["role"].(string)
		content, ok := mm["content"].(string)
		if !ok {
			return c, fmt.Sprintf("messages[%d].content is not a string", i)
		}
		switch role {
		case "system", "developer":
			system = append(system, content)
		case "user":
			c.Messages = append(c.Messages, llm.Message{Role: llm.RoleUser, Content: content})
		case "assistant":
			c.Messages = append(c.Messages, llm.Message{Role: llm.RoleAssistant, Content: content})
		default:
			return c, fmt.Sprintf("messages[%d].role %q is not allowed", i, role)
		}
	}
	c.System = strings.Join(system, "\n\n")
	_, hasMT := b["max_tokens"]
	_, hasMCT := b["max_completion_tokens"]
	if hasMT && hasMCT {
		return c, "both max_tokens and max_completion_tokens are set"
	}
	if v, ok := b["max_completion_tokens"].(float64); ok {
		c.MaxTokens = int(v)
	} else if v, ok := b["max_tokens"].(float64); ok {
		c.MaxTokens = int(v)
	}
	if t, ok := b["temperature"].(float64); ok {
		c.Temperature = &t
	}
	if v, ok := b["seed"]; ok && v != nil {
		seed, ok := wholeNumber(v, math.MinInt64, math.MaxInt64)
		if !ok {
			return c, fmt.Sprintf("seed %v is not an integer", v)
		}
		c.Seed = &seed
	}
	if rf, ok := b["response_format"].(map[string]any); ok {
		switch rf["type"] {
		case "json_object":
			c.JSON = true
		case "json_schema":
			c.JSON = true
			js, _ := rf["json_schema"].(map[string]any)
			name, _ := js["name"].(string)
			if !schemaName.MatchString(name) {
				return c, fmt.Sprintf("response_format.json_schema.name %q must match [a-zA-Z0-9_-]{1,64}", name)
			}
			c.Schema, _ = js["schema"].(map[string]any)
		case "text":
		default:
			return c, fmt.Sprintf("response_format.type %v is not allowed", rf["type"])
		}
	}
	return c, ""
}

var schemaName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

func parseAnthropic(r *http.Request, b map[string]any) (ChatRequest, string) {
	var c ChatRequest
	if r.Method != http.MethodPost || r.URL.Path != "/v1/messages" {
		return c, "want POST /v1/messages, got " + r.Method + " " + r.URL.Path
	}
	if v := r.Header.Get("anthropic-version"); v != "2023-06-01" {
		return c, fmt.Sprintf("anthropic-version header is %q, want 2023-06-01", v)
	}
	if b == nil {
		return c, "body is not a JSON object"
	}
	c.Model, _ = b["model"].(string)
	if c.Model == "" {
		return c, "model is missing"
	}
	mt, ok := b["max_tokens"].(float64)
	if !ok || mt < 1 {
		return c, "max_tokens is missing (it is required)"
	}
	c.MaxTokens = int(mt)
	if t, ok := b["temperature"].(float64); ok {
		c.Temperature = &t
	}
	if _, ok := b["seed"]; ok {
		return c, "seed: Extra inputs are not permitted"
	}
	breakpoints := 0
	switch sys := b["system"].(type) {
	case nil:
	case string:
		c.System = sys
	case []any:
		var parts []string
		for i, blk := range sys {
			bm, _ := blk.(map[string]any)
			if bm["type"] != "text" {
				return c, fmt.Sprintf("system[%d].type must be text", i)
			}
			txt, _ := bm["text"].(string)
			if txt == "" {
				return c, fmt.Sprintf("system[%d].text is empty", i)
			}
			if _, ok := bm["cache_control"]; ok {
				breakpoints++
			}
			parts = append(parts, txt)
		}
		c.System = strings.Join(parts, "\n\n")
	default:
		return c, "system must be a string or a list of text blocks"
	}
	msgs, _ := b["messages"].([]any)
	if len(msgs) == 0 {
		return c, "messages is missing or empty"
	}
	prev := ""
	for i, m := range msgs {
		mm, _ := m.(map[string]any)
		role, _ := mm["role"].(string)
		if role != "user" && role != "assistant" {
			return c, fmt.Sprintf("messages[%d].role %q: only user and assistant are allowed (system goes top-level)", i, role)
		}
		if i == 0 && role != "user" {
			return c, "the first message must be from the user"
		}
		if role == prev {
			return c, fmt.Sprintf("messages[%d]: roles must alternate (two %s turns in a row)", i, role)
		}
		prev = role
		var text string
		switch content := mm["content"].(type) {
		case string:
			text = content
		case []any:
			for j, blk := range content {
				bm, _ := blk.(map[string]any)
				if bm["type"] != "text" {
					return c, fmt.Sprintf("messages[%d].content[%d].type must be text", i, j)
				}
				if _, ok := bm["cache_control"]; ok {
					breakpoints++
				}
				t, _ := bm["text"].(string)
				text += t
			}
		default:
			return c, fmt.Sprintf("messages[%d].content must be a string or a list of blocks", i)
		}
		if strings.TrimSpace(text) == "" {
			return c, fmt.Sprintf("messages[%d]: text content blocks must be non-empty", i)
		}
		r := llm.RoleUser
		if role == "assistant" {
			r = llm.RoleAssistant
		}
		c.Messages = append(c.Messages, llm.Message{Role: r, Content: text})
	}
	if breakpoints > 4 {
		return c, fmt.Sprintf("%d cache_control breakpoints, at most 4 are allowed", breakpoints)
	}
	if oc, ok := b["output_config"].(map[string]any); ok {
		if f, ok := oc["format"].(map[string]any); ok {
			c.JSON = true
			c.Schema, _ = f["schema"].(map[string]any)
		}
	}
	return c, ""
}

var geminiPath = regexp.MustCompile(`^/v1beta/models/([^/:]+):generateContent$`)

func parseGemini(r *http.Request, b map[string]any) (ChatRequest, string) {
	var c ChatRequest
	m := geminiPath.FindStringSubmatch(r.URL.Path)
	if r.Method != http.MethodPost || m == nil {
		return c, "want POST /v1beta/models/{model}:generateContent, got " + r.Method + " " + r.URL.Path
	}
	c.Model = m[1]
	if b == nil {
		return c, "body is not a JSON object"
	}
	contents, _ := b["contents"].([]any)
	if len(contents) == 0 {
		return c, "contents is missing or empty"
	}
	for i, ct := range contents {
		cm, _ := ct.(map[string]any)
		role, _ := cm["role"].(string)
		text, problem := geminiText(cm)
		if problem != "" {
			return c, fmt.Sprintf("contents[%d]: %s", i, problem)
		}
		switch role {
		case "user":
			c.Messages = append(c.Messages, llm.Message{Role: llm.RoleUser, Content: text})
		case "model":
			c.Messages = append(c.Messages, llm.Message{Role: llm.RoleAssistant, Content: text})
		default:
			return c, fmt.Sprintf("contents[%d].role %q: want user or model", i, role)
		}
	}
	if si, ok := b["systemInstruction"].(map[string]any); ok {
		text, problem := geminiText(si)
		if problem != "" {
			return c, "systemInstruction: " + problem
		}
		c.System = text
	}
	if gc, ok := b["generationConfig"].(map[string]any); ok {
		if v, ok := gc["maxOutputTokens"].(float64); ok {
			c.MaxTokens = int(v)
		}
		if t, ok := gc["temperature"].(float64); ok {
			c.Temperature = &t
		}
		if v, ok := gc["seed"]; ok {
			seed, ok := wholeNumber(v, math.MinInt32, math.MaxInt32)
			if !ok {
				return c, fmt.Sprintf("generationConfig.seed %v is not an int32", v)
			}
			c.Seed = &seed
		}
		if gc["responseMimeType"] == "application/json" {
			c.JSON = true
		}
		c.Schema, _ = gc["responseJsonSchema"].(map[string]any)
	}
	return c, ""
}

// wholeNumber reads a JSON number that must be an integer in [lo, hi].
// (float64 holds every seed WireSeed makes exactly; the bounds are checked
// on the float, so huge values are refused rather than wrapped.)
func wholeNumber(v any, lo, hi float64) (int64, bool) {
	f, ok := v.(float64)
	if !ok || f != math.Trunc(f) || f < lo || f > hi {
		return 0, false
	}
	return int64(f), true
}

func geminiText(content map[string]any) (string, string) {
	parts, _ := content["parts"].([]any)
	if len(parts) == 0 {
		return "", "parts is missing or empty"
	}
	var texts []string
	for _, p := range parts {
		pm, _ := p.(map[string]any)
		t, ok := pm["text"].(string)
		if !ok {
			return "", "a part has no text"
		}
		texts = append(texts, t)
	}
	return strings.Join(texts, "\n\n"), ""
}
