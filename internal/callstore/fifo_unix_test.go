//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package callstore

import (
	"os"
	"path/filepath"
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

// mkfifo replaces path with a named pipe.
func mkfifo(t *testing.T, path string) {
	t.Helper()
	if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestLegacyPipesDoNotHang: a named pipe where a legacy unit file or its
// journal goes is not read (it would block the run forever): it is never
// trusted, as a damaged file is, and the unit's other file still counts.
func TestLegacyPipesDoNotHang(t *testing.T) {
	dir, want := copyLegacy(t)
	compact := filepath.Join(dir, "t", "sim", "done_compact.json")
	mkfifo(t, compact)
	within(t, compact, func() {
		var got string
		if key, ok := Open(dir, false).ReadResult("t/sim/done_compact", &got); ok {
			t.Errorf("a unit file that is a named pipe gave a result %q %q", key, got)
		}
	})
	journal := filepath.Join(dir, "t", "sim", "redo.jsonl")
	mkfifo(t, journal)
	within(t, journal, func() {
		u, err := Open(dir, false).Unit("t/sim/redo")
		if err != nil {
			t.Error(err)
			return
		}
		defer u.Close()
		var got string
		if !u.Result(want["t/sim/redo"].ResultKey, &got) {
			t.Errorf("beside a journal that is a named pipe, redo.json's result was lost")
		}
	})
}

// TestSegmentSwappedForAPipeDoesNotHang: a segment file replaced by a
// named pipe after it was indexed is not read back (the read would block
// forever): its records are missing, and the call is made again.
func TestSegmentSwappedForAPipeDoesNotHang(t *testing.T) {
	dir := t.TempDir()
	s1 := Open(dir, false)
	for _, name := range []string{"t/sim/a", "t/sim/b"} {
		u, err := s1.Unit(name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := u.Client(id, &counting{}).Complete(t.Context(), req("hi "+name, 0)); err != nil {
			t.Fatal(err)
		}
		if err := u.SetResult("k", "done"); err != nil {
			t.Fatal(err)
		}
		u.Close()
	}
	if err := s1.Close(); err != nil {
		t.Fatal(err)
	}
	s2 := Open(dir, false)
	defer s2.Close()
	ua, err := s2.Unit("t/sim/a") // indexes the segment
	if err != nil {
		t.Fatal(err)
	}
	ua.Close()
	segs, _ := filepath.Glob(filepath.Join(dir, "t", "sim", segDirName, "*"))
	var seg string
	for _, p := range segs {
		if st, err := os.Lstat(p); err == nil && st.Mode().IsRegular() && st.Size() > 0 && filepath.Base(p) != "lock" {
			seg = p
		}
	}
	if seg == "" {
		t.Fatalf("no segment among %v", segs)
	}
	mkfifo(t, seg)
	within(t, seg, func() {
		u, err := s2.Unit("t/sim/b")
		if err != nil {
			return // refused: no hang is all this test asks
		}
		defer u.Close()
		inner := &counting{}
		if _, err := u.Client(id, inner).Complete(t.Context(), req("hi t/sim/b", 0)); err != nil {
			t.Error(err)
		}
	})
}
