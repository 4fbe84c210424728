package llm

import (
	"net"
	"net/http"
	"time"
)

// DefaultMaxConnsPerHost sizes the idle pool when the caller does not know
// its concurrency yet.
const DefaultMaxConnsPerHost = 64

// NewHTTPClient returns the one HTTP client all adapters of a run share.
//
// Go's default transport keeps only 2 idle connections per host, and both
// Stainless SDKs start from it: at a few hundred calls in flight that means a
// new TCP+TLS handshake for most requests. The pool here keeps one idle
// connection per expected in-flight call. There is deliberately no overall
// Client.Timeout: per-call limits come from the context (WithTimeout), so a
// slow but progressing answer is not cut off by a second, hidden clock.
func NewHTTPClient(maxConnsPerHost int) *http.Client {
	if maxConnsPerHost <= 0 {
		maxConnsPerHost = DefaultMaxConnsPerHost
	}
	dialer := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	t := &http.Transport{
		Proxy:             http.ProxyFromEnvironment,
		DialContext:       dialer.DialContext,
		ForceAttemptHTTP2: true,
		// Idle pool sized to the concurrency; MaxConnsPerHost stays unlimited
		// so a full pool never queues requests invisibly inside the transport
		// (the scheduler owns concurrency limits, and queued time would eat
		// into the per-call timeout).
		MaxIdleConns:          max(100, 2*maxConnsPerHost),
		MaxIdleConnsPerHost:   maxConnsPerHost,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   15 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
	return &http.Client{Transport: t}
}

// BoundedHTTPClient returns a copy of c (nil: NewHTTPClient(0)) whose
// responses are read through the bounds above: JSON strings longer than
// MaxWireString are cut (the cut is reported to the BodyWatch of the
// request's context), bodies past MaxBodyBytes or MaxWireBytes fail with
// ErrResponseTooLarge, and 2xx bodies that are not a JSON object fail with
// ErrNotJSONObject. Adapters build their SDK clients with it; it is not
// for downloads of batch result files, which are long by design.
func BoundedHTTPClient(c *http.Client) *http.Client {
	if c == nil {
		c = NewHTTPClient(0)
	}
	if _, ok := c.Transport.(boundedTransport); ok {
		return c
	}
	next := c.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	cc := *c
	cc.Transport = boundedTransport{next: next}
	return &cc
}

// inMemoryBody returns r with its body replaced by a fresh copy from
// GetBody when it has one. The Stainless SDKs wrap every request body in a
// close-once reader, which net/http cannot tell from a slow stream: it then
// flushes the headers in a write of their own and copies the whole body
// through a new buffer of its size (the study preset: 54,000 extra writes
// and 335 MB allocated). The copy GetBody returns is the same bytes in a
// reader net/http knows is in memory, so the body follows the headers into
// the connection's write buffer: a request that fits leaves in one write,
// and a larger one copies only what did not fit. (A 16 KiB write buffer,
// which fits most prompts, cost the preset about 10 MB of peak memory.) The
// wrapped body is closed here, as a RoundTripper must.
func inMemoryBody(r *http.Request) *http.Request {
	if r.Body == nil || r.Body == http.NoBody || r.GetBody == nil {
		return r
	}
	b, err := r.GetBody()
	if err != nil || b == nil {
		return r
	}
	_ = r.Body.Close()
	rr := *r // a RoundTripper must not change the caller's request
	rr.Body = b
	return &rr
}

type boundedTransport struct{ next http.RoundTripper }

func (t boundedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(inMemoryBody(r))
	if err != nil || resp.Body == nil {
		return resp, err
	}
	w, _ := r.Context().Value(watchKey{}).(*BodyWatch)
	resp.Body = newBoundedBody(resp.Body, w, resp.StatusCode >= 200 && resp.StatusCode < 300, MaxWireString)
	// The length changes when a string is cut; readers must not rely on it.
	resp.ContentLength = -1
	resp.Header.Del("Content-Length")
	return resp, nil
}
