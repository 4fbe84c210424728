//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package callstore

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/impactbench/impactbench/internal/hostile"
)

// TestLegacyPipesDoNotHang: a named pipe where a legacy unit file or its
// journal goes is not read (it would block the run forever): it is never
// trusted, as a damaged file is, and the unit's other file still counts.
func TestLegacyPipesDoNotHang(t *testing.T) {
	dir, want := copyLegacy(t)
	compact := filepath.Join(dir, "t", "sim", "done_compact.json")
	hostile.Pipe(t, compact)
	hostile.NotBlocked(t, compact, func() {
		var got string
		if key, ok := Open(dir, false).ReadResult("t/sim/done_compact", &got); ok {
			t.Errorf("a unit file that is a named pipe gave a result %q %q", key, got)
		}
	})
	journal := filepath.Join(dir, "t", "sim", "redo.jsonl")
	hostile.Pipe(t, journal)
	hostile.NotBlocked(t, journal, func() {
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
	hostile.Pipe(t, seg)
	hostile.NotBlocked(t, seg, func() {
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
