// Package openai adapts OpenAI Chat Completions, and every server that
// speaks it (DeepInfra, xAI, OpenRouter, Together, Groq, Ollama, vLLM, …),
// to llm.Client, using the official openai-go SDK.
package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/impactbench/impactbench/internal/llm"
	"github.com/impactbench/impactbench/internal/sanitize"
)

// DefaultBaseURL is OpenAI's own endpoint.
const DefaultBaseURL = "https://api.openai.com/v1"

// DefaultMaxTokens is upstream's output cap.
const DefaultMaxTokens = 2048

// Dialect says which flavour of Chat Completions the server speaks.
type Dialect int

const (
	// DialectAuto picks DialectOpenAI for api.openai.com, else DialectCompatible.
	DialectAuto Dialect = iota
	// DialectOpenAI: max_completion_tokens and json_schema structured output.
	DialectOpenAI
	// DialectCompatible: max_tokens (many servers do not know
	// max_completion_tokens) and json_object, the JSON mode they all share.
	DialectCompatible
)

// Config configures one Client (one provider + model).
type Config struct {
	// Provider labels errors and logs ("openai", "deepinfra", …).
	Provider string
	APIKey   string
	// BaseURL defaults to DefaultBaseURL.
	BaseURL string
	// Model is sent as is (routing prefixes are stripped by the caller).
	Model        string
	ExtraHeaders map[string]string
	// HTTPClient is the run's shared client (llm.NewHTTPClient).
	HTTPClient  *http.Client
	Temperature *float64
	// MaxTokens is the output cap when the request sets none (default 2048).
	MaxTokens int
	Dialect   Dialect
	// KeyField names where the key comes from, for auth hints, e.g.
	// "apikey of targets[gpt-4o] (usually ${OPENAI_API_KEY})". Never the key.
	KeyField string
	// Logger gets one warning when the server refuses the seed parameter
	// (nil: none; the answers still say why they carried no seed).
	Logger *slog.Logger
}

// Client is an llm.Client for one model. Safe for concurrent use; build it
// once per model config, not per call.
type Client struct {
	// api sends requests with the client's options only (see New); its
	// services are unused, the body is ours (wire.go).
	api      sdk.Client
	cfg      Config
	official bool
	// seedRefused holds why the server refused the seed parameter, once it
	// has: every later call goes without one instead of failing first.
	seedRefused atomic.Pointer[string]
}

var _ llm.Client = (*Client)(nil)

// New builds the SDK service once. It never reads OPENAI_* environment
// variables: sdk.NewClient would apply DefaultClientOptions (OPENAI_BASE_URL,
// OPENAI_ORG_ID, OPENAI_PROJECT_ID, OPENAI_CUSTOM_HEADERS, …), so the chat
// service is built directly from explicit options instead.
func New(cfg Config) (*Client, error) {
	if cfg.Provider == "" {
		cfg.Provider = "openai"
	}
	if cfg.BaseURL == "" {
		cfg.BaseURL = DefaultBaseURL
	}
	if cfg.MaxTokens <= 0 {
		cfg.MaxTokens = DefaultMaxTokens
	}
	if cfg.Model == "" {
		return nil, &llm.Error{Kind: llm.KindConfig, Provider: cfg.Provider, Message: "model is empty"}
	}
	u, err := url.Parse(cfg.BaseURL)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return nil, &llm.Error{Kind: llm.KindConfig, Provider: cfg.Provider, Model: cfg.Model,
			Message: fmt.Sprintf("base_url %q is not an absolute URL", sanitize.URL(cfg.BaseURL))}
	}
	// Every answer is read within llm's bounds (a reply's size, a body
	// that is not an object).
	cfg.HTTPClient = llm.BoundedHTTPClient(cfg.HTTPClient)
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	official := cfg.Dialect == DialectOpenAI || (cfg.Dialect == DialectAuto && strings.EqualFold(u.Hostname(), "api.openai.com"))

	opts := []option.RequestOption{
		option.WithHTTPClient(cfg.HTTPClient),
		option.WithBaseURL(cfg.BaseURL),
		// One retry policy for all providers lives in llm.WithRetry.
		option.WithMaxRetries(0),
	}
	if cfg.APIKey != "" {
		// Local servers (Ollama, vLLM without --api-key) need none; with an
		// empty key the SDK sends no Authorization header at all.
		opts = append(opts, option.WithAPIKey(cfg.APIKey))
	}
	for k, v := range cfg.ExtraHeaders {
		opts = append(opts, option.WithHeader(k, v))
	}
	return &Client{api: sdk.Client{Options: opts}, cfg: cfg, official: official}, nil
}

// Complete makes one Chat Completions call (no retries: see llm.WithRetry).
//
// The request's seed goes out as `seed`. OpenAI accepts it (best effort,
// deprecated but still honoured); an OpenAI-compatible server that does
// not know it may answer 400/422 naming it. Such a call is sent once more
// without the seed, the client stops sending seeds, warns once, and every
// answer after says why it carried none (the conversations' run block
// shows it): a benchmark should not stop because a server lacks an
// optional parameter, nor hide that its samples went without seeds.
func (c *Client) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	seed, noSeed := c.seedFor(req)
	resp, err := c.complete(ctx, req, seed)
	if seed != nil && refusesSeed(err) {
		noSeed = c.refuseSeeds(err)
		resp, err = c.complete(ctx, req, nil)
		// The refused attempt was a request too (unbilled: a 400 has no usage).
		var e *llm.Error
		if errors.As(err, &e) {
			e.Usage.Requests++
		} else if err == nil {
			resp.Usage.Requests++
		}
		seed = nil
	}
	if err == nil {
		resp.SentSeed, resp.NoSeed = seed, noSeed
	}
	return resp, err
}

// seedFor returns the seed to send with req, or why none is sent.
func (c *Client) seedFor(req llm.Request) (*int64, string) {
	if why := c.seedRefused.Load(); why != nil {
		return nil, *why
	}
	if req.Seed == 0 {
		return nil, llm.NoSeedInRequest
	}
	s := llm.WireSeed(req.Seed)
	return &s, ""
}

// refusesSeed reports an error that is the server refusing the seed
// parameter: a 400 or 422 (FastAPI-based servers validate with 422) whose
// message names it.
func refusesSeed(err error) bool {
	var e *llm.Error
	if !errors.As(err, &e) || (e.StatusCode != http.StatusBadRequest && e.StatusCode != http.StatusUnprocessableEntity) {
		return false
	}
	return strings.Contains(strings.ToLower(e.Message+" "+e.Code), "seed")
}

// refuseSeeds records that the server refuses seeds and warns once.
func (c *Client) refuseSeeds(err error) string {
	var e *llm.Error
	errors.As(err, &e)
	msg := e.Message
	if len(msg) > 200 {
		msg = msg[:200] + "…"
	}
	why := fmt.Sprintf("server refused the seed parameter (HTTP %d: %s)", e.StatusCode, msg)
	if c.seedRefused.CompareAndSwap(nil, &why) {
		c.cfg.Logger.Warn("server refuses the seed parameter; sending requests without it, so samples differ only by sampling temperature",
			"provider", c.cfg.Provider, "model", c.cfg.Model, "base_url", sanitize.URL(c.cfg.BaseURL), "status", e.StatusCode)
	}
	return *c.seedRefused.Load()
}

func (c *Client) complete(ctx context.Context, req llm.Request, seed *int64) (llm.Response, error) {
	reqBody, err := c.body(req, seed)
	if err != nil {
		return llm.Response{}, &llm.Error{Kind: llm.KindConfig, Provider: c.cfg.Provider, Model: c.cfg.Model,
			Message: fmt.Sprintf("encode the request: %v", err)}
	}
	var httpResp *http.Response
	var raw []byte
	ctx, body := llm.WatchBody(ctx)
	start := time.Now()
	err = c.api.Post(ctx, "chat/completions", reqBody, &raw, option.WithResponseInto(&httpResp))
	latency := time.Since(start)
	a, ok := readAnswer(raw)
	if err == nil && !ok {
		err = errors.New("error parsing response json: not valid JSON")
	}
	if err != nil {
		return llm.Response{Latency: latency}, c.callError(err, httpResp)
	}
	reqID := ""
	var rateLimit *llm.RateLimit
	if httpResp != nil {
		reqID = httpResp.Header.Get("x-request-id")
		rateLimit = llm.ParseRateLimit(httpResp.Header, time.Now())
	}
	fail := func(kind llm.ErrorKind, status int, code, msg, finish string) (llm.Response, error) {
		e := &llm.Error{Kind: kind, StatusCode: status, Provider: c.cfg.Provider, Model: c.cfg.Model,
			Code: code, Message: llm.Redact(msg, c.cfg.APIKey), RequestID: reqID, Usage: a.usage}
		if status >= 400 {
			classify(e, c.cfg)
			if httpResp != nil {
				e.RetryAfter = llm.ParseRetryAfter(httpResp.Header, time.Now())
			}
		}
		if kind == llm.KindEmpty && finish == "length" {
			e.Hint = "the output cap was used up before any visible text (reasoning models count hidden reasoning): raise max_tokens"
		}
		return llm.Response{Latency: latency}, e
	}

	// OpenRouter (and some gateways) report errors that happen after the
	// response started inside a 200 body: {"error":{...}} and no choices.
	if present(a.err) {
		status, code, msg := parseErrorObject(a.err)
		return fail(llm.KindServer, status, code, "error in a 200 response: "+msg, "")
	}
	if !a.choices {
		return fail(llm.KindEmpty, 0, "", "response has no choices", "")
	}
	if present(a.choiceErr) {
		status, code, msg := parseErrorObject(a.choiceErr)
		return fail(llm.KindServer, status, code, "error in choice: "+msg, a.finish)
	}
	refused := a.refusal != "" && req.AcceptsRefusal()
	if a.refusal != "" && !refused {
		return fail(llm.KindEmpty, 0, "refusal", "model refused: "+a.refusal, a.finish)
	}
	content := a.content
	if refused {
		// The refusal message is the reply the target gave.
		content = a.refusal
	}
	if !refused && strings.TrimSpace(content) == "" {
		return fail(llm.KindEmpty, 0, a.finish, fmt.Sprintf("empty content (finish_reason %q)", a.finish), a.finish)
	}
	text, cut := llm.BoundReply(content)
	// gjson's strings are slices of the whole response body; copies let
	// the body go while the conversation keeps only its text.
	return llm.Response{
		Text:         strings.Clone(text),
		Truncated:    cut || body.Cut("content") || (refused && body.Cut("refusal")),
		Refused:      refused,
		FinishReason: strings.Clone(a.finish),
		RequestID:    reqID,
		Model:        strings.Clone(a.model),
		Usage:        a.usage,
		Latency:      latency,
		RateLimit:    rateLimit,
	}, nil
}

// contentParts joins the text parts of a content array; other part types
// (images, audio, types newer than this adapter) are skipped.
func contentParts(raw string) string {
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal([]byte(raw), &parts) != nil {
		return ""
	}
	var b strings.Builder
	for _, p := range parts {
		if p.Type == "text" {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

var schemaNameBad = regexp.MustCompile(`[^a-zA-Z0-9_-]+`)

// SchemaName makes s a valid json_schema name: [a-zA-Z0-9_-]{1,64}.
func SchemaName(s string) string {
	s = schemaNameBad.ReplaceAllString(s, "_")
	if len(s) > 64 {
		s = s[:64]
	}
	if s == "" {
		s = "output"
	}
	return s
}

// StrictCompatible reports whether schema meets OpenAI's strict structured
// output rules that a Go-derived schema can break: every object lists all its
// properties as required and forbids additional ones, the root is an object,
// and no unsupported composition keyword is used. Strict mode with a
// non-conforming schema is a 400, so anything doubtful is sent non-strict
// (CompleteJSON validates the answer either way).
func StrictCompatible(schema map[string]any) bool {
	if !hasType(schema, "object") {
		return false
	}
	return strictOK(schema)
}

func strictOK(s map[string]any) bool {
	for _, k := range []string{"oneOf", "allOf", "not", "if", "then", "else", "patternProperties", "dependentRequired", "dependentSchemas"} {
		if _, ok := s[k]; ok {
			return false
		}
	}
	if hasType(s, "object") {
		if ap, ok := s["additionalProperties"].(bool); !ok || ap {
			return false
		}
		props, _ := s["properties"].(map[string]any)
		req := map[string]bool{}
		if r, ok := s["required"].([]any); ok {
			for _, v := range r {
				if name, ok := v.(string); ok {
					req[name] = true
				}
			}
		} else if r, ok := s["required"].([]string); ok {
			for _, name := range r {
				req[name] = true
			}
		}
		for name, sub := range props {
			if !req[name] {
				return false
			}
			if m, ok := sub.(map[string]any); ok && !strictOK(m) {
				return false
			}
		}
	}
	if items, ok := s["items"].(map[string]any); ok && !strictOK(items) {
		return false
	}
	for _, k := range []string{"anyOf"} {
		if list, ok := s[k].([]any); ok {
			for _, v := range list {
				if m, ok := v.(map[string]any); ok && !strictOK(m) {
					return false
				}
			}
		}
	}
	for _, k := range []string{"$defs", "definitions"} {
		if defs, ok := s[k].(map[string]any); ok {
			for _, v := range defs {
				if m, ok := v.(map[string]any); ok && !strictOK(m) {
					return false
				}
			}
		}
	}
	return true
}

func hasType(s map[string]any, want string) bool {
	switch t := s["type"].(type) {
	case string:
		return t == want
	case []any:
		for _, v := range t {
			if v == want {
				return true
			}
		}
	case []string:
		for _, v := range t {
			if v == want {
				return true
			}
		}
	}
	return false
}

// callError turns an SDK error into an *llm.Error.
func (c *Client) callError(err error, httpResp *http.Response) *llm.Error {
	e := &llm.Error{Provider: c.cfg.Provider, Model: c.cfg.Model, Err: err, Usage: llm.Usage{Requests: 1}}
	var apiErr *sdk.Error
	switch {
	case errors.Is(err, llm.ErrResponseTooLarge), errors.Is(err, llm.ErrNotJSONObject):
		// An unusable answer: a failed attempt, retried like other bad ones.
		e.Kind, e.Err = llm.KindServer, nil
		e.Message = "malformed response: " + llm.Redact(err.Error(), c.cfg.APIKey)
		if httpResp != nil {
			e.StatusCode = httpResp.StatusCode
			e.RequestID = httpResp.Header.Get("x-request-id")
		}
		return e
	case errors.As(err, &apiErr):
		e.StatusCode = apiErr.StatusCode
		e.Code = apiErr.Code
		if e.Code == "" {
			e.Code = apiErr.Type
		}
		e.Message = apiErr.Message
		if apiErr.Response != nil {
			httpResp = apiErr.Response
		}
		if e.Code == "" || e.Message == "" {
			// Gateways put numbers where OpenAI puts strings; read the body.
			if _, code, msg := parseErrorBody(httpResp); msg != "" {
				e.Code, e.Message = firstNonEmpty(e.Code, code), firstNonEmpty(e.Message, msg)
			}
		}
		// The SDK error itself is safe to keep: its Error() prints only the status.
	case httpResp != nil && httpResp.StatusCode >= 400:
		// The SDK could not decode the error body (e.g. a numeric "code");
		// it left the body readable on the response.
		e.StatusCode = httpResp.StatusCode
		_, e.Code, e.Message = parseErrorBody(httpResp)
		e.Err = nil
	case errors.Is(err, context.DeadlineExceeded):
		e.Kind = llm.KindTimeout
		e.Message = "request timed out"
		return e
	case errors.Is(err, context.Canceled):
		e.Kind = llm.KindConnection
		e.Message = "request cancelled"
		return e
	case httpResp != nil && httpResp.StatusCode < 300 && !isNetErr(err):
		e.StatusCode = httpResp.StatusCode
		e.Kind = llm.KindServer
		e.Message = llm.Redact("malformed response: "+err.Error(), c.cfg.APIKey)
		e.RequestID = httpResp.Header.Get("x-request-id")
		e.Err = nil
		return e
	default:
		e.Kind = llm.KindConnection
		e.Message = llm.Redact(err.Error(), c.cfg.APIKey)
		e.Err = nil // the transport error text is already in Message (redacted)
		return e
	}
	if httpResp != nil {
		e.RequestID = httpResp.Header.Get("x-request-id")
		e.RetryAfter = llm.ParseRetryAfter(httpResp.Header, time.Now())
	}
	e.Message = llm.Redact(e.Message, c.cfg.APIKey)
	classify(e, c.cfg)
	return e
}

// classify sets Kind and Hint from status and provider code.
func classify(e *llm.Error, cfg Config) {
	e.Kind = llm.KindForStatus(e.StatusCode)
	code := strings.ToLower(e.Code)
	switch {
	case strings.Contains(code, "insufficient_quota"):
		e.Kind = llm.KindQuota
		e.Hint = "add credit / check billing for this key"
	case e.StatusCode == http.StatusPaymentRequired:
		e.Hint = "out of credits: add credit / check billing for this key"
	case e.Kind == llm.KindAuth:
		field := cfg.KeyField
		if field == "" {
			field = "the apikey field of this model"
		}
		e.Hint = "check " + field + " in config.yaml (is the variable set, and is it a key for " + cfg.Provider + "?)"
	case e.StatusCode == http.StatusNotFound:
		e.Hint = "check the model name and base_url (" + sanitize.URL(cfg.BaseURL) + ")"
	}
}

// parseErrorObject reads an OpenAI-style error object, tolerating numeric
// codes (OpenRouter) and missing fields. The status defaults to 502.
func parseErrorObject(raw string) (status int, code, msg string) {
	var o struct {
		Code    any    `json:"code"`
		Type    string `json:"type"`
		Message string `json:"message"`
	}
	status = http.StatusBadGateway
	if err := json.Unmarshal([]byte(raw), &o); err != nil {
		return status, "", raw
	}
	switch v := o.Code.(type) {
	case float64:
		if v >= 400 && v < 600 {
			status = int(v)
		}
		code = strconv.Itoa(int(v))
	case string:
		code = v
	}
	if code == "" {
		code = o.Type
	}
	return status, code, o.Message
}

// parseErrorBody reads {"error":{...}} from an error response; the SDK
// leaves the body re-readable on the *http.Response it hands back.
func parseErrorBody(r *http.Response) (status int, code, msg string) {
	if r == nil || r.Body == nil {
		return 0, "", ""
	}
	b, err := io.ReadAll(io.LimitReader(r.Body, 64<<10))
	if err != nil || len(b) == 0 {
		return r.StatusCode, "", http.StatusText(r.StatusCode)
	}
	var env struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(b, &env) == nil && len(env.Error) > 0 {
		if env.Error[0] == '"' { // {"error":"text"} (some local servers)
			var s string
			_ = json.Unmarshal(env.Error, &s) // falls back to the raw text below
			return r.StatusCode, "", firstNonEmpty(s, string(env.Error))
		}
		_, code, msg = parseErrorObject(string(env.Error))
		return r.StatusCode, code, msg
	}
	return r.StatusCode, "", string(b)
}

func isNetErr(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF)
}

// present reports whether an undeclared JSON field (the SDK marks those
// "invalid", so Valid() is false) holds a value.
func present(raw string) bool { return raw != "" && raw != "null" }

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
