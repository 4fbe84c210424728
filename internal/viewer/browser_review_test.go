package viewer_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/impactbench/impactbench/internal/viewer"
)

// blindProject is a benchmark whose target names, judge names, judge
// justifications and another reviewer's label note are all distinctive
// strings, so a leak of any of them is found by substring; ana is about
// to review, bo already labelled some rows.
func blindProject(t *testing.T) (project, bench string, secrets []string) {
	t.Helper()
	project = filepath.Join(t.TempDir(), "project")
	bench, _ = viewer.WriteSynth(t, project, viewer.SynthSpec{Name: "blind", Metrics: 2, ScensPerMetric: 12,
		Targets: []string{"zebratarget", "yaktarget"}, Samples: 2, Msgs: 6, MsgLen: 300, Judges: 2})
	// bo's labels on the first rows of each target, with a note only bo wrote.
	f, err := os.OpenFile(filepath.Join(bench, "labels.jsonl"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	for _, target := range []string{"zebratarget", "yaktarget"} {
		for s := 1; s <= 6; s++ {
			fmt.Fprintf(f, `{"conv_id": "m01_s%03d_v01__%s__s0", "metric_id": "m01", "present": true, "labeler": "bo-labeller", "note": "NOTE-OF-BO", "at": "2026-01-01T00:00:00Z"}`+"\n", s, target)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	secrets = []string{"zebratarget", "yaktarget", "__s0", "__s1", // targets and conv ids
		"judge-a", "judge-b", "Judge a:", "Judge b:", "did what the metric describes", // the judges and their words
		"bo-labeller", "NOTE-OF-BO", // another reviewer's label
		"· present", "· absent", "· no verdict", "stratum"} // strata
	return project, bench, secrets
}

// verdictKeys are JSON keys that carry a judge's verdict.
var verdictKeys = []string{`"present":true`, `"present":false`, `"passed"`, `"justification"`, `"judges"`, `"evidence"`, `"score"`, `"target"`, `"conv_id"`, `"labels":[`}

// assertBlind checks the page's DOM (what it shows, attributes and data
// included), its URL and every response it fetched since since: none may
// hold a secret or a verdict field.
func assertBlind(t *testing.T, when string, page string, url string, fetched []fetched, secrets []string) {
	t.Helper()
	assertBlindPage(t, when, page, url, secrets)
	if len(fetched) == 0 {
		t.Errorf("%s: no response captured (the capture is broken)", when)
	}
	for _, f := range fetched {
		if strings.Contains(f.url, "/static/") {
			continue // the viewer's own code and style, the same for every page
		}
		for _, s := range secrets {
			if strings.Contains(f.body, s) {
				t.Errorf("%s: %s answered %q", when, f.url, s)
			}
		}
		if !strings.Contains(f.url, "/api/") {
			continue
		}
		body := strings.ReplaceAll(withoutOwnLabel(f.body), " ", "")
		for _, k := range verdictKeys {
			if strings.Contains(body, k) {
				t.Errorf("%s: %s answered a verdict field %s:\n%.400s", when, f.url, k, f.body)
			}
		}
	}
}

// withoutOwnLabel drops the reviewer's own label from an answer ("label"
// of a saved one, "mine" of an item): their own verdict is theirs to see.
func withoutOwnLabel(body string) string {
	var m map[string]any
	if json.Unmarshal([]byte(body), &m) != nil {
		return body
	}
	delete(m, "label")
	delete(m, "mine")
	b, _ := json.Marshal(m)
	return string(b)
}

func assertBlindPage(t *testing.T, when, page, url string, secrets []string) {
	t.Helper()
	for _, s := range secrets {
		if strings.Contains(page, s) {
			t.Errorf("%s: the page shows %q", when, s)
		}
		if strings.Contains(url, s) {
			t.Errorf("%s: the URL %s holds %q", when, url, s)
		}
	}
}

// pageText is everything the page shows or keeps in its elements: the
// markup of the header and main (text, attributes, data-*), not the script.
func pageText(t *testing.T, ctx context.Context) string {
	t.Helper()
	return evalJS[string](t, ctx, `document.querySelector('header').outerHTML + document.getElementById('main').outerHTML + document.title`)
}

// TestBrowserBlindReviewRevealsNothing is issue 26's acceptance test: in
// blind mode a reviewer goes from the calibration queue through several
// items with the keyboard, and at no point before their own label is saved
// does the page's DOM, its URL or any response it fetched hold a target
// id, a judge's verdict, a stratum, or another reviewer's label; after
// saving, the verdict appears (--reveal after) without the target. With
// --reveal never it does not appear at all.
func TestBrowserBlindReviewRevealsNothing(t *testing.T) {
	project, bench, secrets := blindProject(t)
	_, base := viewer.StartForTest(t, viewer.Options{ProjectDir: project, Blind: true, Seed: 5})
	ctx, bl := newBrowser(t, base, 1400, 1000)
	rs := captureResponses(ctx)
	navigate(t, ctx, base+"/static/style.css") // the origin, without fetching anything
	evalJS[bool](t, ctx, `(localStorage.setItem('ib-labeler', 'ana'), true)`)

	t0 := time.Now()
	navigate(t, ctx, base+"/#/b/blind/queue/calibration")
	waitJS(t, ctx, `!!document.getElementById('start-queue')`, 20*time.Second)
	assertBlind(t, "queue page", pageText(t, ctx), evalJS[string](t, ctx, `location.href`), rs.since(t0), secrets)
	if n := evalJS[int](t, ctx, `document.querySelectorAll('#queue-table thead th').length`); n != 3 {
		t.Errorf("blind queue table has %d columns, want #, item, metric", n)
	}
	if plan := evalJS[string](t, ctx, `document.getElementById('queue-plan').textContent`); !strings.Contains(plan, "m01: ") || strings.Contains(plan, "present") {
		t.Errorf("blind plan %q: the total per metric, no split by verdict", plan)
	}
	t0 = time.Now() // what the page fetches for each item, from the key that leads to it
	clickSel(t, ctx, "#start-queue")

	seen := map[string]bool{}
	for i := range 4 {
		waitJS(t, ctx, `!!document.getElementById('review-form') && !document.getElementById('reveal') && document.querySelectorAll('#transcript-box .msg').length > 0`, 20*time.Second)
		item := evalJS[string](t, ctx, `document.getElementById('review').dataset.item`)
		if seen[item] {
			t.Fatalf("item %s reviewed twice", item)
		}
		seen[item] = true
		assertBlind(t, fmt.Sprintf("item %d before the label", i), pageText(t, ctx), evalJS[string](t, ctx, `location.href`), rs.since(t0), secrets)
		if !strings.Contains(evalJS[string](t, ctx, `document.getElementById('review').textContent`), "Blind review") {
			t.Errorf("item %d: no blind-review note", i)
		}
		// Record from the keyboard: 1 present, 0 absent.
		key := []string{"1", "0"}[i%2]
		tSave := time.Now()
		pressKey(t, ctx, key)
		waitJS(t, ctx, `!!document.getElementById('reveal')`, 20*time.Second)
		after := rs.since(tSave)
		// The verdict may show now; the target still may not.
		if txt := evalJS[string](t, ctx, `document.getElementById('reveal').textContent`); !strings.Contains(txt, "Judge verdict") {
			t.Errorf("item %d: reveal lacks the judges' verdict: %q", i, txt)
		}
		assertBlindPage(t, fmt.Sprintf("item %d after the label", i), pageText(t, ctx), evalJS[string](t, ctx, `location.href`), secrets[:4])
		if len(after) == 0 {
			t.Errorf("item %d: the save's answer was not captured", i)
		}
		for _, f := range after {
			for _, s := range secrets[:4] {
				if strings.Contains(f.body, s) {
					t.Errorf("item %d after the label: %s answered %q", i, f.url, s)
				}
			}
		}
		t0 = time.Now()
		pressKey(t, ctx, "j")
		waitJS(t, ctx, `document.getElementById('review') && document.getElementById('review').dataset.item !== `+jsString(item), 20*time.Second)
	}
	// The labels landed in the file, by item, as the conversation they are.
	ls := readLabelLines(t, filepath.Join(bench, "labels.jsonl"))
	if len(ls) != 12+4 || ls[12]["labeler"] != "ana" || ls[12]["present"] != true || ls[13]["present"] != false {
		t.Errorf("labels.jsonl: %d lines, ana's %v", len(ls), ls[12:])
	}
	assertClean(t, bl)
}

// TestBrowserBlindRevealNever: with --reveal never the saved label's answer
// carries no verdict either, and the page goes straight on.
func TestBrowserBlindRevealNever(t *testing.T) {
	project, _, secrets := blindProject(t)
	_, base := viewer.StartForTest(t, viewer.Options{ProjectDir: project, Blind: true, Reveal: viewer.RevealNever, Seed: 5})
	ctx, bl := newBrowser(t, base, 1400, 1000)
	rs := captureResponses(ctx)
	navigate(t, ctx, base+"/static/style.css") // the origin, without fetching anything
	evalJS[bool](t, ctx, `(localStorage.setItem('ib-labeler', 'ana'), true)`)
	navigate(t, ctx, base+"/#/b/blind/queue/calibration")
	waitJS(t, ctx, `!!document.getElementById('start-queue')`, 20*time.Second)
	clickSel(t, ctx, "#start-queue")
	t0 := time.Now()
	waitJS(t, ctx, `!!document.getElementById('review-form') && document.querySelectorAll('#transcript-box .msg').length > 0`, 20*time.Second)
	first := evalJS[string](t, ctx, `document.getElementById('review').dataset.item`)
	pressKey(t, ctx, "0")
	waitJS(t, ctx, `document.getElementById('review') && document.getElementById('review').dataset.item && document.getElementById('review').dataset.item !== `+jsString(first)+` && document.querySelectorAll('#transcript-box .msg').length > 0`, 20*time.Second)
	assertBlind(t, "reveal never", pageText(t, ctx), evalJS[string](t, ctx, `location.href`), rs.since(t0), secrets)
	assertClean(t, bl)
}

func readLabelLines(t *testing.T, path string) []map[string]any {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out = append(out, m)
	}
	return out
}

// TestBrowserKeyboardReview labels a queue with the keyboard alone — 1 or
// 0 to record, j to go on: two keys a label — and measures the seconds per
// label the tool itself takes (loading the item, saving, revealing the
// judges, fetching the next): docs/report.md quotes the figure. It also
// checks the other keys: s skips, k goes back, u reopens the last label
// (a new one replaces it), n writes a note, l jumps to the last reply, e
// to the judges' quotes once shown.
func TestBrowserKeyboardReview(t *testing.T) {
	project, bench, _ := blindProject(t)
	_, base := viewer.StartForTest(t, viewer.Options{ProjectDir: project, Blind: true, Seed: 9})
	ctx, bl := newBrowser(t, base, 1400, 900)
	navigate(t, ctx, base+"/static/style.css")
	evalJS[bool](t, ctx, `(localStorage.setItem('ib-labeler', 'ana'), true)`)
	navigate(t, ctx, base+"/#/b/blind/queue/calibration")
	waitJS(t, ctx, `!!document.getElementById('start-queue')`, 20*time.Second)
	clickSel(t, ctx, "#start-queue")
	ready := `!!document.getElementById('review-form') && !document.getElementById('reveal') && document.querySelectorAll('#transcript-box .msg').length > 0`
	itemNow := func() string { return evalJS[string](t, ctx, `document.getElementById('review').dataset.item`) }
	waitJS(t, ctx, ready, 20*time.Second)

	// l: the last reply scrolls into view in the transcript's own pane.
	pressKey(t, ctx, "l")
	if top := evalJS[float64](t, ctx, `document.getElementById('transcript-box').scrollTop`); top <= 0 {
		t.Errorf("l did not scroll to the last reply (scrollTop %v)", top)
	}
	// s: skip, the item stays unlabelled; k: back to it.
	skipped := itemNow()
	pressKey(t, ctx, "s")
	waitJS(t, ctx, ready+` && document.getElementById('review').dataset.item !== `+jsString(skipped), 20*time.Second)
	pressKey(t, ctx, "k")
	waitJS(t, ctx, ready+` && document.getElementById('review').dataset.item === `+jsString(skipped), 20*time.Second)
	pressKey(t, ctx, "j")
	waitJS(t, ctx, ready+` && document.getElementById('review').dataset.item !== `+jsString(skipped), 20*time.Second)

	// n: a note, then Ctrl+Enter records it (absent chosen first with the radio).
	noted := itemNow()
	clickSel(t, ctx, "#present-no")
	pressKey(t, ctx, "n")
	waitJS(t, ctx, `document.activeElement === document.getElementById('note')`, 5*time.Second)
	pressKey(t, ctx, "typed by keyboard")
	evalJS[bool](t, ctx, `(document.getElementById('note').dispatchEvent(new KeyboardEvent('keydown', {key: 'Enter', ctrlKey: true, bubbles: true})), true)`)
	waitJS(t, ctx, `!!document.getElementById('reveal')`, 20*time.Second)
	// e: once the judges are revealed, their quotes are there to jump to (or
	// the key does nothing when they quoted nothing).
	pressKey(t, ctx, "e")
	// u: reopen it; the form is live again, and says what was recorded.
	pressKey(t, ctx, "u")
	waitJS(t, ctx, ready+` && !!document.getElementById('relabel')`, 20*time.Second)
	if itemNow() != noted || !evalJS[bool](t, ctx, `document.getElementById('present-no').checked`) {
		t.Errorf("u did not reopen the last label (item %s, want %s)", itemNow(), noted)
	}
	// Change of mind: present — and a 0 pressed before the 1 was saved
	// records nothing more (before, both were saved, one line each).
	evalJS[bool](t, ctx, `(['1', '0'].forEach(k => document.dispatchEvent(new KeyboardEvent('keydown', {key: k, bubbles: true}))), true)`)
	waitJS(t, ctx, `!!document.getElementById('reveal')`, 20*time.Second)
	pressKey(t, ctx, "j")

	// Timed: n labels by two keys each.
	const n = 20
	t0 := time.Now()
	for i := range n {
		waitJS(t, ctx, ready, 20*time.Second)
		item := itemNow()
		pressKey(t, ctx, []string{"1", "0"}[i%2])
		waitJS(t, ctx, `!!document.getElementById('reveal')`, 20*time.Second)
		pressKey(t, ctx, "j")
		waitJS(t, ctx, `!document.getElementById('reveal') && document.getElementById('review').dataset.item !== `+jsString(item), 20*time.Second)
	}
	per := time.Since(t0).Seconds() / n
	t.Logf("keyboard review: %d labels, 2 keys each, %.3f s per label of tool time (load, save, reveal, next)", n, per)
	if per > 5 {
		t.Errorf("%.2f s per label from the keyboard: the review loop is too slow", per)
	}
	ls := readLabelLines(t, filepath.Join(bench, "labels.jsonl"))[12:] // after bo's
	if len(ls) != 2+n {
		t.Fatalf("%d labels written, want %d", len(ls), 2+n)
	}
	if ls[0]["note"] != "typed by keyboard" || ls[0]["present"] != false || ls[1]["present"] != true || ls[1]["conv_id"] != ls[0]["conv_id"] {
		t.Errorf("note and undo: %v then %v", ls[0], ls[1])
	}
	convs := map[any]bool{}
	for i, l := range ls[2:] {
		if l["present"] != (i%2 == 0) || l["labeler"] != "ana" {
			t.Errorf("label %d: %v", i, l)
		}
		convs[l["conv_id"]] = true
	}
	if len(convs) != n {
		t.Errorf("%d distinct conversations in %d labels", len(convs), n)
	}
	assertClean(t, bl)
}

// TestBrowserReviewJumpsToTheJudgesQuotes: with blind review off, the
// judges' quotes are marked in the transcript from the start and e jumps
// to them; in blind review they are marked only once the label is saved.
func TestBrowserReviewJumpsToTheJudgesQuotes(t *testing.T) {
	project := filepath.Join(t.TempDir(), "project")
	viewer.WriteSynth(t, project, viewer.SynthSpec{Name: "ev", Metrics: 1, ScensPerMetric: 4, Targets: []string{"t1"},
		Samples: 1, Msgs: 12, MsgLen: 600, Judges: 1, Evidence: true})
	for _, blind := range []bool{false, true} {
		_, base := viewer.StartForTest(t, viewer.Options{ProjectDir: project, Blind: blind})
		ctx, bl := newBrowser(t, base, 1200, 700)
		navigate(t, ctx, base+"/static/style.css")
		evalJS[bool](t, ctx, `(localStorage.setItem('ib-labeler', 'ana'), true)`)
		navigate(t, ctx, base+"/#/b/ev/review/m01_s001_v01__t1__s0")
		waitJS(t, ctx, `!!document.getElementById('review-form') && document.querySelectorAll('#transcript-box .msg').length === 12`, 20*time.Second)
		if u := evalJS[string](t, ctx, `location.href`); strings.Contains(u, "__t1__") {
			t.Errorf("blind %v: the review URL still names the conversation: %s", blind, u)
		}
		marks := `document.querySelectorAll('#transcript-box mark.quote').length`
		if n := evalJS[int](t, ctx, marks); (n > 0) == blind {
			t.Errorf("blind %v: %d quotes marked before the label", blind, n)
		}
		if blind {
			pressKey(t, ctx, "1")
			waitJS(t, ctx, `!!document.getElementById('reveal') && `+marks+` > 0`, 20*time.Second)
		}
		pressKey(t, ctx, "e")
		// The quote is in the last reply, below the fold of the transcript's
		// pane: e scrolls to it.
		waitJS(t, ctx, `(function(){var m=document.querySelector('#transcript-box mark.quote'), b=document.getElementById('transcript-box').getBoundingClientRect(), r=m.getBoundingClientRect(); return r.top >= b.top && r.bottom <= b.bottom})()`, 5*time.Second)
		if txt := evalJS[string](t, ctx, `document.querySelector('#transcript-box mark.quote').textContent`); !strings.HasPrefix(txt, "Reply 6: ") || len(txt) < 30 {
			t.Errorf("blind %v: marked %q", blind, txt)
		}
		assertClean(t, bl)
	}
}
