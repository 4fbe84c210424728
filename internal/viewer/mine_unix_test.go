//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package viewer

import (
	"syscall"
	"testing"
)

// TestMineSaysALabelsFileIsANamedPipe: a labels.jsonl that is a named pipe
// is a note in /api/mine too, answered without waiting on the pipe.
func TestMineSaysALabelsFileIsANamedPipe(t *testing.T) {
	mineNotes(t, func(path string) {
		if err := syscall.Mkfifo(path, 0o644); err != nil {
			t.Skipf("no named pipes here: %v", err)
		}
	}, "named pipe")
}
