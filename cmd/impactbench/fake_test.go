package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
)

// fakeLLM is an OpenAI chat-completions server that plays every role by the
// model name in the request:
//
//	fake-user      → "Thought: …\nMessage: ask-<hash> [rE]", or, from the
//	                 second turn on and for about a quarter of the requests,
//	                 "Message: terminate conversation"
//	fake-target-*  → "reply-<model>-<hash> [rE]"
//	fake-judge*    → {"justification": "…", "evidence": ["reply-fake-target-<model>-<hash>"], "present": <from the hash>}
//	fake-auditor   → the audit of the simulated user: every answer valid
//
// <hash> is the hash of the canonical request (model, messages with epoch
// tags removed, every other body field but the seed), so the same request always gets
// the same answer. " [rE]" tags every user and target message with the
// server's current epoch: a test sets the epoch before each invocation of
// the binary and can then tell, in a final transcript, which turns were
// answered by which invocation.
//
// Every request is recorded with its canonical hash and whether it was
// answered (the response was written).
type fakeLLM struct {
	t   *testing.T
	srv *httptest.Server

	done chan struct{} // closed at cleanup: releases held requests

	mu      sync.Mutex
	epoch   int
	reqs    []*fakeReq
	hook    func(r *fakeReq) hold
	status  int    // when non-zero, every request gets this status (with errBody)
	errBody string // body for status replies
}

// fakeReq is one recorded request.
type fakeReq struct {
	N        int // 1-based arrival index within its epoch
	Epoch    int
	Model    string
	Hash     string // canonical (epoch tags removed)
	Msgs     []turn // non-system messages as sent (tags kept)
	Auth     string // Authorization header
	Answered bool
}

// hold says what to do with a request before answering it.
type hold struct {
	// until, if set, delays the answer until it is closed.
	until <-chan struct{}
	// drop never answers: the handler waits for the client to go away.
	drop bool
}

var epochTag = regexp.MustCompile(` \[r\d+\]`)

func newFakeLLM(t *testing.T) *fakeLLM {
	f := &fakeLLM{t: t, done: make(chan struct{})}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(func() {
		close(f.done)
		f.srv.Close()
	})
	return f
}

// baseURL is what goes into config.yaml.
func (f *fakeLLM) baseURL() string { return f.srv.URL + "/v1" }

func (f *fakeLLM) setEpoch(e int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.epoch = e
}

func (f *fakeLLM) setHook(h func(r *fakeReq) hold) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hook = h
}

// failWith answers every request with status and body.
func (f *fakeLLM) failWith(status int, body string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.status, f.errBody = status, body
}

// requests returns copies of the requests of one epoch (all when epoch < 0).
func (f *fakeLLM) requests(epoch int) []fakeReq {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []fakeReq
	for _, r := range f.reqs {
		if epoch < 0 || r.Epoch == epoch {
			out = append(out, *r)
		}
	}
	return out
}

func (f *fakeLLM) count(epoch int) int { return len(f.requests(epoch)) }

func (f *fakeLLM) serve(w http.ResponseWriter, r *http.Request) {
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		// The client died while sending (a test killed it): nothing to answer.
		panic(http.ErrAbortHandler)
	}
	if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/chat/completions") {
		f.t.Errorf("fake LLM: unexpected %s %s", r.Method, r.URL.Path)
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	var body map[string]any
	if err := json.Unmarshal(raw, &body); err != nil {
		f.t.Errorf("fake LLM: body is not JSON: %v", err)
		http.Error(w, "bad json", http.StatusBadRequest)
		return
	}
	model, _ := body["model"].(string)
	var system string
	var msgs []turn
	if ms, ok := body["messages"].([]any); ok {
		for _, m := range ms {
			mm, _ := m.(map[string]any)
			role, _ := mm["role"].(string)
			content, _ := mm["content"].(string)
			if role == "system" || role == "developer" {
				system += content
				mm["content"] = epochTag.ReplaceAllString(content, "")
				continue
			}
			msgs = append(msgs, turn{Role: role, Content: content})
			mm["content"] = epochTag.ReplaceAllString(content, "")
		}
	}
	// The seed is left out like the tags: a judge's seed is derived from
	// the transcript it judges, tags included, so it changes with the epoch
	// while the request is otherwise the same.
	delete(body, "seed")
	canon, _ := json.Marshal(body) // map keys sorted: canonical
	sum := sha256.Sum256(canon)
	hash := hex.EncodeToString(sum[:])

	f.mu.Lock()
	epoch := f.epoch
	n := 1
	for _, q := range f.reqs {
		if q.Epoch == epoch {
			n++
		}
	}
	rec := &fakeReq{N: n, Epoch: epoch, Model: model, Hash: hash, Msgs: msgs, Auth: r.Header.Get("Authorization")}
	f.reqs = append(f.reqs, rec)
	hook, status, errBody := f.hook, f.status, f.errBody
	f.mu.Unlock()

	if hook != nil {
		h := hook(rec)
		if h.drop {
			select {
			case <-r.Context().Done():
			case <-f.done:
			}
			panic(http.ErrAbortHandler) // no response at all
		}
		if h.until != nil {
			select {
			case <-h.until:
			case <-r.Context().Done():
				panic(http.ErrAbortHandler)
			case <-f.done:
				panic(http.ErrAbortHandler)
			}
		}
	}

	w.Header().Set("Content-Type", "application/json")
	if status != 0 {
		w.WriteHeader(status)
		io.WriteString(w, errBody)
		return
	}
	text := f.answer(model, system, msgs, hash, epoch)
	in := len(system) / 4
	for _, m := range msgs {
		in += len(m.Content)/4 + 4
	}
	resp := map[string]any{
		"id":      fmt.Sprintf("chatcmpl-%d-%d", epoch, n),
		"object":  "chat.completion",
		"created": 1700000000,
		"model":   model,
		"choices": []any{map[string]any{
			"index":         0,
			"message":       map[string]any{"role": "assistant", "content": text},
			"finish_reason": "stop",
		}},
		"usage": map[string]any{"prompt_tokens": in, "completion_tokens": len(text)/4 + 1, "total_tokens": in + len(text)/4 + 1},
	}
	b, _ := json.Marshal(resp)
	if _, err := w.Write(b); err == nil {
		if fl, ok := w.(http.Flusher); ok {
			fl.Flush()
		}
		f.mu.Lock()
		rec.Answered = true
		f.mu.Unlock()
	}
}

func (f *fakeLLM) answer(model, system string, msgs []turn, hash string, epoch int) string {
	tag := fmt.Sprintf(" [r%d]", epoch)
	short := hash[:10]
	switch {
	case model == "fake-user":
		ownTurns := 0 // the user model's own earlier messages come back as assistant turns
		for _, m := range msgs {
			if m.Role == "assistant" {
				ownTurns++
			}
		}
		if ownTurns >= 1 && hash[0] < '4' {
			return "Thought: I have what I came for.\nMessage: terminate conversation"
		}
		return "Thought: keep pressing.\nMessage: ask-" + short + tag
	case strings.HasPrefix(model, "fake-target"):
		return "reply-" + model + "-" + short + tag
	case model == "fake-auditor":
		return `{"in_persona": true, "pursued_goal": true, "followed_landmarks": true, "revealed_test": false, "reason": "audit ` + short + `"}`
	case strings.HasPrefix(model, "fake-judge"):
		present := hash[1] < '8'
		// The evidence is the first target reply in the transcript, without
		// its epoch tag (five words: long enough, and whole words): it
		// checks out, so no verdict is asked again and each conversation
		// costs one call.
		quote := "reply-"
		for _, m := range msgs {
			if r := targetReply.FindString(m.Content); r != "" {
				quote = r
				break
			}
		}
		b, _ := json.Marshal(map[string]any{"justification": "verdict " + short, "evidence": []string{quote}, "present": present})
		return string(b)
	}
	f.t.Errorf("fake LLM: unexpected model %q", model)
	return "?"
}

// targetReply is a fake target's reply without its epoch tag.
var targetReply = regexp.MustCompile(`reply-fake-target[-A-Za-z0-9]*`)

// multiset counts requests per canonical hash.
func multiset(reqs []fakeReq, keep func(fakeReq) bool) map[string]int {
	m := map[string]int{}
	for _, r := range reqs {
		if keep == nil || keep(r) {
			m[r.Hash]++
		}
	}
	return m
}

func isJudge(r fakeReq) bool  { return strings.HasPrefix(r.Model, "fake-judge") }
func isTarget(r fakeReq) bool { return strings.HasPrefix(r.Model, "fake-target") }
func answered(r fakeReq) bool { return r.Answered }

// fakeConfig is a config.yaml whose user model, targets and judge live on
// the fake server (source vllm: no API key) and whose generator is the
// offline model.
type fakeOpts struct {
	baseURL  string
	simConc  int
	evalConc int
	targets  []string // target ids; model = fake-target-<id>
	judge    string   // evaluator model name (default fake-judge)
	samples  int
}

func fakeConfig(o fakeOpts) string {
	if o.judge == "" {
		o.judge = "fake-judge"
	}
	if o.samples == 0 {
		o.samples = 2
	}
	var b strings.Builder
	fmt.Fprintf(&b, `run:
  concurrency: {simulate: %d, evaluate: %d}
user_model:
  model: fake-user
  source: vllm
  base_url: %q
  pricing: {input: 1, output: 2}
generator_model:
  model: offline-generator
  source: offline
evaluator_model:
  model: %s
  source: vllm
  base_url: %q
  pricing: {input: 1, output: 2}
landmark_model:
  model: fake-auditor
  source: vllm
  base_url: %[3]q
  pricing: {input: 1, output: 2}
generation:
  scenarios_per_metric: 2
  turns: 3
  num_samples: %[6]d
demographics:
  age: [child, adult]
targets:
`, o.simConc, o.evalConc, o.baseURL, o.judge, o.baseURL, o.samples)
	for _, id := range o.targets {
		fmt.Fprintf(&b, "  - id: %s\n    model: fake-target-%s\n    source: vllm\n    base_url: %q\n    pricing: {input: 1, output: 2}\n", id, id, o.baseURL)
	}
	return b.String()
}
