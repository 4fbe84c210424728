package batch

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"github.com/impactbench/impactbench/internal/llm"
)

// A batch line carries exactly the body the real-time adapter would POST,
// and a batch result carries exactly the body the real-time endpoint would
// answer. Rather than copy the adapters' request building (dialects,
// structured output, prompt-cache breakpoints) and answer decoding (usage
// mapping, refusals, error classification and hints), a codec runs the
// real-time adapter itself over an in-process transport: to build a body,
// the transport records what the adapter sends and answers nothing; to
// decode a result, it hands the adapter the stored status and body as if
// the provider had just sent them. No byte leaves the process, and batch and
// real-time can never drift apart.

// loopCall is one trip through the loopback transport.
type loopCall struct {
	sent []byte // the body the adapter sent

	reply  bool // answer with status/header/body (else fail after recording)
	status int
	header http.Header
	body   []byte
}

type loopKey struct{}

// errRecorded ends a recording trip: the adapter gets a transport error,
// which the codec discards.
var errRecorded = errors.New("batch: request body recorded")

type loopTransport struct{}

func (loopTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	call, _ := r.Context().Value(loopKey{}).(*loopCall)
	if r.Body != nil {
		b, err := io.ReadAll(r.Body)
		_ = r.Body.Close() // an in-memory body
		if err != nil {
			return nil, err
		}
		if call != nil {
			call.sent = b
		}
	}
	if call == nil {
		return nil, errors.New("batch: loopback transport used outside a codec call")
	}
	if !call.reply {
		return nil, errRecorded
	}
	h := call.header.Clone()
	if h == nil {
		h = http.Header{}
	}
	if h.Get("Content-Type") == "" {
		h.Set("Content-Type", "application/json")
	}
	h.Set("Content-Length", strconv.Itoa(len(call.body)))
	return &http.Response{
		Status:        fmt.Sprintf("%d %s", call.status, http.StatusText(call.status)),
		StatusCode:    call.status,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        h,
		Body:          io.NopCloser(bytes.NewReader(call.body)),
		ContentLength: int64(len(call.body)),
		Request:       r,
	}, nil
}

// loopbackHTTPClient is the HTTP client the codec's adapter is built with.
func loopbackHTTPClient() *http.Client { return &http.Client{Transport: loopTransport{}} }

// codec wraps a real-time adapter built with loopbackHTTPClient.
type codec struct{ adapter llm.Client }

// encode returns the JSON body the adapter sends for req.
func (c codec) encode(ctx context.Context, req llm.Request) (json.RawMessage, error) {
	call := &loopCall{}
	// No I/O happens, so a cancelled run context must not stop the encoding.
	_, err := c.adapter.Complete(context.WithValue(context.WithoutCancel(ctx), loopKey{}, call), req)
	if call.sent == nil {
		if err == nil || errors.Is(err, errRecorded) {
			err = errNoBody
		}
		return nil, err
	}
	if !json.Valid(call.sent) {
		return nil, fmt.Errorf("%w: not JSON", errNoBody)
	}
	return json.RawMessage(call.sent), nil
}

// decodeReq is the request a decoding trip sends; its content is ignored.
// A result is decoded without its request, so the trip accepts a safety
// stop as an answer (Response.Refused) and Run turns it back into the
// error the real-time adapter gives a request that does not accept one
// (refusalAnswer, applied to each result as Run takes it).
var decodeReq = llm.Request{Purpose: llm.PurposeTarget, Messages: []llm.Message{{Role: llm.RoleUser, Content: "."}}}

// refusalAnswer is res as the real-time adapter would have answered req:
// a refused answer stands for a request that accepts one (the target's),
// and is a retryable empty answer for any other, as in real time.
func refusalAnswer(req llm.Request, res Result) Result {
	if res.Err != nil || !res.Resp.Refused || req.AcceptsRefusal() {
		return res
	}
	res.Err = &llm.Error{Kind: llm.KindEmpty, Model: res.Resp.Model, Code: "refusal", RequestID: res.Resp.RequestID, Usage: res.Resp.Usage,
		Message: fmt.Sprintf("the provider stopped the reply for safety (finish reason %q)", res.Resp.FinishReason)}
	res.Resp = llm.Response{}
	return res
}

// decode turns a stored provider answer into what the adapter returns for
// it in real time: a Response, or an *llm.Error classified by status and
// provider error code.
func (c codec) decode(ctx context.Context, status int, header http.Header, body []byte) (llm.Response, error) {
	call := &loopCall{reply: true, status: status, header: header, body: body}
	resp, err := c.adapter.Complete(context.WithValue(context.WithoutCancel(ctx), loopKey{}, call), decodeReq)
	// The loopback's latency and rate-limit headers mean nothing.
	resp.Latency, resp.RateLimit = 0, nil
	return resp, err
}
