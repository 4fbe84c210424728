//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package report

import (
	"bytes"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// A named pipe as benchmark.yaml must not hang status or report: status
// shows the folder's name instead, report refuses the file.
func TestNamedPipeBenchmarkYAMLDoesNotBlock(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "benchmark.yaml")
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 2)
	go func() {
		var buf bytes.Buffer
		done <- Status(&buf, dir, nil, StatusOptions{})
	}()
	go func() {
		_, err := Load(dir, Settings{})
		if err == nil {
			t.Error("report loaded a named pipe as benchmark.yaml")
		}
		done <- nil
	}()
	for range 2 {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(5 * time.Second):
			for range 2 {
				if w, err := os.OpenFile(path, os.O_WRONLY, 0); err == nil {
					w.Close()
				}
			}
			t.Fatal("reading a named pipe as benchmark.yaml blocked")
		}
	}
}
