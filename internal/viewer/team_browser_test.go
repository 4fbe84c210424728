package viewer_test

import (
	"bytes"
	"context"
	"encoding/json"
	"hash/fnv"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/impactbench/impactbench/internal/cli"
	"github.com/impactbench/impactbench/internal/viewer"
)

// studyTargets are the offline project's targets.
var studyTargets = []string{"offline-careful", "offline-careless"}

// offlineStudy makes a real two-benchmark study with the offline models —
// `init`, a copy of its benchmark, `run all` — and returns the project and
// a way to run further commands in it.
func offlineStudy(t *testing.T) (string, func(args ...string) (string, string, int)) {
	t.Helper()
	dir := t.TempDir()
	run := func(args ...string) (string, string, int) {
		var out, errb bytes.Buffer
		code := cli.Main(append([]string{"--config", filepath.Join(dir, "config.yaml")}, args...), strings.NewReader(""), &out, &errb)
		return out.String(), errb.String(), code
	}
	if _, e, code := run("init", dir); code != 0 {
		t.Fatal(e)
	}
	cfgPath := filepath.Join(dir, "config.yaml")
	cfg, _ := os.ReadFile(cfgPath)
	if err := os.WriteFile(cfgPath, bytes.Replace(cfg, []byte("scenarios_per_metric: 2"), []byte("scenarios_per_metric: 4"), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.CopyFS(filepath.Join(dir, "benchmarks", "second"), os.DirFS(filepath.Join(dir, "benchmarks", "example"))); err != nil {
		t.Fatal(err)
	}
	if _, e, code := run("run", "all", "-q", "--no-report"); code != 0 {
		t.Fatalf("run all: %s", e)
	}
	return dir, run
}

// teamReviewer is one reviewer's browser.
type teamReviewer struct {
	name, link string
	ctx        context.Context
	bl         *browserLog
	rs         *responses
	labels     int
	waits      int // steps at which the page waited for work
	done       bool
}

// TestBrowserTwoReviewersFinishTheStudyBlind is issue 35's acceptance
// test: a real two-benchmark study, two reviewer links in two browsers
// working at once through the study-wide queue from the keyboard until the
// plan has nothing more to ask of either; then neither link, from its own
// page, can fetch a target name, a verdict, another's label or another
// token from any route the server registers (every route, with real
// items, conversations, targets and aliases as parameters) — nor did any
// answer the page fetched on the way; and `calibrate all` gives corrected
// rates from their labels.
func TestBrowserTwoReviewersFinishTheStudyBlind(t *testing.T) {
	dir, run := offlineStudy(t)
	qp := viewer.NewQuietPlayer(studyTargets...)
	s, base := viewer.StartForTest(t, viewer.Options{ProjectDir: dir, Reviewers: []string{"ana-rev", "bo-rev"}, Play: qp, Seed: 7, Overlap: 0.1, OverlapSet: true})
	links := s.Links(base)
	research := strings.TrimSuffix(strings.TrimPrefix(links[0].URL, base+"/k/"), "/")
	secrets := append([]string{research, "offline-judge", "replies show", "__s0", "__s1"}, studyTargets...)
	var rvs []*teamReviewer
	for _, l := range links[1:] {
		ctx, bl := newBrowser(t, base, 1300, 900)
		r := &teamReviewer{name: l.Name, link: l.URL, ctx: ctx, bl: bl, rs: captureResponses(ctx)}
		navigate(t, ctx, r.link)
		waitJS(t, ctx, `!!document.getElementById('reviewer-home')`, 20*time.Second)
		clickSel(t, ctx, "#study-queue-link")
		waitJS(t, ctx, `!!document.getElementById('start-queue') || !!document.getElementById('queue-empty') || !!document.getElementById('queue-waiting')`, 20*time.Second)
		rvs = append(rvs, r)
	}
	t0 := time.Now()
	answer := func(item string) string { return truthOf(t, base, research, item) }
	// A person reads the item before answering: the page's hold (sent as
	// it opens) is answered by then. A key pressed before that answer, on
	// a loaded machine, can lose a race no person loses (the other
	// reviewer's label took the row just after the queue answered), and
	// this test fails on any page that moves on after a key.
	ready := `!!document.getElementById('review-form') && document.querySelectorAll('#transcript-box .msg').length > 0 && !document.getElementById('submit-label').disabled && !!document.getElementById('review').dataset.hold`
	// Each reviewer acts in turn; one whose page waits for work (another's
	// open form holds the last rows, or rows wait for a second label)
	// lets the other go on, and when both wait, the test waits for either
	// page to find work or say the plan is complete, as a person would.
	deadline := t0.Add(5 * time.Minute)
	for !(rvs[0].done && rvs[1].done) {
		if time.Now().After(deadline) {
			t.Fatalf("the plan was not finished in 5 minutes: ana %d labels, bo %d", rvs[0].labels, rvs[1].labels)
		}
		acted := false
		for _, r := range rvs {
			if !r.done && step(t, r, ready, answer) {
				acted = true
			}
		}
		if rvs[0].done && rvs[1].done && !planFinished(t, base, research) {
			t.Fatalf("both reviewers' pages say the plan is complete while it is not")
		}
		if !acted && !waitUntilOneStopsWaiting(t, rvs, 30*time.Second) {
			for _, r := range rvs {
				_, q := get(t, base+"/api/queue?labeler="+r.name, research)
				_, n := get(t, base+"/api/next?labeler="+r.name, research)
				t.Logf("%s: page %s %.600q, after-box %.300q, hidden %v; checks started %v (last %v ms ago), answered %v (last %v ms ago); queue %.300s; next %s", r.name,
					evalJS[string](t, r.ctx, `location.hash`), evalJS[string](t, r.ctx, `document.getElementById('main').innerText`),
					evalJS[string](t, r.ctx, `(document.getElementById('after') || {}).innerText || ''`), evalJS[bool](t, r.ctx, `document.hidden`),
					evalJS[any](t, r.ctx, `window.__viewer.waitRuns`), evalJS[any](t, r.ctx, `performance.now() - window.__viewer.lastWaitRun`),
					evalJS[any](t, r.ctx, `window.__viewer.waitChecks`), evalJS[any](t, r.ctx, `performance.now() - window.__viewer.lastWaitCheck`), q, n)
			}
			t.Fatalf("every reviewer's page still waited for work after 30 s")
		}
	}
	if !rvs[0].done || !rvs[1].done || rvs[0].labels == 0 || rvs[1].labels == 0 {
		t.Fatalf("the plan was not finished: ana %d labels (done %v), bo %d (done %v)", rvs[0].labels, rvs[0].done, rvs[1].labels, rvs[1].done)
	}
	t.Logf("two reviewers finished the plan of a two-benchmark study: %d and %d labels in %.1f s (their pages waited for work at %d and %d steps)",
		rvs[0].labels, rvs[1].labels, time.Since(t0).Seconds(), rvs[0].waits, rvs[1].waits)
	for i, r := range rvs {
		other := rvs[1-i].name
		// What the page fetched on the way, and what it shows now.
		for _, f := range r.rs.since(t0) {
			u, _ := url.Parse(f.url)
			for _, leak := range viewer.LeakCheck(viewer.Probe{Method: "GET", Path: u.RequestURI()}, f.body, append(secrets, other)) {
				t.Errorf("%s, while reviewing: %s", r.name, leak)
			}
		}
		assertBlindPage(t, r.name, pageText(t, r.ctx), evalJS[string](t, r.ctx, `location.href`), append(secrets, other))
		assertClean(t, r.bl) // before the probes, whose refusals the console logs
		probeFromPage(t, s, r, other, append(secrets, other, viewer.ReviewerToken(t, s, other)))
	}
	// The labels are the reviewers', and calibrate all corrects with them.
	for _, b := range []string{"example", "second"} {
		ls := readLabelLines(t, filepath.Join(dir, "benchmarks", b, "labels.jsonl"))
		by := map[any]int{}
		for _, l := range ls {
			by[l["labeler"]]++
		}
		if by["ana-rev"] == 0 || by["bo-rev"] == 0 || len(by) != 2 {
			t.Errorf("%s: labels by %v", b, by)
		}
	}
	out, e, code := run("calibrate", "all", "--json", "-q")
	var cal []struct {
		Benchmark string `json:"benchmark"`
		Models    []struct {
			Target   string                                 `json:"target_model"`
			ByMetric map[string]struct{ Estimate *float64 } `json:"by_metric_corrected"`
		} `json:"models"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &cal) != nil || len(cal) != 2 {
		t.Fatalf("calibrate all: exit %d %s\n%s", code, e, out)
	}
	for _, b := range cal {
		n := 0
		for _, m := range b.Models {
			for metric, c := range m.ByMetric {
				if c.Estimate != nil {
					n++
					t.Logf("%s %s %s: corrected %.3f", b.Benchmark, m.Target, metric, *c.Estimate)
				}
			}
		}
		if n == 0 {
			t.Errorf("%s: no corrected rate from the reviewers' labels:\n%s", b.Benchmark, out)
		}
	}
}

// step lets reviewer r take one action: start the queue from its page,
// label the item open (by the key of the truthful answer), or note that
// the page says the plan is complete. false: the page waits for work.
func step(t *testing.T, r *teamReviewer, ready string, answer func(string) string) bool {
	t.Helper()
	const done = `!!document.getElementById('queue-done') || !!document.getElementById('queue-empty')`
	waitJS(t, r.ctx, ready+` || `+done+` || !!document.getElementById('queue-waiting') || !!document.getElementById('start-queue')`, 20*time.Second)
	if evalJS[bool](t, r.ctx, `!!document.getElementById('revisit-skipped')`) {
		t.Fatalf("%s: items were skipped", r.name)
	}
	switch {
	case evalJS[bool](t, r.ctx, `!!document.getElementById('start-queue')`):
		clickSel(t, r.ctx, "#start-queue")
		waitJS(t, r.ctx, `!document.getElementById('start-queue')`, 20*time.Second)
		return true
	case evalJS[bool](t, r.ctx, done):
		r.done = true
		return true
	case !evalJS[bool](t, r.ctx, ready):
		r.waits++
		return false // waiting for work
	}
	item := evalJS[string](t, r.ctx, `document.getElementById('review').dataset.item`)
	pressKey(t, r.ctx, answer(item))
	r.labels++
	waitJS(t, r.ctx, `(document.getElementById('review') && document.getElementById('review').dataset.item !== `+jsString(item)+`) || `+done+` || !!document.getElementById('queue-waiting') || !!document.getElementById('review-msg') && document.getElementById('review-msg').textContent !== ''`, 20*time.Second)
	if msg := evalJS[string](t, r.ctx, `(document.getElementById('review-msg') || {}).textContent || ''`); msg != "" {
		t.Fatalf("%s: labelling %s: %s", r.name, item, msg)
	}
	return true
}

// waitUntilOneStopsWaiting waits, up to timeout, until the page of a
// reviewer not yet done no longer says it waits for work; false: none did.
func waitUntilOneStopsWaiting(t *testing.T, rvs []*teamReviewer, timeout time.Duration) bool {
	t.Helper()
	for end := time.Now().Add(timeout); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		for _, r := range rvs {
			if !r.done && !evalJS[bool](t, r.ctx, `!!document.getElementById('queue-waiting')`) {
				return true
			}
		}
	}
	return false
}

// truthOf is what a person would answer on item: the judge's verdict (read
// with the researcher's token), wrong on about one item in thirteen.
func truthOf(t *testing.T, base, research, item string) string {
	t.Helper()
	code, body := get(t, base+"/api/item?id="+item, research)
	var v struct {
		Score *struct {
			Present *bool `json:"present"`
		} `json:"score"`
	}
	if code != 200 || json.Unmarshal([]byte(body), &v) != nil || v.Score == nil || v.Score.Present == nil {
		t.Fatalf("the researcher's view of %s: %d %.300s", item, code, body)
	}
	h := fnv.New32a()
	h.Write([]byte(item))
	present := *v.Score.Present != (h.Sum32()%13 == 0)
	if present {
		return "1"
	}
	return "0"
}

// planFinished: the researcher's view of the study queue asks nothing more
// of anyone (every metric × target corrected, or out of reach).
func planFinished(t *testing.T, base, research string) bool {
	t.Helper()
	for _, who := range []string{"ana-rev", "bo-rev"} {
		code, body := get(t, base+"/api/queue?labeler="+who, research)
		var q struct {
			Total int `json:"total"`
		}
		if code != 200 || json.Unmarshal([]byte(body), &q) != nil {
			t.Fatalf("queue: %d %s", code, body)
		}
		if q.Total > 0 {
			return false
		}
	}
	return true
}

// probeFromPage sends, from the reviewer's own page and with the token it
// holds (as any script on it could), one request per route the server
// registers and parameter set, and checks every answer.
func probeFromPage(t *testing.T, s *viewer.Server, r *teamReviewer, other string, secrets []string) {
	t.Helper()
	probes := viewer.Probes(s, viewer.ProbeValuesOf(t, s, r.name, other, studyTargets).Trim(2))
	in, _ := json.Marshal(probes)
	js := `(async function(ps){var tok=document.querySelector('meta[name="ib-token"]').content, out=[];
	  for (const p of ps) {
	    var o={method:p.Method, headers:{'X-IB-Token':tok}};
	    if (p.Method==='POST') { o.headers['Content-Type']='application/json'; o.body=p.Body; }
	    try { var res=await fetch(p.Path,o); out.push([res.status, await res.text()]); } catch(e) { out.push([0, String(e)]); }
	  }
	  return out;})(` + string(in) + `)`
	got := evalJS[[][]any](t, r.ctx, js)
	if len(got) != len(probes) {
		t.Fatalf("%s: %d answers to %d probes", r.name, len(got), len(probes))
	}
	routes := map[string]bool{}
	for i, pr := range probes {
		code, body := int(got[i][0].(float64)), got[i][1].(string)
		routes[pr.Pattern] = true
		if code == 0 || code >= 500 {
			t.Errorf("%s: %s %s: %d %.200s", r.name, pr.Method, pr.Path, code, body)
		}
		for _, leak := range viewer.LeakCheck(pr, body, secrets) {
			t.Errorf("%s, from its page: %s", r.name, leak)
		}
		if viewer.ResearcherRoute(s, pr.Pattern) && code != 403 {
			t.Errorf("%s: the researcher's %s %s answered %d", r.name, pr.Method, pr.Path, code)
		}
	}
	if len(routes) != len(s.Routes()) {
		t.Errorf("%s: %d routes probed of %d", r.name, len(routes), len(s.Routes()))
	}
	t.Logf("%s: %d requests from its page over all %d routes, none leaked", r.name, len(probes), len(routes))
}

// get fetches u with token tok.
func get(t *testing.T, u, tok string) (int, string) {
	t.Helper()
	return send(t, http.MethodGet, u, "", tok)
}

// send makes a request with token tok as the page holding it would: a
// POST carries its JSON body and the page's origin headers.
func send(t *testing.T, method, u, body, tok string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, u, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-IB-Token", tok)
	if method == http.MethodPost {
		origin := u
		if p, err := url.Parse(u); err == nil {
			origin = p.Scheme + "://" + p.Host
		}
		req.Header.Set("Origin", origin)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Sec-Fetch-Site", "same-origin")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestBrowserQueuePlaceAndKeys: the place is the server's — a second tab
// opened on the reviewer's link continues on the item the first has open;
// j on an unlabelled item goes on to a new item each time (never back to
// the one before); once everything is skipped, "Go back to them" has the
// focus and Enter presses it.
func TestBrowserQueuePlaceAndKeys(t *testing.T) {
	project := filepath.Join(t.TempDir(), "project")
	viewer.WriteSynth(t, project, viewer.SynthSpec{Name: "tiny", Metrics: 1, ScensPerMetric: 3, Targets: []string{"t1"}, Samples: 1, Msgs: 2, MsgLen: 60, Judges: 1})
	s, base := viewer.StartForTest(t, viewer.Options{ProjectDir: project, Reviewers: []string{"cy"}, Seed: 2})
	link := s.Links(base)[1].URL
	ctx, bl := newBrowser(t, base, 1200, 800)
	ready := `!!document.getElementById('review-form') && document.querySelectorAll('#transcript-box .msg').length > 0`
	item := func(c context.Context) string {
		return evalJS[string](t, c, `document.getElementById('review').dataset.item`)
	}
	navigate(t, ctx, link+"#/queue/calibration")
	waitJS(t, ctx, `!!document.getElementById('start-queue')`, 20*time.Second)
	clickSel(t, ctx, "#start-queue")
	waitJS(t, ctx, ready, 20*time.Second)
	first := item(ctx)
	// j, j: three different items, then round to the first again.
	seen := map[string]bool{first: true}
	for range 2 {
		prev := item(ctx)
		pressKey(t, ctx, "j")
		waitJS(t, ctx, ready+` && document.getElementById('review').dataset.item !== `+jsString(prev), 20*time.Second)
		if seen[item(ctx)] {
			t.Fatalf("j came back to %s", item(ctx))
		}
		seen[item(ctx)] = true
	}
	at := item(ctx)
	// A new tab: the queue offers to continue, and lands on the same item.
	tab, cancel := chromedp.NewContext(ctx)
	defer cancel()
	navigate(t, tab, link+"#/queue/calibration")
	waitJS(t, tab, `!!document.getElementById('start-queue')`, 20*time.Second)
	if txt := evalJS[string](t, tab, `document.getElementById('start-queue').textContent`); !strings.Contains(txt, "Continue where you were") {
		t.Errorf("a new tab's queue says %q", txt)
	}
	clickSel(t, tab, "#start-queue")
	waitJS(t, tab, ready, 20*time.Second)
	if got := item(tab); got != at {
		t.Errorf("a new tab continued on %s, want %s", got, at)
	}
	cancel()
	// Skip all three: the end of the queue, its button focused; Enter
	// presses it and the skipped items come back.
	for range 3 {
		prev := item(ctx)
		pressKey(t, ctx, "s")
		waitJS(t, ctx, `!!document.getElementById('queue-done') || !!document.getElementById('queue-waiting') || (`+ready+` && document.getElementById('review').dataset.item !== `+jsString(prev)+`)`, 20*time.Second)
	}
	waitJS(t, ctx, `document.activeElement === document.getElementById('revisit-skipped')`, 20*time.Second)
	before := item(ctx)
	pressKey(t, ctx, "\r")
	waitJS(t, ctx, `!document.getElementById('queue-done') && !document.getElementById('queue-waiting') && `+ready, 20*time.Second)
	if !seen[item(ctx)] {
		t.Errorf("after Enter on \"Go back to them\": item %s (was %s)", item(ctx), before)
	}
	assertClean(t, bl)
}
