//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package artifacts

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestErrorLinesOfAPipeDoNotHang: the error path re-reads a file to find
// the line of a problem; a file swapped for a named pipe meanwhile gives
// no line rather than blocking the command forever.
func TestErrorLinesOfAPipeDoNotHang(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "conversations.json")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for name, f := range map[string]func(){
		"lineAt":  func() { lineAt(fifo, 10, true) },
		"lineCol": func() { lineCol(fifo, 10) },
	} {
		done := make(chan struct{})
		go func() { defer close(done); f() }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Errorf("%s on a named pipe still blocks after 5s", name)
			if w, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil {
				w.Close()
			}
			<-done
		}
	}
}
