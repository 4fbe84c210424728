package viewer_test

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/impactbench/impactbench/internal/viewer"
)

// BenchmarkBrowserReviewerAtStudyScale: a reviewer's blind review of a
// study-sized project (viewer.WriteStudy: 17 benchmarks of 8,640
// conversations) in a real browser, from her link and the keyboard: each
// op is one label (1 or 0), timed from the key to the label saved
// (ms-label) and on to her next item's form ready (ms-next: the page asks
// GET /api/next and opens the item). With IB_SCALE_SHOTS=<dir>, the queue page and the review
// page are saved there as screenshots.
//
//	go test -run '^$' -bench BenchmarkBrowserReviewerAtStudyScale -benchtime 20x ./internal/viewer/
func BenchmarkBrowserReviewerAtStudyScale(b *testing.B) {
	project := b.TempDir()
	viewer.WriteStudy(b, project)
	s, base := viewer.StartForTest(b, viewer.Options{ProjectDir: project, Reviewers: []string{"ana", "bo"}, Seed: 3})
	s.Warm()
	shots := os.Getenv("IB_SCALE_SHOTS")
	ctx, bl := newBrowser(b, base, 1300, 900)
	var link string
	for _, l := range s.Links(base) {
		if l.Name == "ana" {
			link = l.URL
		}
	}
	navigate(b, ctx, link)
	waitJS(b, ctx, `!!document.getElementById('reviewer-home')`, 20*time.Second)
	clickSel(b, ctx, "#study-queue-link")
	waitJS(b, ctx, `!!document.getElementById('start-queue')`, 20*time.Second)
	b.Logf("queue page: %q", evalJS[string](b, ctx, `document.getElementById('start-queue').textContent + ' | ' + document.getElementById('queue').innerText.slice(0, 600)`))
	if shots != "" {
		screenshot(b, ctx, filepath.Join(shots, "queue.png"))
	}
	const ready = `!!document.getElementById('review-form') && document.querySelectorAll('#transcript-box .msg').length > 0 && !document.getElementById('submit-label').disabled`
	clickSel(b, ctx, "#start-queue")
	waitJS(b, ctx, ready, 20*time.Second)
	if shots != "" {
		screenshot(b, ctx, filepath.Join(shots, "review.png"))
	}
	var saves, nexts time.Duration
	n := 0
	for b.Loop() {
		item := evalJS[string](b, ctx, `document.getElementById('review').dataset.item`)
		labels := evalJS[int](b, ctx, `window.__viewer.labels || 0`)
		key := "1"
		if n%3 == 0 {
			key = "0"
		}
		t0 := time.Now()
		pressKey(b, ctx, key)
		waitFast(b, ctx, `(window.__viewer.labels || 0) > `+strconv.Itoa(labels)+` || (document.getElementById('review-msg') || {}).textContent`)
		if msg := evalJS[string](b, ctx, `(document.getElementById('review-msg') || {}).textContent || ''`); msg != "" {
			b.Fatalf("labelling %s: %s", item, msg)
		}
		t1 := time.Now()
		// A reviewer's page goes on to her next item by itself once the
		// label is saved (no verdict to read: it is never shown to her).
		waitFast(b, ctx, `document.getElementById('review').dataset.item !== `+jsString(item)+` && `+ready)
		saves += t1.Sub(t0)
		nexts += time.Since(t1)
		n++
	}
	b.ReportMetric(float64(saves.Milliseconds())/float64(n), "ms-label")
	b.ReportMetric(float64(nexts.Milliseconds())/float64(n), "ms-next")
	b.Logf("after %d labels: %q", n, evalJS[string](b, ctx, `document.getElementById('queue-pos').textContent`))
	if shots != "" {
		screenshot(b, ctx, filepath.Join(shots, "review-after.png"))
	}
	if errs, dialogs, reqs := bl.snapshot(); len(errs)+len(dialogs)+len(reqs) > 0 {
		b.Fatalf("page errors %q, dialogs %q, requests outside %q", errs, dialogs, reqs)
	}
}

// waitFast is waitJS polling every millisecond (not at each frame), to
// time what the page does.
func waitFast(tb testing.TB, ctx context.Context, cond string) {
	tb.Helper()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](cond, chromedp.WithPollingInterval(time.Millisecond), chromedp.WithPollingTimeout(20*time.Second))); err != nil {
		tb.Fatalf("wait for %s: %v", cond, err)
	}
}

// TestBrowserReviewerQueuePageAtStudySize: a reviewer's queue page on a
// study of many benchmarks and metrics says how many rows her queue holds
// now, as what the plan asks of the team so far (others'
// labels take rows out, more may come), not as hers alone "to go"; the
// button to start is in view above the progress lines (one per benchmark
// and metric), and the review page's line says the same.
func TestBrowserReviewerQueuePageAtStudySize(t *testing.T) {
	project := t.TempDir()
	for k := range 8 {
		viewer.WriteSynth(t, project, viewer.SynthSpec{Name: "b" + strconv.Itoa(k), Metrics: 4, ScensPerMetric: 8, Targets: []string{"t1", "t2"}, Samples: 4, Msgs: 2, MsgLen: 8, Judges: 1})
	}
	s, base := viewer.StartForTest(t, viewer.Options{ProjectDir: project, Reviewers: []string{"ana", "bo"}, Seed: 3})
	ctx, bl := newBrowser(t, base, 1300, 900)
	navigate(t, ctx, s.Links(base)[1].URL)
	waitJS(t, ctx, `!!document.getElementById('reviewer-home')`, 20*time.Second)
	clickSel(t, ctx, "#study-queue-link")
	waitJS(t, ctx, `!!document.getElementById('start-queue')`, 20*time.Second)
	if n := evalJS[int](t, ctx, `document.querySelectorAll('#queue-plan li').length`); n != 32 {
		t.Errorf("%d progress lines, want 32 (8 benchmarks × 4 metrics)", n)
	}
	if !evalJS[bool](t, ctx, `document.getElementById('start-queue').getBoundingClientRect().bottom <= window.innerHeight`) {
		t.Errorf("the button to start is out of view, below the progress lines")
	}
	count := evalJS[string](t, ctx, `(document.getElementById('queue-count') || {}).textContent || ''`)
	if !regexp.MustCompile(`^\d[\d,]* rows in your queue now: .*shared with the team.*more may come`).MatchString(count) {
		t.Errorf("the queue page says %q: want how many rows her queue holds now, shared with the team, more to come", count)
	}
	clickSel(t, ctx, "#start-queue")
	waitJS(t, ctx, `!!document.getElementById('queue-pos')`, 20*time.Second)
	if line := evalJS[string](t, ctx, `document.getElementById('queue-pos').textContent`); !regexp.MustCompile(` \d[\d,]* in the queue now · `).MatchString(line) || strings.Contains(line, "to go") {
		t.Errorf("the review page says %q", line)
	} else if !strings.HasSuffix(line, "labelled this session · back to the queue page") {
		t.Errorf("the review page's place line runs into its link: %q", line)
	}
	// A reviewer never sees the judges' verdict: no key jumps to its quotes.
	if keys := evalJS[string](t, ctx, `(document.getElementById('key-help') || {}).textContent || ''`); keys == "" || strings.Contains(keys, "judges") {
		t.Errorf("a reviewer's key help: %q", keys)
	}
	assertClean(t, bl)
}
