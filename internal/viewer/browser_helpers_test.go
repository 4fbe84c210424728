package viewer_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/impactbench/impactbench/internal/browsertest"
)

// browserLog is the browser's log; the page may load only from the
// viewer's origin.
type browserLog struct {
	*browsertest.Log
	mu     sync.Mutex
	origin string
}

// setOrigin makes o the viewer the page is on, and the only origin its
// requests may go to besides also (viewers the test opened before, whose
// pages can still send a late request, such as Chromium's own favicon.ico
// after the test has moved on).
func (l *browserLog) setOrigin(o string, also ...string) {
	l.mu.Lock()
	l.origin = o
	l.mu.Unlock()
	allowed := append([]string{o}, also...)
	l.SetAllow(func(u string) bool {
		for _, a := range allowed {
			if strings.HasPrefix(u, a+"/") {
				return true
			}
		}
		return u == "about:blank"
	})
}

func (l *browserLog) snapshot() (errs, dialogs, reqs []string) { return l.Snapshot() }

// documentLoads counts pages loaded from the viewer (a reload would add one).
func (l *browserLog) documentLoads() int {
	l.mu.Lock()
	o := l.origin
	l.mu.Unlock()
	n := 0
	for _, u := range l.Documents() {
		if strings.HasPrefix(u, o+"/") {
			n++
		}
	}
	return n
}

func newBrowser(t testing.TB, origin string, width, height int) (context.Context, *browserLog) {
	t.Helper()
	ctx, l := browsertest.New(t, width, height)
	bl := &browserLog{Log: l}
	bl.setOrigin(origin)
	return ctx, bl
}

func assertClean(t *testing.T, bl *browserLog) {
	t.Helper()
	errs, dialogs, reqs := bl.snapshot()
	if len(errs) > 0 {
		t.Errorf("page errors: %q", errs)
	}
	if len(dialogs) > 0 {
		t.Errorf("JS dialogs opened (XSS?): %q", dialogs)
	}
	if len(reqs) > 0 {
		t.Errorf("requests outside the viewer: %q", reqs)
	}
}

func navigate(t testing.TB, ctx context.Context, u string) {
	t.Helper()
	if err := chromedp.Do(ctx, chromedp.Navigate(u)); err != nil {
		t.Fatalf("open %s: %v", u, err)
	}
}

func evalJS[T any](t testing.TB, ctx context.Context, js string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("eval %q: %v", js, err)
	}
	return v
}

func waitJS(t testing.TB, ctx context.Context, cond string, timeout time.Duration) {
	t.Helper()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](cond, chromedp.WithPollingTimeout(timeout))); err != nil {
		t.Fatalf("wait for %s: %v", cond, err)
	}
}

func clickSel(t testing.TB, ctx context.Context, sel string) {
	t.Helper()
	js := fmt.Sprintf(`(function(){var e=document.querySelector(%q); if(!e) return false; e.click(); return true})()`, sel)
	if !evalJS[bool](t, ctx, js) {
		t.Fatalf("no element %s", sel)
	}
}

func screenshot(t testing.TB, ctx context.Context, path string) {
	t.Helper()
	buf, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	if err := os.WriteFile(path, buf, 0o644); err != nil {
		t.Fatal(err)
	}
}

// responses records every response the page receives, with its body, so a
// test can check what the page was told as well as what it shows.
type responses struct {
	mu sync.Mutex
	// pending counts bodies still being fetched, and done is signalled as
	// each ends: a WaitGroup cannot do it, its Add (from the listener, at
	// any time) racing its Wait (since) — the race detector failed a test
	// on that once.
	pending int
	done    *sync.Cond
	urls    map[network.RequestID]string
	bodies  []fetched
}

type fetched struct {
	url, body string
	at        time.Time
}

// captureResponses starts recording the tab's responses.
func captureResponses(ctx context.Context) *responses {
	rs := &responses{urls: map[network.RequestID]string{}}
	rs.done = sync.NewCond(&rs.mu)
	_ = chromedp.Listen(ctx, func(ev any) {
		switch e := ev.(type) {
		case *network.EventResponseReceived:
			rs.mu.Lock()
			rs.urls[e.RequestID] = e.Response.URL
			rs.mu.Unlock()
		case *network.EventLoadingFinished:
			rs.mu.Lock()
			u, ok := rs.urls[e.RequestID]
			if ok {
				rs.pending++
			}
			rs.mu.Unlock()
			if !ok {
				return
			}
			go func() { // not from the listener: it must not call the browser
				res, err := chromedp.Call(ctx, network.GetResponseBody, network.GetResponseBodyParams{RequestID: e.RequestID})
				body := res.Body
				if err != nil {
					body = []byte("<body not available: " + err.Error() + ">")
				}
				rs.mu.Lock()
				rs.bodies = append(rs.bodies, fetched{u, string(body), time.Now()})
				rs.pending--
				rs.done.Broadcast()
				rs.mu.Unlock()
			}()
		}
	})
	return rs
}

// since returns the bodies fetched after t (waiting for pending ones).
func (rs *responses) since(t time.Time) []fetched {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	for rs.pending > 0 {
		rs.done.Wait()
	}
	var out []fetched
	for _, f := range rs.bodies {
		if !f.at.Before(t) {
			out = append(out, f)
		}
	}
	return out
}

// pressKey types one key into the page, as a person would.
func pressKey(t testing.TB, ctx context.Context, key string) {
	t.Helper()
	if err := chromedp.Do(ctx, chromedp.KeyEvent(key)); err != nil {
		t.Fatalf("key %q: %v", key, err)
	}
}
