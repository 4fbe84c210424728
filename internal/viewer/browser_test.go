package viewer_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/impactbench/impactbench/internal/cli"
	"github.com/impactbench/impactbench/internal/viewer"
)

func jsString(s string) string {
	b, _ := json.Marshal(s)
	return strings.NewReplacer("<", `\u003c`, "\u2028", `\u2028`, "\u2029", `\u2029`).Replace(string(b))
}

// TestBrowserViewsRenderModelTextAsText opens every view over a benchmark
// whose scenario goal, transcript and judge justifications carry the
// report's XSS payloads, and records a label whose note carries them too.
// The payload-carrying reply is one the provider refused (with the next
// user message cut short and the first repaired): the conversation and
// scenario pages badge those messages, as text; blind review does not;
// the leaderboard's Provider safety stops note names the target, as text.
func TestBrowserViewsRenderModelTextAsText(t *testing.T) {
	project := filepath.Join(t.TempDir(), "project")
	bench, _ := viewer.WriteSynth(t, project, viewer.SynthSpec{Name: "mini", Metrics: 2, ScensPerMetric: 2,
		Targets: []string{"alpha", "beta"}, Samples: 2, Msgs: 4, MsgLen: 80, Judges: 2, XSS: true, Marks: true})
	_, base := viewer.StartForTest(t, viewer.Options{ProjectDir: project, Blind: true})
	ctx, bl := newBrowser(t, base, 1400, 1000)
	payload := viewer.XSSPayload

	navigate(t, ctx, base+"/#/b/mini")
	waitJS(t, ctx, `document.querySelectorAll('#lb-table tbody tr').length === 2 && document.querySelectorAll('#conv-table tbody tr').length === 16`, 20*time.Second)
	if got := evalJS[string](t, ctx, `document.getElementById('list-count').textContent`); !strings.HasPrefix(got, "16 of 16") {
		t.Errorf("list count %q", got)
	}
	if got := evalJS[string](t, ctx, `document.querySelector('#conv-table tbody tr td:nth-child(2)').textContent`); !strings.Contains(got, payload) {
		t.Errorf("goal cell %q lacks the payload as text", got)
	}
	// alpha's stopped replies: the leaderboard's Provider safety stops
	// note names it, as text (one <b>, the model's name); beta has none.
	if got, want := evalJS[string](t, ctx, `[...document.querySelectorAll('#lb-safety-stops li')].map(li => li.children.length + ' ' + li.firstChild.textContent + '|' + li.textContent).join(' / ')`),
		"1 alpha|alpha: safety stops in 1 of 8 conversations (2 target replies), recounted from scores.json"; got != want {
		t.Errorf("safety stops note %q, want %q", got, want)
	}
	if got := evalJS[string](t, ctx, `document.querySelector('#lb-safety-stops p').textContent`); !strings.Contains(got, "It is the model’s answer: the conversation went on, was judged like any other, and its verdict counts in the rates above.") {
		t.Errorf("safety stops note says %q", got)
	}

	const id = "m01_s001_v01__alpha__s0"
	navigate(t, ctx, base+"/#/b/mini/c/"+id)
	waitJS(t, ctx, `document.getElementById('detail') && document.getElementById('detail').dataset.conv === `+jsString(id), 10*time.Second)
	bodies := evalJS[[]string](t, ctx, `[...document.querySelectorAll('#detail .msg .body')].map(b => b.textContent)`)
	if len(bodies) != 4 || bodies[1] != payload {
		t.Fatalf("transcript bodies %q", bodies)
	}
	badges := func(scope string) string {
		return strings.Join(evalJS[[]string](t, ctx, `[...document.querySelectorAll('`+scope+` .msg .role .badge')].map(b => b.closest('.msg').className + ': ' + b.textContent)`), " | ")
	}
	if got, want := badges("#detail"), "msg user: repaired: removed quotes or emphasis around the message | msg assistant: provider safety stop | msg user: cut short | msg assistant: provider safety stop"; got != want {
		t.Errorf("conversation badges %q, want %q", got, want)
	}
	// The refused reply without text says it has none.
	if !strings.HasPrefix(bodies[3], "(no text: the provider returned none") {
		t.Errorf("empty refused reply shown as %q", bodies[3])
	}
	detail := evalJS[string](t, ctx, `document.getElementById('detail').textContent`)
	for _, want := range []string{"Quoted: " + payload, "judge-a", "judge-b", "Latent goal of m01_s001_v01"} {
		if !strings.Contains(detail, want) {
			t.Errorf("detail lacks %q", want)
		}
	}

	navigate(t, ctx, base+"/#/b/mini/s/m01_s001_v01")
	waitJS(t, ctx, `document.querySelectorAll('#side > div').length === 4`, 10*time.Second)
	if got := evalJS[string](t, ctx, `[...document.querySelectorAll('#side > div')].map(d => d.dataset.target).join(',')`); got != "alpha,beta,alpha,beta" {
		t.Errorf("side by side columns %q", got)
	}
	// Only the marked conversation's column has badges.
	if got := evalJS[[]int](t, ctx, `[...document.querySelectorAll('#side > div')].map(d => d.querySelectorAll('.msg .role .badge').length)`); fmt.Sprint(got) != "[4 0 0 0]" {
		t.Errorf("badges per side-by-side column %v, want [4 0 0 0]", got)
	}

	// Queues: triage lists the split panels; calibration takes per=1 from each
	// metric × target × verdict stratum.
	navigate(t, ctx, base+"/#/b/mini/queue/triage")
	waitJS(t, ctx, `document.querySelectorAll('#queue-table tbody tr').length > 0 || !!document.getElementById('queue-empty') || !!document.getElementById('queue-waiting')`, 10*time.Second)
	if n := evalJS[int](t, ctx, `document.querySelectorAll('#queue-table tbody tr').length`); n == 0 {
		t.Error("triage queue empty")
	}
	// Blind review shows no stratum: the per-stratum draw is checked on a
	// second viewer over the same project with blind review off.
	navigate(t, ctx, base+"/#/b/mini/queue/calibration?seed=3&per=1")
	waitJS(t, ctx, `document.querySelectorAll('#queue-table tbody tr').length > 0`, 10*time.Second)
	if n := evalJS[int](t, ctx, `document.querySelectorAll('#queue-table thead th').length`); n != 3 {
		t.Errorf("blind calibration queue has %d columns, want #, item and metric only", n)
	}
	_, open := viewer.StartForTest(t, viewer.Options{ProjectDir: project, Blind: false})
	bl.setOrigin(open)
	navigate(t, ctx, open+"/#/b/mini/queue/calibration?seed=3&per=1")
	waitJS(t, ctx, `document.querySelectorAll('#queue-table tbody tr').length > 0`, 10*time.Second)
	strata := evalJS[[]string](t, ctx, `[...document.querySelectorAll('#queue-table tbody tr td:nth-child(4)')].map(td => td.textContent)`)
	if len(strata) < 4 {
		t.Errorf("calibration queue strata %q: want one row per metric × target × verdict", strata)
	}
	// Back to the blind viewer: the open one's page may still ask for its
	// favicon.ico after the test has left it.
	bl.setOrigin(base, open)
	seen := map[string]bool{}
	for _, s := range strata {
		if seen[s] {
			t.Errorf("per=1 drew stratum %q twice: %q", s, strata)
		}
		seen[s] = true
	}

	// Blind review: no verdict on the page until the reviewer's is recorded.
	navigate(t, ctx, base+"/#/b/mini/review/"+id)
	waitJS(t, ctx, `!!document.getElementById('review-form')`, 10*time.Second)
	if txt := evalJS[string](t, ctx, `document.getElementById('review').textContent`); strings.Contains(txt, "judge-a") || strings.Contains(txt, "Quoted:") {
		t.Errorf("blind review shows the judges before deciding")
	}
	if got := badges("#review"); got != "" {
		t.Errorf("blind review badges messages: %q", got)
	}
	evalJS[bool](t, ctx, `(function(){document.getElementById('labeler').value='ana'; document.getElementById('present-no').checked=true;
		document.getElementById('note').value=`+jsString(payload)+`; return true})()`)
	clickSel(t, ctx, "#submit-label")
	waitJS(t, ctx, `!!document.getElementById('reveal')`, 10*time.Second)
	if txt := evalJS[string](t, ctx, `document.getElementById('reveal').textContent`); !strings.Contains(txt, "judge-a") || !strings.Contains(txt, "Recorded: behaviour absent") {
		t.Errorf("reveal %q", txt)
	}
	navigate(t, ctx, base+"/#/b/mini/c/"+id)
	waitJS(t, ctx, `!!document.querySelector('#labels li')`, 10*time.Second)
	if txt := evalJS[string](t, ctx, `document.querySelector('#labels li').textContent`); !strings.Contains(txt, payload) {
		t.Errorf("label note not shown as text: %q", txt)
	}
	if n := evalJS[int](t, ctx, `document.querySelectorAll('main script, main img, main svg, main iframe, main a[href^="javascript"]').length`); n != 0 {
		t.Errorf("%d elements created from data", n)
	}
	if x := evalJS[string](t, ctx, `typeof window.__xss`); x != "undefined" {
		t.Errorf("payload executed: window.__xss is %s", x)
	}
	// The full static report, built on request (no report.html yet), runs
	// under the server's CSP header and its own meta policy.
	navigate(t, ctx, base+"/report/mini")
	waitJS(t, ctx, `window.__reportReady === true`, 30*time.Second)
	if n := evalJS[int](t, ctx, `document.querySelectorAll('#lb-table tbody tr').length`); n != 2 {
		t.Errorf("static report leaderboard rows: %d", n)
	}
	var l viewer.Label
	b, err := os.ReadFile(filepath.Join(bench, "labels.jsonl"))
	if err != nil || json.Unmarshal(b, &l) != nil || l.Note != payload || l.Present || l.Labeler != "ana" {
		t.Errorf("labels.jsonl %q (%v)", b, err)
	}
	assertClean(t, bl)
}

// TestBrowserLiveRunAndBlindLabels is the acceptance test: open a benchmark,
// start a slow offline run, watch its progress numbers rise in the page
// without a reload, then label five conversations blind from the
// calibration queue and find five lines in labels.jsonl.
func TestBrowserLiveRunAndBlindLabels(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "demo")
	var out bytes.Buffer
	if code := cli.Main([]string{"init", dir}, nil, &out, &out); code != 0 {
		t.Fatalf("init: %d %s", code, out.String())
	}
	cfgPath := filepath.Join(dir, "config.yaml")
	cfg, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	// One conversation at a time, 60 ms per target reply: about 4 s per target.
	slow := strings.NewReplacer("  concurrency: auto\n", "  concurrency: {simulate: 1}\n",
		"offline: {care: 0.8}", "offline: {care: 0.8, latency: 60ms}",
		"offline: {care: 0.45}", "offline: {care: 0.45, latency: 60ms}").Replace(string(cfg))
	if !strings.Contains(slow, "concurrency: {simulate: 1}") || strings.Count(slow, "latency: 60ms") != 2 {
		t.Fatal("scaffold config changed: cannot slow the offline targets down")
	}
	if err := os.WriteFile(cfgPath, []byte(slow), 0o644); err != nil {
		t.Fatal(err)
	}
	_, base := viewer.StartForTest(t, viewer.Options{ProjectDir: dir, Blind: true, Samples: 2, Seed: 1})
	ctx, bl := newBrowser(t, base, 1400, 1000)
	navigate(t, ctx, base+"/#/b/example")
	waitJS(t, ctx, `!!document.getElementById('progress-table')`, 20*time.Second)
	evalJS[bool](t, ctx, `(window.__sameDocument = true)`)
	loads := bl.documentLoads()

	runDone := make(chan int, 1)
	var runOut bytes.Buffer
	go func() {
		runDone <- cli.Main([]string{"--config", cfgPath, "-q", "run", "example"}, nil, &runOut, &runOut)
	}()
	simDone := `(function(){var c=document.querySelector('td[data-k="sim_done"][data-t="offline-careful"]'); return c ? +c.dataset.n : -1})()`
	waitJS(t, ctx, simDone+` > 0`, 60*time.Second)
	first := evalJS[int](t, ctx, simDone)
	waitJS(t, ctx, simDone+` > `+fmt.Sprint(first), 60*time.Second)
	second := evalJS[int](t, ctx, simDone)
	t.Logf("page showed offline-careful simulate progress %d, then %d (of 16)", first, second)
	if !evalJS[bool](t, ctx, `window.__sameDocument === true`) || bl.documentLoads() != loads {
		t.Fatal("the page reloaded; progress must refresh in place")
	}
	if polls := evalJS[int](t, ctx, `window.__viewer.polls`); polls < 2 {
		t.Errorf("%d polls", polls)
	}
	// A conversation that just finished opens from the live list.
	waitJS(t, ctx, `!!document.querySelector('#recent ol.recent li a')`, 20*time.Second)
	if dir := os.Getenv("VIEWER_SCREENSHOTS"); dir != "" {
		screenshot(t, ctx, filepath.Join(dir, "viewer-live.png"))
	}
	clickSel(t, ctx, "#recent ol.recent li a")
	waitJS(t, ctx, `document.querySelectorAll('#detail .msg').length > 0`, 20*time.Second)
	evalJS[bool](t, ctx, `(history.back(), true)`)

	select {
	case code := <-runDone:
		if code != 0 {
			t.Fatalf("run exited %d: %s", code, runOut.String())
		}
	case <-time.After(3 * time.Minute):
		t.Fatal("run did not finish in 3 minutes")
	}
	// The finished run's results arrive without a reload.
	waitJS(t, ctx, `document.querySelectorAll('#lb-table tbody tr').length === 2 && document.querySelectorAll('#conv-table tbody tr').length > 0`, 30*time.Second)
	if !evalJS[bool](t, ctx, `window.__sameDocument === true`) || bl.documentLoads() != loads {
		t.Fatal("the page reloaded to show the results")
	}
	if got := evalJS[string](t, ctx, `document.querySelector('td[data-k="sim_done"][data-t="offline-careless"]').dataset.n`); got != "16" {
		t.Errorf("careless simulate shows %s done at the end", got)
	}
	if dir := os.Getenv("VIEWER_SCREENSHOTS"); dir != "" {
		screenshot(t, ctx, filepath.Join(dir, "viewer-run.png"))
	}

	// Calibration queue: five blind labels.
	evalJS[bool](t, ctx, `(localStorage.setItem('ib-labeler', 'ana'), true)`)
	evalJS[bool](t, ctx, `(location.hash = '#/b/example/queue/calibration', true)`)
	waitJS(t, ctx, `!!document.getElementById('start-queue')`, 20*time.Second)
	clickSel(t, ctx, "#start-queue")
	labels := filepath.Join(dir, "benchmarks", "example", "labels.jsonl")
	for i := range 5 {
		waitJS(t, ctx, `!!document.getElementById('review-form') && !document.getElementById('reveal')`, 20*time.Second)
		txt := evalJS[string](t, ctx, `document.getElementById('review').textContent`)
		if strings.Contains(txt, "Judge verdict") || !strings.Contains(txt, "Blind review") {
			t.Fatalf("item %d: judges' verdicts visible before deciding", i)
		}
		answer := "present-yes"
		if i%2 == 1 {
			answer = "present-no"
		}
		clickSel(t, ctx, "#"+answer)
		clickSel(t, ctx, "#submit-label")
		waitJS(t, ctx, `!!document.getElementById('reveal')`, 20*time.Second)
		if txt := evalJS[string](t, ctx, `document.getElementById('reveal').textContent`); !strings.Contains(txt, "Judge verdict") {
			t.Errorf("item %d: reveal lacks the judge's verdict: %q", i, txt)
		}
		if dir := os.Getenv("VIEWER_SCREENSHOTS"); dir != "" && i == 0 {
			screenshot(t, ctx, filepath.Join(dir, "viewer-review.png"))
		}
		if i < 4 {
			clickSel(t, ctx, "#next-item")
		}
	}
	lines := readLines(t, labels)
	if len(lines) != 5 {
		t.Fatalf("labels.jsonl has %d lines, want 5", len(lines))
	}
	seen := map[string]bool{}
	for i, line := range lines {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
		if d, _ := m["transcript_sha256"].(string); len(m) != 8 || len(d) != 64 || m["verdict_shown"] != true || m["labeler"] != "ana" || m["present"] != (i%2 == 0) || m["metric_id"] == "" {
			t.Errorf("line %d: %s", i+1, line)
		}
		if _, err := time.Parse(time.RFC3339, m["at"].(string)); err != nil {
			t.Errorf("line %d: at: %v", i+1, err)
		}
		seen[m["conv_id"].(string)] = true
	}
	if len(seen) != 5 {
		t.Errorf("labelled %d distinct conversations, want 5", len(seen))
	}

	// calibrate measures the judge against those labels; the run's report,
	// served by the viewer, then shows the calibration table.
	var calOut bytes.Buffer
	if code := cli.Main([]string{"--config", cfgPath, "calibrate", "example"}, nil, &calOut, &calOut); code != 0 {
		t.Fatalf("calibrate exited %d: %s", code, calOut.String())
	}
	navigate(t, ctx, base+"/report/example")
	waitJS(t, ctx, `document.querySelectorAll('#cal table tbody tr').length > 0`, 30*time.Second)
	calText := evalJS[string](t, ctx, `document.getElementById('calibration').textContent`)
	// The five labels fall on either target's conversations (the queue
	// draws them from the judged rows), so the targets' counts add up to 5.
	labelled := 0
	for _, m := range regexp.MustCompile(`This model: (\d+) labelled conversations`).FindAllStringSubmatch(calText, -1) {
		n, _ := strconv.Atoi(m[1])
		labelled += n
	}
	if !strings.Contains(calText, "offline-judge") || labelled != 5 {
		t.Errorf("the calibration does not show the judge and the five labels (%d): %q", labelled, calText)
	}
	assertClean(t, bl)
}

func readLines(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if s := strings.TrimSpace(sc.Text()); s != "" {
			out = append(out, s)
		}
	}
	return out
}
