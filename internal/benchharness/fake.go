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
	// roleGenerator writes metrics, scenarios and demographic rewrites
	// (the pipeline preset); its answers are made by genAnswer.
	roleGenerator = "generator"
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
//     {"present": …, "justification": "tok …", "evidence": ["tok tok tok tok"]} with
//     the same usage;
//   - generator replies (the pipeline preset): valid metrics, scenarios
//     and demographic rewrites for each request (fakegen.go), counted and
//     timed per kind; a request it cannot tell is answered 400.
type fakeServer struct {
	start  time.Time
	pools  map[string]*fakePool // by model name
	order  []*fakePool          // distinct pools, in creation order
	roles  map[string]string    // model name → role
	shared *fakePool

	// genMetrics is how many metrics a gen_metrics request gets.
	genMetrics int

	mu       sync.Mutex
	timeline []secondCount // index: whole seconds since start
	gen      map[string]*genCount
	// genUnknown counts generator requests the fake could not tell, and
	// genLastError says what was wrong with the last one.
	genUnknown   int64
	genLastError string
	// outAdjust is, per pool, what the replies' usage says minus what
	// fakeprovider charged: generator replies are as long as their JSON,
	// not the pool's fixed reply length.
	outAdjust map[*fakePool]int64

	// calls, when set (trackCalls), counts each request body answered 200
	// and the requests in flight per client address (cluster.go).
	calls *callLedger
	// occ, when set (Options.TracePools), counts the requests in flight
	// per pool for the occupancy trace (occupancy.go).
	occ *occupancy
}

// genCount is what the fake saw of one kind of generator request.
type genCount struct {
	requests    int64
	corrections int64 // requests that retried after an invalid answer
	first, last time.Duration
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
	s := &fakeServer{pools: map[string]*fakePool{}, roles: map[string]string{},
		gen: map[string]*genCount{}, outAdjust: map[*fakePool]int64{}}
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

// poolCounts is a pool's counters, with output tokens as its replies' usage
// reported them.
func (s *fakeServer) poolCounts(fp *fakePool) fakeprovider.Counts {
	c := fp.p.Counts()
	s.mu.Lock()
	c.OutputTokens += s.outAdjust[fp]
	s.mu.Unlock()
	return c
}

// Counts sums the counters of every pool (PeakInFlight is per pool only).
func (s *fakeServer) Counts() fakeprovider.Counts {
	var t fakeprovider.Counts
	for _, fp := range s.order {
		c := s.poolCounts(fp)
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
	body, err := fakeprovider.ReadBody(r)
	if err != nil {
		http.Error(w, "read body: "+err.Error(), http.StatusBadRequest)
		return
	}
	// Parsed once here, for the model and for the pool's provider.
	req, perr := fakeprovider.ParseRequest(body)
	fp := s.pools[req.Model]
	if fp == nil {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"error":{"message":"The model '` + strings.ReplaceAll(req.Model, `"`, "") + `' does not exist","type":"invalid_request_error","param":null,"code":"model_not_found"}}`))
		return
	}
	var gen genRequest
	if s.roles[req.Model] == roleGenerator {
		// Told apart before the pool sees it: a request the fake cannot
		// answer correctly fails at once, and loudly, instead of being
		// answered with text the tool might take for a model's mistake.
		if gen, err = parseGenRequest(body); err != nil {
			s.genUnknownRequest(w, err)
			return
		}
		s.noteGen(gen, arrived)
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	rec := &recorder{header: http.Header{}, status: http.StatusOK}
	if s.calls != nil {
		done := s.calls.begin(r.RemoteAddr)
		defer done()
	}
	if s.occ != nil {
		end := s.occ.begin(fp.name, s.roles[req.Model], body)
		defer end()
	}
	if perr != nil {
		fp.p.ServeHTTP(rec, r) // answers the parse error as the provider words it
	} else {
		fp.p.Serve(rec, r, req)
	}
	if s.calls != nil && rec.status == http.StatusOK {
		s.calls.answered(body, r.RemoteAddr, arrived)
	}
	// The 429 decision is made on arrival; count it in that second.
	s.note(fp, arrived, rec.status)
	out := rec.body.Bytes()
	if rec.status == http.StatusOK {
		switch s.roles[req.Model] {
		case roleJudge:
			out = judgeReply(out, body)
		case roleGenerator:
			out = s.generatorReply(fp, out, gen)
		}
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
	// Every fake target reply is OutputTokens (64 by default) times "tok ":
	// four of them are whole words and long enough to be evidence, so no
	// verdict is asked again and the measured call counts stay one per judge.
	verdict, err := json.Marshal(map[string]any{"present": h.Sum32()%2 == 0, "justification": text, "evidence": []string{"tok tok tok tok"}})
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

// generatorReply replaces the reply text of a chat completion with the
// generator's answer to g, and its completion_tokens with the answer's
// length (a quarter of its bytes, as the fake counts prompts).
func (s *fakeServer) generatorReply(fp *fakePool, resp []byte, g genRequest) []byte {
	text, err := genAnswer(g, s.genMetrics)
	var m map[string]any
	if err == nil {
		err = json.Unmarshal(resp, &m)
	}
	choices, _ := m["choices"].([]any)
	usage, _ := m["usage"].(map[string]any)
	if err != nil || len(choices) == 0 || usage == nil {
		// Not reached with fakeprovider's answers; a plain "tok tok" would
		// fail the run's validation, which is loud enough.
		return resp
	}
	ch, _ := choices[0].(map[string]any)
	ch["message"] = map[string]any{"role": "assistant", "content": text, "refusal": nil}
	ch["finish_reason"] = "stop"
	charged, _ := usage["completion_tokens"].(float64)
	prompt, _ := usage["prompt_tokens"].(float64)
	out := (len(text) + 3) / 4
	usage["completion_tokens"], usage["total_tokens"] = out, int(prompt)+out
	s.mu.Lock()
	s.outAdjust[fp] += int64(out) - int64(charged)
	s.mu.Unlock()
	b, err := json.Marshal(m)
	if err != nil {
		return resp
	}
	return b
}

// noteGen counts a generator request of a known kind.
func (s *fakeServer) noteGen(g genRequest, at time.Time) {
	since := max(at.Sub(s.start), 0)
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.gen[g.kind]
	if c == nil {
		c = &genCount{first: since}
		s.gen[g.kind] = c
	}
	c.requests++
	if g.correction {
		c.corrections++
	}
	c.last = max(c.last, since)
}

func (s *fakeServer) genUnknownRequest(w http.ResponseWriter, err error) {
	msg := "benchharness fake generator: cannot tell which generation step this request is: " + err.Error()
	s.mu.Lock()
	s.genUnknown++
	s.genLastError = msg
	s.mu.Unlock()
	b, _ := json.Marshal(map[string]any{"error": map[string]any{
		"message": msg, "type": "invalid_request_error", "param": nil, "code": "unrecognised_generator_request",
	}})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	_, _ = w.Write(b)
}

// genCounts returns a copy of the generator counters.
func (s *fakeServer) genCounts() (map[string]genCount, int64, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]genCount, len(s.gen))
	for k, c := range s.gen {
		out[k] = *c
	}
	return out, s.genUnknown, s.genLastError
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
