package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

const offlineHead = `user_model: {model: offline-user, source: offline}
evaluator_model: {model: offline-judge, source: offline}
generation: {scenarios_per_metric: 1, turns: 2, num_samples: 1}
`

// assertNothingWritten checks that a refused run left no output behind.
func assertNothingWritten(t *testing.T, p *project, bench string) {
	t.Helper()
	for _, f := range []string{"scenarios.json", "runs", "results.json", "cost.json", "report.html"} {
		if exists(filepath.Join(p.benchDir(bench), f)) {
			t.Errorf("%s was written although the run was refused", f)
		}
	}
}

// TestBadConfigExit2: every bad config is refused before any work with
// exit 2 and a message naming file:line and the field.
func TestBadConfigExit2(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		config string
		want   []string // regexps stderr must match
	}{
		{"unknown key with suggestion", offlineHead + `targets:
  - id: a
    model: a
    source: vllm
    bse_url: http://127.0.0.1:9/v1
`, []string{`config\.yaml:8:\d+: targets\[0\]\.bse_url: `, `did you mean base_url`}},
		{"duplicate target id", offlineHead + `targets:
  - {id: a, model: a, source: offline}
  - {id: a, model: b, source: offline}
`, []string{`config\.yaml:6:\d+: targets\[1\]\.id: `, `duplicate target id "a"`}},
		{"unsafe target id", offlineHead + `targets:
  - {id: ../x, model: a, source: offline}
`, []string{`config\.yaml:5:\d+: targets\[0\]\.id: `, `"\.\./x" is not safe as a directory name`}},
		{"zero turns", `user_model: {model: offline-user, source: offline}
evaluator_model: {model: offline-judge, source: offline}
generation:
  turns: 0
targets:
  - {id: a, model: a, source: offline}
`, []string{`config\.yaml:4:\d+: generation\.turns: `, `at least 1`}},
		{"empty demographic axis", offlineHead + `demographics:
  age: []
targets:
  - {id: a, model: a, source: offline}
`, []string{`config\.yaml:5:\d+: demographics\.age: `, `no values`}},
		{"missing env var of a used model", offlineHead + `targets:
  - id: a
    model: a
    source: vllm
    base_url: http://127.0.0.1:9/v1
    apikey: "${NOPE_KEY}"
`, []string{`config\.yaml:9:\d+: targets\[0\]\.apikey: `, `NOPE_KEY`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := newProject(t, tc.config)
			p.addBench("qs", quickstartBench(t))
			r := p.run("run", "qs")
			if r.code != 2 {
				t.Fatalf("want exit 2, got:\n%s", r)
			}
			for _, w := range tc.want {
				if !regexp.MustCompile(w).MatchString(r.stderr) {
					t.Errorf("stderr does not match %q:\n%s", w, r.stderr)
				}
			}
			assertNothingWritten(t, p, "qs")
		})
	}
}

// TestUsageErrors: unknown commands, flags and targets, and conversations
// that refer to metrics the benchmark does not have.
func TestUsageErrors(t *testing.T) {
	t.Parallel()
	p := offlineProject(t)

	for _, args := range [][]string{
		{"frobnicate"},
		{"run", "qs", "--frobnicate"},
		{"run"},
	} {
		r := p.run(args...)
		if r.code != 2 {
			t.Errorf("want exit 2, got:\n%s", r)
		}
		if !strings.Contains(r.stderr, "unknown") && !strings.Contains(r.stderr, "expected a benchmark name") {
			t.Errorf("stderr does not say what is wrong:\n%s", r)
		}
	}

	r := p.run("simulate", "qs", "nope")
	if r.code != 2 {
		t.Errorf("simulate with an unknown target: want exit 2, got:\n%s", r)
	}
	if !strings.Contains(r.stderr, `"nope"`) || !strings.Contains(r.stderr, "careful") || !strings.Contains(r.stderr, "careless") {
		t.Errorf("simulate with an unknown target does not name it and the known targets:\n%s", r)
	}

	r = p.run("run", "no-such-bench")
	if r.code != 2 || !strings.Contains(r.stderr, "no-such-bench") {
		t.Errorf("run of a missing benchmark: want exit 2 naming it, got:\n%s", r)
	}

	// A conversation whose metric is not in benchmark.yaml.
	convPath := filepath.Join(p.benchDir("qs"), "runs", "careful", "conversations.json")
	var convs []map[string]any
	if err := json.Unmarshal(readFile(t, convPath), &convs); err != nil {
		t.Fatal(err)
	}
	convs[3]["metric_id"] = "m99"
	b, _ := json.MarshalIndent(convs, "", "  ")
	if err := os.WriteFile(convPath, b, 0o644); err != nil {
		t.Fatal(err)
	}
	scoresBefore := readFile(t, filepath.Join(p.benchDir("qs"), "runs", "careful", "scores.json"))
	r = p.run("evaluate", "qs", "careful")
	if r.code != 2 {
		t.Errorf("evaluate with an unknown metric id: want exit 2, got:\n%s", r)
	}
	id := convs[3]["id"].(string)
	for _, w := range []string{"row 3", id, `"m99"`} {
		if !strings.Contains(r.stderr, w) {
			t.Errorf("evaluate error does not name %s:\n%s", w, r)
		}
	}
	if string(readFile(t, filepath.Join(p.benchDir("qs"), "runs", "careful", "scores.json"))) != string(scoresBefore) {
		t.Errorf("the refused evaluate changed scores.json")
	}
}

// TestAuthFailure: a provider that always answers 401 stops the run with
// exit 1 without retrying, says what to fix, and the API key never appears
// in any output or file, even though the provider echoes it.
func TestAuthFailure(t *testing.T) {
	t.Parallel()
	const key = "e2e-secret-Zq81xVb7LmQ4"
	f := newFakeLLM(t)
	f.failWith(http.StatusUnauthorized, fmt.Sprintf(
		`{"error":{"message":"Incorrect API key provided: %s. You can find your API key at https://example.invalid.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`, key))
	cfg := fmt.Sprintf(`run:
  concurrency: {simulate: 2, evaluate: 2}
user_model:
  model: fake-user
  source: openai_compatible
  base_url: %q
  apikey: "${IB_E2E_KEY}"
generator_model: {model: offline-generator, source: offline}
evaluator_model: {model: offline-judge, source: offline}
generation: {scenarios_per_metric: 2, turns: 3, num_samples: 2}
demographics:
  age: [child, adult]
targets:
  - id: ta
    model: fake-target-ta
    source: openai_compatible
    base_url: %q
    apikey: "${IB_E2E_KEY}"
`, f.baseURL(), f.baseURL())
	p := newProject(t, cfg)
	p.env = append(p.env, "IB_E2E_KEY="+key)
	p.addBench("qs", quickstartBench(t))

	r := p.run("run", "qs")
	if r.code != 1 {
		t.Errorf("want exit 1, got:\n%s", r)
	}
	reqs := f.requests(-1)
	if len(reqs) == 0 {
		t.Fatalf("no request reached the provider:\n%s", r)
	}
	if reqs[0].Auth != "Bearer "+key {
		t.Errorf("the key was not sent (Authorization %q)", reqs[0].Auth)
	}
	// No retries: every request is a different conversation's first call
	// (at most one per conversation, 16), never the same request twice.
	if len(reqs) > 16 {
		t.Errorf("%d requests for 16 conversations: a 401 was retried", len(reqs))
	}
	for _, q := range reqs {
		if q.Model != "fake-user" {
			t.Errorf("after the user model was refused, %s was still called", q.Model)
		}
	}
	if !strings.Contains(r.stderr, "401") && !strings.Contains(strings.ToLower(r.stderr), "auth") {
		t.Errorf("stderr does not say the provider refused the key:\n%s", r.stderr)
	}
	if !strings.Contains(r.stderr, "apikey") || !(strings.Contains(r.stderr, "user_model") || strings.Contains(r.stderr, "fake-user")) {
		t.Errorf("stderr does not say what to fix (the apikey of the user model):\n%s", r.stderr)
	}
	if strings.Contains(r.stdout, key) || strings.Contains(r.stderr, key) {
		t.Errorf("the API key appears in the output:\n%s", r)
	}
	if hits := grepTree(t, p.dir, key); len(hits) > 0 {
		t.Errorf("the API key was written to %v", hits)
	}
	if exists(filepath.Join(p.benchDir("qs"), "runs", "ta", "conversations.json")) {
		t.Errorf("conversations.json was written although every call failed")
	}

	// --json: same exit code, the error in the summary, still no key.
	rj := p.run("run", "qs", "--json")
	if rj.code != 1 {
		t.Errorf("--json: want exit 1, got:\n%s", rj)
	}
	if s := parseSummary(t, rj); s.ExitCode != 1 {
		t.Errorf("--json summary exit_code %d, want 1", s.ExitCode)
	}
	if strings.Contains(rj.stdout+rj.stderr, key) {
		t.Errorf("the API key appears in the --json output:\n%s", rj)
	}
}

// TestLock: while one run holds the benchmark, a second run on it exits 1
// saying another process is running it, and calls nothing; the first run
// then completes normally.
func TestLock(t *testing.T) {
	t.Parallel()
	f := newFakeLLM(t)
	p := newProject(t, fakeConfig(fakeOpts{baseURL: f.baseURL(), simConc: 1, evalConc: 1, targets: []string{"ta"}}))
	p.addBench("b", quickstartBench(t))

	release := make(chan struct{})
	blocked := make(chan struct{})
	var once atomic.Bool
	f.setHook(func(r *fakeReq) hold {
		if isTarget(*r) && once.CompareAndSwap(false, true) {
			close(blocked)
			return hold{until: release}
		}
		return hold{}
	})
	first := p.start("run", "b")
	select {
	case <-blocked:
	case <-first.done:
		t.Fatalf("the first run ended before its first target call:\n%s", first.errb.String())
	case <-time.After(cmdTimeout):
		t.Fatal("the first run never reached its first target call")
	}
	n := f.count(-1)
	second := p.run("run", "b")
	if second.code != 1 {
		t.Errorf("second run while the first holds the benchmark: want exit 1, got:\n%s", second)
	}
	if !strings.Contains(second.stderr, "another impactbench process") {
		t.Errorf("second run does not say another process is running the benchmark:\n%s", second.stderr)
	}
	if got := f.count(-1); got != n {
		t.Errorf("the refused second run sent %d requests", got-n)
	}
	close(release)
	r := first.wait(t)
	if r.code != 0 {
		t.Fatalf("the first run failed after the second was refused:\n%s", r)
	}
	s := quickstartSpec
	s.targets = []string{"ta"}
	checkBenchmark(t, p.benchDir("b"), s)
}
