//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package fsx

import (
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// withUmask runs fn under umask (process-wide: these tests are not parallel).
func withUmask(t *testing.T, umask int, fn func()) {
	t.Helper()
	old := syscall.Umask(umask)
	defer syscall.Umask(old)
	fn()
}

func mode(t *testing.T, path string) fs.FileMode {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Mode().Perm()
}

// TestSharedFilesRespectTheUmask: results are created 0666 and 0777 less
// the umask, like any program's files, not forced to 0644.
func TestSharedFilesRespectTheUmask(t *testing.T) {
	for _, tc := range []struct {
		umask         int
		file, dirMode fs.FileMode
	}{{0o077, 0o600, 0o700}, {0o022, 0o644, 0o755}, {0o002, 0o664, 0o775}} {
		dir := t.TempDir()
		p := filepath.Join(dir, "runs", "t", "scores.json")
		withUmask(t, tc.umask, func() {
			if err := WriteFile(p, []byte("[]"), Shared); err != nil {
				t.Fatal(err)
			}
			f, err := Create(filepath.Join(dir, "report.html"), Shared)
			if err != nil {
				t.Fatal(err)
			}
			if err := f.Commit(); err != nil {
				t.Fatal(err)
			}
			a, err := OpenAppend(filepath.Join(dir, "labels.jsonl"), Shared)
			if err != nil {
				t.Fatal(err)
			}
			a.Close()
		})
		for _, f := range []string{p, filepath.Join(dir, "report.html"), filepath.Join(dir, "labels.jsonl")} {
			if got := mode(t, f); got != tc.file {
				t.Errorf("umask %03o: %s is %v, want %v", tc.umask, filepath.Base(f), got, tc.file)
			}
		}
		if got := mode(t, filepath.Join(dir, "runs")); got != tc.dirMode {
			t.Errorf("umask %03o: new directory is %v, want %v", tc.umask, got, tc.dirMode)
		}
	}
}

// TestSharedFileKeepsItsMode: rewriting a file keeps the mode its owner
// gave it.
func TestSharedFileKeepsItsMode(t *testing.T) {
	p := filepath.Join(t.TempDir(), "results.json")
	if err := os.WriteFile(p, []byte("{}"), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, 0o640); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(p, []byte("[]"), Shared); err != nil {
		t.Fatal(err)
	}
	if got := mode(t, p); got != 0o640 {
		t.Errorf("mode %v after a rewrite, want 0640 kept", got)
	}
}

// TestPrivateFilesAreOwnerOnly: the call store is 0600 in 0700
// directories under any umask, even replacing a file that was 0644.
func TestPrivateFilesAreOwnerOnly(t *testing.T) {
	for _, umask := range []int{0, 0o022, 0o077} {
		dir := t.TempDir()
		p := filepath.Join(dir, "calls", "t", "sim", "u.json")
		withUmask(t, umask, func() {
			if err := WriteFile(p, []byte("{}"), Private); err != nil {
				t.Fatal(err)
			}
			j, err := OpenAppend(filepath.Join(filepath.Dir(p), "v.jsonl"), Private)
			if err != nil {
				t.Fatal(err)
			}
			j.Close()
			if err := os.Chmod(p, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := WriteFile(p, []byte("{}"), Private); err != nil {
				t.Fatal(err)
			}
		})
		for _, f := range []string{p, filepath.Join(filepath.Dir(p), "v.jsonl")} {
			if got := mode(t, f); got != 0o600 {
				t.Errorf("umask %03o: %s is %v, want 0600", umask, filepath.Base(f), got)
			}
		}
		for _, d := range []string{"calls", "calls/t", "calls/t/sim"} {
			if got := mode(t, filepath.Join(dir, d)); got != 0o700 {
				t.Errorf("umask %03o: %s is %v, want 0700", umask, d, got)
			}
		}
	}
}
