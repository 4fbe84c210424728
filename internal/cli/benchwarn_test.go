package cli

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestBenchmarkYAMLWarningsPrinted: a key benchmark.yaml does not know
// (kept in the file, not used) is a warning every command that loads the
// file prints on stderr, as config.yaml's are, with file:line:col, once
// per command however often the command reads the file; a clean
// benchmark.yaml gives none.
func TestBenchmarkYAMLWarningsPrinted(t *testing.T) {
	dir := studyProject(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Skipf("no loopback listener: %v", err)
	}
	defer ln.Close()
	bench := filepath.Join(dir, "benchmarks", "example")
	spec := filepath.Join(bench, "benchmark.yaml")
	clean, err := os.ReadFile(spec)
	if err != nil {
		t.Fatal(err)
	}
	line := strings.Count(string(clean), "\n") + 1
	typo := append(append([]byte{}, clean...), "owner: me\n"...)
	warning := "impactbench: warning: " + spec + ":" + strconv.Itoa(line) + ":1: unknown key owner is kept but not used\n"
	commands := [][]string{
		{"run", "example"},
		{"run", "example", "--dry-run"},
		{"run", "all"},
		{"gen-metrics", "example"},
		{"aggregate", "example"},
		{"validate", "example", "--swap", "judge=offline-careful"},
		{"report", "example"},
		{"status", "example"},
		{"status", "all"},
		{"export", "example", "-o", filepath.Join(dir, "x.csv")},
		{"items", "example"},
		{"plan", "example"},
		{"compare", bench, bench},
		{"study"},
		{"publish", "-o", filepath.Join(dir, "site")},
		{"view", "--addr", ln.Addr().String()}, // fails to listen once it has loaded everything
	}
	for _, file := range []struct {
		name string
		body []byte
		want int
	}{{"unknown key", typo, 1}, {"clean", clean, 0}} {
		if err := os.WriteFile(spec, file.body, 0o644); err != nil {
			t.Fatal(err)
		}
		for _, args := range commands {
			t.Run(file.name+"/"+strings.Join(args, " "), func(t *testing.T) {
				code, _, errs := run(t, dir, args...)
				if code != 0 && args[0] != "view" {
					t.Fatalf("exit %d\n%s", code, errs)
				}
				if n := strings.Count(errs, warning); n != file.want || benchWarnings(errs) != file.want {
					t.Errorf("the warning %q printed %d times, want %d; stderr:\n%s", warning, n, file.want, errs)
				}
			})
		}
	}
}

// benchWarnings counts stderr's warnings about a benchmark.yaml.
func benchWarnings(stderr string) int {
	n := 0
	for _, l := range strings.Split(stderr, "\n") {
		if strings.Contains(l, "warning: ") && strings.Contains(l, "benchmark.yaml") {
			n++
		}
	}
	return n
}

// TestInitStudyWarnsOfBenchmarkYAML: init --study drafts the study from
// the project's own benchmarks, reading config.yaml and each
// benchmark.yaml: a benchmark.yaml with an unknown key, a config.yaml with
// a deprecated one, are warned of like in every other command, once; a
// target whose key is unset is no error (drafting calls no model).
func TestInitStudyWarnsOfBenchmarkYAML(t *testing.T) {
	dir := t.TempDir()
	if code, _, errs := run(t, dir, "init", dir); code != 0 {
		t.Fatalf("init: %s", errs)
	}
	src, err := os.ReadFile(filepath.Join(dir, "benchmarks", "example", "benchmark.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	second := filepath.Join(dir, "benchmarks", "second")
	if err := os.MkdirAll(second, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(second, "benchmark.yaml"), append(src, "owner: me\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(dir, "config.yaml")
	cfg, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	// A deprecated key (a warning), and a target whose key is unset: init
	// --study calls no model, so, as status or report, it needs no key.
	edited := strings.Replace(string(cfg), "\nlandmarks:", "\npinpoint:", 1)
	edited = strings.Replace(edited, "\ntargets:\n", "\ntargets:\n  - id: keyed\n    model: claude-haiku-4-5\n    source: anthropic\n    apikey: \"${IMPACTBENCH_TEST_UNSET_KEY}\"\n", 1)
	if !strings.Contains(edited, "pinpoint:") || !strings.Contains(edited, "id: keyed") {
		t.Fatal("config.yaml's edits did not apply")
	}
	if err := os.WriteFile(cfgPath, []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("IMPACTBENCH_TEST_UNSET_KEY", "")
	os.Unsetenv("IMPACTBENCH_TEST_UNSET_KEY")
	code, _, errs := run(t, dir, "init", "--study", dir)
	if code != 0 {
		t.Fatalf("init --study: exit %d\n%s", code, errs)
	}
	if benchWarnings(errs) != 1 || !strings.Contains(errs, filepath.Join(second, "benchmark.yaml")+":") || !strings.Contains(errs, "unknown key owner") {
		t.Errorf("want one warning naming %s's unknown key; stderr:\n%s", second, errs)
	}
	// config.yaml's warnings too, as every command that loads it prints them.
	if n := strings.Count(errs, "warning: "+cfgPath+":"); n != 1 || !strings.Contains(errs, "pinpoint is deprecated") {
		t.Errorf("config.yaml's warning printed %d times, want once; stderr:\n%s", n, errs)
	}
}
