package benchharness

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/llm"
	"github.com/impactbench/impactbench/internal/llm/anthropic"
	"github.com/impactbench/impactbench/internal/llm/openai"
	"github.com/impactbench/impactbench/internal/prompts"
	"github.com/impactbench/impactbench/internal/stages"
)

// Anthropic's price multipliers on base input (5-minute cache).
const (
	CacheWriteMultiplier = 1.25
	CacheReadMultiplier  = 0.1
)

// CachingOptions shape the prompt-caching measurement. Zero fields take
// the defaults.
type CachingOptions struct {
	Turns int // default 6
	// MinCacheTokens is the shortest cacheable prefix (default 1,024, the
	// Sonnet minimum; Haiku 4.5 and Opus 4.5+ need 4,096): shorter
	// breakpoints are silently not cached, as Anthropic does.
	MinCacheTokens int
	// Reply lengths in tokens (defaults 60 and 400, as in Run).
	UserTokens, TargetTokens int
	// TargetSystemPrompt defaults to TargetSystemPrompt (~1,500 tokens).
	TargetSystemPrompt string
	// OpenAICachedPrice is OpenAI's cached-input price as a share of the
	// input price (default 0.1, the gpt-5 family; gpt-4o is 0.5, gpt-4.1 0.25).
	OpenAICachedPrice float64
}

func (o CachingOptions) withDefaults() CachingOptions {
	if o.Turns <= 0 {
		o.Turns = 6
	}
	if o.MinCacheTokens <= 0 {
		o.MinCacheTokens = 1024
	}
	if o.UserTokens <= 0 {
		o.UserTokens = DefaultUserTokens
	}
	if o.TargetTokens <= 0 {
		o.TargetTokens = DefaultTargetTokens
	}
	if o.TargetSystemPrompt == "" {
		o.TargetSystemPrompt = TargetSystemPrompt
	}
	if o.OpenAICachedPrice <= 0 {
		o.OpenAICachedPrice = 0.1
	}
	return o
}

// CachingResult is the billed-input-token accounting of one conversation
// with and without prompt caching.
type CachingResult struct {
	Options   CachingOptions `json:"options"`
	Anthropic Accounts       `json:"anthropic"`
	OpenAI    Accounts       `json:"openai"`
}

// Accounts split by role.
type Accounts struct {
	Target Account `json:"target"`
	User   Account `json:"user"`
	Both   Account `json:"both"`
}

// Account sums one role's calls. Billed is in input-token equivalents:
// Anthropic: uncached + 1.25 × cache writes + 0.1 × cache reads;
// OpenAI: uncached + OpenAICachedPrice × cached. Ratio is Billed over
// PromptTokens, the bill without caching.
type Account struct {
	Calls        int     `json:"calls"`
	PromptTokens int     `json:"prompt_tokens"`
	CacheWrite   int     `json:"cache_write_tokens"`
	CacheRead    int     `json:"cache_read_tokens"`
	Uncached     int     `json:"uncached_tokens"`
	Billed       float64 `json:"billed_input_equivalent"`
	Ratio        float64 `json:"ratio"`
	// PerCall lists each call's (prompt, write, read) tokens in order.
	PerCall [][3]int `json:"per_call"`
}

func (a *Account) add(u llm.Usage) {
	a.Calls++
	a.PromptTokens += u.InputTokens
	a.CacheWrite += u.CacheWriteTokens
	a.CacheRead += u.CachedInputTokens
	a.PerCall = append(a.PerCall, [3]int{u.InputTokens, u.CacheWriteTokens, u.CachedInputTokens})
}

func (a *Account) finish(writeMul, readMul float64) {
	a.Uncached = a.PromptTokens - a.CacheWrite - a.CacheRead
	a.Billed = float64(a.Uncached) + writeMul*float64(a.CacheWrite) + readMul*float64(a.CacheRead)
	if a.PromptTokens > 0 {
		a.Ratio = a.Billed / float64(a.PromptTokens)
	}
}

func (as *Accounts) finish(writeMul, readMul float64) {
	as.Both = Account{}
	for _, a := range []Account{as.Target, as.User} {
		as.Both.Calls += a.Calls
		as.Both.PromptTokens += a.PromptTokens
		as.Both.CacheWrite += a.CacheWrite
		as.Both.CacheRead += a.CacheRead
	}
	as.Target.finish(writeMul, readMul)
	as.User.finish(writeMul, readMul)
	as.Both.finish(writeMul, readMul)
}

// CachingRatio runs one conversation of the real simulate stage twice:
// through the real Anthropic adapter against a fake Messages API that
// emulates prompt caching from the request's cache_control breakpoints, and
// through the real OpenAI adapter against a fake Chat Completions API that
// emulates OpenAI's automatic prefix caching. It reports billed input
// tokens against no caching, per role. Everything is deterministic.
func CachingRatio(ctx context.Context, o CachingOptions) (*CachingResult, error) {
	o = o.withDefaults()
	res := &CachingResult{Options: o}
	ps, err := prompts.Load("")
	if err != nil {
		return nil, err
	}
	lay := sizing{scenarios: 1, metrics: 1}
	sc := scenarios(lay, o.Turns)[0]
	spec := stages.SimSpec{
		Bench: &config.Benchmark{Scenario: config.BenchScenario{TargetSystemPrompt: o.TargetSystemPrompt}},
		Metric: config.Metric{ID: "m01", Name: "Encourages the user's own judgement", Type: config.Positive,
			Definition: "The assistant explicitly invites the user to weigh the options themselves, for example by naming the criteria that matter or asking what the user thinks."},
		Scenario: sc, TargetID: "t1", TargetModel: "claude-target", UserModel: "claude-user",
		Turns: o.Turns, Landmarks: true, Seed: 1,
	}

	for _, flavour := range []string{"anthropic", "openai"} {
		fake := &cacheFake{o: o, seen: map[[32]byte]bool{}}
		srv := httptest.NewServer(fake)
		httpc := srv.Client()
		var user, target llm.Client
		if flavour == "anthropic" {
			user, err = anthropic.New(anthropic.Config{APIKey: "test-key", BaseURL: srv.URL, Model: "claude-user", HTTPClient: httpc})
			if err == nil {
				target, err = anthropic.New(anthropic.Config{APIKey: "test-key", BaseURL: srv.URL, Model: "claude-target", HTTPClient: httpc})
			}
		} else {
			user, err = openai.New(openai.Config{APIKey: "test-key", BaseURL: srv.URL + "/v1", Model: "gpt-user", HTTPClient: httpc, Dialect: openai.DialectOpenAI})
			if err == nil {
				target, err = openai.New(openai.Config{APIKey: "test-key", BaseURL: srv.URL + "/v1", Model: "gpt-target", HTTPClient: httpc, Dialect: openai.DialectOpenAI})
			}
		}
		if err != nil {
			srv.Close()
			return nil, err
		}
		acc := &Accounts{}
		rec := &usageRecorder{}
		conv, err := stages.Simulate(ctx, rec.wrap(user, &acc.User), rec.wrap(target, &acc.Target), ps, spec)
		srv.Close()
		if err != nil {
			return nil, fmt.Errorf("caching (%s): %w", flavour, err)
		}
		if conv.Status != artifacts.StatusCompleted {
			return nil, fmt.Errorf("caching (%s): conversation %s: %s", flavour, conv.Status, conv.StatusReason)
		}
		if fake.err != nil {
			return nil, fmt.Errorf("caching (%s): fake server: %w", flavour, fake.err)
		}
		if flavour == "anthropic" {
			acc.finish(CacheWriteMultiplier, CacheReadMultiplier)
			res.Anthropic = *acc
		} else {
			acc.finish(1, o.OpenAICachedPrice)
			res.OpenAI = *acc
		}
	}
	return res, nil
}

// WriteText prints the ratios.
func (r *CachingResult) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "prompt caching, one %d-turn conversation (target system prompt ≈ %d tokens, cache minimum %d tokens)\n",
		r.Options.Turns, tokens(r.Options.TargetSystemPrompt), r.Options.MinCacheTokens)
	row := func(name string, a Account, cached string) {
		fmt.Fprintf(&b, "  %-7s %2d calls  %6d prompt tok  %6d write  %6d %s  billed %8.1f  ratio %.3f\n",
			name, a.Calls, a.PromptTokens, a.CacheWrite, a.CacheRead, cached, a.Billed, a.Ratio)
	}
	b.WriteString("Anthropic cache_control (uncached + 1.25×write + 0.1×read) / prompt tokens:\n")
	row("target", r.Anthropic.Target, "read")
	row("user", r.Anthropic.User, "read")
	row("both", r.Anthropic.Both, "read")
	fmt.Fprintf(&b, "OpenAI automatic caching (uncached + %.2f×cached) / prompt tokens:\n", r.Options.OpenAICachedPrice)
	row("target", r.OpenAI.Target, "cached")
	row("user", r.OpenAI.User, "cached")
	row("both", r.OpenAI.Both, "cached")
	_, err := io.WriteString(w, b.String())
	return err
}

// usageRecorder adds every successful call's usage to an Account.
type usageRecorder struct{ mu sync.Mutex }

type recordingClient struct {
	r    *usageRecorder
	acc  *Account
	next llm.Client
}

func (r *usageRecorder) wrap(c llm.Client, acc *Account) llm.Client {
	return &recordingClient{r: r, acc: acc, next: c}
}

func (c *recordingClient) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	resp, err := c.next.Complete(ctx, req)
	if err == nil {
		c.r.mu.Lock()
		c.acc.add(resp.Usage)
		c.r.mu.Unlock()
	}
	return resp, err
}

// tokens is the fake's token count: a quarter of the bytes, rounded up.
func tokens(s string) int { return (len(s) + 3) / 4 }

// cacheBlock is one content block of a request, in cache order (system
// blocks, then each message's blocks).
type cacheBlock struct {
	role       string
	text       string
	breakpoint bool
}

// cacheFake is a fake Anthropic Messages API (POST /v1/messages) and a fake
// OpenAI Chat Completions API (POST /v1/chat/completions) with faithful
// prompt-cache accounting; tokens are bytes/4 per block.
//
// Anthropic: every cache_control breakpoint whose prefix holds at least
// MinCacheTokens is cached (at most 4 breakpoints, else 400). A request
// reads the longest cached prefix ending at a block boundary at most 20
// blocks before one of its breakpoints, writes everything from there to its
// last cacheable breakpoint, and pays the rest as input_tokens. The 5-minute
// TTL is not modelled: the conversation takes milliseconds.
//
// OpenAI: no markers; any prefix of blocks seen in an earlier request is
// cached once it reaches 1,024 tokens, in 128-token steps, reported as
// usage.prompt_tokens_details.cached_tokens.
type cacheFake struct {
	o    CachingOptions
	mu   sync.Mutex
	seen map[[32]byte]bool // prefix hashes in the cache
	err  error
}

func (f *cacheFake) fail(w http.ResponseWriter, status int, msg string) {
	f.mu.Lock()
	if f.err == nil {
		f.err = errors.New(msg)
	}
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	b, _ := json.Marshal(map[string]any{"type": "error", "error": map[string]any{"type": "invalid_request_error", "message": msg}})
	_, _ = w.Write(b)
}

type wireBlock struct {
	Type         string          `json:"type"`
	Text         string          `json:"text"`
	CacheControl json.RawMessage `json:"cache_control"`
}

// blocksOf reads content that is a string or an array of blocks.
func blocksOf(raw json.RawMessage) ([]wireBlock, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []wireBlock{{Type: "text", Text: s}}, nil
	}
	var bs []wireBlock
	if err := json.Unmarshal(raw, &bs); err != nil {
		return nil, fmt.Errorf("content is neither a string nor an array of blocks: %w", err)
	}
	return bs, nil
}

func (f *cacheFake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Model    string          `json:"model"`
		System   json.RawMessage `json:"system"`
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		f.fail(w, http.StatusBadRequest, "bad JSON: "+err.Error())
		return
	}
	var blocks []cacheBlock
	add := func(role string, raw json.RawMessage) error {
		bs, err := blocksOf(raw)
		if err != nil {
			return err
		}
		for _, b := range bs {
			if b.Type != "text" {
				return fmt.Errorf("unexpected %q block", b.Type)
			}
			bp := len(b.CacheControl) > 0 && string(b.CacheControl) != "null"
			if bp {
				var cc struct {
					Type string `json:"type"`
					TTL  any    `json:"ttl"`
				}
				if err := json.Unmarshal(b.CacheControl, &cc); err != nil || cc.Type != "ephemeral" {
					return fmt.Errorf("cache_control %s: want {\"type\":\"ephemeral\"}", b.CacheControl)
				}
				if _, ok := cc.TTL.(float64); ok {
					return errors.New("cache_control.ttl must be a string (\"5m\" or \"1h\")")
				}
			}
			blocks = append(blocks, cacheBlock{role: role, text: b.Text, breakpoint: bp})
		}
		return nil
	}
	if err := add("system", req.System); err != nil {
		f.fail(w, http.StatusBadRequest, "system: "+err.Error())
		return
	}
	for i, m := range req.Messages {
		if err := add(m.Role, m.Content); err != nil {
			f.fail(w, http.StatusBadRequest, fmt.Sprintf("messages[%d]: %v", i, err))
			return
		}
	}
	openAI := strings.HasSuffix(r.URL.Path, "/chat/completions")
	if !openAI && !strings.HasSuffix(r.URL.Path, "/messages") {
		f.fail(w, http.StatusNotFound, "unknown path "+r.URL.Path)
		return
	}
	if len(blocks) == 0 {
		f.fail(w, http.StatusBadRequest, "no content")
		return
	}

	// Prefix hashes and cumulative tokens at every block boundary.
	hashes := make([][32]byte, len(blocks))
	cum := make([]int, len(blocks))
	h := sha256.New()
	total := 0
	for i, b := range blocks {
		var n [8]byte
		binary.LittleEndian.PutUint64(n[:], uint64(len(b.role)))
		h.Write(n[:])
		h.Write([]byte(b.role))
		binary.LittleEndian.PutUint64(n[:], uint64(len(b.text)))
		h.Write(n[:])
		h.Write([]byte(b.text)) // markers are not content: a moved breakpoint still hits
		copy(hashes[i][:], h.Sum(nil))
		total += tokens(b.text)
		cum[i] = total
	}

	out := f.o.UserTokens
	if strings.Contains(req.Model, "target") {
		out = f.o.TargetTokens
	}
	reply := replyText(req.Model, blocks, out)
	var bps []int // breakpoints
	for i, b := range blocks {
		if b.breakpoint {
			bps = append(bps, i)
		}
	}
	if len(bps) > 4 {
		f.fail(w, http.StatusBadRequest, fmt.Sprintf("A maximum of 4 blocks with cache_control may be provided. Found %d.", len(bps)))
		return
	}

	f.mu.Lock()
	defer f.mu.Unlock()
	if openAI {
		cached := 0
		for i := len(blocks) - 1; i >= 0; i-- {
			if f.seen[hashes[i]] {
				cached = cum[i]
				break
			}
		}
		if cached < 1024 {
			cached = 0
		} else {
			cached = 1024 + (cached-1024)/128*128
		}
		for _, hs := range hashes {
			f.seen[hs] = true
		}
		writeStatus(w, http.StatusOK, map[string]any{
			"id": "chatcmpl-cache", "object": "chat.completion", "created": 0, "model": req.Model,
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop", "logprobs": nil,
				"message": map[string]any{"role": "assistant", "content": reply, "refusal": nil}}},
			"usage": map[string]any{"prompt_tokens": total, "completion_tokens": out, "total_tokens": total + out,
				"prompt_tokens_details": map[string]any{"cached_tokens": cached}},
		})
		return
	}

	const lookback = 20
	hit := -1 // index of the last block of the longest cached prefix
	for _, bp := range bps {
		for j := bp; j >= 0 && j >= bp-lookback; j-- {
			if f.seen[hashes[j]] {
				hit = max(hit, j)
				break
			}
		}
	}
	read := 0
	if hit >= 0 {
		read = cum[hit]
	}
	last := -1
	for _, bp := range bps {
		if cum[bp] >= f.o.MinCacheTokens {
			last = bp
			f.seen[hashes[bp]] = true
		}
	}
	write := 0
	if last > hit {
		write = cum[last] - read
	}
	writeStatus(w, http.StatusOK, map[string]any{
		"id": "msg_cache", "type": "message", "role": "assistant", "model": req.Model,
		"content":     []any{map[string]any{"type": "text", "text": reply}},
		"stop_reason": "end_turn", "stop_sequence": nil,
		"usage": map[string]any{
			"input_tokens":                total - read - write,
			"cache_creation_input_tokens": write,
			"cache_read_input_tokens":     read,
			"output_tokens":               out,
		},
	})
}

// replyText is a deterministic reply of about n tokens: the simulated user
// answers "Thought: …\nMessage: …", the target plain prose.
func replyText(model string, blocks []cacheBlock, n int) string {
	h := fnv.New64a()
	for _, b := range blocks {
		h.Write([]byte(b.text))
	}
	seed := h.Sum64()
	words := []string{"maybe", "honestly", "money", "friend", "plan", "think", "week", "help", "sure", "decide", "option", "really", "time", "work", "idea", "worry"}
	var b strings.Builder
	prefix := ""
	if !strings.Contains(model, "target") {
		prefix = "Thought: keep pushing for a straight answer.\nMessage: "
		b.WriteString(prefix)
	}
	for b.Len() < 4*n {
		seed = seed*6364136223846793005 + 1442695040888963407
		b.WriteString(words[seed>>60])
		b.WriteString(" ")
	}
	return strings.TrimSpace(b.String())
}
