// Package anthropic adapts the Anthropic Messages API to llm.Client using
// the official anthropic-sdk-go.
package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"

	"github.com/impactbench/impactbench/internal/llm"
	"github.com/impactbench/impactbench/internal/sanitize"
)

// DefaultBaseURL is Anthropic's endpoint (paths carry /v1).
const DefaultBaseURL = "https://api.anthropic.com"

// DefaultMaxTokens is upstream's output cap; Anthropic requires one.
const DefaultMaxTokens = 2048

// emptyTurn replaces empty text, which the API rejects ("text content
// blocks must be non-empty").
const emptyTurn = "(no content)"

// Config configures one Client (one model).
type Config struct {
	Provider     string // label for errors and logs; default "anthropic"
	APIKey       string
	BaseURL      string // default DefaultBaseURL
	Model        string
	ExtraHeaders map[string]string
	HTTPClient   *http.Client
	Temperature  *float64
	MaxTokens    int // default 2048
	// StructuredOutputs sends Request.Schema as output_config.format
	// (json_schema). Off by default: models before the 4.5 generation reject
	// it, and the API accepts only a JSON Schema subset, so an unsupported
	// keyword would turn every JSON call into a non-retryable 400. Without it
	// JSON calls rely on the prompt plus llm.CompleteJSON's validation and
	// retry, as upstream does.
	StructuredOutputs bool
	// KeyField names where the key comes from, for auth hints. Never the key.
	KeyField string
	// CacheMinTokens is the model's shortest cacheable prefix (0:
	// llm.CacheMinTokens of Model): no breakpoint goes on a shorter one.
	CacheMinTokens int
	// CacheTTL is the breakpoints' lifetime: "" (5 minutes, written at
	// 1.25× input) or "1h" (written at 2×). A request whose plan is Long
	// gets "1h" whatever this says.
	CacheTTL string
}

// Client is an llm.Client for one Anthropic model; safe for concurrent use.
type Client struct {
	api sdk.Client
	cfg Config
}

var _ llm.Client = (*Client)(nil)

// New builds the SDK client once, with WithoutEnvironmentDefaults so that
// ANTHROPIC_API_KEY, ANTHROPIC_AUTH_TOKEN, ANTHROPIC_BASE_URL, profiles and
// ANTHROPIC_CUSTOM_HEADERS cannot override the configured values.
func New(cfg Config) (*Client, error) {
	if cfg.Provider == "" {
		cfg.Provider = "anthropic"
	}
	if cfg.BaseURL == "" {
		cfg.BaseURL = DefaultBaseURL
	}
	if cfg.MaxTokens <= 0 {
		cfg.MaxTokens = DefaultMaxTokens
	}
	if cfg.CacheMinTokens <= 0 {
		cfg.CacheMinTokens = llm.CacheMinTokens(cfg.Model)
	}
	if cfg.Model == "" {
		return nil, &llm.Error{Kind: llm.KindConfig, Provider: cfg.Provider, Message: "model is empty"}
	}
	if cfg.APIKey == "" {
		return nil, &llm.Error{Kind: llm.KindConfig, Provider: cfg.Provider, Model: cfg.Model,
			Message: "API key is empty", Hint: "set " + keyField(cfg)}
	}
	if u, err := url.Parse(cfg.BaseURL); err != nil || u.Scheme == "" || u.Host == "" {
		return nil, &llm.Error{Kind: llm.KindConfig, Provider: cfg.Provider, Model: cfg.Model,
			Message: fmt.Sprintf("base_url %q is not an absolute URL", sanitize.URL(cfg.BaseURL))}
	}
	// Every answer is read within llm's bounds (a reply's size, a body
	// that is not an object).
	cfg.HTTPClient = llm.BoundedHTTPClient(cfg.HTTPClient)
	opts := []option.RequestOption{
		option.WithoutEnvironmentDefaults(),
		option.WithAPIKey(cfg.APIKey),
		option.WithBaseURL(cfg.BaseURL),
		option.WithHTTPClient(cfg.HTTPClient),
		option.WithMaxRetries(0), // llm.WithRetry owns retries
	}
	for k, v := range cfg.ExtraHeaders {
		opts = append(opts, option.WithHeader(k, v))
	}
	return &Client{api: sdk.NewClient(opts...), cfg: cfg}, nil
}

func keyField(cfg Config) string {
	if cfg.KeyField != "" {
		return cfg.KeyField
	}
	return "the apikey field of this model"
}

// Complete makes one Messages call (no retries: see llm.WithRetry).
func (c *Client) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	params := c.params(req)
	var httpResp *http.Response
	ctx, body := llm.WatchBody(ctx)
	start := time.Now()
	msg, err := c.api.Messages.New(ctx, params, option.WithResponseInto(&httpResp))
	latency := time.Since(start)
	if err != nil {
		return llm.Response{Latency: latency}, c.callError(err, httpResp)
	}
	reqID := ""
	var rateLimit *llm.RateLimit
	if httpResp != nil {
		reqID = httpResp.Header.Get("request-id")
		rateLimit = llm.ParseRateLimit(httpResp.Header, time.Now())
	}
	if msg == nil {
		// Unreachable through llm.BoundedHTTPClient (a 2xx body must be an
		// object), kept so that no answer can crash the process.
		msg = &sdk.Message{}
	}
	usage := mapUsage(msg.Usage)
	// Only text blocks are the reply: thinking, tool use and block types
	// newer than this adapter are skipped.
	var text strings.Builder
	for _, b := range msg.Content {
		if b.Type == "text" {
			text.WriteString(b.Text)
		}
	}
	stop := string(msg.StopReason)
	refused := msg.StopReason == sdk.StopReasonRefusal && req.AcceptsRefusal()
	if !refused && (msg.StopReason == sdk.StopReasonRefusal || strings.TrimSpace(text.String()) == "") {
		e := &llm.Error{Kind: llm.KindEmpty, Provider: c.cfg.Provider, Model: c.cfg.Model, Code: stop,
			Message: fmt.Sprintf("no text in the answer (stop_reason %q)", stop), RequestID: reqID, Usage: usage}
		if msg.StopReason == sdk.StopReasonMaxTokens {
			e.Hint = "the output cap was used up before any text (thinking counts toward max_tokens): raise max_tokens"
		}
		return llm.Response{Latency: latency}, e
	}
	reply, cut := llm.BoundReply(text.String())
	return llm.Response{
		Text:         reply,
		Truncated:    cut || body.Cut("text"),
		Refused:      refused,             // Text: what the reply said before it was stopped, often ""
		FinishReason: strings.Clone(stop), // the SDK's strings slice the whole body
		RequestID:    reqID,
		Model:        strings.Clone(string(msg.Model)),
		Usage:        usage,
		Latency:      latency,
		RateLimit:    rateLimit,
		// Messages has no seed parameter (sending one is a 400); samples
		// differ by temperature alone.
		NoSeed: llm.NoSeedParameter,
	}, nil
}

// mapUsage: Anthropic's input_tokens excludes cache reads and writes; our
// InputTokens is the whole prompt.
func mapUsage(u sdk.Usage) llm.Usage {
	return llm.Usage{
		Requests:             1,
		InputTokens:          int(u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens),
		OutputTokens:         int(u.OutputTokens),
		CachedInputTokens:    int(u.CacheReadInputTokens),
		CacheWriteTokens:     int(u.CacheCreationInputTokens),
		CacheWriteLongTokens: int(min(u.CacheCreation.Ephemeral1hInputTokens, u.CacheCreationInputTokens)),
	}
}

func (c *Client) params(req llm.Request) sdk.MessageNewParams {
	system, turns := llm.Turns(req.Messages)
	maxTokens := int64(c.cfg.MaxTokens)
	if req.MaxTokens > 0 {
		maxTokens = int64(req.MaxTokens)
	}
	p := sdk.MessageNewParams{
		Model:     sdk.Model(c.cfg.Model),
		MaxTokens: maxTokens,
		Messages:  make([]sdk.MessageParam, 0, len(turns)),
	}
	if t := req.Temperature; t != nil {
		p.Temperature = sdk.Float(*t)
	} else if t := c.cfg.Temperature; t != nil {
		p.Temperature = sdk.Float(*t)
	}
	for _, s := range system {
		if strings.TrimSpace(s) == "" {
			continue
		}
		p.System = append(p.System, sdk.TextBlockParam{Text: s})
	}
	for _, t := range turns {
		content := t.Content
		if strings.TrimSpace(content) == "" {
			content = emptyTurn
		}
		block := sdk.NewTextBlock(content)
		if t.Role == llm.RoleAssistant {
			p.Messages = append(p.Messages, sdk.NewAssistantMessage(block))
		} else {
			p.Messages = append(p.Messages, sdk.NewUserMessage(block))
		}
	}
	c.markCache(&p, req)
	if c.cfg.StructuredOutputs && req.Schema != nil {
		p.OutputConfig = sdk.OutputConfigParam{Format: sdk.JSONOutputFormatParam{Schema: req.Schema}}
	}
	return p
}

// markCache places the prompt-cache breakpoints req.Cache calls for, each
// only on a prefix at least the model's minimum long (a shorter one is
// not cached; Anthropic ignores its mark):
//
//   - the system prompt when it opens other requests too (SharedSystem, or
//     any breakpoint below: it is then cached anyway and others may read it);
//   - the end of the prefix the next request re-sends (Write): it is written
//     now, at the cache-write price, and read by that request at 0.1×;
//   - on a conversation's last call, which nothing will read again, the end
//     of the previous call's prompt (Read): a breakpoint there finds it in
//     the cache and writes nothing new.
//
// The provider reads the longest cached prefix it finds at or up to 20
// blocks before a breakpoint, so the Write mark also reads the previous
// call's prompt. A request with the zero plan (a verdict, a generation
// call) is marked nowhere: it would be written and never read.
func (c *Client) markCache(p *sdk.MessageNewParams, req llm.Request) {
	plan := req.Cache
	if plan.Zero() {
		return
	}
	mark := sdk.NewCacheControlEphemeralParam()
	switch {
	case plan.Long:
		mark.TTL = sdk.CacheControlEphemeralTTLTTL1h
	case c.cfg.CacheTTL != "":
		mark.TTL = sdk.CacheControlEphemeralTTL(c.cfg.CacheTTL)
	}
	n, marked := plan.Write, plan.Write > 0
	if !marked {
		n = plan.Read
	}
	if at := c.prefixEnd(req.Messages, n); at >= 0 && at < len(p.Messages) {
		if tb := p.Messages[at].Content[0].OfText; tb != nil {
			tb.CacheControl = mark
			marked = true
		}
	} else {
		marked = false
	}
	system, _ := llm.Turns(req.Messages)
	sys := make([]llm.Message, len(system))
	for i, s := range system {
		sys[i] = llm.Message{Role: llm.RoleSystem, Content: s}
	}
	if k := len(p.System); k > 0 && (plan.SharedSystem || marked) && llm.PromptTokens(sys) >= c.cfg.CacheMinTokens {
		p.System[k-1].CacheControl = mark
	}
}

// prefixEnd is the index (into the request's turns) of the turn that ends
// the first n messages, or -1 when they hold no turn or are shorter than
// the model's minimum.
func (c *Client) prefixEnd(msgs []llm.Message, n int) int {
	n = min(n, len(msgs))
	if n <= 0 || llm.PromptTokens(msgs[:n]) < c.cfg.CacheMinTokens {
		return -1
	}
	_, turns := llm.Turns(msgs[:n])
	for _, m := range msgs[:n] {
		if m.Role != llm.RoleSystem {
			return len(turns) - 1
		}
	}
	return -1
}

func (c *Client) callError(err error, httpResp *http.Response) *llm.Error {
	e := &llm.Error{Provider: c.cfg.Provider, Model: c.cfg.Model, Usage: llm.Usage{Requests: 1}}
	var apiErr *sdk.Error
	switch {
	case errors.Is(err, llm.ErrResponseTooLarge), errors.Is(err, llm.ErrNotJSONObject):
		// An unusable answer: a failed attempt, retried like other bad ones.
		e.Kind = llm.KindServer
		e.Message = "malformed response: " + llm.Redact(err.Error(), c.cfg.APIKey)
		if httpResp != nil {
			e.StatusCode = httpResp.StatusCode
			e.RequestID = httpResp.Header.Get("request-id")
		}
		return e
	case errors.As(err, &apiErr):
		e.StatusCode = apiErr.StatusCode
		e.RequestID = apiErr.RequestID
		e.Code = string(apiErr.Type())
		e.Message = errorMessage(apiErr.RawJSON())
		if apiErr.Response != nil {
			httpResp = apiErr.Response
		}
	case errors.Is(err, context.DeadlineExceeded):
		e.Kind, e.Message, e.Err = llm.KindTimeout, "request timed out", err
		return e
	case errors.Is(err, context.Canceled):
		e.Kind, e.Message, e.Err = llm.KindConnection, "request cancelled", err
		return e
	case strings.Contains(err.Error(), "streaming is required"):
		// The SDK refuses non-streaming calls it expects to exceed 10 minutes.
		e.Kind = llm.KindBadRequest
		e.Message = err.Error()
		e.Hint = "lower max_tokens (non-streaming calls are limited to about 21,000 output tokens)"
		return e
	case httpResp != nil && httpResp.StatusCode < 300 && !isNetErr(err):
		e.Kind, e.StatusCode = llm.KindServer, httpResp.StatusCode
		e.Message = llm.Redact("malformed response: "+err.Error(), c.cfg.APIKey)
		e.RequestID = httpResp.Header.Get("request-id")
		return e
	default:
		e.Kind = llm.KindConnection
		e.Message = llm.Redact(err.Error(), c.cfg.APIKey)
		return e
	}
	if httpResp != nil {
		if e.RequestID == "" {
			e.RequestID = httpResp.Header.Get("request-id")
		}
		e.RetryAfter = llm.ParseRetryAfter(httpResp.Header, time.Now())
	}
	e.Message = llm.Redact(e.Message, c.cfg.APIKey)
	e.Kind = llm.KindForStatus(e.StatusCode)
	switch {
	case e.Code == "overloaded_error":
		e.Kind = llm.KindOverloaded
	case e.Code == "billing_error",
		// Anthropic answers an empty prepaid balance with a 400.
		strings.Contains(strings.ToLower(e.Message), "credit balance is too low"):
		e.Kind = llm.KindQuota
		e.Hint = "add credit / check billing for this key (console.anthropic.com → Billing)"
	case e.Kind == llm.KindAuth:
		e.Hint = "check " + keyField(c.cfg) + " in config.yaml (is the variable set, and is it an Anthropic key?)"
	case e.StatusCode == http.StatusNotFound:
		e.Hint = "check the model name and base_url (" + sanitize.URL(c.cfg.BaseURL) + ")"
	case e.StatusCode == http.StatusRequestEntityTooLarge:
		e.Hint = "the request is too large for the Messages API"
	}
	return e
}

// errorMessage reads the message of {"type":"error","error":{"type","message"}}.
func errorMessage(raw string) string {
	var env struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal([]byte(raw), &env) == nil && env.Error.Message != "" {
		return env.Error.Message
	}
	return raw
}

func isNetErr(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF)
}
