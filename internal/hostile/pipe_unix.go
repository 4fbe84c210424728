//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package hostile

import (
	"os"
	"syscall"
	"testing"
	"time"
)

// PipeWait is how long NotBlocked lets a reader run: far past any bounded
// read of a small file, short enough that a reader blocked on a named pipe
// fails its test instead of hanging the suite.
const PipeWait = 5 * time.Second

// Pipe puts a named pipe at path, replacing whatever was there.
func Pipe(t testing.TB, path string) {
	t.Helper()
	if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
}

// NotBlocked runs read, failing the test if it has not returned after
// PipeWait (a read blocked on the named pipe fifo). It then opens the pipe
// for writing and closes it, again until read returns, so that the blocked
// read sees end of file and the test can finish.
func NotBlocked(t testing.TB, fifo string, read func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); read() }()
	select {
	case <-done:
		return
	case <-time.After(PipeWait):
		t.Errorf("reading the named pipe %s still blocks after %s", fifo, PipeWait)
	}
	for {
		// Non-blocking: no reader yet is an error, not a wait; try again.
		if w, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			w.Close()
		}
		select {
		case <-done:
			return
		case <-time.After(10 * time.Millisecond):
		}
	}
}
