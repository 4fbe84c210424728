//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package viewer

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/impactbench/impactbench/internal/hostile"
	"github.com/impactbench/impactbench/internal/report"
)

// A named pipe where the viewer reads a benchmark's rows becomes a note;
// the index never waits on it (an open of a pipe blocks until a writer
// comes).
func TestViewerIndexDoesNotWaitOnANamedPipe(t *testing.T) {
	dir := t.TempDir()
	pipe := filepath.Join(dir, "scenarios.json")
	hostile.Pipe(t, pipe)
	hostile.NotBlocked(t, pipe, func() {
		ix := loadIndex("pipe", dir, report.Settings{}, time.Now())
		if note := strings.Join(ix.notes, "\n"); !strings.Contains(note, "scenarios.json") || !strings.Contains(note, "named pipe") {
			t.Errorf("notes %q, want one naming scenarios.json as a named pipe", ix.notes)
		}
	})
}
