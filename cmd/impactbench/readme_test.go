package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// The README's commands are promises: these tests run them as a newcomer
// would type them, with the test's binary standing in for `go run` and
// `go install`.

// readmeBlocks returns the lines of the fenced blocks of language lang in
// the README section whose "## " heading is section ("" for the part before
// the first heading), without blank lines and whole-line comments.
func readmeBlocks(t *testing.T, section, lang string) []string {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	cur, inBlock, found := "", false, false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		ln := sc.Text()
		switch {
		case !inBlock && strings.HasPrefix(ln, "## "):
			cur = strings.TrimSpace(ln[3:])
		case !inBlock && strings.HasPrefix(ln, "```"+lang) && strings.TrimSpace(ln[3:]) == lang:
			inBlock = true
		case inBlock && strings.HasPrefix(ln, "```"):
			inBlock = false
		case inBlock && cur == section:
			found = true
			s := strings.TrimSpace(ln)
			if s != "" && !strings.HasPrefix(s, "#") {
				out = append(out, ln)
			}
		}
	}
	if !found {
		t.Fatalf("README: no %s block in section %q", lang, section)
	}
	return out
}

// shell runs one README line with sh in dir, the test binary first on PATH
// as `impactbench`.
func shell(t *testing.T, dir, binDir, line string, env ...string) string {
	t.Helper()
	cmd := exec.Command("sh", "-c", line)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "PATH="+binDir+string(os.PathListSeparator)+os.Getenv("PATH"), "NO_COLOR=1"), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("README command %q in %s: %v\n%s", line, dir, err, out)
	}
	return string(out)
}

// binOnPath makes a directory holding `impactbench` (the test binary).
func binOnPath(t *testing.T) string {
	t.Helper()
	d := t.TempDir()
	if err := os.Symlink(ibBin, filepath.Join(d, "impactbench")); err != nil {
		t.Fatal(err)
	}
	return d
}

var goRunBinary = regexp.MustCompile(`go run \.{1,2}/cmd/impactbench`)

func TestREADMEQuickStart(t *testing.T) {
	lines := readmeBlocks(t, "", "sh")
	bin := binOnPath(t)
	root := t.TempDir()
	ran := 0
	for _, ln := range lines {
		if strings.HasPrefix(strings.TrimSpace(ln), "go test") {
			continue // the test command is this suite itself
		}
		shell(t, root, bin, goRunBinary.ReplaceAllString(ln, "impactbench"))
		ran++
	}
	if ran != 1 {
		t.Fatalf("ran %d quick-start commands, want 1", ran)
	}
	bench := filepath.Join(root, "demo", "benchmarks", "example")
	if _, err := os.Stat(filepath.Join(bench, "report.html")); err != nil {
		t.Errorf("the quick start promises report.html: %v", err)
	}
	// The README says the example makes 32 conversations.
	total := 0
	runs, _ := filepath.Glob(filepath.Join(bench, "runs", "*", "conversations.json"))
	for _, p := range runs {
		var rows []json.RawMessage
		b, err := os.ReadFile(p)
		if err != nil || json.Unmarshal(b, &rows) != nil {
			t.Fatalf("%s: %v", p, err)
		}
		total += len(rows)
	}
	if total != 32 {
		t.Errorf("the example made %d conversations; the README says 32", total)
	}
}

// readmeMaxLines is the README's length budget (issue #32): a newcomer's
// page, with the reference in docs/.
const readmeMaxLines = 250

// TestREADMEShortAndStartsWithTheTwoCommands: the README stays within its
// budget, and its first block is the two commands — the offline run and the
// test command — before any other block.
func TestREADMEShortAndStartsWithTheTwoCommands(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "\n"); n > readmeMaxLines {
		t.Errorf("README.md has %d lines, more than %d: move reference material into docs/ and link it", n, readmeMaxLines)
	}
	first := strings.SplitN(string(b), "```", 3)
	if len(first) < 3 || !strings.HasPrefix(first[1], "sh\n") {
		t.Fatal("README.md: no fenced sh block")
	}
	var cmds []string
	for _, ln := range strings.Split(first[1], "\n")[1:] {
		if s := strings.TrimSpace(ln); s != "" && !strings.HasPrefix(s, "#") {
			cmds = append(cmds, s)
		}
	}
	if len(cmds) != 2 || !goRunBinary.MatchString(cmds[0]) || !strings.Contains(cmds[0], " run ") || cmds[1] != "go test -race ./..." {
		t.Errorf("README.md's first block is %q, want the offline run (go run ./cmd/impactbench … run …) and `go test -race ./...`", cmds)
	}
}

func TestREADMEFirstBenchmark(t *testing.T) {
	const section = "Your first real benchmark"
	lines := readmeBlocks(t, section, "sh")
	bin := binOnPath(t)
	dir := t.TempDir()
	var project string
	for _, ln := range lines {
		s := strings.TrimSpace(ln)
		switch {
		case strings.HasPrefix(s, "go install"), strings.HasPrefix(s, "export PATH"):
			continue // binOnPath stands in for the install
		case strings.HasPrefix(s, "impactbench init"):
			shell(t, dir, bin, s)
			f := strings.Fields(strings.SplitN(s, "&&", 2)[0])
			project = filepath.Join(dir, f[len(f)-1])
			copyBenchmarkWithoutMetrics(t, project)
			continue
		}
		if project == "" {
			t.Fatalf("README %s: %q comes before `impactbench init`", section, s)
		}
		if strings.HasPrefix(s, "impactbench view") {
			reviewInViewer(t, project, bin, s) // a person in the viewer's calibration queue
			continue
		}
		out := shell(t, project, bin, s)
		if strings.HasPrefix(s, "impactbench calibrate") && !strings.Contains(s, "--plan") {
			assertCorrected(t, filepath.Join(project, "benchmarks", "mybench"), out)
		}
	}
	for _, p := range []string{"benchmarks/mybench/results.json", "benchmarks/mybench/report.html"} {
		if _, err := os.Stat(filepath.Join(project, p)); err != nil {
			t.Errorf("the walkthrough promises %s: %v", p, err)
		}
	}

	// Step 3's config, with real providers, is a valid config: a dry run
	// (which needs no key) accepts it.
	yml := strings.Join(readmeBlocks(t, section, "yaml"), "\n") + "\n"
	if err := os.WriteFile(filepath.Join(project, "real.yaml"), []byte(yml), 0o644); err != nil {
		t.Fatal(err)
	}
	out := shell(t, project, bin, "impactbench --config real.yaml run mybench --dry-run")
	if !strings.Contains(out, "estimated cost") {
		t.Errorf("dry run with the README's config printed no estimate:\n%s", out)
	}
}

// copyBenchmarkWithoutMetrics does step 4 by hand: the example benchmark
// copied to benchmarks/mybench with its metrics removed, so gen-metrics
// writes them.
func copyBenchmarkWithoutMetrics(t *testing.T, project string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(project, "benchmarks", "example", "benchmark.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	if i := strings.Index(s, "\nmetrics:"); i >= 0 {
		s = s[:i+1]
	}
	dst := filepath.Join(project, "benchmarks", "mybench")
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dst, "benchmark.yaml"), []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestDocsLinks: every relative link of the README and docs/ names a file
// that exists and, with a #fragment, a heading or anchor in it.
func TestDocsLinks(t *testing.T) {
	root := filepath.Join("..", "..")
	pages, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	pages = append(pages, filepath.Join(root, "README.md"), filepath.Join(root, "ARCHITECTURE.md"))
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	for _, page := range pages {
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range link.FindAllStringSubmatch(string(b), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, frag, _ := strings.Cut(target, "#")
			path := page
			if file != "" {
				path = filepath.Join(filepath.Dir(page), file)
			}
			body, err := os.ReadFile(path)
			if err != nil {
				t.Errorf("%s: link %s: %v", filepath.Base(page), target, err)
				continue
			}
			if frag != "" && !hasAnchor(string(body), frag) {
				t.Errorf("%s: link %s: no heading or anchor %q in %s", filepath.Base(page), target, frag, filepath.Base(path))
			}
		}
	}
}

// hasAnchor reports whether markdown has a heading whose GitHub anchor is
// frag, or an explicit <a id="frag">.
func hasAnchor(markdown, frag string) bool {
	if strings.Contains(markdown, `<a id="`+frag+`">`) {
		return true
	}
	strip := regexp.MustCompile("[^a-z0-9 _-]")
	for _, ln := range strings.Split(markdown, "\n") {
		h := strings.TrimLeft(ln, "#")
		if len(h) == len(ln) || !strings.HasPrefix(h, " ") {
			continue
		}
		a := strip.ReplaceAllString(strings.ToLower(strings.TrimSpace(h)), "")
		if strings.ReplaceAll(a, " ", "-") == frag {
			return true
		}
	}
	return false
}

// reviewInViewer does what step 8 asks of a person: it starts the README's
// `impactbench view` line (on a free port, printing its address as JSON),
// opens the benchmark's calibration queue as the page does, and labels
// every item it serves, blind — through the same API the page uses, with
// the page's token — until the queue is empty. The person agrees with the
// judge except on every ninth item; not told the verdict, they find it
// as a reader would, from the transcript (here: the judge's row for the
// same scenario and transcript in scores.json).
func reviewInViewer(t *testing.T, project, binDir, line string) {
	t.Helper()
	// The README's line, on a free port instead of 8377, printing its
	// address as JSON (its comment dropped, or the flags would be in it).
	cmdLine, _, _ := strings.Cut(line, "#")
	cmd := exec.Command("sh", "-c", "exec "+strings.TrimSpace(cmdLine)+" --addr 127.0.0.1:0 --json")
	cmd.Dir = project
	cmd.Env = append(os.Environ(), "PATH="+binDir+string(os.PathListSeparator)+os.Getenv("PATH"), "NO_COLOR=1")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("README command %q: %v", line, err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	var started struct {
		URL string `json:"url"`
	}
	timer := time.AfterFunc(time.Minute, func() { _ = cmd.Process.Kill() }) // never hang on a viewer that prints nothing
	err = json.NewDecoder(stdout).Decode(&started)
	timer.Stop()
	if err != nil || started.URL == "" {
		t.Fatalf("README command %q printed no address: %v\n%s", line, err, stderr.String())
	}
	base := strings.TrimSuffix(started.URL, "/")
	page := httpGet(t, base+"/")
	tok := regexp.MustCompile(`name="ib-token" content="([0-9a-f]+)"`).FindStringSubmatch(page)
	if tok == nil {
		t.Fatalf("the viewer's page carries no token:\n%s", page)
	}
	judge := judgedRows(t, filepath.Join(project, "benchmarks", "mybench"))
	labelled := 0
	for range 500 {
		var q struct {
			Items []struct {
				Item string `json:"item"`
			} `json:"items"`
		}
		mustJSON(t, httpGet(t, base+"/api/b/mybench/queue?kind=calibration&labeler=ana"), &q)
		if len(q.Items) == 0 {
			break
		}
		var it struct {
			Scenario struct {
				ID      string `json:"id"`
				Persona string `json:"persona"`
			} `json:"scenario"`
			Transcript json.RawMessage `json:"transcript"`
			ConvID     string          `json:"conv_id"`
		}
		mustJSON(t, httpGet(t, base+"/api/b/mybench/item?labeler=ana&id="+q.Items[0].Item), &it)
		if it.ConvID != "" || it.Scenario.ID != "" {
			t.Fatalf("blind review answered a conv_id (%q) or a scenario id (%q)", it.ConvID, it.Scenario.ID)
		}
		// The person reads the persona and the transcript, as the page shows them.
		present, ok := judge[it.Scenario.Persona+"\x00"+compactJSON(t, it.Transcript)]
		if !ok {
			t.Fatalf("item %s: no judged conversation with this scenario and transcript", q.Items[0].Item)
		}
		if labelled%9 == 8 {
			present = !present
		}
		body := fmt.Sprintf(`{"item": %q, "present": %v, "labeler": "ana", "note": ""}`, q.Items[0].Item, present)
		req, _ := http.NewRequest("POST", base+"/api/b/mybench/labels", strings.NewReader(body))
		req.Header.Set("Origin", base)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-IB-Token", tok[1])
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("label: %s", resp.Status)
		}
		labelled++
	}
	if labelled < 20 {
		t.Fatalf("the calibration queue served %d items; the plan asks for more", labelled)
	}
	t.Logf("README step 8: labelled %d conversations from the calibration queue", labelled)
}

// judgedRows maps scenario id + transcript to the judge's verdict.
func judgedRows(t *testing.T, bench string) map[string]bool {
	t.Helper()
	var scens []struct {
		ID      string `json:"id"`
		Persona string `json:"persona"`
	}
	mustJSON(t, readText(t, filepath.Join(bench, "scenarios.json")), &scens)
	persona := map[string]string{}
	for _, sc := range scens {
		persona[sc.ID] = sc.Persona
	}
	out := map[string]bool{}
	runs, _ := filepath.Glob(filepath.Join(bench, "runs", "*"))
	for _, run := range runs {
		var convs []struct {
			ID         string          `json:"id"`
			ConvID     string          `json:"conv_id"`
			Transcript json.RawMessage `json:"transcript"`
		}
		var scores []struct {
			ConvID  string `json:"conv_id"`
			Present *bool  `json:"present"`
		}
		mustJSON(t, readText(t, filepath.Join(run, "conversations.json")), &convs)
		mustJSON(t, readText(t, filepath.Join(run, "scores.json")), &scores)
		present := map[string]bool{}
		for _, s := range scores {
			if s.Present != nil {
				present[s.ConvID] = *s.Present
			}
		}
		for _, c := range convs {
			out[persona[c.ID]+"\x00"+compactJSON(t, c.Transcript)] = present[c.ConvID]
		}
	}
	return out
}

// assertCorrected: calibrate printed corrected rates, and results.json has
// one for every metric of every target, each from the metric's own labels
// (every target's pooled): the queue drew what the plan asked for.
func assertCorrected(t *testing.T, bench, out string) {
	t.Helper()
	if !regexp.MustCompile(`→ \d\.\d\d \[\d\.\d\d, \d\.\d\d\]`).MatchString(out) {
		t.Errorf("README step 8: calibrate printed no corrected rate:\n%s", out)
	}
	var res []struct {
		Target   string `json:"target_model"`
		ByMetric map[string]struct {
			Corrected *struct {
				Estimate *float64 `json:"estimate"`
				Level    string   `json:"level"`
				Warning  string   `json:"warning"`
			} `json:"corrected"`
		} `json:"by_metric"`
	}
	mustJSON(t, readText(t, filepath.Join(bench, "results.json")), &res)
	// The README promises each model's rates corrected with its own
	// labels (level "target") once the plan's labels exist; a metric a
	// model cannot be corrected on (too few rows of a verdict, people who
	// never saw the behaviour, an uninformative judge) carries a warning,
	// never a silent gap.
	corrected := 0
	for _, m := range res {
		for id, r := range m.ByMetric {
			ok := r.Corrected != nil && r.Corrected.Estimate != nil && r.Corrected.Level == "target"
			if ok {
				corrected++
				continue
			}
			if r.Corrected == nil || r.Corrected.Warning == "" {
				t.Errorf("README step 8: %s %s neither corrected nor warned: %+v", m.Target, id, r.Corrected)
			}
		}
	}
	if corrected == 0 {
		t.Errorf("README step 8: no metric of any target was corrected")
	}
}

func httpGet(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s %s", url, resp.Status, b)
	}
	return string(b)
}

func readText(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func mustJSON(t *testing.T, s string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(s), v); err != nil {
		t.Fatalf("%v: %.300s", err, s)
	}
}

func compactJSON(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	var b strings.Builder
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	enc, _ := json.Marshal(v)
	b.Write(enc)
	return b.String()
}

// servePreview runs a README line that serves until Ctrl-C (publish
// --serve) on a free loopback port: it must print where it serves, answer
// a published file with the CORS header impactbench-web needs, and stop
// cleanly on an interrupt.
func servePreview(t *testing.T, dir, binDir, line string) string {
	t.Helper()
	cmd := exec.Command("sh", "-c", "exec "+line+" --addr 127.0.0.1:0")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PATH="+binDir+string(os.PathListSeparator)+os.Getenv("PATH"), "NO_COLOR=1")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	defer func() { _ = cmd.Process.Kill(); <-done }()
	var out strings.Builder
	base := regexp.MustCompile(`PUBLIC_DATA_BASE=(http://127\.0\.0\.1:\d+)`)
	sc := bufio.NewScanner(stderr)
	url := ""
	for url == "" && sc.Scan() {
		out.WriteString(sc.Text() + "\n")
		if m := base.FindStringSubmatch(sc.Text()); m != nil {
			url = m[1]
		}
	}
	if url == "" {
		t.Fatalf("README command %q never said where it serves:\n%s", line, out.String())
	}
	resp, err := http.Get(url + "/data/benchmark-data.json")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Access-Control-Allow-Origin") != "*" {
		t.Errorf("README command %q: GET data/benchmark-data.json: %s, CORS %q", line, resp.Status, resp.Header.Get("Access-Control-Allow-Origin"))
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		done <- err // for the deferred wait
	case <-time.After(10 * time.Second):
		t.Errorf("README command %q did not stop on Ctrl-C", line)
	}
	return out.String()
}

// TestREADMEStudy follows the README's study section on a fresh project
// with two benchmarks: every command works and leaves what it promises.
func TestREADMEStudy(t *testing.T) {
	lines := readmeBlocks(t, "A study of many benchmarks", "sh")
	bin := binOnPath(t)
	dir := t.TempDir()
	shell(t, dir, bin, "impactbench init proj")
	project := filepath.Join(dir, "proj")
	b, err := os.ReadFile(filepath.Join(project, "benchmarks", "example", "benchmark.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(project, "benchmarks", "second"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(project, "benchmarks", "second", "benchmark.yaml"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	outs := map[string]string{}
	for _, ln := range lines {
		s := strings.TrimSpace(ln)
		if strings.Contains(s, "--serve") {
			outs[s] = servePreview(t, project, bin, s)
			continue
		}
		outs[s] = shell(t, project, bin, s)
	}
	for _, p := range []string{"benchmarks/study.json", "benchmarks/example/results.json", "benchmarks/second/results.json", "site-data/data/benchmark-data.json", "study.parquet"} {
		if _, err := os.Stat(filepath.Join(project, p)); err != nil {
			t.Errorf("the study section promises %s: %v", p, err)
		}
	}
	for cmd, want := range map[string]string{"impactbench run all --dry-run": "study of 2 benchmarks: estimated cost", "impactbench status all": "TOTAL",
		"impactbench items all": "Item analysis of second: ", "impactbench export all": "judged rows to study.parquet"} {
		found := false
		for s, out := range outs {
			if strings.HasPrefix(s, cmd) && strings.Contains(out, want) {
				found = true
			}
		}
		if !found {
			t.Errorf("%s printed no %q", cmd, want)
		}
	}
}
