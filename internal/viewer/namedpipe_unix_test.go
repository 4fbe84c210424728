//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package viewer

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/impactbench/impactbench/internal/report"
)

// A named pipe where the viewer reads a benchmark's rows becomes a note;
// the index never waits on it (an open of a pipe blocks until a writer
// comes).
func TestViewerIndexDoesNotWaitOnANamedPipe(t *testing.T) {
	dir := t.TempDir()
	pipe := filepath.Join(dir, "scenarios.json")
	if err := syscall.Mkfifo(pipe, 0o644); err != nil {
		t.Skipf("no named pipes here: %v", err)
	}
	done := make(chan *benchIndex, 1)
	go func() { done <- loadIndex("pipe", dir, report.Settings{}, time.Now()) }()
	select {
	case ix := <-done:
		if note := strings.Join(ix.notes, "\n"); !strings.Contains(note, "scenarios.json") || !strings.Contains(note, "named pipe") {
			t.Errorf("notes %q, want one naming scenarios.json as a named pipe", ix.notes)
		}
	case <-time.After(10 * time.Second):
		if w, err := os.OpenFile(pipe, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			w.Close()
		}
		t.Fatal("loadIndex still waiting on the named pipe after 10 s")
	}
}
