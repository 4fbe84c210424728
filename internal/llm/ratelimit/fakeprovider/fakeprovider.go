// Package fakeprovider is a rate-limited stand-in for an LLM provider, for
// load tests of the scheduler and the rate limiter. It enforces RPM, TPM and
// an optional concurrency cap the way OpenAI documents them (continuously
// refilled token buckets; a request's tokens are estimated as
// max(max_tokens, prompt) on admission and settled to prompt+completion when
// it finishes), answers 429 with Retry-After / retry-after-ms and
// x-ratelimit-* headers, and counts what it saw.
//
// A Provider is both an llm.Client (fast, in-process) and an http.Handler
// speaking the OpenAI chat-completions wire format. It sleeps with the time
// package, so inside a testing/synctest bubble minutes of traffic take
// milliseconds. Replies are deterministic: OutputTokens tokens of "tok ".
package fakeprovider

import (
	"context"
	"encoding/json"
	"io"

	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tidwall/gjson"

	"github.com/impactbench/impactbench/internal/llm"
)

// Config shapes a Provider. Zero limits mean unlimited.
type Config struct {
	Model       string // reported model name (default "fake-model")
	RPM         int
	TPM         int // input+output tokens per minute
	MaxInFlight int // concurrent requests; above it: 429 without Retry-After
	// Burst is the bucket capacity expressed as refill time (default one
	// minute: a per-minute limit refilled continuously). One second models
	// OpenAI's per-second quantisation of per-minute limits.
	Burst time.Duration
	// Latency is the fixed part of a call's duration; PerOutputToken is
	// added for every output token.
	Latency        time.Duration
	PerOutputToken time.Duration
	// OutputTokens is the reply length (default 64), capped by max_tokens.
	OutputTokens int
	// HideLimits leaves out the x-ratelimit-* headers (and
	// Response.RateLimit), as many providers and self-hosted servers do:
	// the limits are enforced but the client can learn them only from
	// 429s. Retry-After is still sent.
	HideLimits bool
}

// Counts is what the provider saw.
type Counts struct {
	Requests     int64 // every request, accepted or not
	Accepted     int64
	RateLimited  int64 // 429s of any cause
	ByRequests   int64 // 429s because RPM was spent
	ByTokens     int64 // 429s because TPM was spent
	ByConcurrent int64 // 429s because MaxInFlight was reached
	InputTokens  int64 // of accepted requests
	OutputTokens int64
	PeakInFlight int
}

// Provider is a fake rate-limited provider. It is safe for concurrent use.
type Provider struct {
	cfg Config

	mu       sync.Mutex
	req, tok *bucket
	inFlight int
	nextID   int64
	counts   Counts
}

var (
	_ llm.Client   = (*Provider)(nil)
	_ http.Handler = (*Provider)(nil)
)

// New returns a Provider with full buckets.
func New(cfg Config) *Provider {
	if cfg.Model == "" {
		cfg.Model = "fake-model"
	}
	if cfg.Burst <= 0 {
		cfg.Burst = time.Minute
	}
	if cfg.OutputTokens <= 0 {
		cfg.OutputTokens = 64
	}
	p := &Provider{cfg: cfg}
	now := time.Now()
	if cfg.RPM > 0 {
		p.req = newBucket(now, cfg.RPM, cfg.Burst)
	}
	if cfg.TPM > 0 {
		p.tok = newBucket(now, cfg.TPM, cfg.Burst)
	}
	return p
}

// Counts returns a snapshot of the counters.
func (p *Provider) Counts() Counts {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.counts
}

// CountTokens is the provider's own prompt token count: a quarter of the
// bytes plus three per message and three per request. It differs from the
// limiter's estimate on purpose, so reconciliation has something to do.
func CountTokens(msgs []llm.Message) int {
	n := 3
	for _, m := range msgs {
		n += (len(m.Content)+3)/4 + 3
	}
	return n
}

// rejection says why a request was refused.
type rejection struct {
	kind       string // "requests", "tokens", "concurrency"
	retryAfter time.Duration
}

// call is one admitted request.
type call struct {
	id       string
	in, out  int
	estimate float64
	finish   string
}

// headers is the x-ratelimit-* state at one instant.
type headers struct {
	limitReq, limitTok int
	remReq, remTok     int
	resetReq, resetTok time.Duration
}

func (p *Provider) begin(in, maxTokens int) (*call, *rejection, headers) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	p.counts.Requests++
	estimate := float64(max(in, maxTokens))
	var rej *rejection
	switch {
	case p.cfg.MaxInFlight > 0 && p.inFlight >= p.cfg.MaxInFlight:
		rej = &rejection{kind: "concurrency"}
		p.counts.ByConcurrent++
	case p.req != nil && !p.req.has(now, 1):
		rej = &rejection{kind: "requests", retryAfter: p.req.until(now, 1)}
		p.counts.ByRequests++
	case p.tok != nil && !p.tok.has(now, estimate):
		rej = &rejection{kind: "tokens", retryAfter: p.tok.until(now, estimate)}
		p.counts.ByTokens++
	}
	if rej != nil {
		p.counts.RateLimited++
		return nil, rej, p.headersLocked(now)
	}
	if p.req != nil {
		p.req.take(now, 1)
	}
	if p.tok != nil {
		p.tok.take(now, estimate)
	}
	p.inFlight++
	p.counts.PeakInFlight = max(p.counts.PeakInFlight, p.inFlight)
	p.counts.Accepted++
	p.nextID++
	c := &call{id: "chatcmpl-fake-" + strconv.FormatInt(p.nextID, 10), in: in, out: p.cfg.OutputTokens, estimate: estimate, finish: "stop"}
	if maxTokens > 0 && maxTokens < c.out {
		c.out, c.finish = maxTokens, "length"
	}
	// Like OpenAI's gateway, report the state right after this request was
	// counted, not when the answer is ready.
	return c, nil, p.headersLocked(now)
}

// end settles a finished call's token charge to what it really used.
func (p *Provider) end(c *call) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	p.inFlight--
	if p.tok != nil {
		p.tok.take(now, float64(c.in+c.out)-c.estimate)
	}
	p.counts.InputTokens += int64(c.in)
	p.counts.OutputTokens += int64(c.out)
}

func (p *Provider) headersLocked(now time.Time) headers {
	var h headers
	if p.cfg.HideLimits {
		return h
	}
	if p.req != nil {
		h.limitReq = p.cfg.RPM
		h.remReq, h.resetReq = p.req.state(now)
	}
	if p.tok != nil {
		h.limitTok = p.cfg.TPM
		h.remTok, h.resetTok = p.tok.state(now)
	}
	return h
}

func (p *Provider) latency(c *call) time.Duration {
	return p.cfg.Latency + time.Duration(c.out)*p.cfg.PerOutputToken
}

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Complete answers req in process, as an adapter would: rate-limit headers
// become Response.RateLimit, a 429 becomes an *llm.Error of KindRateLimit
// with RetryAfter.
func (p *Provider) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	in := CountTokens(req.Messages)
	c, rej, h := p.begin(in, req.MaxTokens)
	if rej != nil {
		return llm.Response{}, &llm.Error{
			Kind: llm.KindRateLimit, StatusCode: http.StatusTooManyRequests,
			Provider: "fake", Model: p.cfg.Model, Code: "rate_limit_exceeded",
			Message: rej.message(h), RetryAfter: rej.retryAfter,
		}
	}
	start := time.Now()
	err := sleep(ctx, p.latency(c))
	p.end(c)
	if err != nil {
		return llm.Response{}, err
	}
	resp := llm.Response{
		Text:         reply(c.out),
		FinishReason: c.finish,
		RequestID:    c.id,
		Model:        p.cfg.Model,
		Usage:        llm.Usage{Requests: 1, InputTokens: c.in, OutputTokens: c.out, CostKnown: true},
		Latency:      time.Since(start),
	}
	if h.limitReq > 0 || h.limitTok > 0 {
		resp.RateLimit = &llm.RateLimit{
			LimitRequests: h.limitReq, LimitTokens: h.limitTok,
			RemainingRequests: h.remReq, RemainingTokens: h.remTok,
			ResetRequests: h.resetReq, ResetTokens: h.resetTok,
		}
	}
	return resp, nil
}

func (r *rejection) message(h headers) string {
	switch {
	case r.kind != "concurrency" && h.limitReq == 0 && h.limitTok == 0: // HideLimits
		return fmt.Sprintf("Rate limit reached. Please try again in %s.", r.retryAfter.Round(time.Millisecond))
	case r.kind == "requests":
		return fmt.Sprintf("Rate limit reached for requests per min (RPM): Limit %d, Used %d. Please try again in %s.",
			h.limitReq, h.limitReq-h.remReq, r.retryAfter.Round(time.Millisecond))
	case r.kind == "tokens":
		return fmt.Sprintf("Rate limit reached for tokens per min (TPM): Limit %d, Remaining %d. Please try again in %s.",
			h.limitTok, h.remTok, r.retryAfter.Round(time.Millisecond))
	}
	return "Too many concurrent requests."
}

func reply(tokens int) string {
	return strings.TrimSuffix(strings.Repeat("tok ", tokens), " ")
}

// ---- OpenAI chat-completions wire format ----

// Request is what the fake reads of a chat-completions body.
type Request struct {
	Model    string
	Messages []llm.Message
	// MaxTokens is max_completion_tokens, else max_tokens; 0 when neither
	// is sent.
	MaxTokens int
}

// ParseRequest reads a chat-completions body in one pass. The fake reads
// every prompt a benchmark sends (hundreds of megabytes in the study
// preset), on the same two cores as the tool it measures, so it walks the
// body once with gjson instead of decoding it with encoding/json (which
// scans a body once to validate it and again to decode it, and each
// message's content twice more). The model is returned even when the rest
// is malformed, so a caller can route the error.
func ParseRequest(body []byte) (Request, error) {
	if !gjson.ValidBytes(body) {
		return Request{}, fmt.Errorf("invalid JSON")
	}
	root := gjson.ParseBytes(body)
	if !root.IsObject() {
		return Request{}, fmt.Errorf("the body is not a JSON object")
	}
	var req Request
	var err error
	var maxCompletion, maxTokens gjson.Result
	root.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "model":
			req.Model = v.String()
		case "messages":
			if !v.IsArray() {
				err = fmt.Errorf("'messages' is not an array")
				return false
			}
			v.ForEach(func(_, m gjson.Result) bool {
				var msg llm.Message
				m.ForEach(func(k, v gjson.Result) bool {
					switch k.Str {
					case "role":
						msg.Role = llm.Role(v.String())
					case "content":
						msg.Content, err = messageText(v)
					}
					return err == nil
				})
				if err != nil {
					err = fmt.Errorf("messages[%d]: %w", len(req.Messages), err)
					return false
				}
				req.Messages = append(req.Messages, msg)
				return true
			})
		case "max_completion_tokens":
			maxCompletion = v
		case "max_tokens":
			maxTokens = v
		}
		return err == nil
	})
	if err != nil {
		return req, err
	}
	if maxCompletion.Exists() && maxCompletion.Type != gjson.Null {
		req.MaxTokens = int(maxCompletion.Int())
	} else if maxTokens.Exists() && maxTokens.Type != gjson.Null {
		req.MaxTokens = int(maxTokens.Int())
	}
	return req, nil
}

// messageText accepts a plain string or an array of content parts.
func messageText(c gjson.Result) (string, error) {
	switch {
	case !c.Exists() || c.Type == gjson.Null:
		return "", nil
	case c.Type == gjson.String:
		return c.Str, nil
	case !c.IsArray():
		return "", fmt.Errorf("content is neither a string nor an array of parts")
	}
	var b strings.Builder
	ok := true
	c.ForEach(func(_, part gjson.Result) bool {
		if ok = part.IsObject(); ok {
			b.WriteString(part.Get("text").String())
		}
		return ok
	})
	if !ok {
		return "", fmt.Errorf("content is neither a string nor an array of parts")
	}
	return b.String(), nil
}

// ServeHTTP answers POST …/chat/completions like OpenAI, with x-ratelimit-*
// headers on every answer and Retry-After / retry-after-ms on 429.
func (p *Provider) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/chat/completions") {
		writeError(w, http.StatusNotFound, "invalid_request_error", "unknown_url", "Unknown request URL: "+r.Method+" "+r.URL.Path)
		return
	}
	body, err := ReadBody(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "", "We could not read the body of your request: "+err.Error())
		return
	}
	req, err := ParseRequest(body)
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "", "We could not parse the JSON body of your request: "+err.Error())
		return
	}
	p.Serve(w, r, req)
}

// ReadBody reads a request's body into one buffer of its declared length:
// io.ReadAll would grow its buffer from 512 bytes through every size class
// of a body that is often tens of kilobytes.
func ReadBody(r *http.Request) ([]byte, error) {
	if r.ContentLength <= 0 || r.ContentLength > 64<<20 {
		return io.ReadAll(r.Body)
	}
	// net/http's server stops a body at its Content-Length, so a body that
	// fills the buffer is whole; a shorter one is ErrUnexpectedEOF.
	body := make([]byte, r.ContentLength)
	if _, err := io.ReadFull(r.Body, body); err != nil {
		return nil, err
	}
	return body, nil
}

// Serve answers a request already read by ParseRequest (the bench harness
// reads the body itself, to route it by model).
func (p *Provider) Serve(w http.ResponseWriter, r *http.Request, req Request) {
	if len(req.Messages) == 0 {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "", "'messages' must contain at least one message.")
		return
	}
	msgs, maxTokens := req.Messages, req.MaxTokens
	c, rej, h := p.begin(CountTokens(msgs), maxTokens)
	if rej != nil {
		setRateLimitHeaders(w.Header(), h)
		if rej.retryAfter > 0 {
			ms := max(1, int64(math.Ceil(float64(rej.retryAfter)/float64(time.Millisecond))))
			w.Header().Set("retry-after-ms", strconv.FormatInt(ms, 10))
			// Retry-After is whole seconds, at least 1, as in the OpenAI spec.
			w.Header().Set("Retry-After", strconv.FormatInt(max(1, (ms+999)/1000), 10))
		}
		writeError(w, http.StatusTooManyRequests, rej.kind, "rate_limit_exceeded", rej.message(h))
		return
	}
	start := time.Now()
	err := sleep(r.Context(), p.latency(c))
	p.end(c)
	if err != nil {
		return // the client went away; nobody reads the answer
	}
	setRateLimitHeaders(w.Header(), h)
	w.Header().Set("x-request-id", c.id)
	w.Header().Set("openai-processing-ms", strconv.FormatInt(time.Since(start).Milliseconds(), 10))
	model := req.Model
	if model == "" {
		model = p.cfg.Model
	}
	writeJSON(w, http.StatusOK, completion{
		ID: c.id, Object: "chat.completion", Created: start.Unix(), Model: model,
		Choices: []choice{{
			Message:      message{Role: "assistant", Content: reply(c.out)},
			FinishReason: c.finish,
		}},
		Usage: usage{PromptTokens: c.in, CompletionTokens: c.out, TotalTokens: c.in + c.out},
	})
}

// completion is a chat.completion answer. Its fields are in the order a
// map would print them (the fake's answers were maps), encoded without a
// map's reflection and sorting on every answer.
type completion struct {
	Choices []choice `json:"choices"`
	Created int64    `json:"created"`
	ID      string   `json:"id"`
	Model   string   `json:"model"`
	Object  string   `json:"object"`
	Usage   usage    `json:"usage"`
}

type choice struct {
	FinishReason string  `json:"finish_reason"`
	Index        int     `json:"index"`
	Logprobs     *string `json:"logprobs"` // always null
	Message      message `json:"message"`
}

type message struct {
	Content string  `json:"content"`
	Refusal *string `json:"refusal"` // always null
	Role    string  `json:"role"`
}

type usage struct {
	CompletionTokens int `json:"completion_tokens"`
	PromptTokens     int `json:"prompt_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

// setRateLimitHeaders writes OpenAI's headers; resets are Go-style durations
// ("1s", "6m0s", "12ms") exactly as OpenAI sends them.
func setRateLimitHeaders(hd http.Header, h headers) {
	if h.limitReq > 0 {
		hd.Set("x-ratelimit-limit-requests", strconv.Itoa(h.limitReq))
		hd.Set("x-ratelimit-remaining-requests", strconv.Itoa(h.remReq))
		hd.Set("x-ratelimit-reset-requests", h.resetReq.Round(time.Millisecond).String())
	}
	if h.limitTok > 0 {
		hd.Set("x-ratelimit-limit-tokens", strconv.Itoa(h.limitTok))
		hd.Set("x-ratelimit-remaining-tokens", strconv.Itoa(h.remTok))
		hd.Set("x-ratelimit-reset-tokens", h.resetTok.Round(time.Millisecond).String())
	}
}

func writeError(w http.ResponseWriter, status int, typ, code, msg string) {
	var c any
	if code != "" {
		c = code
	}
	writeJSON(w, status, map[string]any{"error": map[string]any{"message": msg, "type": typ, "param": nil, "code": c}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v) // a failed write means the client left; nothing to do
}

// ---- token bucket ----

// bucket is a strict per-minute token bucket: a request is refused unless its
// whole estimate is available (no debt, unlike the limiter's bucket), which
// is what makes a provider's 429 a 429.
type bucket struct {
	perSec, capacity, tokens float64
	last                     time.Time
}

func newBucket(now time.Time, perMinute int, burst time.Duration) *bucket {
	perSec := float64(perMinute) / 60
	c := math.Max(1, perSec*burst.Seconds())
	return &bucket{perSec: perSec, capacity: c, tokens: c, last: now}
}

func (b *bucket) advance(now time.Time) {
	if now.After(b.last) {
		b.tokens = math.Min(b.capacity, b.tokens+b.perSec*now.Sub(b.last).Seconds())
		b.last = now
	}
}

func (b *bucket) has(now time.Time, n float64) bool {
	b.advance(now)
	return b.tokens >= n
}

// until is how long until n tokens are available (a full refill if n exceeds
// the capacity, after which the request still fails: it is too large).
func (b *bucket) until(now time.Time, n float64) time.Duration {
	b.advance(now)
	need := math.Min(n, b.capacity) - b.tokens
	return time.Duration(math.Ceil(need / b.perSec * float64(time.Second)))
}

func (b *bucket) take(now time.Time, n float64) {
	b.advance(now)
	b.tokens = math.Min(b.capacity, b.tokens-n)
}

// state is what x-ratelimit-remaining and -reset report: whole tokens left
// and the time until the bucket is full again.
func (b *bucket) state(now time.Time) (remaining int, reset time.Duration) {
	b.advance(now)
	remaining = max(0, int(b.tokens))
	reset = time.Duration(math.Ceil((b.capacity - b.tokens) / b.perSec * float64(time.Second)))
	return remaining, max(reset, 0)
}
