package fsx

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestWalkHoldsABatchNotTheListing: walking a folder of many files, the
// live heap while fn runs stays far below the folder's listing: Walk
// holds one batch of entries at a time, where filepath.WalkDir (and
// os.ReadDir) hold every name of the folder before the first is seen.
func TestWalkHoldsABatchNotTheListing(t *testing.T) {
	dir := t.TempDir()
	const n = 16 * dirBatch
	long := strings.Repeat("x", 200)
	for i := range n {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("%s%05d", long, i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	listing := uint64(n * (len(long) + 5)) // the names alone
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	base := heap()
	var peak uint64
	seen := 0
	err := Walk(dir, func(string, fs.DirEntry) error {
		seen++
		if seen%(dirBatch/2) == 0 {
			if h := heap(); h > base {
				peak = max(peak, h-base)
			}
		}
		return nil
	})
	if err != nil || seen != n {
		t.Fatalf("walked %d entries (%v), want %d", seen, err, n)
	}
	t.Logf("live heap grew by %d bytes at most, for a listing of %d bytes of names", peak, listing)
	if peak > listing/4 {
		t.Errorf("the live heap grew by %d bytes while walking a folder whose names take %d: the listing is held whole", peak, listing)
	}
}

// TestWalkShowsEverythingFollowsNothing: every entry under the root is
// given once, a directory before what it holds; links are given as links
// and not entered; fs.SkipDir leaves a directory; a directory WalkDepth
// levels down is given but not entered; another error from fn ends the
// walk with it.
func TestWalkShowsEverythingFollowsNothing(t *testing.T) {
	root := t.TempDir()
	outside := t.TempDir()
	for _, rel := range []string{"a", "b/c", "b/d/e", "skip/hidden", "many/f"} {
		p := filepath.Join(root, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 3 * dirBatch { // a directory over several batches
		if err := os.WriteFile(filepath.Join(root, "many", fmt.Sprintf("m%04d", i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(outside, "secret"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	links := runtime.GOOS != "windows"
	if links {
		if err := os.Symlink(outside, filepath.Join(root, "b", "link")); err != nil {
			t.Fatal(err)
		}
	}
	// A chain of directories deeper than WalkDepth, a file at its end.
	deep := root
	for range WalkDepth + 2 {
		deep = filepath.Join(deep, "d")
	}
	if err := os.MkdirAll(deep, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(deep, "bottom"), nil, 0o644); err != nil {
		t.Fatal(err)
	}

	var got []string
	err := Walk(root, func(path string, e fs.DirEntry) error {
		rel, err := filepath.Rel(root, path)
		if err != nil || filepath.Base(path) != e.Name() {
			t.Errorf("path %s for entry %s", path, e.Name())
		}
		rel = filepath.ToSlash(rel)
		if parent := filepath.Dir(path); parent != root && !slices.Contains(got, filepath.ToSlash(mustRel(t, root, parent))) {
			t.Errorf("%s given before its directory", rel)
		}
		got = append(got, rel)
		if rel == "skip" {
			return fs.SkipDir
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	depth := 0
	for _, rel := range got {
		count[rel]++
		if strings.HasPrefix(rel, "d") && strings.Trim(rel, "d/") == "" {
			depth = max(depth, strings.Count(rel, "/")+1)
		}
	}
	for _, rel := range []string{"a", "b", "b/c", "b/d", "b/d/e", "skip", "many", "many/f", "many/m0000", fmt.Sprintf("many/m%04d", 3*dirBatch-1)} {
		if count[rel] != 1 {
			t.Errorf("%s given %d times, want once", rel, count[rel])
		}
	}
	if links && count["b/link"] != 1 {
		t.Errorf("the link given %d times, want once", count["b/link"])
	}
	// a, b, b/c, b/d, b/d/e, skip, many, many/f, the many/m…, the link,
	// and the chain down to WalkDepth.
	want := 8 + 3*dirBatch + WalkDepth
	if links {
		want++
	}
	if len(got) != want {
		t.Errorf("%d entries given, want %d", len(got), want)
	}
	for _, rel := range got {
		if strings.HasPrefix(rel, "skip/") || strings.HasPrefix(rel, "b/link/") || strings.HasSuffix(rel, "bottom") {
			t.Errorf("%s given: under a skipped directory, a link or too deep", rel)
		}
	}
	if depth != WalkDepth {
		t.Errorf("went %d directories down, want %d", depth, WalkDepth)
	}

	stop := errors.New("stop")
	calls := 0
	if err := Walk(root, func(string, fs.DirEntry) error { calls++; return stop }); !errors.Is(err, stop) || calls != 1 {
		t.Errorf("fn's error: Walk returned %v after %d calls, want it after 1", err, calls)
	}
	if err := Walk(filepath.Join(root, "a"), func(string, fs.DirEntry) error { return nil }); err == nil {
		t.Error("a file was walked as a root")
	}
	if err := Walk(filepath.Join(root, "missing"), func(string, fs.DirEntry) error { return nil }); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing root: err = %v, want not-exist", err)
	}
}

func mustRel(t *testing.T, base, p string) string {
	t.Helper()
	r, err := filepath.Rel(base, p)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestSweepTempsAcrossBatches: a folder of temps and other files over
// several of Walk's batches is swept whole while it is being read (files
// removed as they come do not make the listing skip any), the others
// left.
func TestSweepTempsAcrossBatches(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "calls")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	temps, kept := 0, 0
	for i := range 5 * dirBatch {
		name := fmt.Sprintf("m%04d.json", i)
		if i%3 == 0 {
			name = tempName(name)
			temps++
		} else {
			kept++
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
	}
	if n := SweepTemps(time.Now().Add(-time.Minute), dir); n != temps {
		t.Errorf("removed %d, want %d", n, temps)
	}
	left, err := os.ReadDir(dir)
	if err != nil || len(left) != kept {
		t.Fatalf("%d files left (%v), want %d", len(left), err, kept)
	}
	for _, e := range left {
		if IsTemp(e.Name()) {
			t.Errorf("%s left", e.Name())
		}
	}
}
