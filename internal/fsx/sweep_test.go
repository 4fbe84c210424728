package fsx

import (
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestSweepTempsFindsEveryTempAnywhere: temps of killed writes are found
// at any depth (the call store's calls/<target>/sim/… included), only
// once old enough, and nothing else is touched.
func TestSweepTempsFindsEveryTempAnywhere(t *testing.T) {
	root := t.TempDir()
	bench := filepath.Join(root, "benchmarks", "b")
	cache := filepath.Join(root, ".cache", "b")
	now := time.Now()
	old := now.Add(-time.Hour)
	files := map[string]time.Time{
		// removed: temps of killed writes
		"benchmarks/b/" + tempName("scores.json"):                      old,
		"benchmarks/b/runs/t/" + tempName("conversations.json"):        old,
		"benchmarks/b/runs/t/judges/j/" + tempName("scores.json"):      old,
		".cache/b/calls/t/sim/" + tempName("m01_s001_v01__s0.json"):    old,
		".cache/b/calls/t/eval/" + tempName("m01_s001_v01__s0.json"):   old,
		".cache/b/calls/t/sim-batch/" + tempName("offline-judge.json"): old,
		".cache/b/" + tempName("manifest.json"):                        old,
		".cache/b/calls/t/sim/.tmp-123":                                old, // an earlier version's
		"benchmarks/b/runs/t/.conversations.json.tmp-42":               old,
		// kept
		"benchmarks/b/" + tempName("results.json"):    now, // a live writer's
		"benchmarks/b/scores.json":                    old,
		"benchmarks/b/.env":                           old,
		"benchmarks/b/notes.tmp":                      old,
		"benchmarks/b/prompts/.draft.tmp":             old,
		".cache/b/.lock":                              old,
		".cache/b/calls/t/sim/m01_s001_v01__s0.json":  old,
		".cache/b/calls/t/sim/m01_s001_v02__s0.jsonl": old,
		"elsewhere/" + tempName("x.json"):             old, // outside the dirs
	}
	for rel, mt := range files {
		p := filepath.Join(root, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, mt, mt); err != nil {
			t.Fatal(err)
		}
	}
	// A link to a directory outside is not followed.
	linked := filepath.Join(root, "elsewhere")
	if runtime.GOOS != "windows" {
		if err := os.Symlink(linked, filepath.Join(bench, "link")); err != nil {
			t.Fatal(err)
		}
	}
	n := SweepTemps(now.Add(-time.Minute), bench, cache, filepath.Join(cache, "calls"), filepath.Join(bench, "runs", "t"), filepath.Join(root, "missing"))
	if n != 9 {
		t.Errorf("removed %d files, want 9", n)
	}
	var left []string
	_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && d.Type()&os.ModeSymlink == 0 {
			rel, _ := filepath.Rel(root, p)
			left = append(left, filepath.ToSlash(rel))
		}
		return nil
	})
	var want []string
	for rel, mt := range files {
		if mt.Equal(now) || !IsTemp(filepath.Base(rel)) || strings.HasPrefix(rel, "elsewhere/") {
			want = append(want, rel)
		}
	}
	slices.Sort(left)
	slices.Sort(want)
	if !slices.Equal(left, want) {
		t.Errorf("left\n%v\nwant\n%v", left, want)
	}
}

// TestSweepTempsThroughALinkedRoot: a benchmark folder that is a link to
// elsewhere is swept like any other (links inside it are not followed).
func TestSweepTempsThroughALinkedRoot(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("symbolic links need privileges on Windows")
	}
	root := t.TempDir()
	real := filepath.Join(root, "shared", "b")
	tmp := filepath.Join(real, "runs", "t", tempName("scores.json"))
	if err := os.MkdirAll(filepath.Dir(tmp), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(tmp, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(tmp, old, old); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(root, "b")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	if n := SweepTemps(time.Now().Add(-time.Minute), link); n != 1 {
		t.Errorf("removed %d temps through a linked folder, want 1", n)
	}
}

func TestOutermost(t *testing.T) {
	sep := string(filepath.Separator)
	got := outermost([]string{"a" + sep + "b" + sep + "c", "a" + sep + "b-c", "a" + sep + "b", "", "a" + sep + "b" + sep})
	want := []string{"a" + sep + "b", "a" + sep + "b-c"}
	if !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}
