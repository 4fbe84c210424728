package publish

import (
	"context"
	"errors"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/layout"
	"github.com/impactbench/impactbench/internal/study"
	"github.com/impactbench/impactbench/internal/study/studytest"
)

// tree is every entry under root: a file's bytes, a link's target, "dir".
func tree(t *testing.T, root string) map[string]string {
	t.Helper()
	m := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			m[rel] = "link " + target
			return err
		case d.IsDir():
			m[rel] = "dir"
		default:
			b, err := os.ReadFile(p)
			m[rel] = string(b)
			return err
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func smallStudy(t *testing.T) (dir string, s *study.Study) {
	t.Helper()
	dir = t.TempDir()
	if err := studytest.WriteSmall(dir); err != nil {
		t.Fatal(err)
	}
	s, err := study.Load(filepath.Join(dir, "benchmarks"))
	if err != nil {
		t.Fatal(err)
	}
	return dir, s
}

func publishErr(s *study.Study, out string) error {
	_, err := Publish(context.Background(), s, s.Compute(), Options{Out: out, Site: true})
	return err
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A manifest planted in --output that names files publish never writes
// (README.md, .git/config, a path out of --output) is refused as not
// publish's own: nothing is removed, nothing written.
func TestPlantedManifestRemovesNothing(t *testing.T) {
	dir, s := smallStudy(t)
	out := filepath.Join(dir, "out")
	writeFile(t, filepath.Join(out, "README.md"), "# my site\n")
	writeFile(t, filepath.Join(out, ".git", "config"), "[core]\n")
	writeFile(t, filepath.Join(dir, "outside.txt"), "keep\n")
	writeFile(t, filepath.Join(out, layout.PublishManifestFile), `{"files": ["README.md", ".git/config", "../outside.txt", "data/taxonomy.json"]}`)
	before, outside := tree(t, out), tree(t, dir)
	err := publishErr(s, out)
	var fe *artifacts.FileError
	if !errors.As(err, &fe) || !strings.Contains(err.Error(), layout.PublishManifestFile) || !strings.Contains(err.Error(), "README.md") {
		t.Fatalf("want a refusal naming the manifest and its entry, got %T %v", err, err)
	}
	if after := tree(t, out); !maps.Equal(before, after) {
		t.Errorf("a refused publish changed --output")
	}
	if after := tree(t, dir); !maps.Equal(outside, after) {
		t.Errorf("a refused publish changed the project")
	}
}

// A folder under --output that is a link (to outside --output) is never written
// through, nor is a stale file removed through it: publish refuses, and
// neither --output nor the link's target changes.
func TestLinksUnderOutAreNotFollowed(t *testing.T) {
	for _, link := range []string{"scenarios/beta", "scenarios", "data", "site/data", "site/data/tr/beta"} {
		t.Run(strings.ReplaceAll(link, "/", "_"), func(t *testing.T) {
			dir, s := smallStudy(t)
			out := filepath.Join(dir, "out")
			if err := publishErr(s, out); err != nil {
				t.Fatal(err)
			}
			target := filepath.Join(dir, "elsewhere")
			if err := os.MkdirAll(target, 0o755); err != nil {
				t.Fatal(err)
			}
			// What publish would remove or overwrite if it followed the link.
			writeFile(t, filepath.Join(target, "model-a", "m01_s001_v01.json"), "not publish's\n")
			writeFile(t, filepath.Join(target, "taxonomy.json"), "not publish's\n")
			if err := os.RemoveAll(filepath.Join(out, filepath.FromSlash(link))); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(target, filepath.Join(out, filepath.FromSlash(link))); err != nil {
				t.Fatal(err)
			}
			before, elsewhere := tree(t, out), tree(t, target)
			err := publishErr(s, out)
			if err == nil || !strings.Contains(err.Error(), "symbolic link") {
				t.Fatalf("want a refusal naming the link, got %v", err)
			}
			if after := tree(t, out); !maps.Equal(before, after) {
				t.Errorf("a refused publish changed --output")
			}
			if after := tree(t, target); !maps.Equal(elsewhere, after) {
				t.Errorf("publish changed the link's target: %v", after)
			}
		})
	}
}

// A temp file a killed publish left (kill -9 between write and rename) is
// removed by the next publish once it is a minute old; a temp-named file
// of anything publish does not write is left alone.
func TestKilledPublishTempsAreSwept(t *testing.T) {
	dir, s := smallStudy(t)
	out := filepath.Join(dir, "out")
	if err := publishErr(s, out); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-2 * time.Minute)
	ours := []string{"scenarios/alpha/model-a/.m01_s001_v01.json.tmp-0123456789abcdef", "data/.taxonomy.json.tmp-00000000deadbeef",
		".index.html.tmp-1111111111111111", "." + layout.PublishManifestFile + ".tmp-2222222222222222", "site/data/tr/alpha/.model-a.js.tmp-3333333333333333"}
	theirs := []string{".README.md.tmp-0123456789abcdef", "data/.notes.txt.tmp-0123456789abcdef", "docs/.x.json.tmp-0123456789abcdef"}
	fresh := "scenarios/alpha/model-a/.m01_s002_v01.json.tmp-4444444444444444"
	for _, rel := range append(append(append([]string{}, ours...), theirs...), fresh) {
		p := filepath.Join(out, filepath.FromSlash(rel))
		writeFile(t, p, "partial")
		if rel != fresh {
			if err := os.Chtimes(p, old, old); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := publishErr(s, out); err != nil {
		t.Fatal(err)
	}
	for _, rel := range ours {
		if _, err := os.Lstat(filepath.Join(out, filepath.FromSlash(rel))); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s: a killed publish's temp file is still there (%v)", rel, err)
		}
	}
	for _, rel := range append(theirs, fresh) {
		if _, err := os.Lstat(filepath.Join(out, filepath.FromSlash(rel))); err != nil {
			t.Errorf("%s: removed, but publish does not own it (or it is fresh): %v", rel, err)
		}
	}
}

// A publish refused for any input — an id too long for a file name, a
// damaged conversations.json read last — leaves --output byte for byte as it
// was: every id, length and input is checked before the first write.
func TestRefusedPublishWritesNothing(t *testing.T) {
	for name, spoil := range map[string]func(t *testing.T, dir string, s *study.Study){
		"over-long model id": func(t *testing.T, _ string, s *study.Study) {
			s.Models[len(s.Models)-1].ID = strings.Repeat("m", 300)
		},
		"a file where a folder goes": func(t *testing.T, dir string, s *study.Study) {
			writeFile(t, filepath.Join(dir, "out", "scenarios"), "mine\n")
		},
		"damaged conversations of the last model": func(t *testing.T, dir string, s *study.Study) {
			b := s.Benchmarks[len(s.Benchmarks)-1]
			r := b.Runs[len(b.Runs)-1]
			writeFile(t, filepath.Join(r.Path, "conversations.json"), `[{"id": "m01_s001_v01", "conv`)
		},
	} {
		t.Run(name, func(t *testing.T) {
			dir, s := smallStudy(t)
			out := filepath.Join(dir, "out")
			writeFile(t, filepath.Join(out, "README.md"), "# mine\n")
			spoil(t, dir, s)
			before := tree(t, out)
			if err := publishErr(s, out); err == nil {
				t.Fatal("published")
			}
			if after := tree(t, out); !maps.Equal(before, after) {
				var added []string
				for k := range after {
					if _, ok := before[k]; !ok {
						added = append(added, k)
					}
				}
				t.Errorf("a refused publish changed --output: %d entries added, e.g. %v", len(added), added[:min(3, len(added))])
			}
		})
	}
}

// --output naming a file, or a file in the way of a folder publish writes,
// is an input error (exit 2) naming it, and nothing changes.
func TestFilesInTheWayAreInputErrors(t *testing.T) {
	dir, s := smallStudy(t)
	file := filepath.Join(dir, "notes.txt")
	writeFile(t, file, "mine\n")
	out := filepath.Join(dir, "out")
	writeFile(t, filepath.Join(out, "data"), "mine\n")
	for _, o := range []string{file, out} {
		before := tree(t, dir)
		err := publishErr(s, o)
		var fe *artifacts.FileError
		if !errors.As(err, &fe) {
			t.Errorf("--output %s: want a *FileError, got %T %v", o, err, err)
		}
		if after := tree(t, dir); !maps.Equal(before, after) {
			t.Errorf("--output %s: a refused publish changed files", o)
		}
	}
}

// An output folder holding more entries than maxSweepEntries is not
// publish's to sweep: its old temp files at the top are left, unread past
// the bound, and publish still succeeds. At the bound they are swept.
func TestCrowdedOutputFolderIsNotSwept(t *testing.T) {
	defer func(n int) { maxSweepEntries = n }(maxSweepEntries)
	for _, tc := range []struct {
		name  string
		extra int // entries over what the folder holds
		swept bool
	}{{"at the bound", 0, true}, {"over the bound", 1, false}} {
		t.Run(tc.name, func(t *testing.T) {
			dir, s := smallStudy(t)
			out := filepath.Join(dir, "out")
			if err := publishErr(s, out); err != nil {
				t.Fatal(err)
			}
			temp := filepath.Join(out, ".index.html.tmp-1111111111111111")
			writeFile(t, temp, "partial")
			old := time.Now().Add(-2 * time.Minute)
			if err := os.Chtimes(temp, old, old); err != nil {
				t.Fatal(err)
			}
			ents, err := os.ReadDir(out)
			if err != nil {
				t.Fatal(err)
			}
			maxSweepEntries = len(ents) - tc.extra
			if err := publishErr(s, out); err != nil {
				t.Fatal(err)
			}
			_, err = os.Lstat(temp)
			if gone := errors.Is(err, fs.ErrNotExist); gone != tc.swept {
				t.Errorf("temp file swept = %v, want %v", gone, tc.swept)
			}
		})
	}
}
