package cli

import (
	"strings"
	"testing"
)

// compare takes benchmark names as every other command does, besides
// directories: `compare example mybench` was refused with "benchmark.yaml
// not found; create it", about a benchmark that exists.
func TestCompareTakesBenchmarkNames(t *testing.T) {
	dir := twoBenchProject(t)
	for _, args := range [][]string{{"aggregate", "all"}} {
		if code, _, errs := run(t, dir, args...); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errs)
		}
	}
	tests := []struct {
		a, b     string
		code     int
		contains string
	}{
		{"example", "zz", 0, "Comparison: A = example"},
		{"example", "nosuch", ExitUsage, "nosuch"},
	}
	for _, tt := range tests {
		code, out, errs := run(t, dir, "compare", tt.a, tt.b, "--force")
		if code != tt.code || !strings.Contains(out+errs, tt.contains) {
			t.Errorf("compare %s %s: exit %d, want %d with %q:\n%s%s", tt.a, tt.b, code, tt.code, tt.contains, out, errs)
		}
	}
}
