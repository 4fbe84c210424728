// Package fakebatch provides in-process fakes of the OpenAI Batch API
// (/v1/files, /v1/batches) and the Anthropic Message Batches API
// (/v1/messages/batches), for tests of any package that uses package batch.
//
// A fake checks requests the way the real API does (auth headers,
// anthropic-version, multipart purpose=batch, JSONL line shape, custom_id
// rules, endpoint and completion_window, size limits): a malformed request
// fails the test and gets a 400. Every submitted request is executed by an
// llmtest server of the same flavour, so each line's body is validated
// exactly like a real-time request and answered with a real-time answer
// body. Results come back in reverse submission order, to exercise joining
// by custom_id.
//
//	srv := fakebatch.NewOpenAI(t, fakebatch.Options{PollsBeforeDone: 2,
//		Answer: func(id string, r llmtest.ChatRequest) fakebatch.Outcome {
//			if id == "bad" {
//				return fakebatch.Outcome{Reply: llmtest.OpenAIError(400, "invalid_request_error", "", "nope")}
//			}
//			return fakebatch.Outcome{Reply: llmtest.Text(`{"present":true}`, llmtest.Usage{Input: 100, Output: 10})}
//		}})
//	p, _ := batch.NewOpenAI(batch.OpenAIConfig{BaseURL: srv.BaseURL(), APIKey: srv.APIKey(), Model: "gpt-4o-mini", HTTPClient: srv.Client()})
package fakebatch

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/impactbench/impactbench/internal/llm/llmtest"
)

// Outcome is what happens to one submitted request.
type Outcome struct {
	// Reply is the model's answer (text and usage, or an error status and
	// body such as llmtest.OpenAIError / llmtest.AnthropicError).
	Reply llmtest.Reply
	// Expire: the request does not run before the batch ends (OpenAI: the
	// batch ends "expired"; Anthropic: an "expired" result).
	Expire bool
	// Cancel: the request does not run because the batch was cancelled.
	Cancel bool
}

// BatchError is one entry of a failed OpenAI batch's errors list.
type BatchError struct {
	Code    string
	Message string
	Line    int // 1-based input line, 0 for the whole file
}

// Options configure a fake.
type Options struct {
	// APIKey is the accepted key (default llmtest.DefaultAPIKey).
	APIKey string
	// PollsBeforeDone is how many status requests of a batch are answered
	// "in progress" before it ends (0: the first one sees it ended).
	PollsBeforeDone int
	// Answer decides each request's outcome (default: the text
	// "answer to <custom_id>").
	Answer func(customID string, req llmtest.ChatRequest) Outcome
	// DuplicateResults repeats a result line; UnknownResults adds a line for
	// a custom_id that was never submitted.
	DuplicateResults bool
	UnknownResults   bool
	// FailBatch (OpenAI) makes batch n (1-based, in creation order) fail
	// validation with the returned errors; nothing of it runs.
	FailBatch func(n int, customIDs []string) []BatchError
	// CreateStatuses are answered, in order, to the next batch creations
	// instead of creating them (e.g. 500, 429); the body is the provider's
	// error shape.
	CreateStatuses []int
	// MaxRequests and MaxBytes are the limits the fake enforces per batch
	// (0: the providers' published limits). Exceeding them fails the test.
	MaxRequests int
	MaxBytes    int64
}

// Request is one recorded HTTP request to the fake.
type Request struct {
	Method string
	Path   string
	Header http.Header
	Body   []byte
}

// Server is a fake batch API. Safe for concurrent use.
type Server struct {
	flavor llmtest.Flavor
	t      testing.TB
	opts   Options
	srv    *httptest.Server
	inner  *llmtest.Server

	execMu sync.Mutex // one execution at a time, so the inner handler knows the custom_id
	curMu  sync.Mutex
	curID  string
	curOut Outcome

	mu          sync.Mutex
	reqs        []Request
	files       map[string]*file
	batches     map[string]*fbatch
	nbatches    int
	nfiles      int
	submissions map[string]int
	lines       []json.RawMessage
	createQ     []int
}

type file struct {
	id       string
	purpose  string
	filename string
	data     []byte
	lines    []inputLine
}

type inputLine struct {
	CustomID string          `json:"custom_id"`
	Method   string          `json:"method"`
	URL      string          `json:"url"`
	Body     json.RawMessage `json:"body"`
}

type fbatch struct {
	id        string
	n         int
	created   time.Time
	customIDs []string
	model     string
	inputFile string
	polls     int
	failure   []BatchError
	results   []execResult
	ended     bool
	endedAt   time.Time
	outFile   string
	errFile   string
	status    string // OpenAI status once ended
	metadata  map[string]string
}

type execResult struct {
	customID string
	status   int
	reqID    string
	body     []byte
	expire   bool
	cancel   bool
}

// NewOpenAI starts a fake OpenAI Batch API. Configure the provider with
// BaseURL() (it ends in /v1, like openai.DefaultBaseURL).
func NewOpenAI(t testing.TB, opts Options) *Server { return newServer(t, llmtest.OpenAI, opts) }

// NewAnthropic starts a fake Anthropic Message Batches API. Configure the
// provider with BaseURL() (no /v1: the SDK adds it).
func NewAnthropic(t testing.TB, opts Options) *Server {
	return newServer(t, llmtest.Anthropic, opts)
}

func newServer(t testing.TB, f llmtest.Flavor, opts Options) *Server {
	t.Helper()
	if opts.APIKey == "" {
		opts.APIKey = llmtest.DefaultAPIKey
	}
	if opts.MaxRequests <= 0 {
		opts.MaxRequests = map[llmtest.Flavor]int{llmtest.OpenAI: 50_000, llmtest.Anthropic: 100_000}[f]
	}
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = map[llmtest.Flavor]int64{llmtest.OpenAI: 200_000_000, llmtest.Anthropic: 256_000_000}[f]
	}
	s := &Server{
		flavor: f, t: t, opts: opts, inner: llmtest.New(t, f),
		files: map[string]*file{}, batches: map[string]*fbatch{}, submissions: map[string]int{},
		createQ: append([]int(nil), opts.CreateStatuses...),
	}
	s.inner.Handle(s.innerAnswer)
	mux := http.NewServeMux()
	if f == llmtest.OpenAI {
		mux.HandleFunc("POST /v1/files", s.openAIUpload)
		mux.HandleFunc("DELETE /v1/files/{id}", s.openAIDeleteFile)
		mux.HandleFunc("GET /v1/files/{id}/content", s.openAIContent)
		mux.HandleFunc("POST /v1/batches", s.openAICreate)
		mux.HandleFunc("GET /v1/batches/{id}", s.openAIGet)
	} else {
		mux.HandleFunc("POST /v1/messages/batches", s.anthropicCreate)
		mux.HandleFunc("GET /v1/messages/batches/{id}", s.anthropicGet)
		mux.HandleFunc("GET /v1/messages/batches/{id}/results", s.anthropicResults)
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.t.Errorf("fakebatch: unexpected %s %s", r.Method, r.URL.Path)
		s.writeError(w, http.StatusNotFound, "not_found_error", "unknown endpoint "+r.Method+" "+r.URL.Path)
	})
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body) // a short body fails validation later
		r.Body = io.NopCloser(bytes.NewReader(body))
		s.mu.Lock()
		s.reqs = append(s.reqs, Request{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body})
		s.mu.Unlock()
		if !s.authOK(r) {
			s.writeAuthError(w)
			return
		}
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(s.srv.Close)
	return s
}

// URL is the server's root URL.
func (s *Server) URL() string { return s.srv.URL }

// BaseURL is what to configure as base_url: with /v1 for OpenAI, the root
// for Anthropic.
func (s *Server) BaseURL() string {
	if s.flavor == llmtest.OpenAI {
		return s.srv.URL + "/v1"
	}
	return s.srv.URL
}

// Client returns an HTTP client for the server.
func (s *Server) Client() *http.Client { return s.srv.Client() }

// APIKey is the accepted key.
func (s *Server) APIKey() string { return s.opts.APIKey }

// Inner is the llmtest server that executed the submitted requests (its
// Requests() are the real-time-equivalent requests, as validated).
func (s *Server) Inner() *llmtest.Server { return s.inner }

// Requests returns every HTTP request received, in arrival order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.reqs...)
}

// Lines returns every submitted request as sent (OpenAI: the JSONL input
// lines; Anthropic: the objects of "requests"), in submission order.
func (s *Server) Lines() []json.RawMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]json.RawMessage(nil), s.lines...)
}

// Submissions is how many created batches contained customID.
func (s *Server) Submissions(customID string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.submissions[customID]
}

// TotalSubmissions counts submitted requests over all created batches.
func (s *Server) TotalSubmissions() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, c := range s.submissions {
		n += c
	}
	return n
}

// Resubmitted returns the custom_ids submitted more than once, sorted
// (handy for "nothing was paid twice" assertions: expect none).
func (s *Server) Resubmitted() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for id, c := range s.submissions {
		if c > 1 {
			out = append(out, id)
		}
	}
	sort.Strings(out)
	return out
}

// Batches returns the custom_ids of each created batch, in creation order.
func (s *Server) Batches() [][]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([][]string, 0, len(s.batches))
	for n := 1; n <= s.nbatches; n++ {
		for _, b := range s.batches {
			if b.n == n {
				out = append(out, append([]string(nil), b.customIDs...))
			}
		}
	}
	return out
}

func (s *Server) authOK(r *http.Request) bool {
	if s.flavor == llmtest.OpenAI {
		return r.Header.Get("Authorization") == "Bearer "+s.opts.APIKey
	}
	return r.Header.Get("X-Api-Key") == s.opts.APIKey
}

func (s *Server) writeAuthError(w http.ResponseWriter) {
	if s.flavor == llmtest.OpenAI {
		s.writeReply(w, llmtest.OpenAIError(401, "invalid_request_error", "invalid_api_key", "Incorrect API key provided."))
		return
	}
	s.writeReply(w, llmtest.AnthropicError(401, "authentication_error", "invalid x-api-key"))
}

// writeError answers with the provider's error shape.
func (s *Server) writeError(w http.ResponseWriter, status int, typ, msg string) {
	if s.flavor == llmtest.OpenAI {
		if typ == "" || typ == "not_found_error" {
			typ = "invalid_request_error"
		}
		s.writeReply(w, llmtest.OpenAIError(status, typ, "", msg))
		return
	}
	if typ == "" {
		typ = "invalid_request_error"
	}
	s.writeReply(w, llmtest.AnthropicError(status, typ, msg))
}

// invalid fails the test and answers 400: the client sent what the real
// API rejects.
func (s *Server) invalid(w http.ResponseWriter, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	s.t.Errorf("fakebatch: invalid %s batch request: %s", s.flavor, msg)
	s.writeError(w, http.StatusBadRequest, "invalid_request_error", "fakebatch: "+msg)
}

func (s *Server) writeReply(w http.ResponseWriter, r llmtest.Reply) {
	w.Header().Set("Content-Type", "application/json")
	for k, v := range r.Header {
		w.Header().Set(k, v)
	}
	status := r.Status
	if status == 0 {
		status = http.StatusOK
	}
	w.WriteHeader(status)
	_, _ = io.WriteString(w, r.Body) // the client may be gone
}

func (s *Server) writeJSON(w http.ResponseWriter, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // only plain maps
	}
	s.writeReply(w, llmtest.Reply{Body: string(b)})
}

// popCreateStatus returns the next scripted creation failure (0: none).
func (s *Server) popCreateStatus() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.createQ) == 0 {
		return 0
	}
	st := s.createQ[0]
	s.createQ = s.createQ[1:]
	return st
}

func (s *Server) createFailure(w http.ResponseWriter, status int) {
	typ := "api_error"
	switch {
	case status == http.StatusTooManyRequests:
		typ = "rate_limit_error"
	case status == 529:
		typ = "overloaded_error"
	case status < 500:
		typ = "invalid_request_error"
	}
	if s.flavor == llmtest.OpenAI {
		s.writeReply(w, llmtest.OpenAIError(status, "server_error", "", "scripted failure"))
		return
	}
	s.writeReply(w, llmtest.AnthropicError(status, typ, "scripted failure"))
}

// innerAnswer answers the llmtest server for the request being executed.
func (s *Server) innerAnswer(cr llmtest.ChatRequest) llmtest.Reply {
	s.curMu.Lock()
	id := s.curID
	s.curMu.Unlock()
	o := Outcome{Reply: llmtest.Reply{Text: "answer to " + id}}
	if s.opts.Answer != nil {
		o = s.opts.Answer(id, cr)
	}
	s.curMu.Lock()
	s.curOut = o
	s.curMu.Unlock()
	return o.Reply
}

// execute runs one request against the inner server, like the provider
// runs a batch line against its real-time endpoint.
func (s *Server) execute(customID string, body []byte) execResult {
	s.execMu.Lock()
	defer s.execMu.Unlock()
	s.curMu.Lock()
	s.curID, s.curOut = customID, Outcome{}
	s.curMu.Unlock()

	var req *http.Request
	var err error
	if s.flavor == llmtest.OpenAI {
		req, err = http.NewRequest(http.MethodPost, s.inner.BaseURL()+"/chat/completions", bytes.NewReader(body))
		if err == nil {
			req.Header.Set("Authorization", "Bearer "+s.inner.APIKey())
		}
	} else {
		req, err = http.NewRequest(http.MethodPost, s.inner.URL()+"/v1/messages", bytes.NewReader(body))
		if err == nil {
			req.Header.Set("X-Api-Key", s.inner.APIKey())
			req.Header.Set("Anthropic-Version", "2023-06-01")
		}
	}
	if err != nil {
		s.t.Errorf("fakebatch: %v", err)
		return execResult{customID: customID, status: 500, body: []byte(`{}`)}
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.inner.Client().Do(req)
	if err != nil {
		s.t.Errorf("fakebatch: execute %s: %v", customID, err)
		return execResult{customID: customID, status: 500, body: []byte(`{}`)}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body) // in-process: a short read shows as a bad body
	s.curMu.Lock()
	out := s.curOut
	s.curMu.Unlock()
	reqID := resp.Header.Get("x-request-id")
	if reqID == "" {
		reqID = resp.Header.Get("request-id")
	}
	return execResult{customID: customID, status: resp.StatusCode, reqID: reqID, body: b, expire: out.Expire, cancel: out.Cancel}
}

// countSubmission records a created batch's requests.
func (s *Server) countSubmission(ids []string, lines []json.RawMessage) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, id := range ids {
		s.submissions[id]++
	}
	s.lines = append(s.lines, lines...)
}

func reversed[T any](in []T) []T {
	out := make([]T, len(in))
	for i, v := range in {
		out[len(in)-1-i] = v
	}
	return out
}

func rfc3339(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }
