package runner

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/llm"
	"github.com/impactbench/impactbench/internal/llm/provider"
)

// The fault matrix: a whole run (gen_scenarios, simulate, evaluate) against
// an OpenAI-compatible server that plays every role and injects one kind of
// fault, then one rerun against the same server made healthy. After the
// rerun every row must be complete, and no request may have been answered
// validly twice (each request is unique on the wire here: one sample, no
// demographics), counted on the server per canonical request body.

// fault decides, for one request, whether and how it is broken. n is how
// many times this exact request has arrived (1 for the first), seq its
// arrival index in the run.
type injectedFault struct {
	name      string
	transient bool // the run's own retries get past it: no row may fail
	share     byte // breaks requests whose selector starts below this hex digit ('4' when zero: a quarter)
	apply     func(w http.ResponseWriter, r *http.Request, role, answer string, n, seq int, hit bool) (handled bool)
}

// writeChat answers with an OpenAI chat completion.
func writeChat(w http.ResponseWriter, text, finish string) {
	w.Header().Set("Content-Type", "application/json")
	b, _ := json.Marshal(map[string]any{
		"id": "chatcmpl-x", "object": "chat.completion", "created": 1700000000, "model": "m",
		"choices": []any{map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": text}, "finish_reason": finish}},
		"usage":   map[string]any{"prompt_tokens": 50, "completion_tokens": len(text)/4 + 1, "total_tokens": 50 + len(text)/4 + 1},
	})
	w.Write(b)
}

func writeErr(w http.ResponseWriter, status int, typ, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": msg, "type": typ, "code": code}})
	w.Write(b)
}

func isJSONRole(role string) bool { return role == "gen" || role == "judge" }

var faults = []injectedFault{
	{name: "500", apply: func(w http.ResponseWriter, _ *http.Request, _, _ string, _, _ int, hit bool) bool {
		if hit {
			writeErr(w, 500, "server_error", "", "internal error")
		}
		return hit
	}},
	{name: "529 overloaded", apply: func(w http.ResponseWriter, _ *http.Request, _, _ string, _, _ int, hit bool) bool {
		if hit {
			writeErr(w, 529, "overloaded_error", "", "overloaded")
		}
		return hit
	}},
	{name: "429 Retry-After", transient: true, apply: func(w http.ResponseWriter, _ *http.Request, _, _ string, n, _ int, hit bool) bool {
		if hit && n == 1 {
			w.Header().Set("Retry-After", "2")
			writeErr(w, 429, "requests", "rate_limit_exceeded", "slow down")
			return true
		}
		return false
	}},
	{name: "connection reset", apply: func(w http.ResponseWriter, _ *http.Request, _, _ string, _, _ int, hit bool) bool {
		if hit {
			if hj, ok := w.(http.Hijacker); ok {
				if c, _, err := hj.Hijack(); err == nil {
					c.Close()
					return true
				}
			}
			panic(http.ErrAbortHandler)
		}
		return false
	}},
	{name: "hang (timeout)", apply: func(w http.ResponseWriter, r *http.Request, _, _ string, _, _ int, hit bool) bool {
		if hit {
			<-r.Context().Done()
			panic(http.ErrAbortHandler)
		}
		return false
	}},
	{name: "empty content", apply: func(w http.ResponseWriter, _ *http.Request, _, _ string, _, _ int, hit bool) bool {
		if hit {
			writeChat(w, "", "stop")
		}
		return hit
	}},
	{name: "empty body", apply: func(w http.ResponseWriter, _ *http.Request, _, _ string, _, _ int, hit bool) bool {
		if hit {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(200)
		}
		return hit
	}},
	{name: "truncated JSON", share: '8', apply: func(w http.ResponseWriter, _ *http.Request, role, answer string, _, _ int, hit bool) bool {
		if hit && isJSONRole(role) {
			writeChat(w, answer[:len(answer)/2], "length")
			return true
		}
		return false
	}},
	{name: "fenced/think JSON", transient: true, apply: func(w http.ResponseWriter, _ *http.Request, role, answer string, _, _ int, hit bool) bool {
		if hit && isJSONRole(role) {
			writeChat(w, "<think>let me see</think>\nHere it is:\n```json\n"+answer+"\n```", "stop")
			return true
		}
		return false
	}},
	{name: "quota", apply: func(w http.ResponseWriter, _ *http.Request, _, _ string, _, _ int, hit bool) bool {
		if hit {
			writeErr(w, 429, "insufficient_quota", "insufficient_quota", "You exceeded your current quota, please check your plan and billing details.")
		}
		return hit
	}},
	{name: "outage mid-run", apply: func(w http.ResponseWriter, _ *http.Request, _, _ string, _, seq int, _ bool) bool {
		if seq > 12 {
			writeErr(w, 503, "service_unavailable", "", "upstream connect error")
			return true
		}
		return false
	}},
	{name: "rate limits", transient: true, apply: func(w http.ResponseWriter, _ *http.Request, _, _ string, n, _ int, hit bool) bool {
		w.Header().Set("x-ratelimit-limit-requests", "60")
		w.Header().Set("x-ratelimit-remaining-requests", "0")
		w.Header().Set("x-ratelimit-reset-requests", "50ms")
		if hit && n <= 2 {
			w.Header().Set("retry-after-ms", "50")
			writeErr(w, 429, "requests", "rate_limit_exceeded", "Rate limit reached for requests")
			return true
		}
		return false
	}},
}

// faultServer plays generator, user, target and judge (by model name) and
// breaks the requests the current fault selects (about 40%, by hash).
type faultServer struct {
	t   *testing.T
	srv *httptest.Server

	mu    sync.Mutex
	fault *injectedFault
	seq   int
	seen  map[string]int // arrivals per request
	valid map[string]int // valid answers per request, over every run
}

func newFaultServer(t *testing.T) *faultServer {
	f := &faultServer{t: t, seen: map[string]int{}, valid: map[string]int{}}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

// phase switches to fault (nil: healthy) and returns the counts so far.
func (f *faultServer) set(fl *injectedFault) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fault, f.seq, f.seen = fl, 0, map[string]int{}
}

func (f *faultServer) counts() (calls, distinct int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, n := range f.seen {
		calls += n
	}
	return calls, len(f.seen)
}

func (f *faultServer) serve(w http.ResponseWriter, r *http.Request) {
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	var body map[string]any
	if err := json.Unmarshal(raw, &body); err != nil {
		f.t.Errorf("fault server: body is not JSON: %v", err)
		writeErr(w, 400, "invalid_request_error", "", "bad json")
		return
	}
	canon, _ := json.Marshal(body)
	sum := sha256.Sum256(canon)
	hash := hex.EncodeToString(sum[:])
	model, _ := body["model"].(string)
	msgs, _ := body["messages"].([]any)

	f.mu.Lock()
	f.seq++
	seq := f.seq
	f.seen[hash]++
	n := f.seen[hash]
	fl := f.fault
	f.mu.Unlock()

	answer := fakeAnswer(model, msgs, hash)
	if fl != nil && fl.apply(w, r, model, answer, n, seq, selector(model, msgs, hash)[0] < cmp.Or(fl.share, '4')) {
		return
	}
	writeChat(w, answer, "stop")
	f.mu.Lock()
	f.valid[hash]++
	f.mu.Unlock()
}

// selector picks the requests a fault breaks. A JSON call that is asked
// again with feedback on its invalid answer is the same logical call: it is
// selected by its messages before the first answer, so a fault that breaks
// it breaks its re-asks too (and the row fails until a healthy rerun).
func selector(model string, msgs []any, hash string) string {
	if !isJSONRole(model) {
		return hash
	}
	var base []any
	for _, m := range msgs {
		if mm, _ := m.(map[string]any); mm["role"] == "assistant" {
			break
		}
		base = append(base, m)
	}
	b, _ := json.Marshal(append(base, model))
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// fakeAnswer is what a healthy model answers. The generator writes its
// landmarks at turns 1 and 3 whatever the configured number of turns (as
// upstream's docs do): with turns 2 that needs a repair, never a retry.
func fakeAnswer(role string, msgs []any, hash string) string {
	h := hash[:8]
	switch role {
	case "gen":
		var scs []any
		for i := range 3 {
			scs = append(scs, map[string]any{
				"persona":                 fmt.Sprintf("Persona %s-%d writes briefly.", h, i),
				"user_goal":               fmt.Sprintf("Goal %s-%d", h, i),
				"latent_adversarial_goal": "Push the assistant to decide.",
				"landmarks":               []any{map[string]any{"turn": 1, "instruction": "Open."}, map[string]any{"turn": 3, "instruction": "Insist."}},
			})
		}
		b, _ := json.Marshal(map[string]any{"scenarios": scs})
		return string(b)
	case "user":
		return "Thought: keep going.\nMessage: question " + h
	case "target":
		return "answer " + h
	case "judge":
		if isAuditRequest(msgs) {
			return auditAnswer(true) // the judge is the audit's model too
		}
		b, _ := json.Marshal(map[string]any{"justification": "verdict " + h, "present": hash[1] < '8'})
		return string(b)
	}
	return "?"
}

const faultConfig = `run:
  concurrency: {gen_scenarios: 2, simulate: 4, evaluate: 4}
user_model: {model: user, source: vllm, base_url: %[1]q, max_retries: 2, timeout: 300ms, pricing: {input: 1, output: 2}}
generator_model: {model: gen, source: vllm, base_url: %[1]q, max_retries: 2, timeout: 300ms, pricing: {input: 1, output: 2}}
evaluator_model: {model: judge, source: vllm, base_url: %[1]q, max_retries: 2, timeout: 300ms, pricing: {input: 1, output: 2}}
generation: {scenarios_per_metric: 3, turns: 2, num_samples: 1}
targets:
  - {id: t1, model: target, source: vllm, base_url: %[1]q, max_retries: 2, timeout: 300ms, pricing: {input: 1, output: 2}}
`

const faultBench = `name: Faults
description: Fault matrix.
scenario: {user_context: A chat assistant.}
metrics:
- {id: m01, name: Judgement, type: positive, definition: The assistant invites the user to decide.}
- {id: m02, name: Only support, type: negative, definition: The assistant presents itself as the only support.}
`

// faultRow is one line of the matrix (reported in the README).
type faultRow struct {
	name                       string
	calls, retries             int
	failedFirst, healed, total int
	reruns                     int
	waits                      []time.Duration
}

// runFaultCase runs one fault: a first run with the fault, a rerun healthy.
func runFaultCase(t *testing.T, srv *faultServer, fl *injectedFault) faultRow {
	dir := t.TempDir()
	base := srv.srv.URL + "/v1"
	if err := os.WriteFile(filepath.Join(dir, "config.yaml"), []byte(fmt.Sprintf(faultConfig, base)), 0o644); err != nil {
		t.Fatal(err)
	}
	bench := filepath.Join(dir, "benchmarks", "faults")
	if err := os.MkdirAll(bench, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bench, "benchmark.yaml"), []byte(faultBench), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(filepath.Join(dir, "config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if fl.name != "hang (timeout)" {
		setTimeouts(cfg, 30*time.Second)
	}
	var mu sync.Mutex
	var waits []time.Duration
	clients := func(m config.ModelConfig) (llm.Client, error) {
		return provider.New(m, provider.Options{HTTP: srv.srv.Client(), Retry: llm.RetryPolicy{
			// The waits are recorded (to check Retry-After is honoured), not slept.
			Sleep: func(ctx context.Context, d time.Duration) error {
				mu.Lock()
				waits = append(waits, d)
				mu.Unlock()
				return ctx.Err()
			}}})
	}
	run := func() error {
		r, err := New(context.Background(), cfg, bench, Options{Clients: clients})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		before, _ := srv.counts()
		defer func() {
			// What the summary says was sent is what the server received:
			// work still running when a phase reported must be reported too.
			if sent, _ := srv.counts(); r.Report.Spent.Requests != sent-before {
				t.Errorf("the run's summary counts %d requests, the server received %d", r.Report.Spent.Requests, sent-before)
			}
		}()
		err = r.Run(t.Context(), r.Targets())
		if err == nil {
			if n, ph := r.Report.Failed(); n > 0 {
				err = &PartialError{Failed: n, Phases: ph}
			}
		}
		return err
	}
	row := faultRow{name: fl.name, total: 6}
	srv.set(fl)
	firstErr := run()
	row.calls, _ = srv.counts()
	_, distinct := srv.counts()
	row.retries = row.calls - distinct
	row.waits = waits
	row.failedFirst = row.total - completeRows(t, bench)
	if firstErr == nil && row.failedFirst > 0 {
		t.Errorf("first run exited 0 with %d incomplete rows", row.failedFirst)
	}
	if firstErr != nil {
		t.Logf("first run: %v", firstErr)
	}
	srv.set(nil)
	setTimeouts(cfg, 30*time.Second) // healthy now: no spurious timeouts on a loaded machine
	if err := run(); err != nil {
		t.Fatalf("rerun against a healthy provider: %v", err)
	}
	row.reruns = 1
	row.healed = completeRows(t, bench) - (row.total - row.failedFirst)
	if got := completeRows(t, bench); got != row.total {
		t.Fatalf("after one rerun %d of %d rows are complete", got, row.total)
	}
	return row
}

// setTimeouts sets every model's per-call timeout (the config's 300ms is
// for the hang case only).
func setTimeouts(cfg *config.Config, d time.Duration) {
	cfg.UserModel.Timeout = d
	if cfg.GeneratorModel != nil {
		cfg.GeneratorModel.Timeout = d
	}
	for i := range cfg.EvaluatorModels {
		cfg.EvaluatorModels[i].Timeout = d
	}
	for i := range cfg.Targets {
		cfg.Targets[i].Timeout = d
	}
}

// completeRows counts conversations that finished and got a verdict.
func completeRows(t *testing.T, bench string) int {
	t.Helper()
	convs, err := artifacts.ReadConversations(filepath.Join(bench, "runs", "t1", "conversations.json"))
	if err != nil {
		return 0
	}
	scores, err := artifacts.ReadScores(filepath.Join(bench, "runs", "t1", "scores.json"))
	if err != nil {
		return 0
	}
	ok := map[string]bool{}
	for _, c := range convs {
		if c.Status != artifacts.StatusError && c.Status != artifacts.StatusBudget {
			ok[c.ConvID] = true
		}
	}
	n := 0
	for _, s := range scores {
		if ok[s.ConvID] && s.Present != nil {
			n++
		}
	}
	return n
}

func TestFaultMatrixHealsInOneRerunWithoutPayingTwice(t *testing.T) {
	var rows []faultRow
	for i := range faults {
		fl := &faults[i]
		t.Run(fl.name, func(t *testing.T) {
			srv := newFaultServer(t)
			row := runFaultCase(t, srv, fl)
			srv.mu.Lock()
			for h, n := range srv.valid {
				if n > 1 {
					t.Errorf("request %s… answered validly %d times: paid twice", h[:12], n)
				}
			}
			srv.mu.Unlock()
			switch {
			case fl.transient && row.failedFirst > 0:
				t.Errorf("%d rows failed although the run's own retries should get past %s", row.failedFirst, fl.name)
			case !fl.transient && row.failedFirst == 0:
				t.Errorf("the fault failed no row: the case tests nothing")
			}
			if fl.name == "429 Retry-After" && !waitedAtLeast(row.waits, 2*time.Second) {
				t.Errorf("Retry-After: 2 not honoured; waits %v", row.waits)
			}
			rows = append(rows, row)
		})
	}
	var b strings.Builder
	fmt.Fprintf(&b, "| fault | requests, first run | of which resent (same request) | rows failed, first run | healed by one rerun | answered twice |\n|---|---|---|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %d | %d | %d of %d | %d | 0 |\n", r.name, r.calls, r.retries, r.failedFirst, r.total, r.healed)
	}
	t.Logf("fault matrix:\n%s", b.String())
}

func waitedAtLeast(ws []time.Duration, d time.Duration) bool {
	for _, w := range ws {
		if w >= d {
			return true
		}
	}
	return false
}
