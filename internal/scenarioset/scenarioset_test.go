package scenarioset

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/impactbench/impactbench/internal/fault"
	"github.com/impactbench/impactbench/internal/fsx"
	"github.com/impactbench/impactbench/internal/layout"
)

// TestCopyIntoStreams: keeping a set copies its files (a conversations.json
// may be hundreds of MB) without holding one in memory: copying 32 MiB
// allocates well under 4 MiB, and the copy is byte for byte the file.
func TestCopyIntoStreams(t *testing.T) {
	dir := t.TempDir()
	src, dst := filepath.Join(dir, "conversations.json"), filepath.Join(dir, "sets", "v1", "conversations.json")
	data := bytes.Repeat([]byte("0123456789abcdef"), 2<<20) // 32 MiB
	if err := os.WriteFile(src, data, 0o644); err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	if err := copyInto(src, dst); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	if n := after.TotalAlloc - before.TotalAlloc; n > 4<<20 {
		t.Errorf("copying a 32 MiB file allocated %d MiB: it was read whole", n>>20)
	}
	got, err := os.ReadFile(dst)
	if err != nil || !bytes.Equal(got, data) {
		t.Errorf("the copy differs from the file (%d bytes, %v)", len(got), err)
	}
}

// TestKeepCopiesEveryRunsFile: keeping a set copies runs/*/*.json, every
// run's outputs (hidden folders and names included, as the glob it
// replaces matched them), and nothing deeper or beside.
func TestKeepCopiesEveryRunsFile(t *testing.T) {
	files := layout.Bench{Dir: t.TempDir()}
	kept := []string{"runs/a/conversations.json", "runs/a/scores.json", "runs/a/.x.json", "runs/.h/scores.json", "runs/b/cost.json"}
	left := []string{"runs/a/judges/j/scores.json", "runs/a/notes.txt", "runs/top.json", "runs/a/scores.json.bak"}
	for _, rel := range append(append([]string{}, kept...), left...) {
		write(t, filepath.Join(files.Dir, filepath.FromSlash(rel)), rel)
	}
	vs, err := Keep(files, "grow", nil)
	if err != nil {
		t.Fatal(err)
	}
	v1 := filepath.Join(files.Dir, vs[0].Files)
	for _, rel := range kept {
		if got, err := os.ReadFile(filepath.Join(v1, filepath.FromSlash(rel))); err != nil || string(got) != rel {
			t.Errorf("%s kept as %q (%v)", rel, got, err)
		}
	}
	for _, rel := range left {
		if _, err := os.Lstat(filepath.Join(v1, filepath.FromSlash(rel))); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s kept (%v): not a run's output", rel, err)
		}
	}
}

// TestKeepRefusesCrowdedRunFolders: runs/ or a run's folder holding more
// than layout.MaxRunEntries entries is an input error naming the folder
// and the limit, with nothing written; at the bound the set is kept.
func TestKeepRefusesCrowdedRunFolders(t *testing.T) {
	defer func(n int) { layout.MaxRunEntries = n }(layout.MaxRunEntries)
	layout.MaxRunEntries = 3
	for _, folder := range []string{"runs", "runs/a"} {
		t.Run(folder, func(t *testing.T) {
			files := layout.Bench{Dir: t.TempDir()}
			write(t, files.Scenarios(), "[]")
			write(t, filepath.Join(files.RunDir("a"), layout.ScoresFile), "[]")
			dir := filepath.Join(files.Dir, filepath.FromSlash(folder))
			ents, err := os.ReadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			for i := len(ents); i < layout.MaxRunEntries; i++ {
				write(t, filepath.Join(dir, fmt.Sprintf("n%d", i)), "")
			}
			if _, err := Keep(files, "grow", nil); err != nil {
				t.Fatalf("at the bound: %v", err)
			}
			if err := os.RemoveAll(filepath.Join(files.Dir, layout.SetsDirName)); err != nil {
				t.Fatal(err)
			}
			write(t, filepath.Join(dir, "one-more"), "")
			_, err = Keep(files, "grow", nil)
			var many *fsx.TooManyEntriesError
			if !errors.As(err, &many) || many.Path != dir || fault.KindOf(err) != fault.Input || !strings.Contains(err.Error(), dir+" holds more than 3 entries") {
				t.Errorf("over the bound: err = %v, want an input error naming %s and the limit", err, dir)
			}
			if _, err := os.Lstat(filepath.Join(files.Dir, layout.SetsDirName)); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("a refused Keep wrote %s (%v)", layout.SetsDirName, err)
			}
		})
	}
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
