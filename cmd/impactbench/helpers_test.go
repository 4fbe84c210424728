package main

// Black-box end-to-end tests of the impactbench binary. TestMain builds the
// real binary once; every test runs it with exec in temporary projects and
// talks to nothing but in-process fake servers on 127.0.0.1.
//
// Set IMPACTBENCH_E2E_RACE=1 to build the binary under test with -race too.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// ibBin is the binary under test, built by TestMain.
var ibBin string

// cmdTimeout bounds one invocation of the binary. Every invocation in these
// tests finishes in well under a second on a laptop; the bound only keeps a
// hang from eating the whole test timeout on a slow, noisy CI machine.
const cmdTimeout = 90 * time.Second

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "impactbench-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e: temp dir:", err)
		os.Exit(1)
	}
	ibBin = filepath.Join(dir, "impactbench")
	args := []string{"build", "-o", ibBin}
	if os.Getenv("IMPACTBENCH_E2E_RACE") != "" {
		args = append(args, "-race")
	}
	args = append(args, ".")
	build := exec.Command(goTool(), args...)
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: building the impactbench binary failed:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// goTool finds the go command that is running these tests: go test puts
// its own GOROOT/bin first on the test's PATH.
func goTool() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return "go"
}

// project is a temporary impactbench project directory.
type project struct {
	t    *testing.T
	dir  string
	home string
	env  []string // extra KEY=value for the binary
}

// newProject creates a project with config.yaml (empty config: none written).
func newProject(t *testing.T, config string) *project {
	t.Helper()
	root := t.TempDir()
	p := &project{t: t, dir: filepath.Join(root, "proj"), home: filepath.Join(root, "home")}
	for _, d := range []string{p.dir, p.home} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if config != "" {
		p.write("config.yaml", config)
	}
	return p
}

func (p *project) path(rel ...string) string {
	return filepath.Join(append([]string{p.dir}, rel...)...)
}

func (p *project) benchDir(bench string) string { return p.path("benchmarks", bench) }

func (p *project) write(rel, content string) {
	p.t.Helper()
	path := p.path(rel)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		p.t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		p.t.Fatal(err)
	}
}

// addBench writes benchmarks/<name>/benchmark.yaml.
func (p *project) addBench(name, yaml string) {
	p.write(filepath.Join("benchmarks", name, "benchmark.yaml"), yaml)
}

// environ is the binary's whole environment: no provider variables, no
// proxies, HOME inside the test's temp dir.
func (p *project) environ() []string {
	env := []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + p.home,
		"TMPDIR=" + p.home,
		"LANG=C.UTF-8",
		"TERM=dumb",
	}
	return append(env, p.env...)
}

// result is one finished invocation.
type result struct {
	args   []string
	code   int
	stdout string
	stderr string
	state  *os.ProcessState
}

func (r result) String() string {
	return fmt.Sprintf("impactbench %s → exit %d\n--- stdout ---\n%s\n--- stderr ---\n%s",
		strings.Join(r.args, " "), r.code, clip(r.stdout), clip(r.stderr))
}

func clip(s string) string {
	if len(s) > 6000 {
		return s[:3000] + "\n…\n" + s[len(s)-3000:]
	}
	return s
}

// run runs the binary in the project directory and waits for it.
func (p *project) run(args ...string) result {
	p.t.Helper()
	return p.runIn(p.dir, args...)
}

func (p *project) runIn(dir string, args ...string) result {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, ibBin, args...)
	cmd.Dir = dir
	cmd.Env = p.environ()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := result{args: args, stdout: out.String(), stderr: errb.String(), state: cmd.ProcessState}
	if ctx.Err() != nil {
		p.t.Fatalf("impactbench %s did not finish within %v\n%s", strings.Join(args, " "), cmdTimeout, r)
	}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	default:
		p.t.Fatalf("impactbench %s: %v", strings.Join(args, " "), err)
	}
	return r
}

// mustRun runs the binary and fails the test unless it exits 0.
func (p *project) mustRun(args ...string) result {
	p.t.Helper()
	r := p.run(args...)
	if r.code != 0 {
		p.t.Fatalf("want exit 0, got:\n%s", r)
	}
	return r
}

// bg is an invocation running in the background.
type bg struct {
	cmd    *exec.Cmd
	args   []string
	out    bytes.Buffer
	errb   bytes.Buffer
	done   chan struct{}
	waitEr error
}

// start starts the binary without waiting for it; the test's cleanup kills
// it if the test forgets to wait.
func (p *project) start(args ...string) *bg {
	p.t.Helper()
	b := &bg{args: args, done: make(chan struct{})}
	b.cmd = exec.Command(ibBin, args...)
	b.cmd.Dir = p.dir
	b.cmd.Env = p.environ()
	b.cmd.Stdout, b.cmd.Stderr = &b.out, &b.errb
	if err := b.cmd.Start(); err != nil {
		p.t.Fatalf("start impactbench %s: %v", strings.Join(args, " "), err)
	}
	go func() {
		b.waitEr = b.cmd.Wait()
		close(b.done)
	}()
	p.t.Cleanup(func() {
		select {
		case <-b.done:
		default:
			_ = b.cmd.Process.Kill()
			<-b.done
		}
	})
	return b
}

// wait waits for the background invocation (bounded by cmdTimeout).
func (b *bg) wait(t *testing.T) result {
	t.Helper()
	select {
	case <-b.done:
	case <-time.After(cmdTimeout):
		_ = b.cmd.Process.Kill()
		<-b.done
		t.Fatalf("impactbench %s did not finish within %v\nstderr:\n%s", strings.Join(b.args, " "), cmdTimeout, clip(b.errb.String()))
	}
	r := result{args: b.args, stdout: b.out.String(), stderr: b.errb.String(), state: b.cmd.ProcessState}
	r.code = b.cmd.ProcessState.ExitCode()
	return r
}

// killedBySIGKILL reports whether the process died of SIGKILL.
func killedBySIGKILL(st *os.ProcessState) bool {
	ws, ok := st.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL
}

// ---- JSON helpers ----

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	return b
}

func readJSON[T any](t *testing.T, path string) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(readFile(t, path), &v); err != nil {
		t.Fatalf("%s does not parse: %v", path, err)
	}
	return v
}

// objectKeys returns the keys of a JSON object in file order.
func objectKeys(t *testing.T, raw json.RawMessage) []string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(raw))
	tok, err := dec.Token()
	if err != nil || tok != json.Delim('{') {
		t.Fatalf("not a JSON object: %.200s", raw)
	}
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatalf("bad JSON object: %v", err)
		}
		keys = append(keys, tok.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatalf("bad JSON object: %v", err)
		}
	}
	return keys
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// grepTree lists the files under root whose bytes contain needle.
func grepTree(t *testing.T, root, needle string) []string {
	t.Helper()
	var hits []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || !d.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if bytes.Contains(b, []byte(needle)) {
			hits = append(hits, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return hits
}

// copyDir copies a directory tree.
func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// ---- the files the pipeline writes, as a reader sees them ----

type turn struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type scenarioRow struct {
	ID          string          `json:"id"`
	MetricID    string          `json:"metric_id"`
	UserGoal    string          `json:"user_goal"`
	Demographic json.RawMessage `json:"demographic"`
}

type convRow struct {
	ID          string          `json:"id"`
	MetricID    string          `json:"metric_id"`
	ConvID      string          `json:"conv_id"`
	Sample      *int            `json:"_sample"`
	TargetModel string          `json:"target_model"`
	Transcript  []turn          `json:"transcript"`
	Usage       json.RawMessage `json:"_usage"`
	Status      string          `json:"status"`
	Run         *struct {
		UserModel   string `json:"user_model"`
		TargetModel string `json:"target_model"`
		Turns       int    `json:"turns"`
	} `json:"run"`
}

type scoreRow struct {
	ID            string `json:"id"`
	MetricID      string `json:"metric_id"`
	TargetModel   string `json:"target_model"`
	Sample        *int   `json:"sample"`
	Present       *bool  `json:"present"`
	Passed        *bool  `json:"passed"`
	Justification string `json:"justification"`
	ConvID        string `json:"conv_id"`
}

// spec is what a finished benchmark must look like.
type spec struct {
	metricTypes map[string]string // metric id → positive|negative
	perMetric   int               // base scenarios per metric
	variants    []string          // values of the single demographic axis "age", in order
	samples     int
	turns       int
	targets     []string
}

func (s spec) scenarioIDs() []string {
	var ids []string
	for _, m := range sortedKeys(s.metricTypes) {
		for i := 1; i <= s.perMetric; i++ {
			for v := 1; v <= len(s.variants); v++ {
				ids = append(ids, fmt.Sprintf("%s_s%03d_v%02d", m, i, v))
			}
		}
	}
	return ids
}

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }

// upstreamKeys are the first keys of every results.json entry, in upstream's order.
var upstreamKeys = []string{"target_model", "positive_pass_rate", "negative_pass_rate",
	"n_positive", "n_negative", "n_total", "by_metric", "by_scenario"}

// checkBenchmark validates every output of a finished run against s and
// returns the conversations per target.
func checkBenchmark(t *testing.T, dir string, s spec) map[string][]convRow {
	t.Helper()
	wantIDs := s.scenarioIDs()

	// scenarios.json
	scs := readJSON[[]scenarioRow](t, filepath.Join(dir, "scenarios.json"))
	if len(scs) != len(wantIDs) {
		t.Fatalf("scenarios.json: %d rows, want %d", len(scs), len(wantIDs))
	}
	scenarioMetric := map[string]string{}
	for i, sc := range scs {
		if sc.ID != wantIDs[i] {
			t.Errorf("scenarios.json row %d: id %q, want %q", i, sc.ID, wantIDs[i])
		}
		if !strings.HasPrefix(sc.ID, sc.MetricID+"_") {
			t.Errorf("scenario %s: metric_id %q does not match its id", sc.ID, sc.MetricID)
		}
		if strings.TrimSpace(sc.UserGoal) == "" {
			t.Errorf("scenario %s: empty user_goal", sc.ID)
		}
		scenarioMetric[sc.ID] = sc.MetricID
		if len(s.variants) > 0 {
			var demo map[string]string
			if err := json.Unmarshal(sc.Demographic, &demo); err != nil {
				t.Errorf("scenario %s: demographic %s is not an object of strings: %v", sc.ID, sc.Demographic, err)
				continue
			}
			v := (i % len(s.variants))
			if len(demo) != 1 || demo["age"] != s.variants[v] {
				t.Errorf("scenario %s: demographic %s, want {\"age\": %q}", sc.ID, sc.Demographic, s.variants[v])
			}
		}
	}
	if exists(filepath.Join(dir, "cost.json")) {
		cost := readJSON[map[string]json.RawMessage](t, filepath.Join(dir, "cost.json"))
		if _, ok := cost["gen_scenarios"]; !ok {
			t.Errorf("cost.json has no gen_scenarios entry: %v", sortedKeys(cost))
		}
	} else {
		t.Errorf("%s/cost.json missing", dir)
	}

	all := map[string][]convRow{}
	nConv := len(wantIDs) * s.samples
	for _, target := range s.targets {
		run := filepath.Join(dir, "runs", target)
		convs := readJSON[[]convRow](t, filepath.Join(run, "conversations.json"))
		all[target] = convs
		if len(convs) != nConv {
			t.Fatalf("%s: conversations.json has %d rows, want %d", target, len(convs), nConv)
		}
		seen := map[string]bool{}
		for _, c := range convs {
			if c.Sample == nil {
				t.Errorf("%s: conversation %s has no _sample", target, c.ID)
				continue
			}
			key := fmt.Sprintf("%s/%d", c.ID, *c.Sample)
			if seen[key] {
				t.Errorf("%s: conversation %s sample %d appears twice", target, c.ID, *c.Sample)
			}
			seen[key] = true
			if *c.Sample < 0 || *c.Sample >= s.samples {
				t.Errorf("%s: %s: _sample %d out of range", target, c.ID, *c.Sample)
			}
			if want := fmt.Sprintf("%s__%s__s%d", c.ID, target, *c.Sample); c.ConvID != want {
				t.Errorf("%s: conv_id %q, want %q", target, c.ConvID, want)
			}
			if scenarioMetric[c.ID] == "" {
				t.Errorf("%s: conversation for unknown scenario %q", target, c.ID)
			} else if c.MetricID != scenarioMetric[c.ID] {
				t.Errorf("%s: %s: metric_id %q, want %q", target, c.ConvID, c.MetricID, scenarioMetric[c.ID])
			}
			if c.TargetModel != target {
				t.Errorf("%s: %s: target_model %q", target, c.ConvID, c.TargetModel)
			}
			switch c.Status {
			case "completed":
				if len(c.Transcript) != 2*s.turns {
					t.Errorf("%s: %s completed with %d messages, want %d", target, c.ConvID, len(c.Transcript), 2*s.turns)
				}
			case "user_terminated":
				if len(c.Transcript) >= 2*s.turns {
					t.Errorf("%s: %s user_terminated after all turns (%d messages)", target, c.ConvID, len(c.Transcript))
				}
			default:
				t.Errorf("%s: %s: status %q, want completed or user_terminated", target, c.ConvID, c.Status)
			}
			if len(c.Transcript)%2 != 0 {
				t.Errorf("%s: %s: odd transcript length %d", target, c.ConvID, len(c.Transcript))
			}
			for i, m := range c.Transcript {
				want := "user"
				if i%2 == 1 {
					want = "assistant"
				}
				if m.Role != want {
					t.Errorf("%s: %s: message %d has role %q, want %q", target, c.ConvID, i, m.Role, want)
				}
				if strings.TrimSpace(m.Content) == "" {
					t.Errorf("%s: %s: message %d is empty", target, c.ConvID, i)
				}
			}
			if c.Run == nil || c.Run.Turns != s.turns || c.Run.UserModel == "" || c.Run.TargetModel == "" {
				t.Errorf("%s: %s: run info %+v, want turns %d and model names", target, c.ConvID, c.Run, s.turns)
			}
			if len(c.Usage) == 0 {
				t.Errorf("%s: %s: no _usage", target, c.ConvID)
			}
		}

		scores := readJSON[[]scoreRow](t, filepath.Join(run, "scores.json"))
		if len(scores) != nConv {
			t.Fatalf("%s: scores.json has %d rows, want %d", target, len(scores), nConv)
		}
		scored := map[string]bool{}
		for _, sc := range scores {
			if sc.Sample == nil {
				t.Errorf("%s: score %s has no sample", target, sc.ID)
				continue
			}
			key := fmt.Sprintf("%s/%d", sc.ID, *sc.Sample)
			if !seen[key] {
				t.Errorf("%s: score for %s which has no conversation", target, key)
			}
			if scored[key] {
				t.Errorf("%s: %s scored twice", target, key)
			}
			scored[key] = true
			typ := s.metricTypes[sc.MetricID]
			switch {
			case typ == "":
				t.Errorf("%s: score %s: unknown metric %q", target, key, sc.MetricID)
			case (sc.Present == nil) != (sc.Passed == nil):
				t.Errorf("%s: score %s: present %v and passed %v must be null together", target, key, ptrStr(sc.Present), ptrStr(sc.Passed))
			case sc.Present == nil:
				t.Errorf("%s: score %s: no verdict (the judge always answers in this test)", target, key)
			case typ == "positive" && *sc.Passed != *sc.Present:
				t.Errorf("%s: score %s (positive metric): passed %v, present %v", target, key, *sc.Passed, *sc.Present)
			case typ == "negative" && *sc.Passed == *sc.Present:
				t.Errorf("%s: score %s (negative metric): passed %v, present %v", target, key, *sc.Passed, *sc.Present)
			}
			if sc.TargetModel != target {
				t.Errorf("%s: score %s: target_model %q", target, key, sc.TargetModel)
			}
			if sc.Justification == "" {
				t.Errorf("%s: score %s: empty justification", target, key)
			}
		}
		if len(scored) != len(seen) {
			t.Errorf("%s: %d conversations but %d distinct scores", target, len(seen), len(scored))
		}

		cost := readJSON[map[string]json.RawMessage](t, filepath.Join(run, "cost.json"))
		for _, ph := range []string{"simulate", "evaluate"} {
			if _, ok := cost[ph]; !ok {
				t.Errorf("%s: cost.json has no %s entry: %v", target, ph, sortedKeys(cost))
			}
		}
	}

	// results.json
	raw := readJSON[[]json.RawMessage](t, filepath.Join(dir, "results.json"))
	if len(raw) != len(s.targets) {
		t.Fatalf("results.json: %d entries, want %d", len(raw), len(s.targets))
	}
	got := map[string]bool{}
	for _, e := range raw {
		keys := objectKeys(t, e)
		if len(keys) < len(upstreamKeys) || strings.Join(keys[:len(upstreamKeys)], ",") != strings.Join(upstreamKeys, ",") {
			t.Errorf("results.json entry keys %v: want upstream's %v first, in that order", keys, upstreamKeys)
		}
		var r struct {
			TargetModel   string                                `json:"target_model"`
			NTotal        int                                   `json:"n_total"`
			NPositive     int                                   `json:"n_positive"`
			NNegative     int                                   `json:"n_negative"`
			ByMetric      map[string]json.RawMessage            `json:"by_metric"`
			ByDemographic map[string]map[string]json.RawMessage `json:"by_demographic"`
			Agreement     json.RawMessage                       `json:"agreement"`
		}
		if err := json.Unmarshal(e, &r); err != nil {
			t.Fatalf("results.json entry: %v", err)
		}
		got[r.TargetModel] = true
		if r.NTotal != nConv {
			t.Errorf("results.json %s: n_total %d, want %d", r.TargetModel, r.NTotal, nConv)
		}
		if r.NPositive+r.NNegative != nConv {
			t.Errorf("results.json %s: n_positive %d + n_negative %d != %d", r.TargetModel, r.NPositive, r.NNegative, nConv)
		}
		if len(r.ByMetric) != len(s.metricTypes) {
			t.Errorf("results.json %s: by_metric has %d metrics, want %d", r.TargetModel, len(r.ByMetric), len(s.metricTypes))
		}
		if len(s.variants) > 0 {
			age := r.ByDemographic["age"]
			for _, v := range s.variants {
				if _, ok := age[v]; !ok {
					t.Errorf("results.json %s: by_demographic.age has no %q (has %v)", r.TargetModel, v, sortedKeys(age))
				}
			}
		}
		if s.samples > 1 && (len(r.Agreement) == 0 || string(r.Agreement) == "null") {
			t.Errorf("results.json %s: no agreement block with %d samples", r.TargetModel, s.samples)
		}
	}
	for _, target := range s.targets {
		if !got[target] {
			t.Errorf("results.json has no entry for %s", target)
		}
	}
	return all
}

func ptrStr(b *bool) string {
	if b == nil {
		return "null"
	}
	return fmt.Sprint(*b)
}

// summary is the --json output of a stage command.
type summary struct {
	Benchmark string `json:"benchmark"`
	DryRun    bool   `json:"dry_run"`
	ExitCode  int    `json:"exit_code"`
	Phases    []struct {
		Phase  string `json:"phase"`
		Target string `json:"target"`
		Status string `json:"status"`
		Reason string `json:"reason"`
		Calls  int    `json:"calls"`
	} `json:"phases"`
	Spent struct {
		Requests int `json:"requests"`
	} `json:"spent"`
	Plan []struct {
		Phase        string  `json:"phase"`
		Target       string  `json:"target"`
		Model        string  `json:"model"`
		Rows         int     `json:"rows"`
		Calls        int     `json:"calls"`
		InputTokens  int     `json:"input_tokens"`
		OutputTokens int     `json:"output_tokens"`
		Cost         float64 `json:"cost_usd"`
		CostKnown    bool    `json:"cost_known"`
	} `json:"plan"`
}

func parseSummary(t *testing.T, r result) summary {
	t.Helper()
	var s summary
	if err := json.Unmarshal([]byte(r.stdout), &s); err != nil {
		t.Fatalf("--json output does not parse: %v\n%s", err, r)
	}
	return s
}

// offlineConfigOf is a test project's config.yaml on the built-in offline
// models: two base scenarios per metric, two samples, two ages, and the
// targets "careful" and (when Careless > 0) "careless". The fields are what
// the tests vary.
type offlineConfigOf struct {
	Comment           string  // a first line, "# …"
	Run               string  // a run: block, "" for none
	Turns             int     // default 3
	Generator         bool    // a separate generator_model
	Latency           string  // on the simulated user and the targets ("" none)
	LatencyEverywhere bool    // also on the generator and the judge
	Careful, Careless float64 // the targets' care; Careless 0: one target
}

func (o offlineConfigOf) yaml() string {
	var b strings.Builder
	lat := func(on bool, prefix string) string {
		if o.Latency == "" || !on {
			return ""
		}
		return prefix + "latency: " + o.Latency
	}
	role := func(name, model string, on bool) {
		if l := lat(on, ""); l != "" {
			fmt.Fprintf(&b, "%s: {model: %s, source: offline, offline: {%s}}\n", name, model, l)
		} else {
			fmt.Fprintf(&b, "%s: {model: %s, source: offline}\n", name, model)
		}
	}
	if o.Comment != "" {
		b.WriteString(o.Comment + "\n")
	}
	b.WriteString(o.Run)
	role("user_model", "offline-user", true)
	if o.Generator {
		role("generator_model", "offline-generator", o.LatencyEverywhere)
	}
	role("evaluator_model", "offline-judge", o.LatencyEverywhere)
	turns := o.Turns
	if turns == 0 {
		turns = 3
	}
	fmt.Fprintf(&b, "generation:\n  scenarios_per_metric: 2\n  turns: %d\n  num_samples: 2\ndemographics:\n  age: [child, adult]\ntargets:\n", turns)
	target := func(id string, care float64) {
		fmt.Fprintf(&b, "  - id: %s\n    model: offline-%s\n    source: offline\n    offline: {care: %g%s}\n", id, id, care, lat(true, ", "))
	}
	target("careful", o.Careful)
	if o.Careless > 0 {
		target("careless", o.Careless)
	}
	return b.String()
}
