package runner

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/impactbench/impactbench/internal/config"
)

// A benchmark name that is not found names what it looked for and, like a
// mistyped command or config key, the benchmark it was likely meant to be.
func TestResolveBenchSuggestsABenchmark(t *testing.T) {
	dir := t.TempDir()
	for _, b := range []string{"example", "healthy-reliance"} {
		if err := os.MkdirAll(filepath.Join(dir, "benchmarks", b), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "benchmarks", b, "benchmark.yaml"), []byte("name: x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg := &config.Config{Dir: dir}
	tests := []struct {
		arg, want string
	}{
		{"exampel", "did you mean example?"},
		{"healthy_reliance", "did you mean healthy-reliance?"},
		{"benchmarks/exmaple", "did you mean example?"},
		{"zzz", ""},
	}
	for _, tt := range tests {
		t.Run(tt.arg, func(t *testing.T) {
			_, err := ResolveBench(cfg, tt.arg)
			if err == nil {
				t.Fatal("err = nil")
			}
			msg := err.Error()
			if !strings.Contains(msg, "not found") {
				t.Errorf("error %q does not say the benchmark is not found", msg)
			}
			if tt.want == "" && strings.Contains(msg, "did you mean") {
				t.Errorf("error %q suggests a benchmark for a name like none", msg)
			}
			if tt.want != "" && !strings.Contains(msg, tt.want) {
				t.Errorf("error %q lacks %q", msg, tt.want)
			}
		})
	}
	if got, err := ResolveBench(cfg, "example"); err != nil || filepath.Base(got) != "example" {
		t.Errorf("ResolveBench(example) = %q, %v", got, err)
	}
}
