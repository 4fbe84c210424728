// Package browsertest starts headless Chromium for the report's and the
// viewer's browser tests and records what a page must never do: console
// errors, uncaught exceptions (CSP violations included), dialogs (an XSS
// payload that ran) and requests the caller does not allow. Only tests
// import it.
package browsertest

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"

	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// ChromeBinary finds Chromium: $CHROME_BIN, then the usual names on PATH.
// Without one the browser tests skip locally but fail under CI, whose
// script installs Debian's chromium: a silent skip there would hide a
// broken page.
func ChromeBinary(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("CHROME_BIN"); p != "" {
		if _, err := os.Stat(p); err == nil {
			return p
		}
		t.Fatalf("CHROME_BIN=%s does not exist", p)
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("no Chromium found (CHROME_BIN, chromium, chromium-browser, google-chrome); CI must install it")
	}
	t.Skip("no Chromium found; set CHROME_BIN or install chromium to run browser tests")
	return ""
}

// Log is what the page did that a test checks afterwards.
type Log struct {
	mu        sync.Mutex
	errors    []string
	dialogs   []string
	requests  []string // not allowed
	documents []string // every document (page) request
	allow     func(url string) bool
}

// SetAllow sets which request URLs are expected (data: URLs always are).
func (l *Log) SetAllow(allow func(url string) bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.allow = allow
}

// Snapshot returns the errors, dialogs and disallowed requests so far.
func (l *Log) Snapshot() (errs, dialogs, reqs []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.errors...), append([]string(nil), l.dialogs...), append([]string(nil), l.requests...)
}

// Documents returns the URLs of every document loaded so far.
func (l *Log) Documents() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.documents...)
}

func (l *Log) add(dst *[]string, s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	*dst = append(*dst, s)
}

func (l *Log) request(u string, document bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if document {
		l.documents = append(l.documents, u)
	}
	if strings.HasPrefix(u, "data:") || (l.allow != nil && l.allow(u)) {
		return
	}
	l.requests = append(l.requests, u)
}

// New starts headless Chromium with flags that work as root with no
// network and returns a tab context and its log; the browser stops when the
// test ends.
func New(t testing.TB, width, height int) (context.Context, *Log) {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(ChromeBinary(t)),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(width, height),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	l := &Log{}
	var ctx context.Context
	ctx, cancelTab := chromedp.NewContext(actx, chromedp.WithListener(func(ev any) { l.listen(ctx, ev) }))
	t.Cleanup(func() { cancelTab(); cancelAlloc() })
	if err := chromedp.Do(ctx); err != nil { // starts the browser and the tab
		t.Fatalf("start chromium: %v", err)
	}
	return ctx, l
}

// listen runs in the tab's read loop: it must not call back into the
// browser, so a dialog is dismissed from a new goroutine.
func (l *Log) listen(ctx context.Context, ev any) {
	switch ev := ev.(type) {
	case *runtime.EventConsoleAPICalled:
		if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeAssert {
			var parts []string
			for _, a := range ev.Args {
				parts = append(parts, string(a.Value)+a.Description)
			}
			l.add(&l.errors, "console."+string(ev.Type)+": "+strings.Join(parts, " "))
		}
	case *runtime.EventExceptionThrown:
		d := ev.ExceptionDetails
		msg := d.Text
		if d.Exception != nil {
			msg += " " + d.Exception.Description
		}
		l.add(&l.errors, "exception: "+msg)
	case *cdplog.EventEntryAdded:
		// CSP violations and failed loads arrive here, not via console.*.
		if ev.Entry.Level == cdplog.EntryLevelError {
			l.add(&l.errors, "log: "+ev.Entry.Text)
		}
	case *page.EventJavascriptDialogOpening:
		l.add(&l.dialogs, string(ev.Type)+": "+ev.Message)
		go func() {
			_, _ = chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: false})
		}()
	case *network.EventRequestWillBeSent:
		l.request(ev.Request.URL, ev.Type == network.ResourceTypeDocument)
	}
}
