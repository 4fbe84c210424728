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
	"github.com/impactbench/impactbench/internal/hostile"
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
			hostile.Pipe(t, pipe)
			hostile.NotBlocked(t, pipe, func() {
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
	hostile.Pipe(t, path)
	hostile.NotBlocked(t, path, func() {
		if err := checkRow(rr, 0, artifacts.MaxFieldBytes+2, 0, &sc, nil); err == nil {
			t.Error("checkRow read a named pipe")
		}
	})
}
