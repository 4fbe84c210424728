package viewer

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/impactbench/impactbench/internal/fault"
	"github.com/impactbench/impactbench/internal/fsx"
	"github.com/impactbench/impactbench/internal/layout"
)

// TestCrowdedRunsFolderIsRefusedWhenTheViewerLoads: a benchmark's runs/
// holding more entries than its bound stops view (Check: an input error
// naming the folder and the limit); a viewer already running says so on
// the benchmark's pages (a note naming the folder) instead of showing a
// benchmark without runs, and its report page is an error naming it. At
// the bound the runs are read.
func TestCrowdedRunsFolderIsRefusedWhenTheViewerLoads(t *testing.T) {
	project, bench := miniProject(t)
	runs := layout.Bench{Dir: bench}.RunsDir()
	ents, err := os.ReadDir(runs)
	must(t, err)
	prev := layout.MaxRunEntries
	t.Cleanup(func() { layout.MaxRunEntries = prev }) // after the server stops
	layout.MaxRunEntries = len(ents)
	if err := Check(project); err != nil {
		t.Fatalf("at the bound: %v", err)
	}
	_, base := StartForTest(t, Options{ProjectDir: project})
	if _, progress := do(t, base, req{"GET", "/api/b/mini/progress", "", nil}); !strings.Contains(progress, `"alpha"`) || strings.Contains(progress, "holds more than") {
		t.Fatalf("at the bound, progress does not show the runs: %.400s", progress)
	}

	must(t, os.WriteFile(filepath.Join(runs, "one-more"), nil, 0o644))
	want := fmt.Sprintf("%s holds more than %d entries", runs, layout.MaxRunEntries)
	err = Check(project)
	var many *fsx.TooManyEntriesError
	if !errors.As(err, &many) || many.Path != runs || fault.KindOf(err) != fault.Input || !strings.Contains(err.Error(), want) {
		t.Errorf("Check over the bound: %v, want an input error naming %s and its limit", err, runs)
	}
	time.Sleep(staleCheck)
	_, progress := do(t, base, req{"GET", "/api/b/mini/progress", "", nil})
	if !strings.Contains(progress, "runs could not be read") || !strings.Contains(progress, fmt.Sprintf("holds more than %d entries", layout.MaxRunEntries)) {
		t.Errorf("over the bound, progress does not say runs/ is refused: %.600s", progress)
	}
	if code, body := do(t, base, req{"GET", "/report/mini", "", nil}); code == 200 || !strings.Contains(body, "holds more than") {
		t.Errorf("over the bound, the report page: %d %.300s, want an error naming runs/", code, body)
	}
}

// TestCrowdedBenchmarksFolderIsRefused: benchmarks/ holding more entries
// than its bound stops view (an input error naming the folder), rather
// than serving a project with no benchmarks.
func TestCrowdedBenchmarksFolderIsRefused(t *testing.T) {
	project, _ := miniProject(t)
	dir := layout.BenchmarksDir(project)
	ents, err := os.ReadDir(dir)
	must(t, err)
	prev := layout.MaxBenchmarkEntries
	t.Cleanup(func() { layout.MaxBenchmarkEntries = prev })
	layout.MaxBenchmarkEntries = len(ents)
	must(t, Check(project))
	must(t, os.WriteFile(filepath.Join(dir, "one-more"), nil, 0o644))
	err = Check(project)
	var many *fsx.TooManyEntriesError
	if !errors.As(err, &many) || many.Path != dir || fault.KindOf(err) != fault.Input {
		t.Errorf("Check with a crowded benchmarks/: %v, want an input error naming %s", err, dir)
	}
}
