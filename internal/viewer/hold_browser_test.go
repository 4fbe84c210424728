package viewer_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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
