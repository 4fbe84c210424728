package report

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/impactbench/impactbench/internal/browsertest"
)

// browserLog is the browser's log plus the report file the page may load.
type browserLog struct {
	*browsertest.Log
	mu         sync.Mutex
	reportFile string
}

func (l *browserLog) setFile(u string) {
	l.mu.Lock()
	l.reportFile = u
	l.mu.Unlock()
	l.SetAllow(func(req string) bool { return req == u || strings.HasPrefix(req, "blob:") })
}

func (l *browserLog) snapshot() (errs, dialogs, reqs []string) { return l.Snapshot() }

// newBrowser starts headless Chromium (browsertest) and returns a tab
// context plus its event log.
func newBrowser(t testing.TB, width, height int) (context.Context, *browserLog) {
	t.Helper()
	ctx, l := browsertest.New(t, width, height)
	return ctx, &browserLog{Log: l}
}

func fileURL(path string) string {
	abs, _ := filepath.Abs(path)
	return (&url.URL{Scheme: "file", Path: abs}).String()
}

// openReport navigates to the report (with an optional fragment) and waits
// for window.__reportReady, returning the page's own timings.
func openReport(t testing.TB, ctx context.Context, bl *browserLog, path, fragment string) map[string]float64 {
	t.Helper()
	u := fileURL(path)
	bl.setFile(u)
	if fragment != "" {
		u += "#" + fragment
	}
	// The report file is a fragment-less URL, so a new fragment on the same
	// file is a same-document navigation; reload to start fresh.
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank"), chromedp.Navigate(u)); err != nil {
		t.Fatalf("open report: %v", err)
	}
	// Poll from Go so a page error fails at once instead of after the timeout.
	deadline := time.Now().Add(2 * time.Minute)
	for !evalJS[bool](t, ctx, "window.__reportReady === true") {
		if errs, _, _ := bl.snapshot(); len(errs) > 0 {
			t.Fatalf("report did not get ready: page errors: %q", errs)
		}
		if time.Now().After(deadline) {
			t.Fatal("report did not get ready in 2 minutes")
		}
		time.Sleep(20 * time.Millisecond)
	}
	timings := evalJS[map[string]float64](t, ctx, "window.__reportTimings")
	return timings
}

func evalJS[T any](t testing.TB, ctx context.Context, js string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("eval %q: %v", js, err)
	}
	return v
}

func waitJS(t testing.TB, ctx context.Context, cond string) {
	t.Helper()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](cond, chromedp.WithPollingTimeout(30*time.Second))); err != nil {
		t.Fatalf("wait for %s: %v", cond, err)
	}
}

func screenshot(t testing.TB, ctx context.Context, sel, path string) {
	t.Helper()
	buf, err := chromedp.Run(ctx, chromedp.Screenshot(chromedp.CSS(sel)))
	if err != nil {
		t.Fatalf("screenshot %s: %v", sel, err)
	}
	if err := os.WriteFile(path, buf, 0o644); err != nil {
		t.Fatal(err)
	}
}

// clickSel clicks the first element matching a CSS selector via the DOM
// (chromedp's mouse click needs the node in the viewport; this does not).
func clickSel(t testing.TB, ctx context.Context, sel string) {
	t.Helper()
	js := fmt.Sprintf(`(function(){var e=document.querySelector(%q); if(!e) return false; e.click(); return true})()`, sel)
	if !evalJS[bool](t, ctx, js) {
		t.Fatalf("no element %s", sel)
	}
}
