package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// --quiet silences what goes to stderr (progress, notes, warnings), not a
// command's results on stdout, and its help says so: a user who reads
// "print nothing but errors" and pipes `status --quiet` expects nothing.
func TestQuietSilencesStderrNotResults(t *testing.T) {
	dir := t.TempDir()
	if code, _, errs := run(t, dir, "init", dir); code != 0 {
		t.Fatalf("init: %d %s", code, errs)
	}
	if code, _, errs := run(t, dir, "run", "example", "--quiet"); code != 0 || errs != "" {
		t.Fatalf("run --quiet: exit %d, stderr %q", code, errs)
	}
	results := 0
	for _, args := range [][]string{{"status", "example"}, {"plan", "example"}, {"items", "example"}} {
		code, out, errs := run(t, dir, append(args, "--quiet")...)
		if code != 0 || errs != "" {
			t.Errorf("%v --quiet: exit %d, stderr %q; want 0 and nothing", args, code, errs)
		}
		if out != "" {
			results++
		}
	}
	usage := newRootCmd(&globals{}).PersistentFlags().Lookup("quiet").Usage
	if results > 0 && (strings.Contains(usage, "nothing but") || !strings.Contains(usage, "stdout")) {
		t.Errorf("--quiet's help %q does not say that results still print on stdout", usage)
	}
}

// TestQuietHidesEveryWarning: --quiet's help promises no warnings on
// stderr, so config.yaml's (a deprecated key), benchmark.yaml's (an
// unknown key, kept but not used), the study's and a deprecated flag's
// note all print without it — each once per command, however often the
// command reads the file (`aggregate all` loads config.yaml once per
// benchmark) — and none with it; errors still print with it.
func TestQuietHidesEveryWarning(t *testing.T) {
	dir := studyProject(t)
	cfgPath := filepath.Join(dir, "config.yaml")
	cfg, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	renamed := strings.Replace(string(cfg), "\nlandmarks:", "\npinpoint:", 1)
	if renamed == string(cfg) {
		t.Fatal("config.yaml has no landmarks key to rename")
	}
	spec := filepath.Join(dir, "benchmarks", "example", "benchmark.yaml")
	bench, err := os.ReadFile(spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfgPath, []byte(renamed), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(spec, append(bench, "owner: me\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	const (
		cfgWarn   = "pinpoint is deprecated; rename it to landmarks"
		benchWarn = "unknown key owner is kept but not used"
		studyWarn = `models.yaml: no model has id "claude-haiku-4-5"`
		flagNote  = "--out is deprecated"
	)
	for _, c := range []struct {
		args []string
		want []string // each printed once without -q
	}{
		{[]string{"status", "example"}, []string{cfgWarn, benchWarn}},
		{[]string{"status", "all"}, []string{cfgWarn, benchWarn}},
		{[]string{"aggregate", "all"}, []string{cfgWarn, benchWarn}},
		{[]string{"report", "example"}, []string{cfgWarn, benchWarn}},
		{[]string{"study"}, []string{cfgWarn, benchWarn, studyWarn}},
		{[]string{"publish", "--out", filepath.Join(dir, "site")}, []string{cfgWarn, benchWarn, studyWarn, flagNote}},
	} {
		name := strings.Join(c.args, " ")
		code, _, errs := run(t, dir, c.args...)
		if code != 0 {
			t.Fatalf("%s: exit %d\n%s", name, code, errs)
		}
		for _, w := range c.want {
			if n := strings.Count(errs, w); n != 1 {
				t.Errorf("%s: %q printed %d times, want once; stderr:\n%s", name, w, n, errs)
			}
		}
		code, _, errs = run(t, dir, append(c.args, "-q")...)
		if code != 0 || errs != "" {
			t.Errorf("%s -q: exit %d, stderr %q; want 0 and no warning", name, code, errs)
		}
	}
	code, _, errs := run(t, dir, "-q", "run", "example", "nope")
	if code != ExitUsage || !strings.Contains(errs, `target "nope" is not in`) || strings.Contains(errs, "warning") {
		t.Errorf("-q run example nope: exit %d, want %d with the error and no warning; stderr:\n%s", code, ExitUsage, errs)
	}
}
