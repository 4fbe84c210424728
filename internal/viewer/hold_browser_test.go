package viewer_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/impactbench/impactbench/internal/labels"
	"github.com/impactbench/impactbench/internal/layout"
	"github.com/impactbench/impactbench/internal/viewer"
)

// TestBrowserASecondReviewerMovesOnFromAHeldItem: ana's review form is
// open on an item; bo's page opens the same item a moment later (a link,
// or two /api/next answered before either hold). Bo's hold fails, so his
// page moves on to his next item, says why, and his label on ana's item is
// refused. Before, bo's page kept the form open on held:false and both
// labelled a row the plan asked of one person.
func TestBrowserASecondReviewerMovesOnFromAHeldItem(t *testing.T) {
	project := filepath.Join(t.TempDir(), "project")
	viewer.WriteSynth(t, project, viewer.SynthSpec{Name: "tiny", Metrics: 1, ScensPerMetric: 4, Targets: []string{"t1"}, Samples: 1, Msgs: 2, MsgLen: 60, Judges: 1})
	s, base := viewer.StartForTest(t, viewer.Options{ProjectDir: project, Reviewers: []string{"ana", "bo"}, Seed: 2, Overlap: 0, OverlapSet: true})
	links, bo := s.Links(base), viewer.ReviewerToken(t, s, "bo")
	ready := `!!document.getElementById('review-form') && document.querySelectorAll('#transcript-box .msg').length > 0`
	anaCtx, anaLog := newBrowser(t, base, 1200, 800)
	navigate(t, anaCtx, links[1].URL+"#/queue/calibration")
	waitJS(t, anaCtx, `!!document.getElementById('start-queue')`, 20*time.Second)
	clickSel(t, anaCtx, "#start-queue")
	waitJS(t, anaCtx, ready, 20*time.Second)
	held := evalJS[string](t, anaCtx, `document.getElementById('review').dataset.item`)
	// Ana's page holds it once its hold is answered: it leaves bo's queue.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if _, q := get(t, base+"/api/queue", bo); !strings.Contains(q, held) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("ana's open form never held its item")
		}
	}

	boCtx, boLog := newBrowser(t, base, 1200, 800)
	navigate(t, boCtx, links[2].URL+"#/r/"+held)
	waitJS(t, boCtx, `!!document.getElementById('moved-on') || !!document.getElementById('queue-waiting') || (`+ready+` && document.getElementById('review').dataset.item !== `+jsString(held)+`)`, 20*time.Second)
	waitJS(t, boCtx, ready+` && !!document.getElementById('moved-on')`, 20*time.Second)
	if got := evalJS[string](t, boCtx, `document.getElementById('review').dataset.item`); got == held {
		t.Fatalf("bo's page stayed on the item ana has open")
	}
	if txt := evalJS[string](t, boCtx, `document.getElementById('moved-on').textContent`); !strings.Contains(txt, "Another reviewer opened that item") {
		t.Errorf("bo's page says %q of why it moved on", txt)
	}
	if code, body := send(t, "POST", base+"/api/label", `{"item":"`+held+`","present":true}`, bo); code != 409 {
		t.Errorf("bo's label on ana's open item: %d %s, want 409", code, body)
	}
	// Ana labels it from her page: the one label on the row is hers.
	pressKey(t, anaCtx, "1")
	waitJS(t, anaCtx, `document.getElementById('review').dataset.item !== `+jsString(held)+` || !!document.getElementById('queue-waiting') || !!document.getElementById('queue-done')`, 20*time.Second)
	ls, err := labels.Read(layout.Bench{Dir: layout.BenchDir(project, "tiny")}.Labels(), labels.Known{})
	if err != nil {
		t.Fatal(err)
	}
	if len(ls) != 1 || ls[0].Labeler != "ana" {
		t.Errorf("labels %+v, want ana's one", ls)
	}
	// Ana's label took the row out of every queue: bo's page opened on it
	// (a queue answered just before her label) moves on, saying so, rather
	// than leaving him a form whose label is refused.
	navigate(t, boCtx, links[2].URL+"#/r/"+held)
	waitJS(t, boCtx, `!!document.getElementById('moved-on') && document.getElementById('review').dataset.item !== `+jsString(held)+` || !!document.getElementById('queue-waiting') || !!document.getElementById('queue-done') || !!document.getElementById('queue-empty')`, 20*time.Second)
	if txt := evalJS[string](t, boCtx, `(document.getElementById('moved-on') || {}).textContent || ''`); !strings.Contains(txt, "labels took that item out of your queue") {
		t.Errorf("bo's page, on an item ana labelled, says %q of why it moved on", txt)
	}
	if code, body := send(t, "POST", base+"/api/label", `{"item":"`+held+`","present":true}`, bo); code != 403 || !strings.Contains(body, `"lost":"gone"`) {
		t.Errorf("bo's label on the item ana labelled: %d %s, want 403 and lost gone", code, body)
	}
	assertClean(t, anaLog)
	assertClean(t, boLog)
}

// TestBrowserMineSaysWhenLabelsCannotBeRead: a reviewer's "My labels" page
// says that a benchmark's labels could not be read (without naming a
// target or the file) rather than listing fewer labels without a word.
func TestBrowserMineSaysWhenLabelsCannotBeRead(t *testing.T) {
	project := filepath.Join(t.TempDir(), "project")
	for _, b := range []string{"tiny", "broken"} {
		viewer.WriteSynth(t, project, viewer.SynthSpec{Name: b, Metrics: 1, ScensPerMetric: 2, Targets: []string{"zebratarget"}, Samples: 1, Msgs: 2, MsgLen: 60, Judges: 1})
	}
	bad := layout.Bench{Dir: layout.BenchDir(project, "broken")}.Labels()
	if err := os.WriteFile(bad, []byte(`{"conv_id": "m01_s001_v01__zebratarget__s0", "zebratarget": 1}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s, base := viewer.StartForTest(t, viewer.Options{ProjectDir: project, Reviewers: []string{"ana"}, Seed: 5})
	ctx, bl := newBrowser(t, base, 1200, 800)
	navigate(t, ctx, s.Links(base)[1].URL+"#/mine")
	waitJS(t, ctx, `!!document.querySelector('#mine .mine-note')`, 20*time.Second)
	txt := pageText(t, ctx)
	if !strings.Contains(txt, "1 benchmark(s) could not be read") || strings.Contains(txt, "zebratarget") || strings.Contains(txt, "labels.jsonl") {
		t.Errorf("ana's labels page says:\n%s", txt)
	}
	assertClean(t, bl)
}

// TestBrowserARefusedLabelMovesOn: bo's page is open on an item of his
// queue whose hold never got through (blocked here; a dropped request),
// and ana's label takes the row out of his queue meanwhile. His label is
// refused (403, lost gone), and his page moves on to his next item saying
// why, rather than leaving a form with an error and a key to press.
func TestBrowserARefusedLabelMovesOn(t *testing.T) {
	project := filepath.Join(t.TempDir(), "project")
	viewer.WriteSynth(t, project, viewer.SynthSpec{Name: "tiny", Metrics: 1, ScensPerMetric: 4, Targets: []string{"t1"}, Samples: 1, Msgs: 2, MsgLen: 60, Judges: 1})
	s, base := viewer.StartForTest(t, viewer.Options{ProjectDir: project, Reviewers: []string{"ana", "bo"}, Seed: 2, Overlap: 0, OverlapSet: true})
	links, ana, bo := s.Links(base), viewer.ReviewerToken(t, s, "ana"), viewer.ReviewerToken(t, s, "bo")
	var n struct{ Item *string }
	if _, body := get(t, base+"/api/next", bo); json.Unmarshal([]byte(body), &n) != nil || n.Item == nil {
		t.Fatalf("bo's next: %s", body)
	}
	item := *n.Item
	if _, q := get(t, base+"/api/queue", ana); !strings.Contains(q, item) {
		t.Fatalf("%s is not in ana's queue too: %s", item, q)
	}
	boCtx, boLog := newBrowser(t, base, 1200, 800)
	if _, err := chromedp.Call(boCtx, network.Enable, network.EnableParams{}); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Call(boCtx, network.SetBlockedURLs, network.SetBlockedURLsParams{URLPatterns: []*network.BlockPattern{{URLPattern: base + "/api/hold*", Block: true}}}); err != nil {
		t.Fatal(err)
	}
	navigate(t, boCtx, links[2].URL+"#/r/"+item)
	waitJS(t, boCtx, `!!document.getElementById('review-form') && document.getElementById('review').dataset.hold === 'failed'`, 20*time.Second)
	if code, body := send(t, "POST", base+"/api/label", `{"item":"`+item+`","present":false}`, ana); code != 201 {
		t.Fatalf("ana's label: %d %s", code, body)
	}
	pressKey(t, boCtx, "1")
	waitJS(t, boCtx, `!!document.getElementById('moved-on') || !!document.getElementById('queue-waiting') || !!document.getElementById('queue-done') || !!document.getElementById('queue-empty')`, 20*time.Second)
	if got := evalJS[string](t, boCtx, `(document.getElementById('review') || {dataset: {}}).dataset.item || ''`); got == item {
		t.Errorf("bo's page stayed on the item ana labelled")
	}
	if txt := evalJS[string](t, boCtx, `(document.getElementById('moved-on') || {}).textContent || ''`); !strings.Contains(txt, "labels took that item out of your queue") {
		t.Errorf("bo's page says %q of why it moved on", txt)
	}
	ls, err := labels.Read(layout.Bench{Dir: layout.BenchDir(project, "tiny")}.Labels(), labels.Known{})
	if err != nil || len(ls) != 1 || ls[0].Labeler != "ana" {
		t.Errorf("labels %+v (%v), want ana's one", ls, err)
	}
	// The page's console says what the browser refused (the blocked hold)
	// and what the server refused (bo's label); nothing else.
	errs, dialogs, reqs := boLog.snapshot()
	for _, e := range errs {
		if !strings.Contains(e, "ERR_BLOCKED_BY_CLIENT") && !strings.Contains(e, "403") {
			t.Errorf("page error: %q", e)
		}
	}
	if len(dialogs)+len(reqs) > 0 {
		t.Errorf("dialogs %q, requests outside the viewer %q", dialogs, reqs)
	}
}
