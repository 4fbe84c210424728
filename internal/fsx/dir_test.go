package fsx

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/impactbench/impactbench/internal/fault"
)

// emptyFiles makes n empty files in dir, named f0000…, in reverse order
// (so that sorting is ReadDir's doing).
func emptyFiles(t *testing.T, dir string, n int) []string {
	t.Helper()
	names := make([]string, n)
	for i := n - 1; i >= 0; i-- {
		names[i] = fmt.Sprintf("f%04d", i)
		if err := os.WriteFile(filepath.Join(dir, names[i]), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return names
}

// TestReadDirStopsPastTheLimit: a folder of up to limit entries is listed
// sorted, with only the entries keep accepts; one with more, kept or not,
// is a *TooManyEntriesError naming the folder and the limit, an input
// error (exit 2), and the folder is left as it was.
func TestReadDirStopsPastTheLimit(t *testing.T) {
	even := func(e fs.DirEntry) bool { return e.Name()[len(e.Name())-1]%2 == 0 }
	for _, tc := range []struct {
		name    string
		entries int
		limit   int
		keep    func(fs.DirEntry) bool
		want    int // entries listed; -1 for the error
		tooMany bool
	}{
		{name: "empty", entries: 0, limit: 0, want: 0},
		{name: "at the limit", entries: 5, limit: 5, want: 5},
		{name: "one over", entries: 6, limit: 5, tooMany: true},
		{name: "over, many batches", entries: 3*dirBatch + 7, limit: 2 * dirBatch, tooMany: true},
		{name: "at the limit, many batches", entries: 2*dirBatch + 1, limit: 2*dirBatch + 1, want: 2*dirBatch + 1},
		{name: "kept half", entries: 10, limit: 10, keep: even, want: 5},
		{name: "entries keep refuses count", entries: 10, limit: 9, keep: func(fs.DirEntry) bool { return false }, tooMany: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			names := emptyFiles(t, dir, tc.entries)
			got, err := ReadDir(dir, tc.limit, tc.keep)
			if tc.tooMany {
				var many *TooManyEntriesError
				if !errors.As(err, &many) || many.Path != dir || many.Limit != tc.limit {
					t.Fatalf("err = %v, want a TooManyEntriesError for %s, limit %d", err, dir, tc.limit)
				}
				if msg := err.Error(); !strings.Contains(msg, dir) || !strings.Contains(msg, fmt.Sprint(tc.limit)) {
					t.Errorf("message %q names neither the folder nor the limit", msg)
				}
				if k := fault.KindOf(fmt.Errorf("list: %w", err)); k != fault.Input {
					t.Errorf("kind = %v, want input", k)
				}
			} else {
				if err != nil {
					t.Fatal(err)
				}
				var gotNames []string
				for _, e := range got {
					gotNames = append(gotNames, e.Name())
				}
				if len(gotNames) != tc.want || !slices.IsSorted(gotNames) {
					t.Fatalf("listed %d entries %v, want %d sorted", len(gotNames), gotNames, tc.want)
				}
			}
			after, err := os.ReadDir(dir)
			if err != nil || len(after) != len(names) {
				t.Fatalf("the folder holds %d entries after (%v), want %d", len(after), err, len(names))
			}
		})
	}
}

// TestReadDirRefusesWhatIsNotAFolder: a file or a missing path is an
// error, and a named pipe in the folder's place is refused without
// waiting for a writer.
func TestReadDirRefusesWhatIsNotAFolder(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadDir(file, 10, nil); err == nil {
		t.Error("a file was listed")
	}
	if _, err := ReadDir(filepath.Join(dir, "missing"), 10, nil); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing: err = %v, want not-exist", err)
	}
	pipe := filepath.Join(dir, "calls")
	if err := mkfifo(pipe); err != nil {
		t.Skip("no named pipes here:", err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := ReadDir(pipe, 10, nil)
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil {
			t.Error("a named pipe was listed")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("ReadDir blocked on a named pipe")
	}
	// In a folder, the pipe is an entry like any other: its type is the
	// folder's word, and it is not opened.
	got, err := ReadDir(dir, 10, func(e fs.DirEntry) bool { return e.Type()&fs.ModeNamedPipe != 0 })
	if err != nil || len(got) != 1 || got[0].Name() != "calls" {
		t.Errorf("pipes listed = %v, %v; want calls", got, err)
	}
}
