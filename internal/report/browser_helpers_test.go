package report

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// chromeBinary finds Chromium: $CHROME_BIN, then the usual names on PATH.
// Without one the browser tests skip locally but fail under CI, whose
// script installs Debian's chromium — a silent skip there would hide a
// broken report.
func chromeBinary(t testing.TB) string {
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

// browserLog collects what the page must never produce: console errors,
// uncaught exceptions, dialogs (alert/confirm/prompt) and network requests
// other than the report file itself.
type browserLog struct {
	mu         sync.Mutex
	errors     []string
	dialogs    []string
	requests   []string
	reportFile string
}

func (l *browserLog) add(dst *[]string, s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	*dst = append(*dst, s)
}

func (l *browserLog) setFile(u string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.reportFile = u
}

func (l *browserLog) file() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.reportFile
}

func (l *browserLog) snapshot() (errs, dialogs, reqs []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.errors...), append([]string(nil), l.dialogs...), append([]string(nil), l.requests...)
}

// newBrowser starts headless Chromium with flags that work as root with
// no network, and returns a tab context plus its event log.
func newBrowser(t testing.TB, width, height int) (context.Context, *browserLog) {
	t.Helper()
	bin := chromeBinary(t)
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(bin),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
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
	bl := &browserLog{}
	var ctx context.Context
	// The listener runs in the tab's read loop: it must not call back into
	// the browser, so a dialog is dismissed from a new goroutine.
	listener := func(ev any) {
		switch ev := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeAssert {
				var parts []string
				for _, a := range ev.Args {
					parts = append(parts, string(a.Value)+a.Description)
				}
				bl.add(&bl.errors, "console."+string(ev.Type)+": "+strings.Join(parts, " "))
			}
		case *runtime.EventExceptionThrown:
			d := ev.ExceptionDetails
			msg := d.Text
			if d.Exception != nil {
				msg += " " + d.Exception.Description
			}
			bl.add(&bl.errors, "exception: "+msg)
		case *cdplog.EventEntryAdded:
			// CSP violations and failed loads arrive here, not via console.*.
			if ev.Entry.Level == cdplog.EntryLevelError {
				bl.add(&bl.errors, "log: "+ev.Entry.Text)
			}
		case *page.EventJavascriptDialogOpening:
			bl.add(&bl.dialogs, string(ev.Type)+": "+ev.Message)
			go func() {
				_, _ = chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: false})
			}()
		case *network.EventRequestWillBeSent:
			u := ev.Request.URL
			if u != bl.file() && !strings.HasPrefix(u, "data:") && !strings.HasPrefix(u, "blob:") {
				bl.add(&bl.requests, u)
			}
		}
	}
	ctx, cancelTab := chromedp.NewContext(actx, chromedp.WithListener(listener))
	t.Cleanup(func() { cancelTab(); cancelAlloc() })
	if err := chromedp.Do(ctx); err != nil { // starts the browser and the tab
		t.Fatalf("start chromium: %v", err)
	}
	return ctx, bl
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
