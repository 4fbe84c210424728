package runner

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/fault"
	"github.com/impactbench/impactbench/internal/fsx"
	"github.com/impactbench/impactbench/internal/layout"
)

// TestListBenchesRefusesACrowdedFolder: benchmarks/ holding more entries
// than layout.MaxBenchmarkEntries (files count too) is an input error
// naming the folder and the limit, not "no benchmarks directory"; at the
// bound the benchmarks are listed.
func TestListBenchesRefusesACrowdedFolder(t *testing.T) {
	defer func(n int) { layout.MaxBenchmarkEntries = n }(layout.MaxBenchmarkEntries)
	layout.MaxBenchmarkEntries = 3
	p := t.TempDir()
	root := layout.BenchmarksDir(p)
	for _, name := range []string{"a", "b"} {
		if err := os.MkdirAll(layout.BenchDir(p, name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(layout.BenchmarkPath(layout.BenchDir(p, name)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "notes"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := &config.Config{Dir: p}
	if got, err := ListBenches(cfg); err != nil || len(got) != 2 {
		t.Fatalf("at the bound: %v, %v; want a and b", got, err)
	}
	if err := os.WriteFile(filepath.Join(root, "one-more"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := ListBenches(cfg)
	var many *fsx.TooManyEntriesError
	if !errors.As(err, &many) || fault.KindOf(err) != fault.Input || !strings.Contains(err.Error(), fmt.Sprintf("%s holds more than 3 entries", root)) {
		t.Errorf("over the bound: err = %v, want an input error naming %s and the limit", err, root)
	}
}
