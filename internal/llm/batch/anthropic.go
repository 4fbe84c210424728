package batch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"
	"github.com/anthropics/anthropic-sdk-go/packages/param"

	"github.com/impactbench/impactbench/internal/llm"
	"github.com/impactbench/impactbench/internal/llm/anthropic"
	"github.com/impactbench/impactbench/internal/sanitize"
)

// AnthropicConfig configures one Anthropic model. The request fields mean
// what they mean in anthropic.Config.
type AnthropicConfig struct {
	Provider          string // label for errors; default "anthropic"
	APIKey            string
	BaseURL           string // default anthropic.DefaultBaseURL (paths carry /v1)
	Model             string
	ExtraHeaders      map[string]string
	HTTPClient        *http.Client
	Temperature       *float64
	MaxTokens         int
	StructuredOutputs bool
	KeyField          string
	// CacheMinTokens is the model's shortest cacheable prefix (0: the
	// known minimum for Model).
	CacheMinTokens int

	Price          llm.Price // real-time price; results cost half
	PriceKnown     bool
	Limits         Limits // 0 fields keep AnthropicLimits
	ControlRetries int    // SDK retries of status and results calls (default 2)
}

// Anthropic is the Anthropic Message Batches API for one model.
type Anthropic struct {
	cfg     AnthropicConfig
	codec   codec
	api     sdk.Client
	pricing pricing
}

var (
	_ Provider = (*Anthropic)(nil)
	_ Planner  = (*Anthropic)(nil)
)

// NewAnthropic builds the provider. Like the real-time adapter it ignores
// ANTHROPIC_* environment variables.
func NewAnthropic(cfg AnthropicConfig) (*Anthropic, error) {
	if cfg.Provider == "" {
		cfg.Provider = "anthropic"
	}
	if cfg.BaseURL == "" {
		cfg.BaseURL = anthropic.DefaultBaseURL
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = llm.NewHTTPClient(0)
	}
	if cfg.ControlRetries <= 0 {
		cfg.ControlRetries = 2
	}
	cfg.Limits = withDefaults(cfg.Limits, AnthropicLimits)
	adapter, err := anthropic.New(anthropic.Config{
		Provider: cfg.Provider, APIKey: cfg.APIKey, BaseURL: cfg.BaseURL, Model: cfg.Model,
		ExtraHeaders: cfg.ExtraHeaders, HTTPClient: loopbackHTTPClient(),
		Temperature: cfg.Temperature, MaxTokens: cfg.MaxTokens,
		StructuredOutputs: cfg.StructuredOutputs, KeyField: cfg.KeyField,
		CacheMinTokens: cfg.CacheMinTokens,
	})
	if err != nil {
		return nil, err
	}
	opts := []option.RequestOption{
		option.WithoutEnvironmentDefaults(),
		option.WithAPIKey(cfg.APIKey),
		option.WithBaseURL(cfg.BaseURL),
		option.WithHTTPClient(cfg.HTTPClient),
		option.WithMaxRetries(cfg.ControlRetries),
	}
	for k, v := range cfg.ExtraHeaders {
		opts = append(opts, option.WithHeader(k, v))
	}
	return &Anthropic{cfg: cfg, codec: codec{adapter}, api: sdk.NewClient(opts...), pricing: pricing{cfg.Price, cfg.PriceKnown}}, nil
}

// Identity implements Planner.
func (p *Anthropic) Identity() string {
	return p.cfg.Provider + " " + sanitize.URL(strings.TrimRight(p.cfg.BaseURL, "/")) + " " + p.cfg.Model
}

// Limits implements Planner.
func (p *Anthropic) Limits() Limits { return p.cfg.Limits }

// anthropicCustomID is the API's rule for custom_id.
var anthropicCustomID = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

func (p *Anthropic) params(ctx context.Context, it Item) (json.RawMessage, error) {
	if !anthropicCustomID.MatchString(it.CustomID) {
		return nil, fmt.Errorf("custom_id %q is not valid for Anthropic (1-64 of a-z A-Z 0-9 _ -)", it.CustomID)
	}
	return p.codec.encode(ctx, it.Req)
}

// ItemSize implements Planner: the request object plus a separating comma.
func (p *Anthropic) ItemSize(it Item) (int64, error) {
	body, err := p.params(context.Background(), it)
	if err != nil {
		return 0, err
	}
	b, err := json.Marshal(struct {
		CustomID string          `json:"custom_id"`
		Params   json.RawMessage `json:"params"`
	}{it.CustomID, body})
	if err != nil {
		return 0, err
	}
	return int64(len(b) + 1), nil
}

// Submit creates a Message Batch with the items inline.
func (p *Anthropic) Submit(ctx context.Context, items []Item) (string, error) {
	if len(items) == 0 {
		return "", errors.New("batch: nothing to submit")
	}
	reqs := make([]sdk.MessageBatchNewParamsRequest, len(items))
	for i, it := range items {
		body, err := p.params(ctx, it)
		if err != nil {
			return "", fmt.Errorf("batch: encode %s: %w", it.CustomID, err)
		}
		reqs[i] = sdk.MessageBatchNewParamsRequest{
			CustomID: it.CustomID,
			// The exact Messages body of the real-time adapter.
			Params: param.Override[sdk.MessageBatchNewParamsRequestParams](body),
		}
	}
	b, err := p.api.Messages.Batches.New(ctx, sdk.MessageBatchNewParams{Requests: reqs}, option.WithMaxRetries(0))
	if err != nil {
		return "", p.apiError("create message batch", err)
	}
	if b.ID == "" {
		return "", &llm.Error{Kind: llm.KindServer, Provider: p.cfg.Provider, Model: p.cfg.Model, Message: "create message batch: the answer has no batch id"}
	}
	return b.ID, nil
}

// Poll implements Provider.
func (p *Anthropic) Poll(ctx context.Context, batchID string) (Status, error) {
	b, err := p.api.Messages.Batches.Get(ctx, batchID, sdk.MessageBatchGetParams{})
	if err != nil {
		return Status{}, p.apiError("get message batch "+batchID, err)
	}
	return p.status(b), nil
}

func (p *Anthropic) status(b *sdk.MessageBatch) Status {
	rc := b.RequestCounts
	st := Status{Raw: string(b.ProcessingStatus), Counts: Counts{
		Succeeded:  int(rc.Succeeded),
		Errored:    int(rc.Errored + rc.Expired + rc.Canceled),
		Processing: int(rc.Processing),
	}}
	st.Counts.Total = st.Counts.Succeeded + st.Counts.Errored + st.Counts.Processing
	switch {
	case b.ProcessingStatus != sdk.MessageBatchProcessingStatusEnded:
		st.State = StateRunning
	case !b.CancelInitiatedAt.IsZero():
		st.State = StateCancelled
	default:
		st.State = StateDone // per-request expiry shows in the results
	}
	return st
}

type anthropicResultLine struct {
	CustomID string `json:"custom_id"`
	Result   struct {
		Type    string          `json:"type"`
		Message json.RawMessage `json:"message"`
		Error   json.RawMessage `json:"error"`
	} `json:"result"`
}

// Results downloads the batch's results_url (or the canonical results path
// when results_url points to another host, so the key never leaves the
// configured endpoint).
func (p *Anthropic) Results(ctx context.Context, batchID string) ([]Result, error) {
	b, err := p.api.Messages.Batches.Get(ctx, batchID, sdk.MessageBatchGetParams{})
	if err != nil {
		return nil, p.apiError("get message batch "+batchID, err)
	}
	if b.ProcessingStatus != sdk.MessageBatchProcessingStatusEnded {
		return nil, &llm.Error{Kind: llm.KindServer, Provider: p.cfg.Provider, Model: p.cfg.Model,
			Message: "message batch " + batchID + " has not ended (" + string(b.ProcessingStatus) + ")"}
	}
	target := "v1/messages/batches/" + url.PathEscape(batchID) + "/results"
	if b.ResultsURL != "" && sameOrigin(b.ResultsURL, p.cfg.BaseURL) {
		target = b.ResultsURL
	}
	var raw *http.Response
	if err := p.api.Get(ctx, target, nil, &raw, option.WithHeader("Accept", "application/x-jsonl")); err != nil {
		return nil, p.apiError("download results of "+batchID, err)
	}
	defer raw.Body.Close()
	var out []Result
	err = eachLine(raw.Body, func(line []byte) {
		var l anthropicResultLine
		if json.Unmarshal(line, &l) != nil || l.CustomID == "" {
			return
		}
		out = append(out, p.decodeLine(ctx, l))
	})
	if err != nil {
		return nil, &llm.Error{Kind: llm.KindConnection, Provider: p.cfg.Provider, Model: p.cfg.Model,
			Message: "download results of " + batchID + ": " + llm.Redact(err.Error(), p.cfg.APIKey)}
	}
	return out, nil
}

func (p *Anthropic) decodeLine(ctx context.Context, l anthropicResultLine) Result {
	r := Result{CustomID: l.CustomID}
	prov, model := p.cfg.Provider, p.cfg.Model
	switch l.Result.Type {
	case "succeeded":
		r.Resp, r.Err = p.codec.decode(ctx, http.StatusOK, nil, l.Result.Message)
	case "errored":
		status, body := anthropicErrorBody(l.Result.Error)
		r.Resp, r.Err = p.codec.decode(ctx, status, nil, body)
		r.Resp = llm.Response{}
	case "expired":
		r.Err = itemError(prov, model, llm.KindTimeout, "expired", "the batch ended (24 h) before this request ran")
	case "canceled":
		r.Err = itemError(prov, model, llm.KindServer, "canceled", "the batch was cancelled before this request ran")
	default:
		r.Err = itemError(prov, model, llm.KindServer, l.Result.Type, "unknown result type "+fmt.Sprintf("%q", l.Result.Type))
	}
	return p.pricing.apply(r)
}

// anthropicStatus maps an error type to the HTTP status the real-time API
// answers it with, so the adapter classifies it the same way.
var anthropicStatus = map[string]int{
	"invalid_request_error": http.StatusBadRequest,
	"authentication_error":  http.StatusUnauthorized,
	"billing_error":         http.StatusPaymentRequired,
	"permission_error":      http.StatusForbidden,
	"not_found_error":       http.StatusNotFound,
	"request_too_large":     http.StatusRequestEntityTooLarge,
	"rate_limit_error":      http.StatusTooManyRequests,
	"api_error":             http.StatusInternalServerError,
	"timeout_error":         http.StatusGatewayTimeout,
	"overloaded_error":      529,
}

// anthropicErrorBody normalises a result's error (an ErrorResponse
// {"type":"error","error":{"type","message"}}, or a bare {"type","message"})
// to the real-time error body and its status.
func anthropicErrorBody(raw json.RawMessage) (int, []byte) {
	var env struct {
		Type  string `json:"type"`
		Error *struct {
			Type string `json:"type"`
		} `json:"error"`
	}
	_ = json.Unmarshal(raw, &env) // unreadable: an api_error below
	typ := env.Type
	body := []byte(raw)
	if env.Error != nil {
		typ = env.Error.Type
	} else if typ != "" {
		body, _ = json.Marshal(map[string]any{"type": "error", "error": json.RawMessage(raw)}) // raw is valid JSON here
	}
	status, ok := anthropicStatus[typ]
	if !ok {
		status = http.StatusInternalServerError
		if typ == "" {
			body, _ = json.Marshal(map[string]any{"type": "error", "error": map[string]string{"type": "api_error", "message": "errored result without an error: " + string(raw)}})
		}
	}
	return status, body
}

// apiError maps a control-plane SDK error to an *llm.Error.
func (p *Anthropic) apiError(op string, err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	e := &llm.Error{Provider: p.cfg.Provider, Model: p.cfg.Model}
	var apiErr *sdk.Error
	if errors.As(err, &apiErr) {
		e.StatusCode = apiErr.StatusCode
		e.RequestID = apiErr.RequestID
		e.Code = string(apiErr.Type())
		var env struct {
			Error struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		msg := http.StatusText(apiErr.StatusCode)
		if json.Unmarshal([]byte(apiErr.RawJSON()), &env) == nil && env.Error.Message != "" {
			msg = env.Error.Message
		}
		e.Message = op + ": " + llm.Redact(msg, p.cfg.APIKey)
		if apiErr.Response != nil {
			e.RetryAfter = llm.ParseRetryAfter(apiErr.Response.Header, time.Now())
		}
		e.Kind = llm.KindForStatus(e.StatusCode)
		switch {
		case e.Code == "overloaded_error":
			e.Kind = llm.KindOverloaded
		case e.Code == "billing_error":
			e.Kind = llm.KindQuota
			e.Hint = "add credit / check billing for this key (console.anthropic.com → Billing)"
		case e.Kind == llm.KindAuth:
			e.Hint = "check " + firstNonEmpty(p.cfg.KeyField, "the apikey field of this model") + " in config.yaml"
		case e.StatusCode == http.StatusNotFound && strings.HasPrefix(op, "get message batch"):
			e.Hint = "the provider does not know this batch: was it created with another API key or workspace?"
		case e.StatusCode == http.StatusNotFound:
			e.Hint = "check base_url (" + sanitize.URL(p.cfg.BaseURL) + ")"
		case e.StatusCode == http.StatusRequestEntityTooLarge:
			e.Hint = "the batch is too large: lower the batch size"
		}
		return e
	}
	e.Kind = llm.KindConnection
	e.Message = op + ": " + llm.Redact(err.Error(), p.cfg.APIKey)
	return e
}
