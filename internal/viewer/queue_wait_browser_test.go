package viewer_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/impactbench/impactbench/internal/viewer"
)

// TestBrowserQueueWaitsForWork: a reviewer who opens the queue before the
// review plan has anything for them is told so, and their page finds the
// work when it comes, without a reload: first when the judges' verdicts
// arrive (the queue page lists the items), then, after labelling them, when
// the other reviewer gives the second labels the plan asks for (the review
// page says the plan is complete).
func TestBrowserQueueWaitsForWork(t *testing.T) {
	project := filepath.Join(t.TempDir(), "project")
	spec := viewer.SynthSpec{Name: "tiny", Metrics: 1, ScensPerMetric: 2, Targets: []string{"t1"}, Samples: 1, Msgs: 2, MsgLen: 60, Judges: 1, Unscored: true}
	viewer.WriteSynth(t, project, spec)
	// Every row asked of two reviewers; the plan asks for every row (two: fewer than it wants).
	s, base := viewer.StartForTest(t, viewer.Options{ProjectDir: project, Reviewers: []string{"ana", "bo"}, Seed: 4, Overlap: 1, OverlapSet: true})
	ctx, bl := newBrowser(t, base, 1200, 800)
	navigate(t, ctx, s.Links(base)[2].URL+"#/queue/calibration")
	waitJS(t, ctx, `!!document.getElementById('queue-waiting') || !!document.getElementById('queue-empty') || !!document.getElementById('start-queue')`, 20*time.Second)
	if txt := pageText(t, ctx); !strings.Contains(txt, "Nothing assigned to you right now") || !strings.Contains(txt, "checks again every") {
		t.Errorf("before any verdict, bo's queue says:\n%s", txt)
	}
	loads := bl.documentLoads()
	// Coming back to the window asks at once, not at the next tick.
	for _, ev := range []string{`window.dispatchEvent(new Event('focus'))`, `document.dispatchEvent(new Event('visibilitychange'))`} {
		waitJS(t, ctx, `(window.__viewer.waitChecks || 0) > 0`, 20*time.Second)
		n, at := evalJS[int](t, ctx, `window.__viewer.waitChecks`), evalJS[float64](t, ctx, `window.__viewer.lastWaitCheck`)
		evalJS[any](t, ctx, ev)
		waitJS(t, ctx, `window.__viewer.waitChecks > `+strconv.Itoa(n), 20*time.Second)
		// The timer asks 4 s after the last check; sooner is the event's.
		if gap := evalJS[float64](t, ctx, `window.__viewer.lastWaitCheck`) - at; gap > 3000 {
			t.Errorf("%s: the page asked again %.0f ms after the last check, not at once", ev, gap)
		}
	}

	// The verdicts arrive: the page lists bo's items by itself.
	spec.Unscored = false
	viewer.WriteSynth(t, project, spec)
	t0 := time.Now()
	waitJS(t, ctx, `document.querySelectorAll('#queue-table tbody tr').length === 2 && !!document.getElementById('start-queue')`, 20*time.Second)
	t.Logf("the queue page showed the items %.1f s after the verdicts were written", time.Since(t0).Seconds())

	// bo labels both; the rows then wait for ana's second label.
	clickSel(t, ctx, "#start-queue")
	ready := `!!document.getElementById('review-form') && document.querySelectorAll('#transcript-box .msg').length > 0 && !document.getElementById('submit-label').disabled`
	for range 2 {
		waitJS(t, ctx, ready, 20*time.Second)
		item := evalJS[string](t, ctx, `document.getElementById('review').dataset.item`)
		pressKey(t, ctx, "1")
		waitJS(t, ctx, `document.getElementById('review').dataset.item !== `+jsString(item)+` || !!document.getElementById('queue-waiting') || !!document.getElementById('queue-done')`, 20*time.Second)
	}
	if !evalJS[bool](t, ctx, `!!document.getElementById('queue-waiting')`) {
		t.Fatalf("with ana's second labels to come, bo's page says:\n%s", pageText(t, ctx))
	}
	// ana labels both, as her page would.
	ana := viewer.ReviewerToken(t, s, "ana")
	for range 2 {
		code, body := get(t, base+"/api/next", ana)
		var next struct{ Item *string }
		if code != 200 || json.Unmarshal([]byte(body), &next) != nil || next.Item == nil {
			t.Fatalf("ana's next: %d %s", code, body)
		}
		if code, body := send(t, http.MethodPost, base+"/api/label", `{"item":"`+*next.Item+`","present":false}`, ana); code != 201 {
			t.Fatalf("ana's label: %d %s", code, body)
		}
	}
	t1 := time.Now()
	waitJS(t, ctx, `!!document.getElementById('queue-done') && !document.getElementById('queue-waiting')`, 20*time.Second)
	t.Logf("the review page said the plan is complete %.1f s after the last label", time.Since(t1).Seconds())
	if txt := evalJS[string](t, ctx, `document.getElementById('queue-done').textContent`); !strings.Contains(txt, "the review plan is complete") {
		t.Errorf("at the end bo's page says %q", txt)
	}
	if n := bl.documentLoads(); n != loads {
		t.Errorf("the page was loaded %d times more: it must find the work without a reload", n-loads)
	}
	assertClean(t, bl)
}

// TestBrowserQueueWaitAbandonsAStalledCheck: a check the server never
// answers (a stalled connection, a proxy holding the request) is given up
// after twice the interval and asked again, so the page still finds the
// work. Before, one unanswered check kept the page saying it "checks again
// every 4 s" while it never asked again. The page is served through a
// proxy that holds the first check made after the page starts waiting
// until the browser gives up on it.
func TestBrowserQueueWaitAbandonsAStalledCheck(t *testing.T) {
	project := filepath.Join(t.TempDir(), "project")
	spec := viewer.SynthSpec{Name: "tiny", Metrics: 1, ScensPerMetric: 2, Targets: []string{"t1"}, Samples: 1, Msgs: 2, MsgLen: 60, Judges: 1, Unscored: true}
	viewer.WriteSynth(t, project, spec)
	s, base := viewer.StartForTest(t, viewer.Options{ProjectDir: project, Reviewers: []string{"ana", "bo"}, Seed: 4, Overlap: 1, OverlapSet: true})
	target, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	proxy := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) { r.SetURL(target) }}
	var stall atomic.Bool
	abandoned := make(chan time.Duration, 1)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/queue" && stall.CompareAndSwap(true, false) {
			held := time.Now()
			select {
			case <-r.Context().Done():
				abandoned <- time.Since(held)
			case <-time.After(time.Minute):
			}
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(front.Close)

	ctx, bl := newBrowser(t, front.URL, 1200, 800)
	navigate(t, ctx, s.Links(front.URL)[2].URL+"#/queue/calibration")
	waitJS(t, ctx, `!!document.getElementById('queue-waiting')`, 20*time.Second)
	stall.Store(true)
	spec.Unscored = false
	viewer.WriteSynth(t, project, spec)
	t0 := time.Now()
	waitJS(t, ctx, `document.querySelectorAll('#queue-table tbody tr').length === 2 && !!document.getElementById('start-queue')`, 30*time.Second)
	select {
	case d := <-abandoned:
		t.Logf("the page gave up a check held %.1f s and listed the items %.1f s after the verdicts were written", d.Seconds(), time.Since(t0).Seconds())
	case <-time.After(5 * time.Second):
		t.Fatalf("no check was held and given up: the test did not stall the page")
	}
	if stall.Load() {
		t.Fatalf("the page found the items without making the check the proxy holds")
	}
	assertClean(t, bl)
}
