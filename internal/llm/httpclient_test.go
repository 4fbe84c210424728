package llm

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// closeOnce stands for the Stainless SDKs' request body wrapper: a reader
// net/http cannot tell from a stream, with GetBody beside it.
type closeOnce struct {
	io.ReadCloser
	closed *atomic.Bool
}

func (c closeOnce) Close() error { c.closed.Store(true); return c.ReadCloser.Close() }

type countingConn struct {
	net.Conn
	writes *atomic.Int64
}

func (c countingConn) Write(p []byte) (int, error) { c.writes.Add(1); return c.Conn.Write(p) }

// A request whose body the SDK wrapped leaves in one write, headers and
// body together, and arrives whole; the wrapped body is closed.
func TestInMemoryBodyOneWrite(t *testing.T) {
	// Small enough for the default 4 KiB write buffer with the headers.
	body := []byte(`{"model":"m","messages":[{"role":"user","content":"` + strings.Repeat("tok ", 700) + `"}]}`)
	var got []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, _ = io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"ok":true}`))
	}))
	defer srv.Close()

	for _, tc := range []struct {
		name       string
		client     func(*http.Client) *http.Client
		wantWrites int64
	}{
		{"bounded", BoundedHTTPClient, 1},
		{"plain transport (the cost it avoids)", func(c *http.Client) *http.Client { return c }, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var writes atomic.Int64
			c := NewHTTPClient(0)
			defer c.CloseIdleConnections()
			tr := c.Transport.(*http.Transport)
			dial := tr.DialContext
			tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
				conn, err := dial(ctx, network, addr)
				if err != nil {
					return nil, err
				}
				return countingConn{conn, &writes}, nil
			}
			var closed atomic.Bool
			req, err := http.NewRequest(http.MethodPost, srv.URL, nil)
			if err != nil {
				t.Fatal(err)
			}
			req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
			req.Body = closeOnce{io.NopCloser(bytes.NewReader(body)), &closed}
			req.ContentLength = int64(len(body))
			resp, err := tc.client(c).Do(req)
			if err != nil {
				t.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if !bytes.Equal(got, body) {
				t.Fatalf("server got %d bytes, want the %d sent", len(got), len(body))
			}
			if n := writes.Load(); n != tc.wantWrites {
				t.Errorf("%d writes for one request, want %d", n, tc.wantWrites)
			}
			if !closed.Load() {
				t.Error("the caller's body was not closed")
			}
			if _, ok := req.Body.(closeOnce); !ok {
				t.Error("the caller's request was changed")
			}
		})
	}
}
