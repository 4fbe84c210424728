package work

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/impactbench/impactbench/internal/fault"
	"github.com/impactbench/impactbench/internal/layout"
)

// TestShardCheckRefusesACrowdedRunsFolder: before a shard starts, runs/
// holding more entries than layout.MaxRunEntries is an input error naming
// the folder and the limit, not read whole; at the bound the check passes.
func TestShardCheckRefusesACrowdedRunsFolder(t *testing.T) {
	defer func(n int) { layout.MaxRunEntries = n }(layout.MaxRunEntries)
	layout.MaxRunEntries = 3
	dir := t.TempDir()
	files := layout.Bench{Dir: dir, Cache: filepath.Join(dir, ".cache")}
	runs := files.RunsDir()
	if err := os.MkdirAll(filepath.Join(runs, "t1"), 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if err := os.WriteFile(filepath.Join(runs, fmt.Sprintf("n%d", i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s := layout.Shard{Index: 0, Count: 2}
	if err := checkOneCount(files, s); err != nil {
		t.Fatalf("at the bound: %v", err)
	}
	if err := os.WriteFile(filepath.Join(runs, "one-more"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	err := checkOneCount(files, s)
	if err == nil || fault.KindOf(err) != fault.Input || !strings.Contains(err.Error(), runs+" holds more than 3 entries") {
		t.Errorf("over the bound: err = %v, want an input error naming %s and the limit", err, runs)
	}
}
