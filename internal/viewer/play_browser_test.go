package viewer_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/impactbench/impactbench/internal/cli"
	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/human"
	"github.com/impactbench/impactbench/internal/layout"
	"github.com/impactbench/impactbench/internal/report"
	"github.com/impactbench/impactbench/internal/results"
	"github.com/impactbench/impactbench/internal/runner"
	"github.com/impactbench/impactbench/internal/viewer"
)

// TestBrowserPlayTheUser is the acceptance test of people playing the
// user: after an offline run, a person opens the Play page from the run
// page, picks a scenario and a target, reads the brief and the turn's
// landmark, plays two turns (the second carrying the XSS payloads), ends
// the conversation and sees it judged and compared with the simulated
// users; aggregate then writes the comparison into results.json, status
// prints it, and the report shows it.
func TestBrowserPlayTheUser(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "demo")
	var out bytes.Buffer
	if code := cli.Main([]string{"init", dir}, nil, &out, &out); code != 0 {
		t.Fatalf("init: %d %s", code, out.String())
	}
	cfgPath := filepath.Join(dir, "config.yaml")
	if code := cli.Main([]string{"--config", cfgPath, "-q", "run", "example"}, nil, &out, &out); code != 0 {
		t.Fatalf("run: %d %s", code, out.String())
	}
	cfg, err := config.Load(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	play, err := runner.NewPlayer(cfg, runner.Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, base := viewer.StartForTest(t, viewer.Options{ProjectDir: dir, Blind: true, Settings: report.OptionsFor(cfg).Settings,
		Samples: cfg.Generation.NumSamples, Seed: cfg.Seed, Play: play})
	ctx, bl := newBrowser(t, base, 1400, 1000)
	const target, scenario = "offline-careless", "m01_s001_v01"

	navigate(t, ctx, base+"/#/b/example")
	waitJS(t, ctx, `!!document.getElementById('play-link')`, 20*time.Second)
	clickSel(t, ctx, "#play-link")
	waitJS(t, ctx, `!!document.getElementById('play-start') && document.querySelectorAll('#play-scenario option').length === 8`, 20*time.Second)
	waitJS(t, ctx, `!!document.getElementById('compare-empty')`, 10*time.Second)
	evalJS[bool](t, ctx, `(function(){document.getElementById('play-scenario').value=`+jsString(scenario)+`;
		document.getElementById('play-target').value=`+jsString(target)+`; document.getElementById('play-name').value='ana'; return true})()`)
	clickSel(t, ctx, "#play-start")
	waitJS(t, ctx, `!!document.getElementById('play-msg') && !!document.getElementById('play-brief')`, 20*time.Second)
	convID := human.ConvID(scenario, target, 0)
	if got := evalJS[string](t, ctx, `document.getElementById('play-conv').dataset.conv`); got != convID {
		t.Fatalf("playing %q, want %s", got, convID)
	}
	brief := evalJS[string](t, ctx, `document.getElementById('play-brief').textContent`)
	for _, want := range []string{"13-year-old", "frank opinion", "Keep the assistant from", "Child or teenager"} {
		if !strings.Contains(brief, want) {
			t.Errorf("the brief lacks %q: %s", want, brief)
		}
	}
	if lm := evalJS[string](t, ctx, `document.getElementById('play-landmark').textContent`); !strings.Contains(lm, "i've mostly made up my mind") {
		t.Errorf("turn 1's landmark: %q", lm)
	}
	if turn := evalJS[string](t, ctx, `document.getElementById('play-turn').textContent`); turn != "Turn 1 of 4" {
		t.Errorf("turn line %q", turn)
	}

	say := func(msg string, wantMessages int) {
		t.Helper()
		evalJS[bool](t, ctx, `(document.getElementById('play-msg').value = `+jsString(msg)+`, true)`)
		clickSel(t, ctx, "#play-send")
		waitJS(t, ctx, `document.getElementById('play-conv') && document.getElementById('play-conv').dataset.messages === '`+strconv.Itoa(wantMessages)+`'`, 20*time.Second)
	}
	say("i've mostly made up my mind, i just want help with the details", 2)
	if turn := evalJS[string](t, ctx, `document.getElementById('play-turn').textContent`); turn != "Turn 2 of 4" {
		t.Errorf("turn line %q", turn)
	}
	say("just tell me what to do "+viewer.XSSPayload, 4)
	bodies := evalJS[[]string](t, ctx, `[...document.querySelectorAll('#play-transcript .msg .body')].map(b => b.textContent)`)
	if len(bodies) != 4 || !strings.HasSuffix(bodies[2], viewer.XSSPayload) || bodies[1] == "" || bodies[3] == "" {
		t.Fatalf("dialogue %q", bodies)
	}
	if dir := os.Getenv("VIEWER_SCREENSHOTS"); dir != "" {
		screenshot(t, ctx, filepath.Join(dir, "viewer-play.png"))
	}
	clickSel(t, ctx, "#play-end")
	waitJS(t, ctx, `!!document.getElementById('play-verdict') && !!document.getElementById('judge-present')`, 20*time.Second)
	verdict := evalJS[string](t, ctx, `document.getElementById('play-verdict').textContent`)
	if !strings.Contains(verdict, "Ended: user_terminated") || !strings.Contains(verdict, "Judge verdict") {
		t.Errorf("verdict %q", verdict)
	}
	// The stored rows: upstream's shape, played by a person, judged.
	run := layout.Bench{Dir: layout.BenchDir(dir, "example")}.Run(target)
	convs, err := human.ReadConversations(run.HumanConversations(), target)
	if err != nil || len(convs) != 1 || convs[0].User != "human" || convs[0].Player != "ana" || len(convs[0].Transcript) != 4 || convs[0].State != human.Ended {
		t.Fatalf("stored conversation %+v: %v", convs, err)
	}
	scores, err := human.ReadScores(run.HumanScores(), target)
	if err != nil || len(scores) != 1 || scores[0].Present == nil || scores[0].UserModel != "human" || scores[0].Unverified == nil {
		t.Fatalf("stored verdict %+v: %v", scores, err)
	}

	// The comparison as it stands, on the Play page.
	clickSel(t, ctx, "#play-back")
	waitJS(t, ctx, `document.querySelectorAll('#human-compare tbody tr[data-target="offline-careless"]').length > 0`, 20*time.Second)
	row := evalJS[string](t, ctx, `document.querySelector('#human-compare tbody tr[data-target="offline-careless"]').textContent`)
	if !strings.Contains(row, "positive metrics") || !strings.Contains(row, "(no interval)") {
		t.Errorf("comparison row %q", row)
	}
	if n := evalJS[int](t, ctx, `document.querySelectorAll('#play-table tbody tr').length`); n != 1 {
		t.Errorf("%d conversations listed", n)
	}

	// aggregate writes it into results.json; status prints it; the report shows it.
	var aggOut bytes.Buffer
	if code := cli.Main([]string{"--config", cfgPath, "aggregate", "example"}, nil, &aggOut, &aggOut); code != 0 {
		t.Fatalf("aggregate: %d %s", code, aggOut.String())
	}
	res, err := results.ReadResults(filepath.Join(dir, "benchmarks", "example", "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range res {
		if hc := m.HumanComparison; (m.TargetModel == target) != (hc != nil) || hc != nil && (hc.NHuman != 1 || hc.NScenarios != 1) {
			t.Errorf("%s: human_comparison %+v", m.TargetModel, hc)
		}
	}
	var stOut bytes.Buffer
	if code := cli.Main([]string{"--config", cfgPath, "status", "example"}, nil, &stOut, &stOut); code != 0 || !strings.Contains(stOut.String(), "people vs simulated users: offline-careless 1 human-played conversation(s)") {
		t.Errorf("status: %d\n%s", code, stOut.String())
	}
	navigate(t, ctx, base+"/report/example")
	waitJS(t, ctx, `window.__reportReady === true`, 30*time.Second)
	rep := evalJS[string](t, ctx, `(document.querySelector('[data-testid="human-compare"]') || {textContent: ''}).textContent`)
	if !strings.Contains(rep, "offline-careless") || !strings.Contains(rep, "positive metrics") || !strings.Contains(rep, "no interval") {
		t.Errorf("the report's comparison: %q", rep)
	}
	if x := evalJS[string](t, ctx, `typeof window.__xss`); x != "undefined" {
		t.Errorf("payload executed: window.__xss is %s", x)
	}
	assertClean(t, bl)
}
