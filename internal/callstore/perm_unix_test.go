//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package callstore

import (
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestStoreIsPrivate: the call store holds whole transcripts and the
// simulated user's hidden thoughts, so it is 0600 files in 0700
// directories even under the usual 022 umask, and a store directory an
// earlier version left world-readable is closed on the first write.
func TestStoreIsPrivate(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	root := filepath.Join(t.TempDir(), "calls")
	if err := os.MkdirAll(root, 0o755); err != nil { // as earlier versions made it
		t.Fatal(err)
	}
	s := Open(root, false)
	// One unit completed in one go (its journal renamed into place), one
	// rewritten (opened again, so compacted into a new file), one in progress.
	for i, name := range []string{"t/sim/a__s0", "t/sim/b__s0", "t/eval/c__s0"} {
		u, err := s.Unit(name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := u.Client(id, &counting{}).Complete(t.Context(), req("hi", 1)); err != nil {
			t.Fatal(err)
		}
		if i < 2 {
			if err := u.SetResult("k", "r"); err != nil {
				t.Fatal(err)
			}
		}
		u.Close()
	}
	u, _ := s.Unit("t/sim/b__s0")
	_, _ = u.Client(id, &counting{}).Complete(t.Context(), req("more", 1))
	if err := u.SetResult("k2", "r2"); err != nil {
		t.Fatal(err)
	}
	u.Close()
	n := 0
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		want := fs.FileMode(0o600)
		if d.IsDir() {
			want = 0o700
		}
		if got := info.Mode().Perm(); got != want {
			rel, _ := filepath.Rel(root, p)
			t.Errorf("%s is %v, want %v", rel, got, want)
		}
		n++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 7 {
		t.Errorf("only %d entries checked", n)
	}
}
