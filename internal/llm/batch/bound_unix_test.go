//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package batch

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// within runs f, failing the test if it has not returned after a few
// seconds (a read blocked on a named pipe), then unblocking it by opening
// the pipe for writing.
func within(t *testing.T, fifo string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Errorf("reading the named pipe %s still blocks after 5s", fifo)
		if w, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil {
			w.Close()
		}
		<-done
	}
}

// TestCacheFilesThatArePipesDoNotHang: a named pipe where the state file
// or a batch's saved results go is not read (it would block Run forever):
// the state file is refused naming it, the results count as missing.
func TestCacheFilesThatArePipesDoNotHang(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	within(t, path, func() {
		_, err := loadState(path, "p")
		var se *StateError
		if !errors.As(err, &se) || se.Path != path || !strings.Contains(err.Error(), "named pipe") {
			t.Errorf("a state file that is a named pipe: want a *StateError naming it, got %T %v", err, err)
		}
	})
	results := cachePath(path, "batch_1")
	if err := os.MkdirAll(filepath.Dir(results), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(results, 0o600); err != nil {
		t.Fatal(err)
	}
	within(t, results, func() {
		if _, ok := loadResults(path, "batch_1"); ok {
			t.Error("saved results that are a named pipe were read")
		}
	})
}
