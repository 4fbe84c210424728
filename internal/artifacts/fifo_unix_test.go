//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package artifacts

import (
	"path/filepath"
	"testing"

	"github.com/impactbench/impactbench/internal/hostile"
)

// TestErrorLinesOfAPipeDoNotHang: the error path re-reads a file to find
// the line of a problem; a file swapped for a named pipe meanwhile gives
// no line rather than blocking the command forever.
func TestErrorLinesOfAPipeDoNotHang(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "conversations.json")
	hostile.Pipe(t, fifo)
	for name, f := range map[string]func(){
		"lineAt":  func() { lineAt(fifo, 10, true) },
		"lineCol": func() { lineCol(fifo, 10) },
	} {
		t.Run(name, func(t *testing.T) { hostile.NotBlocked(t, fifo, f) })
	}
}
