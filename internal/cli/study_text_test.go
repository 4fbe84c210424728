package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestStudyPrintsNamesAsText: a benchmark folder whose name holds
// terminal escape sequences, and taxonomy names holding them, reach
// neither stdout nor stderr of study, status --study, publish or
// compare --study as
// control characters; init --study refuses to draft keys from such a
// folder (exit 2 naming it).
func TestStudyPrintsNamesAsText(t *testing.T) {
	dir := studyProject(t)
	evil := "evil\x1b]0;pwned\x07\x1b[2J\u009b2J\rX"
	runDir := filepath.Join(dir, "benchmarks", evil, "runs", "m")
	if err := os.MkdirAll(runDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(runDir, "scores.json"), []byte("[]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tax := filepath.Join(dir, "benchmarks", "taxonomy.json")
	b, err := os.ReadFile(tax)
	if err != nil {
		t.Fatal(err)
	}
	var name string
	for _, line := range strings.Split(string(b), "\n") {
		if i := strings.Index(line, `"name": "`); i >= 0 {
			name = strings.TrimSuffix(strings.TrimSuffix(line[i+len(`"name": "`):], ","), `"`)
			break
		}
	}
	if name == "" {
		t.Fatalf("no name in %s", b)
	}
	b = []byte(strings.Replace(string(b), `"name": "`+name+`"`, `"name": "`+name+`\u001b]0;title\u0007\u001b[31m"`, 1))
	if err := os.WriteFile(tax, b, 0o644); err != nil {
		t.Fatal(err)
	}
	site := filepath.Join(dir, "site")
	for _, args := range [][]string{{"study"}, {"status", "--study"}, {"publish", "--output", site}, {"publish", "--output", site, "--dry-run"}} {
		code, out, errs := run(t, dir, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d\n%s", args, code, errs)
		}
		for where, text := range map[string]string{"stdout": out, "stderr": errs} {
			if i := strings.IndexAny(text, "\x1b\x07\r\u009b"); i >= 0 {
				t.Errorf("%v: %s holds a control character at %d:\n%q", args, where, i, text)
			}
		}
		if args[0] != "status" && !strings.Contains(errs, "evil]0;pwned") {
			t.Errorf("%v: the warning about the folder is missing:\n%s", args, errs)
		}
	}
	// compare --study prints the levels and models of two study.json files
	// from anywhere.
	sj := filepath.Join(dir, "benchmarks", "study.json")
	b, err = os.ReadFile(sj)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(sj, []byte(strings.ReplaceAll(string(b), `"overall"`, `"overall\u001b]0;t\u0007"`)), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := run(t, dir, "compare", "--study", dir, dir)
	if code != 0 || !strings.Contains(out, "overall]0;t") || strings.ContainsAny(out+errs, "\x1b\x07") {
		t.Errorf("compare --study: exit %d\n%q\n%s", code, out, errs)
	}
	yaml := "name: evil\ndescription: d\nmetrics:\n  - {id: m01, name: M, type: positive, definition: d, examples: [e]}\n"
	if err := os.WriteFile(filepath.Join(dir, "benchmarks", evil, "benchmark.yaml"), []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errs = run(t, dir, "init", "--study", dir, "--force")
	if code != ExitUsage || !strings.Contains(errs, "rename the folder") || strings.ContainsAny(errs, "\x1b\x07") {
		t.Errorf("init --study over a folder named with escapes: exit %d\n%q", code, errs)
	}
}
