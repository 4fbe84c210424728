// Package gemini adapts Google's Gemini API (generateContent) to llm.Client
// using the official google.golang.org/genai SDK.
package gemini

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"google.golang.org/genai"

	"github.com/impactbench/impactbench/internal/llm"
	"github.com/impactbench/impactbench/internal/sanitize"
)

// DefaultBaseURL is the Gemini API endpoint (the SDK appends /v1beta/…).
const DefaultBaseURL = "https://generativelanguage.googleapis.com/"

// DefaultMaxTokens is upstream's output cap.
const DefaultMaxTokens = 2048

// emptyTurn replaces empty text: a part without text is rejected.
const emptyTurn = "(no content)"

// Config configures one Client (one model).
type Config struct {
	Provider     string // label for errors and logs; default "gemini"
	APIKey       string
	BaseURL      string // default DefaultBaseURL
	Model        string
	ExtraHeaders map[string]string
	HTTPClient   *http.Client
	Temperature  *float64
	MaxTokens    int // default 2048
	// StructuredOutputs sends Request.Schema as responseJsonSchema; without
	// it JSON calls only set responseMimeType application/json.
	StructuredOutputs bool
	// KeyField names where the key comes from, for auth hints. Never the key.
	KeyField string
}

// Client is an llm.Client for one Gemini model; safe for concurrent use.
type Client struct {
	api *genai.Client
	cfg Config
}

var _ llm.Client = (*Client)(nil)

// New builds the SDK client once. The backend, key and base URL are always
// explicit, so GOOGLE_GENAI_USE_VERTEXAI, GOOGLE_GEMINI_BASE_URL and the
// GEMINI_API_KEY / GOOGLE_API_KEY fallbacks (used by the SDK only for empty
// fields) never apply; an empty key is refused here for the same reason.
func New(cfg Config) (*Client, error) {
	if cfg.Provider == "" {
		cfg.Provider = "gemini"
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
	if cfg.APIKey == "" {
		return nil, &llm.Error{Kind: llm.KindConfig, Provider: cfg.Provider, Model: cfg.Model,
			Message: "API key is empty", Hint: "set " + keyField(cfg)}
	}
	if u, err := url.Parse(cfg.BaseURL); err != nil || u.Scheme == "" || u.Host == "" {
		return nil, &llm.Error{Kind: llm.KindConfig, Provider: cfg.Provider, Model: cfg.Model,
			Message: fmt.Sprintf("base_url %q is not an absolute URL", sanitize.URL(cfg.BaseURL))}
	}
	// Every answer is read within llm's bounds (a reply's size, a body
	// that is not an object: the SDK crashes on a "null" body).
	cfg.HTTPClient = llm.BoundedHTTPClient(cfg.HTTPClient)
	headers := http.Header{}
	for k, v := range cfg.ExtraHeaders {
		headers.Set(k, v)
	}
	// NewClient does no I/O for the Gemini API backend (no credential
	// discovery), so a background context is enough here.
	api, err := genai.NewClient(context.Background(), &genai.ClientConfig{
		APIKey:     cfg.APIKey,
		Backend:    genai.BackendGeminiAPI,
		HTTPClient: cfg.HTTPClient,
		HTTPOptions: genai.HTTPOptions{
			BaseURL:    cfg.BaseURL,
			APIVersion: "v1beta",
			Headers:    headers,
			// RetryOptions stays nil: one attempt per call, llm.WithRetry retries.
		},
	})
	if err != nil {
		// The SDK's message can include the whole ClientConfig; keep it out.
		return nil, &llm.Error{Kind: llm.KindConfig, Provider: cfg.Provider, Model: cfg.Model,
			Message: "cannot create the Gemini client"}
	}
	return &Client{api: api, cfg: cfg}, nil
}

func keyField(cfg Config) string {
	if cfg.KeyField != "" {
		return cfg.KeyField
	}
	return "the apikey field of this model"
}

// Complete makes one generateContent call (no retries: see llm.WithRetry).
func (c *Client) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	contents, gc := c.params(req)
	ctx, body := llm.WatchBody(ctx)
	start := time.Now()
	resp, err := c.generate(ctx, contents, gc)
	latency := time.Since(start)
	if err != nil {
		return llm.Response{Latency: latency}, c.callError(err)
	}
	if resp == nil {
		resp = &genai.GenerateContentResponse{} // no answer can crash the process
	}
	usage := mapUsage(resp.UsageMetadata)
	reqID := resp.ResponseID
	var rateLimit *llm.RateLimit
	if resp.SDKHTTPResponse != nil {
		if reqID == "" {
			reqID = resp.SDKHTTPResponse.Headers.Get("x-request-id")
		}
		// Google sends none today; a proxy in front of it may.
		rateLimit = llm.ParseRateLimit(resp.SDKHTTPResponse.Headers, time.Now())
	}
	var text strings.Builder
	finish := ""
	if len(resp.Candidates) > 0 && resp.Candidates[0] != nil {
		cand := resp.Candidates[0]
		finish = string(cand.FinishReason)
		if cand.Content != nil {
			for _, p := range cand.Content.Parts {
				if p != nil && !p.Thought {
					text.WriteString(p.Text)
				}
			}
		}
	}
	refused := safetyStop(resp, finish) && req.AcceptsRefusal()
	if !refused && strings.TrimSpace(text.String()) == "" {
		msg := fmt.Sprintf("no text in the answer (finishReason %q)", finish)
		if pf := resp.PromptFeedback; pf != nil && pf.BlockReason != "" {
			msg = fmt.Sprintf("prompt blocked (%s) %s", pf.BlockReason, pf.BlockReasonMessage)
		}
		e := &llm.Error{Kind: llm.KindEmpty, Provider: c.cfg.Provider, Model: c.cfg.Model, Code: finish,
			Message: strings.TrimSpace(msg), RequestID: reqID, Usage: usage}
		if finish == string(genai.FinishReasonMaxTokens) {
			e.Hint = "the output cap was used up before any text (thinking counts toward it): raise max_tokens"
		}
		return llm.Response{Latency: latency}, e
	}
	reply, cut := llm.BoundReply(text.String())
	out := llm.Response{
		Text:         reply,
		Truncated:    cut || body.Cut("text"),
		Refused:      refused, // Text: what came before the stop, usually ""
		FinishReason: finish,
		RequestID:    reqID,
		Model:        resp.ModelVersion,
		Usage:        usage,
		Latency:      latency,
		RateLimit:    rateLimit,
	}
	if gc.Seed != nil {
		s := int64(*gc.Seed)
		out.SentSeed = &s
	} else {
		out.NoSeed = llm.NoSeedInRequest
	}
	return out, nil
}

// safetyStop reports whether Gemini stopped the answer for safety: the
// prompt was blocked (promptFeedback.blockReason) or the candidate ended
// with a safety finishReason.
func safetyStop(resp *genai.GenerateContentResponse, finish string) bool {
	if pf := resp.PromptFeedback; pf != nil && pf.BlockReason != "" {
		return true
	}
	switch genai.FinishReason(finish) {
	case genai.FinishReasonSafety, genai.FinishReasonProhibitedContent, genai.FinishReasonBlocklist,
		genai.FinishReasonSPII, genai.FinishReasonImageSafety, genai.FinishReasonImageProhibitedContent:
		return true
	}
	return false
}

// errSDKPanic is a panic inside the SDK while it read an answer.
var errSDKPanic = errors.New("the Gemini SDK could not read the answer")

// generate makes the call. The SDK's converters assume the answer's shape
// and panic on some that are valid JSON (a null candidate:
// {"candidates":[null]}), which would end the whole run, and every rerun,
// on one bad answer. This recover is the last resort for what cannot be
// fixed here: it turns such a panic into a failed attempt. Panics in our
// own code are not caught; they are bugs to fix where they happen.
func (c *Client) generate(ctx context.Context, contents []*genai.Content, gc *genai.GenerateContentConfig) (resp *genai.GenerateContentResponse, err error) {
	defer func() {
		if r := recover(); r != nil {
			resp, err = nil, fmt.Errorf("%w (%v)", errSDKPanic, r)
		}
	}()
	return c.api.Models.GenerateContent(ctx, c.cfg.Model, contents, gc)
}

// mapUsage: promptTokenCount already includes cached tokens; thoughts are
// reported apart from candidates but billed as output, so they are added to
// OutputTokens and also shown as ReasoningTokens.
func mapUsage(m *genai.GenerateContentResponseUsageMetadata) llm.Usage {
	u := llm.Usage{Requests: 1}
	if m == nil {
		return u
	}
	u.InputTokens = int(m.PromptTokenCount + m.ToolUsePromptTokenCount)
	u.CachedInputTokens = int(m.CachedContentTokenCount)
	u.OutputTokens = int(m.CandidatesTokenCount + m.ThoughtsTokenCount)
	u.ReasoningTokens = int(m.ThoughtsTokenCount)
	return u
}

func (c *Client) params(req llm.Request) ([]*genai.Content, *genai.GenerateContentConfig) {
	system, turns := llm.Turns(req.Messages)
	contents := make([]*genai.Content, 0, len(turns))
	for _, t := range turns {
		role := genai.Role(genai.RoleUser)
		if t.Role == llm.RoleAssistant {
			role = genai.RoleModel
		}
		text := t.Content
		if strings.TrimSpace(text) == "" {
			text = emptyTurn // an empty part is rejected
		}
		contents = append(contents, genai.NewContentFromText(text, role))
	}
	maxTokens := c.cfg.MaxTokens
	if req.MaxTokens > 0 {
		maxTokens = req.MaxTokens
	}
	off := false
	gc := &genai.GenerateContentConfig{
		MaxOutputTokens: int32(maxTokens),
		// One HTTP call per attempt, so attempts and usage stay countable.
		AutomaticContinuation: &off,
	}
	if len(system) > 0 {
		parts := make([]*genai.Part, 0, len(system))
		for _, s := range system {
			parts = append(parts, genai.NewPartFromText(s))
		}
		gc.SystemInstruction = &genai.Content{Parts: parts}
	}
	if t := req.Temperature; t != nil {
		f := float32(*t)
		gc.Temperature = &f
	} else if t := c.cfg.Temperature; t != nil {
		f := float32(*t)
		gc.Temperature = &f
	}
	if req.Seed != 0 {
		// generationConfig.seed is an int32; WireSeed fits it.
		s := int32(llm.WireSeed(req.Seed))
		gc.Seed = &s
	}
	if req.JSON || req.Schema != nil {
		gc.ResponseMIMEType = "application/json"
		if c.cfg.StructuredOutputs && req.Schema != nil {
			gc.ResponseJsonSchema = req.Schema
		}
	}
	return contents, gc
}

func (c *Client) callError(err error) *llm.Error {
	e := &llm.Error{Provider: c.cfg.Provider, Model: c.cfg.Model, Usage: llm.Usage{Requests: 1}}
	var apiErr genai.APIError
	var apiErrP *genai.APIError
	switch {
	case errors.Is(err, llm.ErrResponseTooLarge), errors.Is(err, llm.ErrNotJSONObject), errors.Is(err, errSDKPanic):
		// An unusable answer: a failed attempt, retried like other bad ones.
		e.Kind = llm.KindServer
		e.Message = "malformed response: " + llm.Redact(err.Error(), c.cfg.APIKey)
		return e
	case errors.As(err, &apiErr):
	case errors.As(err, &apiErrP) && apiErrP != nil:
		apiErr = *apiErrP
	case errors.Is(err, context.DeadlineExceeded):
		e.Kind, e.Message, e.Err = llm.KindTimeout, "request timed out", err
		return e
	case errors.Is(err, context.Canceled):
		e.Kind, e.Message, e.Err = llm.KindConnection, "request cancelled", err
		return e
	default:
		e.Kind = llm.KindConnection
		if !isNetErr(err) && strings.Contains(err.Error(), "unmarshal") {
			e.Kind = llm.KindServer // a 200 with a body we could not read
		}
		e.Message = llm.Redact(err.Error(), c.cfg.APIKey)
		return e
	}
	classify(e, apiErr, c.cfg)
	return e
}

// classify maps a Gemini error (google.rpc.Status) to a kind. A 429 is a
// rate limit unless its QuotaFailure names a per-day quota, which does not
// clear by waiting minutes; the wait hint comes from RetryInfo.retryDelay.
func classify(e *llm.Error, a genai.APIError, cfg Config) {
	e.StatusCode = a.Code
	e.Code = a.Status
	e.Message = llm.Redact(a.Message, cfg.APIKey)
	e.Kind = llm.KindForStatus(a.Code)
	perDay := false
	authReason := false
	for _, d := range a.Details {
		typ, _ := d["@type"].(string)
		switch {
		case strings.HasSuffix(typ, "google.rpc.RetryInfo"):
			if s, ok := d["retryDelay"].(string); ok {
				if dur, err := time.ParseDuration(s); err == nil && dur > 0 {
					e.RetryAfter = dur
				}
			}
		case strings.HasSuffix(typ, "google.rpc.QuotaFailure"):
			if vs, ok := d["violations"].([]any); ok {
				for _, v := range vs {
					if m, ok := v.(map[string]any); ok {
						if id, _ := m["quotaId"].(string); strings.Contains(id, "PerDay") {
							perDay = true
						}
					}
				}
			}
		case strings.HasSuffix(typ, "google.rpc.ErrorInfo"):
			if r, _ := d["reason"].(string); r == "API_KEY_INVALID" || r == "API_KEY_SERVICE_BLOCKED" {
				authReason = true
			}
		}
	}
	switch {
	case e.Kind == llm.KindRateLimit && perDay:
		e.Kind = llm.KindQuota
		e.RetryAfter = 0
		e.Hint = "the per-day quota is used up: wait for the daily reset, raise the quota, or use a paid tier key"
	case authReason || strings.Contains(a.Message, "API key not valid"):
		// Gemini answers a bad key with 400 INVALID_ARGUMENT.
		e.Kind = llm.KindAuth
		e.Hint = "check " + keyField(cfg) + " in config.yaml (is the variable set, and is it a Gemini API key?)"
	case e.Kind == llm.KindAuth:
		e.Hint = "check " + keyField(cfg) + " in config.yaml (is the variable set, and is it a Gemini API key?)"
	case a.Code == http.StatusNotFound:
		e.Hint = "check the model name and base_url (" + sanitize.URL(cfg.BaseURL) + ")"
	}
}

func isNetErr(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF)
}
