package benchharness

import (
	"bytes"
	"encoding/json"
	"hash/fnv"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/impactbench/impactbench/internal/llm/ratelimit/fakeprovider"
)

// Roles of the models the harness configures; the fake tells them apart by
// the model name in the request.
const (
	roleUser   = "user"
	roleTarget = "target"
	roleJudge  = "judge"
)

// fakePool is one rate-limit pool of the fake provider.
type fakePool struct {
	name string // model name, or "shared"
	p    *fakeprovider.Provider
	// first and last request, since the server started (guarded by
	// fakeServer.mu); seen is false until the first request.
	first, last time.Duration
	seen        bool
}

// fakeServer wraps fakeprovider.Provider (which enforces RPM/TPM with 429,
// Retry-After and x-ratelimit-* headers and counts requests and tokens) with
// what a benchmark needs on top:
//
//   - one limit pool per model name (OpenAI's limits are per model), or one
//     pool for every model (SharedPool);
//   - a per-second timeline of requests and 429s, for "429s after the first
//     minute" (fakeprovider keeps totals only);
//   - judge replies the tool can parse: fakeprovider answers "tok tok …",
//     which is a valid simulated-user message and target reply but not a
//     JSON verdict, so judge answers are rewritten to
//     {"present": …, "justification": "tok …", "evidence": ["tok"]} with
//     the same usage.
type fakeServer struct {
	start  time.Time
	pools  map[string]*fakePool // by model name
	order  []*fakePool          // distinct pools, in creation order
	roles  map[string]string    // model name → role
	shared *fakePool

	mu       sync.Mutex
	timeline []secondCount // index: whole seconds since start
}

type secondCount struct {
	Requests    int64 `json:"requests"`
	RateLimited int64 `json:"rate_limited"`
}

type modelSpec struct {
	name   string
	role   string
	output int // reply length in tokens
}

func newFakeServer(models []modelSpec, base fakeprovider.Config, shared bool) *fakeServer {
	s := &fakeServer{pools: map[string]*fakePool{}, roles: map[string]string{}}
	if shared {
		cfg := base
		cfg.Model = "shared"
		s.shared = &fakePool{name: "shared", p: fakeprovider.New(cfg)}
		s.order = append(s.order, s.shared)
	}
	for _, m := range models {
		s.roles[m.name] = m.role
		if shared {
			s.pools[m.name] = s.shared
			continue
		}
		cfg := base
		cfg.Model, cfg.OutputTokens = m.name, m.output
		fp := &fakePool{name: m.name, p: fakeprovider.New(cfg)}
		s.pools[m.name] = fp
		s.order = append(s.order, fp)
	}
	s.start = time.Now()
	return s
}

// Counts sums the counters of every pool (PeakInFlight is per pool only).
func (s *fakeServer) Counts() fakeprovider.Counts {
	var t fakeprovider.Counts
	for _, fp := range s.order {
		c := fp.p.Counts()
		t.Requests += c.Requests
		t.Accepted += c.Accepted
		t.RateLimited += c.RateLimited
		t.ByRequests += c.ByRequests
		t.ByTokens += c.ByTokens
		t.ByConcurrent += c.ByConcurrent
		t.InputTokens += c.InputTokens
		t.OutputTokens += c.OutputTokens
	}
	return t
}

// active returns when a pool saw its first and last request.
func (s *fakeServer) active(fp *fakePool) (first, last time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return fp.first, fp.last
}

// Timeline returns a copy of the per-second counts.
func (s *fakeServer) Timeline() []secondCount {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]secondCount(nil), s.timeline...)
}

func (s *fakeServer) note(fp *fakePool, at time.Time, status int) {
	since := max(at.Sub(s.start), 0)
	sec := int(since / time.Second)
	s.mu.Lock()
	defer s.mu.Unlock()
	if !fp.seen {
		fp.first, fp.seen = since, true
	}
	fp.last = max(fp.last, since)
	for len(s.timeline) <= sec {
		s.timeline = append(s.timeline, secondCount{})
	}
	s.timeline[sec].Requests++
	if status == http.StatusTooManyRequests {
		s.timeline[sec].RateLimited++
	}
}

func (s *fakeServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	arrived := time.Now()
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, "read body: "+err.Error(), http.StatusBadRequest)
		return
	}
	var head struct {
		Model string `json:"model"`
	}
	_ = json.Unmarshal(body, &head)
	fp := s.pools[head.Model]
	if fp == nil {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"error":{"message":"The model '` + strings.ReplaceAll(head.Model, `"`, "") + `' does not exist","type":"invalid_request_error","param":null,"code":"model_not_found"}}`))
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	rec := &recorder{header: http.Header{}, status: http.StatusOK}
	fp.p.ServeHTTP(rec, r)
	// The 429 decision is made on arrival; count it in that second.
	s.note(fp, arrived, rec.status)
	out := rec.body.Bytes()
	if rec.status == http.StatusOK && s.roles[head.Model] == roleJudge {
		out = judgeReply(out, body)
	}
	for k, v := range rec.header {
		w.Header()[k] = v
	}
	w.WriteHeader(rec.status)
	_, _ = w.Write(out)
}

// judgeReply replaces the reply text of a chat completion with a JSON
// verdict of about the same length; the verdict is a hash of the request,
// so runs are reproducible.
func judgeReply(resp, req []byte) []byte {
	var m map[string]any
	if json.Unmarshal(resp, &m) != nil {
		return resp
	}
	choices, _ := m["choices"].([]any)
	if len(choices) == 0 {
		return resp
	}
	ch, _ := choices[0].(map[string]any)
	msg, _ := ch["message"].(map[string]any)
	if msg == nil {
		return resp
	}
	text, _ := msg["content"].(string)
	h := fnv.New32a()
	h.Write(req)
	// "tok" is in every fake target reply: the evidence checks out, so no
	// verdict is asked again and the measured call counts stay one per judge.
	verdict, err := json.Marshal(map[string]any{"present": h.Sum32()%2 == 0, "justification": text, "evidence": []string{"tok"}})
	if err != nil {
		return resp
	}
	msg["content"] = string(verdict)
	// A verdict cut short by max_tokens would not parse; the fake's
	// "length" finish only means the reply reached the cap.
	ch["finish_reason"] = "stop"
	b, err := json.Marshal(m)
	if err != nil {
		return resp
	}
	return b
}

// recorder buffers a handler's answer so it can be edited before sending.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
	wrote  bool
}

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) WriteHeader(code int) {
	if !r.wrote {
		r.status, r.wrote = code, true
	}
}

func (r *recorder) Write(b []byte) (int, error) {
	r.wrote = true
	return r.body.Write(b)
}
