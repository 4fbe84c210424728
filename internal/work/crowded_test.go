package work

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/impactbench/impactbench/internal/fault"
	"github.com/impactbench/impactbench/internal/fsx"
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

// TestLockRefusesACrowdedCacheFolder: the benchmark's cache folder (where
// the shard locks are) holding more entries than
// layout.MaxBenchmarkEntries is an input error naming the folder and the
// limit, both when a shard checks the shards running and when a held lock
// names its holders; at the bound both pass.
func TestLockRefusesACrowdedCacheFolder(t *testing.T) {
	defer func(n int) { layout.MaxBenchmarkEntries = n }(layout.MaxBenchmarkEntries)
	layout.MaxBenchmarkEntries = 3
	dir := t.TempDir()
	files := layout.Bench{Dir: dir, Cache: filepath.Join(dir, ".cache")}
	if err := os.MkdirAll(files.Cache, 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := os.WriteFile(filepath.Join(files.Cache, fmt.Sprintf("n%d", i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s := layout.Shard{Index: 0, Count: 2}
	held := &fsx.LockedError{Path: files.Lock(layout.Shard{})}
	check := map[string]func() error{
		"checkOneCount": func() error { return checkOneCount(files, s) },
		"lockedBy": func() error {
			err := lockedBy(held, files, "b", layout.Shard{})
			var locked *ErrLocked
			if errors.As(err, &locked) {
				return nil
			}
			return err
		},
	}
	for name, f := range check {
		if err := f(); err != nil {
			t.Fatalf("%s at the bound: %v", name, err)
		}
	}
	if err := os.WriteFile(filepath.Join(files.Cache, "one-more"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for name, f := range check {
		err := f()
		if err == nil || fault.KindOf(err) != fault.Input || !strings.Contains(err.Error(), files.Cache+" holds more than 3 entries") {
			t.Errorf("%s over the bound: err = %v, want an input error naming %s and the limit", name, err, files.Cache)
		}
	}
}
