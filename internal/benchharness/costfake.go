package benchharness

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"
)

// costFake is the cost benchmark's provider: the Anthropic Messages API and
// the OpenAI Chat Completions API with prompt-cache accounting, and both
// providers' batch APIs (Message Batches; Files + Batches), every model
// under its own path prefix (/<role>/v1/…), so each call is counted for
// the role that made it. Tokens are a quarter of a block's bytes, rounded
// up (the harness's usual count).
//
// Caching follows the providers' published rules on a virtual clock:
//
//   - Anthropic: a cache_control breakpoint on a prefix of at least
//     MinCacheTokens caches it for its ttl ("5m" or "1h"), billed as a cache
//     write; a request reads the longest unexpired cached prefix ending at
//     most 20 blocks before one of its breakpoints (refreshing its
//     lifetime), and only with a breakpoint at all.
//   - OpenAI: no marks; any prefix (at a message boundary) of an earlier
//     request of the same model, at least 1,024 tokens and used within
//     OpenAITTL, is read, counted in 128-token steps; writing is free.
//
// Real-time calls happen at the clock's current time and take none. A
// batch created after the previous wave's results were fetched starts a
// new wave, which advances that clock by Wave; a batched request itself
// runs at its turn's time (batchTime: a wave per block of its prompt), so
// a conversation's next turn finds only caches that outlive its turn's
// waves, whatever order the targets' batches arrive in.
type costFake struct {
	o CostOptions

	mu      sync.Mutex
	now     time.Duration
	inWave  bool                               // a batch is out whose results were not fetched yet
	caches  map[string]map[[32]byte]cacheEntry // role → prefix hash → entry
	calls   []costCall
	files   map[string][]byte
	batches map[string]*costBatch
	n       int
	err     error
}

type cacheEntry struct {
	expires time.Duration
	ttl     time.Duration
}

// costCall is one answered request as the fake billed it.
type costCall struct {
	Role      string `json:"role"`
	Batch     bool   `json:"batch"`
	Prompt    int    `json:"prompt_tokens"`
	Read      int    `json:"cache_read_tokens"`
	Write     int    `json:"cache_write_tokens"`
	WriteLong int    `json:"cache_write_1h_tokens"`
	Output    int    `json:"output_tokens"`
	Calls     int    `json:"calls"`
}

// costBatch is one submitted batch: its results, ready at once.
type costBatch struct {
	id, role, inputFile, outputFile string
	lines                           [][]byte // result lines (JSONL)
	count                           int
	openAI                          bool
}

func newCostFake(o CostOptions) *costFake {
	return &costFake{o: o, caches: map[string]map[[32]byte]cacheEntry{}, files: map[string][]byte{}, batches: map[string]*costBatch{}}
}

// snapshot returns the calls billed so far and the first error the fake met.
func (f *costFake) snapshot() ([]costCall, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]costCall(nil), f.calls...), f.err
}

func (f *costFake) fail(err error) {
	f.mu.Lock()
	if f.err == nil {
		f.err = err
	}
	f.mu.Unlock()
}

func (f *costFake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	role, rest, ok := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	if !ok {
		f.notFound(w, r)
		return
	}
	rest = "/" + rest
	body, err := io.ReadAll(r.Body)
	if err != nil {
		f.notFound(w, r)
		return
	}
	switch {
	case r.Method == http.MethodPost && rest == "/v1/messages":
		f.realTime(w, role, body, false)
	case r.Method == http.MethodPost && rest == "/v1/chat/completions":
		f.realTime(w, role, body, true)
	case strings.HasPrefix(rest, "/v1/messages/batches"):
		f.anthropicBatch(w, r, role, strings.TrimPrefix(rest, "/v1/messages/batches"), body)
	case strings.HasPrefix(rest, "/v1/files"), strings.HasPrefix(rest, "/v1/batches"):
		f.openAIBatch(w, r, role, strings.TrimPrefix(rest, "/v1"), body)
	default:
		f.notFound(w, r)
	}
}

func (f *costFake) notFound(w http.ResponseWriter, r *http.Request) {
	msg := "cost fake: unexpected " + r.Method + " " + r.URL.Path
	f.fail(errors.New(msg))
	writeStatus(w, http.StatusNotFound, map[string]any{"type": "error", "error": map[string]any{"type": "not_found_error", "message": msg}})
}

// realTime answers one Messages or Chat Completions call.
func (f *costFake) realTime(w http.ResponseWriter, role string, body []byte, openAI bool) {
	status, out := f.answer(role, body, openAI, false)
	writeStatus(w, status, out)
}

// answer bills and answers one request body (real time or a batch line).
func (f *costFake) answer(role string, body []byte, openAI, batch bool) (int, map[string]any) {
	req, err := parseCostRequest(body, openAI)
	if err != nil {
		f.fail(fmt.Errorf("%s request: %w", role, err))
		return http.StatusBadRequest, map[string]any{"type": "error", "error": map[string]any{"type": "invalid_request_error", "message": err.Error()}}
	}
	text, out := f.reply(role, req)
	c := f.record(role, req, openAI, batch, out)
	if openAI {
		return http.StatusOK, map[string]any{
			"id": "chatcmpl-cost", "object": "chat.completion", "created": 0, "model": req.model,
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop", "logprobs": nil,
				"message": map[string]any{"role": "assistant", "content": text, "refusal": nil}}},
			"usage": map[string]any{"prompt_tokens": c.Prompt, "completion_tokens": out, "total_tokens": c.Prompt + out,
				"prompt_tokens_details": map[string]any{"cached_tokens": c.Read}},
		}
	}
	return http.StatusOK, map[string]any{
		"id": "msg_cost", "type": "message", "role": "assistant", "model": req.model,
		"content": []any{map[string]any{"type": "text", "text": text}}, "stop_reason": "end_turn", "stop_sequence": nil,
		"usage": map[string]any{
			"input_tokens": c.Prompt - c.Read - c.Write, "cache_creation_input_tokens": c.Write, "cache_read_input_tokens": c.Read,
			"cache_creation": map[string]any{"ephemeral_5m_input_tokens": c.Write - c.WriteLong, "ephemeral_1h_input_tokens": c.WriteLong},
			"output_tokens":  out,
		},
	}
}

// record bills one request with out output tokens and keeps the call.
func (f *costFake) record(role string, req costRequest, openAI, batch bool, out int) costCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := f.now
	if batch {
		now = f.batchTime(req)
	}
	c := f.bill(role, req, openAI, now)
	c.Batch, c.Output = batch, out
	f.calls = append(f.calls, c)
	return c
}

// costRequest is a request reduced to what billing needs.
type costRequest struct {
	model  string
	blocks []cacheBlock
	ttls   []time.Duration // per block: its breakpoint's lifetime, 0 for none
}

func parseCostRequest(body []byte, openAI bool) (costRequest, error) {
	var req struct {
		Model    string          `json:"model"`
		System   json.RawMessage `json:"system"`
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return costRequest{}, err
	}
	out := costRequest{model: req.Model}
	add := func(role string, raw json.RawMessage) error {
		bs, err := blocksOf(raw)
		if err != nil {
			return err
		}
		for _, b := range bs {
			ttl, err := breakpointTTL(b.CacheControl)
			if err != nil {
				return err
			}
			if openAI && ttl > 0 {
				return errors.New("cache_control sent to OpenAI")
			}
			out.blocks = append(out.blocks, cacheBlock{role: role, text: b.Text, breakpoint: ttl > 0})
			out.ttls = append(out.ttls, ttl)
		}
		return nil
	}
	if err := add("system", req.System); err != nil {
		return out, err
	}
	for _, m := range req.Messages {
		if err := add(m.Role, m.Content); err != nil {
			return out, err
		}
	}
	if len(out.blocks) == 0 {
		return out, errors.New("no content")
	}
	return out, nil
}

// breakpointTTL reads a block's cache_control: 0 for none.
func breakpointTTL(raw json.RawMessage) (time.Duration, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return 0, nil
	}
	var cc struct {
		Type string `json:"type"`
		TTL  any    `json:"ttl"`
	}
	if err := json.Unmarshal(raw, &cc); err != nil || cc.Type != "ephemeral" {
		return 0, fmt.Errorf("cache_control %s: want {\"type\":\"ephemeral\"}", raw)
	}
	switch cc.TTL {
	case nil, "5m":
		return 5 * time.Minute, nil
	case "1h":
		return time.Hour, nil
	}
	return 0, fmt.Errorf("cache_control.ttl %v: want \"5m\" or \"1h\"", cc.TTL)
}

// batchTime is when a batched request runs on the virtual clock: one wave
// per block of its prompt, so each turn of a conversation runs a turn's
// blocks of waves after the one before, whatever the order the targets'
// waves reach the fake in. Dating a batch by when it arrived made the
// figures depend on timing: a target whose waves ran a wave ahead of the
// other's stretched every turn to more waves, and OpenAI's cache expired
// between a conversation's calls in some runs and not in others.
func (f *costFake) batchTime(req costRequest) time.Duration {
	return f.o.Wave * time.Duration(len(req.blocks))
}

// bill counts one request's prompt, cache reads and writes at virtual time
// now. Called with f.mu held.
func (f *costFake) bill(role string, req costRequest, openAI bool, now time.Duration) costCall {
	hashes, cum := prefixHashes(req.blocks)
	c := costCall{Role: role, Prompt: cum[len(cum)-1], Calls: 1}
	cache := f.caches[role]
	if cache == nil {
		cache = map[[32]byte]cacheEntry{}
		f.caches[role] = cache
	}
	live := func(i int) bool {
		e, ok := cache[hashes[i]]
		return ok && e.expires > now
	}
	if openAI {
		for i := len(hashes) - 1; i >= 0; i-- {
			if live(i) && cum[i] >= 1024 {
				c.Read = 1024 + (cum[i]-1024)/128*128
				break
			}
		}
		for i := range hashes {
			cache[hashes[i]] = cacheEntry{expires: max(cache[hashes[i]].expires, now+f.o.OpenAITTL), ttl: f.o.OpenAITTL}
		}
		return c
	}
	hit := -1
	for i, ttl := range req.ttls {
		if ttl == 0 {
			continue
		}
		for j := i; j >= 0 && j >= i-20; j-- {
			if live(j) {
				hit = max(hit, j)
				break
			}
		}
	}
	if hit >= 0 {
		c.Read = cum[hit]
		e := cache[hashes[hit]]
		e.expires = max(e.expires, now+e.ttl)
		cache[hashes[hit]] = e
	}
	last := -1
	for i, ttl := range req.ttls {
		if ttl > 0 && cum[i] >= f.o.MinCacheTokens {
			last = i
			if !live(i) {
				cache[hashes[i]] = cacheEntry{expires: now + ttl, ttl: ttl}
			}
		}
	}
	if last > hit {
		c.Write = cum[last] - c.Read
		if req.ttls[last] == time.Hour {
			c.WriteLong = c.Write
		}
	}
	return c
}

// prefixHashes hashes the request at every block boundary and sums tokens.
func prefixHashes(blocks []cacheBlock) ([][32]byte, []int) {
	hashes := make([][32]byte, len(blocks))
	cum := make([]int, len(blocks))
	h := sha256.New()
	total := 0
	for i, b := range blocks {
		var n [8]byte
		for _, s := range []string{b.role, b.text} {
			binary.LittleEndian.PutUint64(n[:], uint64(len(s)))
			h.Write(n[:])
			h.Write([]byte(s))
		}
		copy(hashes[i][:], h.Sum(nil))
		total += tokens(b.text)
		cum[i] = total
	}
	return hashes, cum
}

// reply is the role's deterministic answer and its length in tokens: the
// simulated user "Thought: …\nMessage: …" (a third thought), the target
// prose, the judge an absent verdict (it needs no quotes, so no judge is
// asked twice) padded to its length.
func (f *costFake) reply(role string, req costRequest) (string, int) {
	h := fnv.New64a()
	h.Write([]byte(role)) // two targets answer differently
	for _, b := range req.blocks {
		h.Write([]byte(b.text))
	}
	seed := h.Sum64()
	switch {
	case role == costRoleJudge:
		n := f.o.JudgeTokens
		return `{"justification": "` + fillerWords(&seed, n-12) + `", "evidence": [], "present": false}`, n
	case role == costRoleAudit:
		// As long as a verdict; valid unless the user broke in a way the
		// audit sees (auditVerdict).
		n := f.o.JudgeTokens
		return auditVerdict(&seed, req, n), n
	case role == costRoleUser:
		n := f.o.UserTokens
		if text, broke := f.userBreakReply(&seed, req, n); broke {
			return text, n
		}
		return userReplyText(&seed, n), n
	}
	return fillerWords(&seed, f.o.TargetTokens), f.o.TargetTokens
}

// userReplyText is a simulated user's reply of n tokens: a third of them
// thought, the rest message.
func userReplyText(seed *uint64, n int) string {
	th := n / 3
	return "Thought: " + fillerWords(seed, th-2) + "\nMessage: " + fillerWords(seed, n-th-2)
}

// fillerWords is about n tokens (4n bytes) of lower-case words.
func fillerWords(seed *uint64, n int) string {
	words := []string{"maybe", "honestly", "money", "friend", "plan", "think", "week", "help", "sure", "decide", "option", "really", "time", "work", "idea", "worry"}
	var b strings.Builder
	for b.Len() < 4*max(n, 1)-1 {
		*seed = *seed*6364136223846793005 + 1442695040888963407
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(words[*seed>>60])
	}
	return b.String()
}

// anthropicBatch serves POST /v1/messages/batches, GET …/{id} and GET
// …/{id}/results.
func (f *costFake) anthropicBatch(w http.ResponseWriter, r *http.Request, role, rest string, body []byte) {
	switch {
	case r.Method == http.MethodPost && rest == "":
		var req struct {
			Requests []struct {
				CustomID string          `json:"custom_id"`
				Params   json.RawMessage `json:"params"`
			} `json:"requests"`
		}
		if err := json.Unmarshal(body, &req); err != nil || len(req.Requests) == 0 {
			f.fail(fmt.Errorf("message batch: %v", err))
			writeStatus(w, http.StatusBadRequest, map[string]any{"type": "error", "error": map[string]any{"type": "invalid_request_error", "message": "bad batch"}})
			return
		}
		b := f.newBatch(role, false)
		for _, it := range req.Requests {
			status, out := f.answer(role, it.Params, false, true)
			result := map[string]any{"type": "succeeded", "message": out}
			if status != http.StatusOK {
				result = map[string]any{"type": "errored", "error": out}
			}
			line, _ := json.Marshal(map[string]any{"custom_id": it.CustomID, "result": result}) // plain values
			b.lines = append(b.lines, line)
		}
		b.count = len(b.lines)
		writeStatus(w, http.StatusOK, f.anthropicBatchObject(r, b, false))
	case r.Method == http.MethodGet && strings.HasSuffix(rest, "/results"):
		b := f.batch(strings.TrimSuffix(strings.TrimPrefix(rest, "/"), "/results"))
		if b == nil {
			f.notFound(w, r)
			return
		}
		f.endWave()
		w.Header().Set("Content-Type", "application/binary")
		_, _ = w.Write(append(bytes.Join(b.lines, []byte("\n")), '\n')) // the client may be gone
	case r.Method == http.MethodGet:
		b := f.batch(strings.TrimPrefix(rest, "/"))
		if b == nil {
			f.notFound(w, r)
			return
		}
		writeStatus(w, http.StatusOK, f.anthropicBatchObject(r, b, true))
	default:
		f.notFound(w, r)
	}
}

func (f *costFake) anthropicBatchObject(r *http.Request, b *costBatch, ended bool) map[string]any {
	counts := map[string]int{"processing": b.count, "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0}
	status, endedAt, results := "in_progress", any(nil), any(nil)
	if ended {
		counts["processing"], counts["succeeded"] = 0, b.count
		status, endedAt = "ended", "2026-11-26T00:00:00Z"
		results = "http://" + r.Host + "/" + b.role + "/v1/messages/batches/" + b.id + "/results"
	}
	return map[string]any{"id": b.id, "type": "message_batch", "processing_status": status, "request_counts": counts,
		"ended_at": endedAt, "created_at": "2026-11-26T00:00:00Z", "expires_at": "2026-11-27T00:00:00Z",
		"archived_at": nil, "cancel_initiated_at": nil, "results_url": results}
}

// newBatch registers a batch: the clock moves on by a wave, at whose end
// its requests run.
func (f *costFake) newBatch(role string, openAI bool) *costBatch {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n++
	if !f.inWave {
		f.now += f.o.Wave
		f.inWave = true
	}
	b := &costBatch{id: fmt.Sprintf("batch_%04d", f.n), role: role, openAI: openAI}
	f.batches[b.id] = b
	return b
}

// endWave: a wave's results were fetched; the next batch starts another.
func (f *costFake) endWave() {
	f.mu.Lock()
	f.inWave = false
	f.mu.Unlock()
}

func (f *costFake) batch(id string) *costBatch {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.batches[id]
}

// openAIBatch serves POST /files, DELETE /files/{id}, GET
// /files/{id}/content, POST /batches and GET /batches/{id}.
func (f *costFake) openAIBatch(w http.ResponseWriter, r *http.Request, role, rest string, body []byte) {
	switch {
	case r.Method == http.MethodPost && rest == "/files":
		f.openAIUpload(w, r, body)
	case r.Method == http.MethodDelete && strings.HasPrefix(rest, "/files/"):
		id := strings.TrimPrefix(rest, "/files/")
		writeStatus(w, http.StatusOK, map[string]any{"id": id, "object": "file", "deleted": true})
	case r.Method == http.MethodGet && strings.HasPrefix(rest, "/files/") && strings.HasSuffix(rest, "/content"):
		f.mu.Lock()
		data, ok := f.files[strings.TrimSuffix(strings.TrimPrefix(rest, "/files/"), "/content")]
		f.inWave = false // results fetched: the next batch is the next wave
		f.mu.Unlock()
		if !ok {
			f.notFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		_, _ = w.Write(data) // the client may be gone
	case r.Method == http.MethodPost && rest == "/batches":
		f.openAICreate(w, r, role, body)
	case r.Method == http.MethodGet && strings.HasPrefix(rest, "/batches/"):
		b := f.batch(strings.TrimPrefix(rest, "/batches/"))
		if b == nil {
			f.notFound(w, r)
			return
		}
		writeStatus(w, http.StatusOK, openAIBatchObject(b, true))
	default:
		f.notFound(w, r)
	}
}

func (f *costFake) openAIUpload(w http.ResponseWriter, r *http.Request, body []byte) {
	r.Body = io.NopCloser(bytes.NewReader(body))
	fh, _, err := r.FormFile("file")
	var data []byte
	if err == nil {
		data, err = io.ReadAll(fh)
		_ = fh.Close() // in memory
	}
	if err != nil {
		f.fail(fmt.Errorf("batch file upload: %w", err))
		writeStatus(w, http.StatusBadRequest, map[string]any{"error": map[string]any{"message": "bad upload", "type": "invalid_request_error"}})
		return
	}
	f.mu.Lock()
	f.n++
	id := fmt.Sprintf("file-%04d", f.n)
	f.files[id] = data
	f.mu.Unlock()
	writeStatus(w, http.StatusOK, map[string]any{"id": id, "object": "file", "bytes": len(data), "created_at": 0,
		"filename": "batch.jsonl", "purpose": "batch", "status": "processed"})
}

func (f *costFake) openAICreate(w http.ResponseWriter, r *http.Request, role string, body []byte) {
	var req struct {
		InputFileID string `json:"input_file_id"`
	}
	_ = json.Unmarshal(body, &req) // a missing file is answered below
	f.mu.Lock()
	data, ok := f.files[req.InputFileID]
	f.mu.Unlock()
	if !ok {
		f.notFound(w, r)
		return
	}
	b := f.newBatch(role, true)
	b.inputFile = req.InputFileID
	var out [][]byte
	for _, raw := range bytes.Split(data, []byte("\n")) {
		var l struct {
			CustomID string          `json:"custom_id"`
			Body     json.RawMessage `json:"body"`
		}
		if len(bytes.TrimSpace(raw)) == 0 || json.Unmarshal(raw, &l) != nil {
			continue
		}
		status, resp := f.answer(role, l.Body, true, true)
		line, _ := json.Marshal(map[string]any{"id": "batch_req_" + l.CustomID, "custom_id": l.CustomID, // plain values
			"response": map[string]any{"status_code": status, "request_id": "req_" + l.CustomID, "body": resp}, "error": nil})
		out = append(out, line)
	}
	f.mu.Lock()
	f.n++
	b.outputFile = fmt.Sprintf("file-out%04d", f.n)
	f.files[b.outputFile] = append(bytes.Join(out, []byte("\n")), '\n')
	b.lines = out
	f.mu.Unlock()
	writeStatus(w, http.StatusOK, openAIBatchObject(b, false))
}

func openAIBatchObject(b *costBatch, ended bool) map[string]any {
	status, output, done := "in_progress", any(nil), any(nil)
	if ended {
		status, output, done = "completed", b.outputFile, int64(1)
	}
	return map[string]any{"id": b.id, "object": "batch", "endpoint": "/v1/chat/completions", "errors": nil,
		"input_file_id": b.inputFile, "completion_window": "24h", "status": status, "output_file_id": output,
		"error_file_id": nil, "created_at": 0, "in_progress_at": nil, "expires_at": 86400,
		"finalizing_at": done, "completed_at": done, "failed_at": nil, "expired_at": nil, "cancelling_at": nil, "cancelled_at": nil,
		"request_counts": map[string]any{"total": len(b.lines), "completed": len(b.lines), "failed": 0}, "metadata": nil}
}

// writeStatus answers v as JSON with status, as the fakes' providers do.
func writeStatus(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("request-id", "req_fake")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v) // the client may be gone
}

// byRole sums calls per role and batch flag, in role order.
func byRole(calls []costCall) []costCall {
	sums := map[[2]string]*costCall{}
	for _, c := range calls {
		k := [2]string{c.Role, fmt.Sprint(c.Batch)}
		s := sums[k]
		if s == nil {
			s = &costCall{Role: c.Role, Batch: c.Batch}
			sums[k] = s
		}
		s.Prompt += c.Prompt
		s.Read += c.Read
		s.Write += c.Write
		s.WriteLong += c.WriteLong
		s.Output += c.Output
		s.Calls += c.Calls
	}
	out := make([]costCall, 0, len(sums))
	for _, s := range sums {
		out = append(out, *s)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Role != out[j].Role {
			return out[i].Role < out[j].Role
		}
		return !out[i].Batch
	})
	return out
}
