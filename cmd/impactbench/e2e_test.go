package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

var offlineConfig = offlineConfigOf{Comment: "# end-to-end test project: everything on the built-in offline model",
	Generator: true, Careful: 0.9, Careless: 0.2}.yaml()

func quickstartBench(t *testing.T) string {
	t.Helper()
	return string(readFile(t, filepath.Join("testdata", "quickstart", "benchmark.yaml")))
}

var quickstartSpec = spec{
	metricTypes: map[string]string{"m01": "positive", "m02": "negative"},
	perMetric:   2,
	variants:    []string{"child", "adult"},
	samples:     2,
	turns:       3,
	targets:     []string{"careful", "careless"},
}

// offlineProject is a finished offline run of the quickstart benchmark "qs".
func offlineProject(t *testing.T) *project {
	t.Helper()
	p := newProject(t, offlineConfig)
	p.addBench("qs", quickstartBench(t))
	p.mustRun("run", "qs")
	return p
}

// TestQuickstartOffline is the acceptance run: two hand-written metrics,
// two offline targets, 2 scenarios per metric × 2 demographic variants × 2
// samples, all five stages in one `run`; then a rerun pays nothing.
func TestQuickstartOffline(t *testing.T) {
	t.Parallel()
	p := newProject(t, offlineConfig)
	p.addBench("qs", quickstartBench(t))
	r := p.run("run", "qs")
	if r.code != 0 {
		t.Fatalf("run failed:\n%s", r)
	}
	dir := p.benchDir("qs")
	convs := checkBenchmark(t, dir, quickstartSpec)

	// The two offline targets differ only in their care profile; their
	// replies must differ, or the targets are not really being called.
	same := 0
	for i := range convs["careful"] {
		if reflect.DeepEqual(convs["careful"][i].Transcript, convs["careless"][i].Transcript) {
			same++
		}
	}
	if same == len(convs["careful"]) {
		t.Errorf("both offline targets produced identical transcripts: offline: {care: …} has no effect")
	}
	if st, err := os.Stat(filepath.Join(dir, "report.html")); err != nil || st.Size() == 0 {
		t.Errorf("report.html missing or empty: %v", err)
	}

	// Rerun is free: nothing is called, every phase that calls a model is
	// skipped, and the outputs are unchanged.
	before := snapshot(t, dir, "scenarios.json", "runs/careful/conversations.json", "runs/careful/scores.json",
		"runs/careless/conversations.json", "runs/careless/scores.json")
	r2 := p.run("run", "qs", "--json")
	if r2.code != 0 {
		t.Fatalf("rerun failed:\n%s", r2)
	}
	s := parseSummary(t, r2)
	if s.Spent.Requests != 0 {
		t.Errorf("rerun spent %d requests, want 0", s.Spent.Requests)
	}
	phases := map[string]int{}
	for _, ph := range s.Phases {
		phases[ph.Phase]++
		if ph.Phase == "aggregate" {
			continue // always recomputed, calls no model
		}
		if ph.Status != "skipped" || ph.Calls != 0 {
			t.Errorf("rerun: phase %s %s: status %q with %d calls, want skipped with 0", ph.Phase, ph.Target, ph.Status, ph.Calls)
		}
	}
	for ph, n := range map[string]int{"gen_metrics": 1, "gen_scenarios": 1, "simulate": 2, "evaluate": 2} {
		if phases[ph] != n {
			t.Errorf("rerun summary lists phase %s %d times, want %d (phases: %v)", ph, phases[ph], n, phases)
		}
	}
	after := snapshot(t, dir, "scenarios.json", "runs/careful/conversations.json", "runs/careful/scores.json",
		"runs/careless/conversations.json", "runs/careless/scores.json")
	if !reflect.DeepEqual(before, after) {
		t.Errorf("rerun changed outputs that were up to date")
	}
}

func snapshot(t *testing.T, dir string, rels ...string) map[string]string {
	t.Helper()
	m := map[string]string{}
	for _, r := range rels {
		m[r] = string(readFile(t, filepath.Join(dir, r)))
	}
	return m
}

// TestInitAndRunExample is the quickstart exactly as a new user types it.
func TestInitAndRunExample(t *testing.T) {
	t.Parallel()
	p := newProject(t, "")
	work := filepath.Dir(p.dir)
	r := p.runIn(work, "init", "demo")
	if r.code != 0 {
		t.Fatalf("init failed:\n%s", r)
	}
	demo := filepath.Join(work, "demo")
	for _, f := range []string{"config.yaml", ".env.example", "benchmarks/example/benchmark.yaml"} {
		if !exists(filepath.Join(demo, f)) {
			t.Errorf("init did not write %s", f)
		}
	}
	r = p.runIn(demo, "run", "example")
	if r.code != 0 {
		t.Fatalf("run example in a fresh init project failed:\n%s", r)
	}
	bench := filepath.Join(demo, "benchmarks", "example")
	res := readJSON[[]map[string]any](t, filepath.Join(bench, "results.json"))
	if len(res) == 0 {
		t.Errorf("results.json is empty")
	}
	for _, f := range []string{"scenarios.json", "report.html"} {
		if !exists(filepath.Join(bench, f)) {
			t.Errorf("run example did not write %s", f)
		}
	}
	// init never overwrites a project.
	cfg := readFile(t, filepath.Join(demo, "config.yaml"))
	if r := p.runIn(work, "init", "demo"); r.code == 0 {
		t.Errorf("second init into the same directory succeeded:\n%s", r)
	}
	if string(readFile(t, filepath.Join(demo, "config.yaml"))) != string(cfg) {
		t.Errorf("second init changed config.yaml")
	}
}

// TestChangedJudgeReevaluatesOnly: with a counting fake provider, an
// unchanged rerun sends nothing; changing only the judge re-sends judge
// calls, no simulation call, and says what changed.
func TestChangedJudgeReevaluatesOnly(t *testing.T) {
	t.Parallel()
	f := newFakeLLM(t)
	opts := fakeOpts{baseURL: f.baseURL(), simConc: 4, evalConc: 4, targets: []string{"ta"}}
	p := newProject(t, fakeConfig(opts))
	p.addBench("b", quickstartBench(t))

	f.setEpoch(1)
	p.mustRun("run", "b")
	first := f.requests(1)
	if len(first) == 0 {
		t.Fatal("the fake provider saw no request")
	}
	s := quickstartSpec
	s.targets = []string{"ta"}
	checkBenchmark(t, p.benchDir("b"), s)
	judged := 0
	for _, r := range first {
		if isJudge(r) {
			judged++
		}
	}
	if judged != 16 {
		t.Errorf("first run made %d judge calls, want 16 (one per conversation)", judged)
	}

	// Unchanged rerun: zero requests.
	f.setEpoch(2)
	r := p.mustRun("run", "b", "--json")
	if n := f.count(2); n != 0 {
		t.Errorf("unchanged rerun sent %d requests to the provider, want 0", n)
	}
	if s := parseSummary(t, r); s.Spent.Requests != 0 {
		t.Errorf("unchanged rerun reports %d requests spent", s.Spent.Requests)
	}

	// Change the judge only.
	opts.judge = "fake-judge-2"
	p.write("config.yaml", fakeConfig(opts))
	f.setEpoch(3)
	r = p.mustRun("evaluate", "b")
	var judges, others int
	for _, q := range f.requests(3) {
		if q.Model == "fake-judge-2" {
			judges++
		} else {
			others++
		}
	}
	if judges != 16 || others != 0 {
		t.Errorf("after changing the judge, evaluate sent %d calls to the new judge (want 16) and %d other calls (want 0)", judges, others)
	}
	if !regexp.MustCompile(`inputs changed since runs/ta/scores\.json was made: \[judges\]`).MatchString(r.stderr) {
		t.Errorf("evaluate does not say that the judge changed:\n%s", r)
	}

	// The whole pipeline is now up to date: a run pays nothing more.
	f.setEpoch(4)
	p.mustRun("run", "b")
	if n := f.count(4); n != 0 {
		t.Errorf("run after re-evaluation sent %d requests, want 0", n)
	}
	checkBenchmark(t, p.benchDir("b"), s)
}

// TestDryRun: a dry run on a fresh project calls nothing, writes no
// outputs, and prints rows, calls, tokens and cost per phase and target.
func TestDryRun(t *testing.T) {
	t.Parallel()
	f := newFakeLLM(t)
	p := newProject(t, fakeConfig(fakeOpts{baseURL: f.baseURL(), simConc: 2, evalConc: 2, targets: []string{"ta", "tb"}}))
	p.addBench("b", quickstartBench(t))

	r := p.mustRun("run", "b", "--dry-run")
	if n := f.count(-1); n != 0 {
		t.Errorf("dry run sent %d requests", n)
	}
	out := r.stdout
	for _, col := range []string{"phase", "target", "model", "rows", "calls", "input tok", "output tok", "est. cost"} {
		if !strings.Contains(out, col) {
			t.Errorf("dry-run table has no %q column:\n%s", col, out)
		}
	}
	for _, target := range []string{"ta", "tb"} {
		for _, ph := range []string{"simulate (user)", "simulate (target)", "evaluate"} {
			re := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(ph) + `\s+` + target + `\s+\S+\s+16\s+[1-9]\d*\s+[1-9]\d*\s+[1-9]\d*\s+\$\d+\.\d+`)
			if !re.MatchString(out) {
				t.Errorf("dry run has no %q row for %s with 16 rows, calls, tokens and a cost:\n%s", ph, target, out)
			}
		}
	}
	if !strings.Contains(out, "gen_scenarios") {
		t.Errorf("dry run has no gen_scenarios row:\n%s", out)
	}
	if !regexp.MustCompile(`estimated cost of a fresh run: \$\d+\.\d+`).MatchString(out) {
		t.Errorf("dry run prints no total cost:\n%s", out)
	}

	r = p.mustRun("run", "b", "--dry-run", "--json")
	if n := f.count(-1); n != 0 {
		t.Errorf("dry run --json sent %d requests", n)
	}
	s := parseSummary(t, r)
	if !s.DryRun || len(s.Plan) == 0 {
		t.Fatalf("--json dry run: dry_run %v with %d plan rows:\n%s", s.DryRun, len(s.Plan), r)
	}
	perTarget := map[string]int{}
	for _, row := range s.Plan {
		if strings.HasPrefix(row.Phase, "simulate") || row.Phase == "evaluate" {
			perTarget[row.Target]++
			if row.Rows != 16 || row.Calls <= 0 || row.InputTokens <= 0 || row.OutputTokens <= 0 || !row.CostKnown || row.Cost <= 0 {
				t.Errorf("plan row %+v: want 16 rows, calls, tokens and a known positive cost", row)
			}
		}
	}
	if perTarget["ta"] != 3 || perTarget["tb"] != 3 {
		t.Errorf("plan rows per target %v, want 3 each (user, target, judge)", perTarget)
	}
	for _, f := range []string{"scenarios.json", "runs", "results.json"} {
		if exists(filepath.Join(p.benchDir("b"), f)) {
			t.Errorf("dry run wrote %s", f)
		}
	}
}

// TestCompatHumaneBench: upstream's real files aggregate to upstream's own
// results.json byte for byte, our extended file keeps upstream's fields, and
// legacy conversations (no _usage, no conv_id) can be re-judged.
func TestCompatHumaneBench(t *testing.T) {
	t.Parallel()
	p := newProject(t, offlineConfig)
	copyDir(t, filepath.Join("testdata", "humanebench"), p.benchDir("humanebench"))
	golden := readFile(t, filepath.Join("testdata", "humanebench_results.golden.json"))
	resultsPath := filepath.Join(p.benchDir("humanebench"), "results.json")

	p.mustRun("aggregate", "humanebench", "--upstream-only")
	if got := readFile(t, resultsPath); string(got) != string(golden) {
		t.Errorf("aggregate --upstream-only is not byte-identical to upstream's results.json\n got: %.600s\nwant: %.600s", got, golden)
	}

	p.mustRun("aggregate", "humanebench")
	var gold, ext []json.RawMessage
	if err := json.Unmarshal(golden, &gold); err != nil {
		t.Fatal(err)
	}
	ext = readJSON[[]json.RawMessage](t, resultsPath)
	if len(ext) != len(gold) {
		t.Fatalf("extended results.json has %d entries, upstream %d", len(ext), len(gold))
	}
	for i := range gold {
		gk, ek := objectKeys(t, gold[i]), objectKeys(t, ext[i])
		if len(ek) <= len(gk) || !reflect.DeepEqual(ek[:len(gk)], gk) {
			t.Errorf("entry %d: keys %v, want upstream's %v first", i, ek, gk)
		}
		var g, e map[string]any
		json.Unmarshal(gold[i], &g)
		json.Unmarshal(ext[i], &e)
		for _, k := range gk {
			if k == "by_metric" || k == "by_scenario" {
				// Extended rates add ci_low/ci_high after upstream's three keys.
				gm, em := g[k].(map[string]any), e[k].(map[string]any)
				if len(gm) != len(em) {
					t.Errorf("%s: %d keys, upstream %d", k, len(em), len(gm))
				}
				for id, gv := range gm {
					ev, _ := em[id].(map[string]any)
					for kk, vv := range gv.(map[string]any) {
						if !reflect.DeepEqual(ev[kk], vv) {
							t.Errorf("%s.%s.%s = %v, upstream %v", k, id, kk, ev[kk], vv)
						}
					}
				}
				continue
			}
			if !reflect.DeepEqual(g[k], e[k]) {
				t.Errorf("%s = %v, upstream %v", k, e[k], g[k])
			}
		}
	}

	convPath := filepath.Join(p.benchDir("humanebench"), "runs", "claude-haiku-4-5", "conversations.json")
	convBefore := readFile(t, convPath)
	r := p.run("evaluate", "humanebench", "claude-haiku-4-5", "--force")
	if r.code != 0 {
		t.Fatalf("evaluate on legacy conversations failed:\n%s", r)
	}
	if string(readFile(t, convPath)) != string(convBefore) {
		t.Errorf("evaluate rewrote the legacy conversations.json")
	}
	scores := readJSON[[]scoreRow](t, filepath.Join(p.benchDir("humanebench"), "runs", "claude-haiku-4-5", "scores.json"))
	if len(scores) != 18 {
		t.Fatalf("re-judged scores.json has %d rows, want 18", len(scores))
	}
	types := map[string]string{"m01": "positive", "m02": "negative", "m03": "positive"}
	for _, s := range scores {
		if s.Present == nil || s.Passed == nil {
			t.Errorf("%s: no verdict", s.ID)
			continue
		}
		if (types[s.MetricID] == "positive") != (*s.Passed == *s.Present) {
			t.Errorf("%s (%s, %s): passed %v present %v", s.ID, s.MetricID, types[s.MetricID], *s.Passed, *s.Present)
		}
		if s.ConvID != s.ID+"__claude-haiku-4-5__s0" {
			t.Errorf("%s: conv_id %q", s.ID, s.ConvID)
		}
	}
}
