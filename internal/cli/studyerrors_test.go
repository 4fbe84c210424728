package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSeveralBenchmarksSayAnErrorOnce: a command over several benchmarks
// (run all, run b1 b2, merge all) reports the same error from every
// benchmark once, as it is, not once per benchmark; an error only some
// benchmarks give names them, once. Every error is still reported.
func TestSeveralBenchmarksSayAnErrorOnce(t *testing.T) {
	dir := twoBenchProject(t)
	const (
		target   = `target "nope" is not in`
		noShards = "no shard files found under runs/*/"
		empty    = "holds no scenarios"
	)
	for _, c := range []struct {
		args []string
		want map[string]int // stderr text → times
	}{
		{[]string{"run", "example", "zz", "nope"}, map[string]int{target: 1}},
		{[]string{"run", "all", "nope"}, map[string]int{target: 1}},
		{[]string{"run", "all", "nope", "--dry-run"}, map[string]int{target: 1}},
		{[]string{"merge", "all"}, map[string]int{noShards: 1, "example:": 0, "zz:": 0}},
		{[]string{"merge", "example", "zz"}, map[string]int{noShards: 1}},
	} {
		name := strings.Join(c.args, " ")
		code, _, errs := run(t, dir, c.args...)
		if code != ExitUsage {
			t.Errorf("%s: exit %d, want %d\n%s", name, code, ExitUsage, errs)
		}
		for text, n := range c.want {
			if got := strings.Count(errs, text); got != n {
				t.Errorf("%s: %q printed %d times, want %d; stderr:\n%s", name, text, got, n, errs)
			}
		}
	}
	// Only zz fails: its error names it, once; example is not named.
	if err := os.WriteFile(filepath.Join(dir, "benchmarks", "zz", "scenarios.json"), []byte("[]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errs := run(t, dir, "run", "all")
	if code != ExitUsage || strings.Count(errs, empty) != 1 || !strings.Contains(errs, "impactbench: zz: ") || strings.Contains(errs, "example:") {
		t.Errorf("run all with zz's scenarios.json empty: exit %d, want %d naming zz once; stderr:\n%s", code, ExitUsage, errs)
	}
}
