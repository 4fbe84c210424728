package report

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
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
// atomically (temp file + rename): a reader never sees a half-written
// report, and an interrupted build leaves the previous one in place.
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
		name = "report.html"
	}
	path := filepath.Join(benchDir, name)
	f, err := os.CreateTemp(filepath.Dir(path), ".report-*.html.tmp")
	if err != nil {
		return "", fmt.Errorf("report: %w", err)
	}
	tmp := f.Name()
	defer os.Remove(tmp) // no-op after a successful rename
	if err := Build(ctx, in, f); err != nil {
		f.Close()
		return "", err
	}
	// Sync before rename so a crash cannot leave an empty report in place.
	if err := f.Sync(); err != nil {
		f.Close()
		return "", fmt.Errorf("report: %w", err)
	}
	if err := f.Chmod(0o644); err != nil {
		f.Close()
		return "", fmt.Errorf("report: %w", err)
	}
	if err := f.Close(); err != nil {
		return "", fmt.Errorf("report: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return "", fmt.Errorf("report: %w", err)
	}
	return path, nil
}
