package cli

import (
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
