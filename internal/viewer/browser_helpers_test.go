package viewer_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
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

// chromeBinary finds Chromium as the report's browser tests do: skip
// locally without one, fail under CI, which installs it.
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
// exceptions (CSP violations included), dialogs, and requests anywhere but
// the viewer itself.
type browserLog struct {
	mu       sync.Mutex
	errors   []string
	dialogs  []string
	requests []string
	origin   string
	reloads  int
}

func (l *browserLog) add(dst *[]string, s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	*dst = append(*dst, s)
}

func (l *browserLog) setOrigin(o string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.origin = o
}

func (l *browserLog) originNow() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.origin
}

func (l *browserLog) snapshot() (errs, dialogs, reqs []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.errors...), append([]string(nil), l.dialogs...), append([]string(nil), l.requests...)
}

func newBrowser(t testing.TB, origin string, width, height int) (context.Context, *browserLog) {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromeBinary(t)),
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
	bl := &browserLog{origin: origin}
	var ctx context.Context
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
			origin := bl.originNow()
			if !strings.HasPrefix(u, origin+"/") && !strings.HasPrefix(u, "data:") && u != "about:blank" {
				bl.add(&bl.requests, u)
			}
			if ev.Type == network.ResourceTypeDocument && strings.HasPrefix(u, origin+"/") {
				bl.mu.Lock()
				bl.reloads++
				bl.mu.Unlock()
			}
		}
	}
	ctx, cancelTab := chromedp.NewContext(actx, chromedp.WithListener(listener))
	t.Cleanup(func() { cancelTab(); cancelAlloc() })
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return ctx, bl
}

func (l *browserLog) documentLoads() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.reloads
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
