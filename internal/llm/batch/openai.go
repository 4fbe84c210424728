package batch

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/impactbench/impactbench/internal/llm"
	"github.com/impactbench/impactbench/internal/llm/openai"
	"github.com/impactbench/impactbench/internal/sanitize"
)

// chatEndpoint is the endpoint every line of an OpenAI batch targets.
const chatEndpoint = "/v1/chat/completions"

// OpenAIConfig configures one OpenAI (or OpenAI-compatible batch API) model.
// The request fields mean what they mean in openai.Config, so that a
// batched request is the request the real-time client would send.
type OpenAIConfig struct {
	Provider     string // label for errors; default "openai"
	APIKey       string
	BaseURL      string // default openai.DefaultBaseURL (with /v1)
	Model        string // sent as is
	ExtraHeaders map[string]string
	HTTPClient   *http.Client // the run's shared client; nil builds one
	Temperature  *float64
	MaxTokens    int
	Dialect      openai.Dialect // as for real-time; auto = official on api.openai.com
	KeyField     string         // where the key comes from, for hints

	// Price is the model's real-time price; results cost half of it.
	// PriceKnown false reports costs as unknown (never as free).
	Price      llm.Price
	PriceKnown bool
	// Limits override OpenAILimits (0 fields keep the published limit).
	Limits Limits
	// ControlRetries is how often the SDK retries a status or download call
	// (default 2). Batch creation is never retried by the SDK: Run decides.
	ControlRetries int
}

// OpenAI is the OpenAI Batch API for one model.
type OpenAI struct {
	cfg     OpenAIConfig
	codec   codec
	files   sdk.FileService
	batches sdk.BatchService
	pricing pricing
}

var (
	_ Provider = (*OpenAI)(nil)
	_ Planner  = (*OpenAI)(nil)
)

// NewOpenAI builds the provider. It never reads OPENAI_* variables.
func NewOpenAI(cfg OpenAIConfig) (*OpenAI, error) {
	if cfg.Provider == "" {
		cfg.Provider = "openai"
	}
	if cfg.BaseURL == "" {
		cfg.BaseURL = openai.DefaultBaseURL
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = llm.NewHTTPClient(0)
	}
	if cfg.ControlRetries <= 0 {
		cfg.ControlRetries = 2
	}
	cfg.Limits = withDefaults(cfg.Limits, OpenAILimits)
	adapter, err := openai.New(openai.Config{
		Provider: cfg.Provider, APIKey: cfg.APIKey, BaseURL: cfg.BaseURL, Model: cfg.Model,
		ExtraHeaders: cfg.ExtraHeaders, HTTPClient: loopbackHTTPClient(),
		Temperature: cfg.Temperature, MaxTokens: cfg.MaxTokens, Dialect: cfg.Dialect, KeyField: cfg.KeyField,
	})
	if err != nil {
		return nil, err
	}
	opts := []option.RequestOption{
		option.WithHTTPClient(cfg.HTTPClient),
		option.WithBaseURL(cfg.BaseURL),
		option.WithMaxRetries(cfg.ControlRetries),
	}
	if cfg.APIKey != "" {
		opts = append(opts, option.WithAPIKey(cfg.APIKey))
	}
	for k, v := range cfg.ExtraHeaders {
		opts = append(opts, option.WithHeader(k, v))
	}
	return &OpenAI{
		cfg:     cfg,
		codec:   codec{adapter},
		files:   sdk.NewFileService(opts...),
		batches: sdk.NewBatchService(opts...),
		pricing: pricing{cfg.Price, cfg.PriceKnown},
	}, nil
}

func withDefaults(l, def Limits) Limits {
	if l.MaxRequests <= 0 {
		l.MaxRequests = def.MaxRequests
	}
	if l.MaxBytes <= 0 {
		l.MaxBytes = def.MaxBytes
	}
	return l
}

// sentSeed reads the seed from the body the adapter builds for req (the
// body that was submitted): the adapter sends WireSeed(req.Seed) when the
// request has one.
func (p *OpenAI) sentSeed(ctx context.Context, req llm.Request, resp llm.Response) (*int64, string) {
	body, err := p.codec.encode(ctx, req)
	var b struct {
		Seed *int64 `json:"seed"`
	}
	if err != nil || json.Unmarshal(body, &b) != nil {
		return resp.SentSeed, resp.NoSeed
	}
	if b.Seed == nil {
		return nil, llm.NoSeedInRequest
	}
	return b.Seed, ""
}

// Identity implements Planner.
func (p *OpenAI) Identity() string {
	return p.cfg.Provider + " " + sanitize.URL(strings.TrimRight(p.cfg.BaseURL, "/")) + " " + p.cfg.Model
}

// Limits implements Planner.
func (p *OpenAI) Limits() Limits { return p.cfg.Limits }

// openAILine is one line of the input file.
type openAILine struct {
	CustomID string          `json:"custom_id"`
	Method   string          `json:"method"`
	URL      string          `json:"url"`
	Body     json.RawMessage `json:"body"`
}

func (p *OpenAI) line(ctx context.Context, it Item) ([]byte, error) {
	if it.CustomID == "" {
		return nil, errors.New("custom_id is empty")
	}
	body, err := p.codec.encode(ctx, it.Req)
	if err != nil {
		return nil, err
	}
	return json.Marshal(openAILine{CustomID: it.CustomID, Method: http.MethodPost, URL: chatEndpoint, Body: body})
}

// ItemSize implements Planner: the line's length plus its newline.
func (p *OpenAI) ItemSize(it Item) (int64, error) {
	b, err := p.line(context.Background(), it)
	if err != nil {
		return 0, err
	}
	return int64(len(b) + 1), nil
}

// Submit uploads the items as a JSONL file (purpose batch) and creates a
// batch on /v1/chat/completions with the 24 h window.
func (p *OpenAI) Submit(ctx context.Context, items []Item) (string, error) {
	if len(items) == 0 {
		return "", errors.New("batch: nothing to submit")
	}
	var buf bytes.Buffer
	for _, it := range items {
		b, err := p.line(ctx, it)
		if err != nil {
			return "", fmt.Errorf("batch: encode %s: %w", it.CustomID, err)
		}
		buf.Write(b)
		buf.WriteByte('\n')
	}
	f, err := p.files.New(ctx, sdk.FileNewParams{
		File:    sdk.File(bytes.NewReader(buf.Bytes()), "impactbench-batch.jsonl", "application/jsonl"),
		Purpose: sdk.FilePurposeBatch,
	})
	if err != nil {
		return "", p.apiError("upload batch file", err)
	}
	b, err := p.batches.New(ctx, sdk.BatchNewParams{
		InputFileID:      f.ID,
		Endpoint:         sdk.BatchNewParamsEndpointV1ChatCompletions,
		CompletionWindow: sdk.BatchNewParamsCompletionWindow24h,
		Metadata:         map[string]string{"created_by": "impactbench"},
	}, option.WithMaxRetries(0))
	if err != nil {
		// The file is of no use without its batch; deleting it is a courtesy
		// (batch files expire after 30 days anyway).
		_, _ = p.files.Delete(context.WithoutCancel(ctx), f.ID)
		return "", p.apiError("create batch", err)
	}
	if b.ID == "" {
		return "", &llm.Error{Kind: llm.KindServer, Provider: p.cfg.Provider, Model: p.cfg.Model, Message: "create batch: the answer has no batch id"}
	}
	return b.ID, nil
}

// Poll implements Provider.
func (p *OpenAI) Poll(ctx context.Context, batchID string) (Status, error) {
	b, err := p.batches.Get(ctx, batchID)
	if err != nil {
		return Status{}, p.apiError("get batch "+batchID, err)
	}
	return p.status(b), nil
}

func (p *OpenAI) status(b *sdk.Batch) Status {
	rc := b.RequestCounts
	st := Status{Raw: string(b.Status), Counts: Counts{
		Total: int(rc.Total), Succeeded: int(rc.Completed), Errored: int(rc.Failed),
		Processing: max(int(rc.Total-rc.Completed-rc.Failed), 0),
	}}
	switch b.Status {
	case sdk.BatchStatusCompleted:
		st.State = StateDone
	case sdk.BatchStatusFailed:
		st.State = StateFailed
	case sdk.BatchStatusExpired:
		st.State = StateExpired
	case sdk.BatchStatusCancelled:
		st.State = StateCancelled
	default: // validating, in_progress, finalizing, cancelling, and anything new
		st.State = StateRunning
	}
	if st.State == StateFailed {
		st.Failure, st.LineErrors = p.failure(b)
	}
	return st
}

// failure classifies a failed batch from its errors list.
func (p *OpenAI) failure(b *sdk.Batch) (*llm.Error, map[int]*llm.Error) {
	var msgs []string
	lines := map[int]*llm.Error{}
	kind, code := llm.KindBadRequest, ""
	for _, d := range b.Errors.Data {
		msg := llm.Redact(d.Message, p.cfg.APIKey)
		if d.Line > 0 {
			lines[int(d.Line)] = &llm.Error{Kind: llm.KindBadRequest, Provider: p.cfg.Provider, Model: p.cfg.Model,
				Code: d.Code, Message: "rejected by batch validation: " + msg}
			msg = fmt.Sprintf("line %d: %s", d.Line, msg)
		}
		if code == "" {
			code = d.Code
		}
		if c := strings.ToLower(d.Code); strings.Contains(c, "limit") || strings.Contains(c, "rate") {
			// token_limit_exceeded: the enqueued-token quota of the model is
			// full; the same requests can go once earlier batches finish.
			kind = llm.KindRateLimit
		}
		msgs = append(msgs, msg)
	}
	if len(msgs) == 0 {
		msgs = append(msgs, "the batch failed without a reason")
	}
	e := &llm.Error{Kind: kind, Provider: p.cfg.Provider, Model: p.cfg.Model, Code: code,
		Message: "batch " + b.ID + " failed: " + strings.Join(msgs, "; ")}
	if kind == llm.KindRateLimit {
		e.Hint = "the model's batch queue limit is full: wait for running batches, or lower the batch size"
	}
	if len(lines) == 0 {
		lines = nil
	}
	return e, lines
}

// openAIOutputLine is one line of an output or error file.
type openAIOutputLine struct {
	ID       string `json:"id"`
	CustomID string `json:"custom_id"`
	Response *struct {
		StatusCode int             `json:"status_code"`
		RequestID  string          `json:"request_id"`
		Body       json.RawMessage `json:"body"`
	} `json:"response"`
	Error *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// Results reads the output file (successes) and the error file (failed,
// expired and cancelled requests) of a finished batch.
func (p *OpenAI) Results(ctx context.Context, batchID string) ([]Result, error) {
	b, err := p.batches.Get(ctx, batchID)
	if err != nil {
		return nil, p.apiError("get batch "+batchID, err)
	}
	var out []Result
	for _, fileID := range []string{b.OutputFileID, b.ErrorFileID} {
		if fileID == "" {
			continue
		}
		rs, err := p.readFile(ctx, fileID)
		if err != nil {
			return nil, err
		}
		out = append(out, rs...)
	}
	return out, nil
}

func (p *OpenAI) readFile(ctx context.Context, fileID string) ([]Result, error) {
	resp, err := p.files.Content(ctx, fileID)
	if err != nil {
		return nil, p.apiError("download file "+fileID, err)
	}
	defer resp.Body.Close()
	var out []Result
	err = eachLine(resp.Body, func(line []byte) {
		var l openAIOutputLine
		if json.Unmarshal(line, &l) != nil || l.CustomID == "" {
			return // a line without a usable custom_id cannot be joined; its item is reported missing
		}
		out = append(out, p.decodeLine(ctx, l))
	})
	if err != nil {
		return nil, &llm.Error{Kind: llm.KindConnection, Provider: p.cfg.Provider, Model: p.cfg.Model,
			Message: "download file " + fileID + ": " + llm.Redact(err.Error(), p.cfg.APIKey)}
	}
	return out, nil
}

func (p *OpenAI) decodeLine(ctx context.Context, l openAIOutputLine) Result {
	r := Result{CustomID: l.CustomID}
	switch {
	case l.Response != nil && l.Response.StatusCode != 0:
		h := http.Header{}
		if l.Response.RequestID != "" {
			h.Set("x-request-id", l.Response.RequestID)
		}
		r.Resp, r.Err = p.codec.decode(ctx, l.Response.StatusCode, h, l.Response.Body)
	case l.Error != nil:
		r.Err = lineError(p.cfg.Provider, p.cfg.Model, l.Error.Code, llm.Redact(l.Error.Message, p.cfg.APIKey))
	default:
		r.Err = itemError(p.cfg.Provider, p.cfg.Model, llm.KindServer, "", "result line has neither a response nor an error")
	}
	return p.pricing.apply(r)
}

// lineError classifies a request that did not run (error file, no response).
func lineError(provider, model, code, msg string) *llm.Error {
	switch code {
	case "batch_expired":
		return itemError(provider, model, llm.KindTimeout, code, firstNonEmpty(msg, "the batch expired before this request ran"))
	case "batch_cancelled":
		return itemError(provider, model, llm.KindServer, code, firstNonEmpty(msg, "the batch was cancelled before this request ran"))
	}
	// Unknown line-level codes: worth one more try, bounded by MaxRounds.
	return itemError(provider, model, llm.KindServer, code, firstNonEmpty(msg, "the request did not run"))
}

// apiError maps a control-plane SDK error to an *llm.Error.
func (p *OpenAI) apiError(op string, err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	e := &llm.Error{Provider: p.cfg.Provider, Model: p.cfg.Model}
	var apiErr *sdk.Error
	if errors.As(err, &apiErr) {
		e.StatusCode = apiErr.StatusCode
		e.Code = firstNonEmpty(apiErr.Code, apiErr.Type)
		e.Message = op + ": " + llm.Redact(firstNonEmpty(apiErr.Message, http.StatusText(apiErr.StatusCode)), p.cfg.APIKey)
		if apiErr.Response != nil {
			e.RequestID = apiErr.Response.Header.Get("x-request-id")
			e.RetryAfter = llm.ParseRetryAfter(apiErr.Response.Header, time.Now())
		}
		e.Kind = llm.KindForStatus(e.StatusCode)
		switch {
		case strings.Contains(strings.ToLower(e.Code), "insufficient_quota"):
			e.Kind = llm.KindQuota
			e.Hint = "add credit / check billing for this key"
		case e.Kind == llm.KindAuth:
			e.Hint = "check " + firstNonEmpty(p.cfg.KeyField, "the apikey field of this model") + " in config.yaml"
		case e.StatusCode == http.StatusNotFound && strings.HasPrefix(op, "get batch"):
			e.Hint = "the provider does not know this batch: was it created with another API key or project?"
		case e.StatusCode == http.StatusNotFound:
			e.Hint = "check base_url (" + sanitize.URL(p.cfg.BaseURL) + "): does this server offer the Batch API? If not, remove batch: true"
		}
		return e
	}
	e.Kind = llm.KindConnection
	e.Message = op + ": " + llm.Redact(err.Error(), p.cfg.APIKey)
	return e
}

// maxResultLine bounds one line of a downloaded results file: one
// request's answer, which as a single response would be cut at
// llm.MaxWireBytes too. A longer line is skipped unread, so its request
// is reported missing and asked again. (Tests use less.)
var maxResultLine = llm.MaxWireBytes

// eachLine calls f for every non-empty line of r up to maxResultLine
// bytes; longer lines are skipped in constant memory. Before the bound a
// results file of one endless line was read into memory whole.
func eachLine(r io.Reader, f func([]byte)) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var long []byte
	skip := false
	for {
		part, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			if !skip && len(long)+len(part) <= maxResultLine {
				long = append(long, part...)
			} else {
				skip, long = true, nil
			}
			continue
		}
		// A copy, as ReadBytes gave: part is the reader's buffer.
		line := append(long, part...)
		long = nil
		if !skip && len(line) <= maxResultLine {
			if l := bytes.TrimSpace(line); len(l) > 0 {
				f(l)
			}
		}
		skip = false
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// sameOrigin reports whether u is on the same scheme and host as base, so
// that following a URL from an answer never sends the key elsewhere.
func sameOrigin(u, base string) bool {
	a, err1 := url.Parse(u)
	b, err2 := url.Parse(base)
	return err1 == nil && err2 == nil && a.IsAbs() && strings.EqualFold(a.Scheme, b.Scheme) && strings.EqualFold(a.Host, b.Host)
}
