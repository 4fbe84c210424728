package main

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
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
		if strings.HasPrefix(s, "impactbench calibrate") {
			labelSome(t, filepath.Join(project, "benchmarks", "mybench"), 12) // a person in `view`
		}
		shell(t, project, bin, s)
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
	pages = append(pages, filepath.Join(root, "README.md"))
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

// labelSome appends n labels.jsonl lines for the first conversations of
// every target, as a person reviewing in the viewer would.
func labelSome(t *testing.T, bench string, n int) {
	t.Helper()
	runs, _ := filepath.Glob(filepath.Join(bench, "runs", "*", "conversations.json"))
	var lines []string
	for _, p := range runs {
		var rows []struct {
			ConvID   string `json:"conv_id"`
			MetricID string `json:"metric_id"`
		}
		b, err := os.ReadFile(p)
		if err != nil || json.Unmarshal(b, &rows) != nil {
			t.Fatalf("%s: %v", p, err)
		}
		for i, r := range rows[:min(n, len(rows))] {
			l, _ := json.Marshal(map[string]any{"conv_id": r.ConvID, "metric_id": r.MetricID, "present": i%2 == 0,
				"labeler": "ana", "note": "", "at": "2026-11-25T00:00:00Z"})
			lines = append(lines, string(l))
		}
	}
	if err := os.WriteFile(filepath.Join(bench, "labels.jsonl"), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
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
		outs[s] = shell(t, project, bin, s)
	}
	for _, p := range []string{"benchmarks/study.json", "benchmarks/example/results.json", "benchmarks/second/results.json", "site-data/data/benchmark-data.json"} {
		if _, err := os.Stat(filepath.Join(project, p)); err != nil {
			t.Errorf("the study section promises %s: %v", p, err)
		}
	}
	for cmd, want := range map[string]string{"impactbench run all --dry-run": "study of 2 benchmarks: estimated cost", "impactbench status all": "TOTAL"} {
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
