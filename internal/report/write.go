package report

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"

	"github.com/impactbench/impactbench/internal/fsx"
	"github.com/impactbench/impactbench/internal/layout"
)

// buildMemoryLimit is WriteFile's soft memory limit (see there).
const buildMemoryLimit = 100 << 20

// Options configure WriteFile.
type Options struct {
	// Settings describe the run (models per role, turns, samples…).
	Settings Settings
	// Output is the file name inside benchDir; default "report.html".
	Output string
}

// WriteFile loads benchDir and writes its report next to the data,
// atomically (package fsx): a reader never sees a half-written report,
// and an interrupted build leaves the previous one in place.
func WriteFile(ctx context.Context, benchDir string, opts Options) (string, error) {
	// The build's live data peaks at about 85 MB for 100,000 conversations,
	// and by default the Go runtime lets the heap grow to twice its live
	// size before collecting. A soft limit makes it collect sooner instead
	// (it never fails an allocation; past it the GC just works harder), so
	// such a report builds in under 150 MB. A GOMEMLIMIT the user set wins.
	if os.Getenv("GOMEMLIMIT") == "" {
		prev := debug.SetMemoryLimit(buildMemoryLimit)
		defer debug.SetMemoryLimit(prev)
	}
	in, err := Load(benchDir, opts.Settings)
	if err != nil {
		return "", err
	}
	name := opts.Output
	if name == "" {
		name = layout.ReportFile
	}
	path := filepath.Join(benchDir, name)
	f, err := fsx.Create(path, fsx.Shared)
	if err != nil {
		return "", fmt.Errorf("report: %w", err)
	}
	defer f.Abort() // a no-op after Commit
	if err := Build(ctx, in, f); err != nil {
		return "", err
	}
	if err := f.Commit(); err != nil {
		return "", fmt.Errorf("report: %w", err)
	}
	return path, nil
}
