package runner

import (
	"os"
	"path/filepath"
	"strings"
	"time"
)

// staleTempAge is how old a temp file must be before a run removes it. Every
// impactbench writer that can run beside a locked run (report, export) uses
// a temp file for seconds at most, so a minute-old one is a crash's leftover.
const staleTempAge = time.Minute

// sweepTemps removes temp files left behind by a process killed in the middle
// of an atomic write (temp file written, not yet renamed into place). They are
// never read, but they pile up over interrupted runs and a report's can be
// large. It runs with the benchmark lock held, so no other run is writing
// them; it only looks where the tool writes and only at its own temp names.
func sweepTemps(now time.Time, dirs ...string) (removed int) {
	for _, dir := range dirs {
		ents, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, e := range ents {
			if !e.Type().IsRegular() || !isTempName(e.Name()) {
				continue
			}
			info, err := e.Info()
			if err != nil || now.Sub(info.ModTime()) < staleTempAge {
				continue
			}
			if os.Remove(filepath.Join(dir, e.Name())) == nil {
				removed++
			}
		}
	}
	return removed
}

// isTempName matches the temp names the tool's writers create:
// ".<name>.tmp-*" (artifacts, export), ".tmp-*" (call store, manifest, batch
// state), ".report-*.html.tmp" and ".benchmark.yaml.*.tmp".
func isTempName(name string) bool {
	if !strings.HasPrefix(name, ".") {
		return false
	}
	return strings.HasPrefix(name, ".tmp-") || strings.Contains(name, ".tmp-") || strings.HasSuffix(name, ".tmp")
}

// tempDirs lists where outputs of this benchmark are written atomically.
func (r *Runner) tempDirs() []string {
	dirs := []string{r.outDir, r.cacheDir, filepath.Join(r.cacheDir, "calls"), r.bench.Dir}
	runs, _ := filepath.Glob(filepath.Join(r.outDir, "runs", "*"))
	judges, _ := filepath.Glob(filepath.Join(r.outDir, "runs", "*", "judges", "*"))
	return append(append(dirs, runs...), judges...)
}
