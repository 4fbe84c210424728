//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package cli

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// init's next steps look for the source tree in the directories above the
// working directory, which the project does not own: a named pipe called
// go.mod there is not a source tree, and init must not wait on it.
func TestSourceRootSkipsANamedPipe(t *testing.T) {
	top := t.TempDir()
	pipe := filepath.Join(top, "go.mod")
	if err := syscall.Mkfifo(pipe, 0o644); err != nil {
		t.Skipf("no named pipes here: %v", err)
	}
	child := filepath.Join(top, "a", "b")
	if err := os.MkdirAll(child, 0o755); err != nil {
		t.Fatal(err)
	}
	got := make(chan string, 1)
	go func() { got <- sourceRoot(child) }()
	select {
	case root := <-got:
		if root != "" {
			t.Errorf("sourceRoot = %q, want none", root)
		}
	case <-time.After(10 * time.Second):
		if w, err := os.OpenFile(pipe, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			w.Close() // let the blocked reader go
		}
		t.Fatal("sourceRoot still waiting on a named pipe called go.mod after 10 s")
	}
}
