//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package report

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/impactbench/impactbench/internal/artifacts"
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

// swapForPipe replaces path with a named pipe.
func swapForPipe(t *testing.T, path string) {
	t.Helper()
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		t.Fatal(err)
	}
}

// within runs f, failing the test (and unblocking f by opening the pipe
// for writing) when it takes more than 5 seconds.
func within(t *testing.T, what, pipe string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Errorf("%s: still blocked on a named pipe after 5s", what)
		for {
			if w, err := os.OpenFile(pipe, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
				w.Close()
			}
			select {
			case <-done:
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}
}

// TestReportOfFilesSwappedForPipesDoesNotHang: the report reads a file
// Load validated a second time (the conversations, scores and scenarios it
// kept without their bulk); one swapped for a named pipe in between fails
// the report instead of blocking it forever.
func TestReportOfFilesSwappedForPipesDoesNotHang(t *testing.T) {
	for _, rel := range []string{
		"scenarios.json",
		filepath.Join("runs", "alpha", "conversations.json"),
		filepath.Join("runs", "beta", "scores.json"),
	} {
		t.Run(rel, func(t *testing.T) {
			dir := miniBench(t)
			in, err := Load(dir, Settings{Generated: fixedTime})
			if err != nil {
				t.Fatal(err)
			}
			pipe := filepath.Join(dir, rel)
			swapForPipe(t, pipe)
			within(t, "Build", pipe, func() {
				if err := Build(context.Background(), in, io.Discard); err == nil {
					t.Errorf("Build read a named pipe as %s", rel)
				}
			})
		})
	}
}

// TestLongRowOfAFileSwappedForAPipeDoesNotHang: a row longer than the
// single-value limit is read back to check its values; the file swapped for
// a named pipe meanwhile fails the load instead of blocking it.
func TestLongRowOfAFileSwappedForAPipeDoesNotHang(t *testing.T) {
	dir := miniBench(t)
	path := filepath.Join(dir, "scenarios.json")
	rr, ok, err := artifacts.OpenRows(path, "")
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	defer rr.Close()
	var sc Scenario
	if err := rr.Next(&sc); err != nil {
		t.Fatal(err)
	}
	swapForPipe(t, path)
	within(t, "checkRow", path, func() {
		if err := checkRow(rr, 0, artifacts.MaxFieldBytes+2, 0, &sc, nil); err == nil {
			t.Error("checkRow read a named pipe")
		}
	})
}
