package publish

import (
	"context"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/layout"
	"github.com/impactbench/impactbench/internal/study"
)

// A file already at a path publish writes that no earlier publish into
// --output wrote — a checkout of the website with its own data/models.json,
// a site file planted after a publish without --site, a link — is refused
// before anything is written: a *FileError (exit 2) naming that file and
// saying how to proceed, and every file byte for byte as it was.
func TestPublishRefusesFilesItDidNotWrite(t *testing.T) {
	for name, tc := range map[string]struct {
		plant func(t *testing.T, dir, out string)
		named string // the file the refusal names, under out
	}{
		"a website checkout (no manifest)": {
			plant: func(t *testing.T, _, out string) {
				writeFile(t, filepath.Join(out, "README.md"), "# impactbench-web\n")
				writeFile(t, filepath.Join(out, "data", "models.json"), `{"models": ["theirs"]}`)
				writeFile(t, filepath.Join(out, "scenarios", "alpha", "model-a", "m01_s001_v01.json"), `{"theirs": true}`)
			},
			named: "data/models.json",
		},
		"a link where a file goes (no manifest)": {
			plant: func(t *testing.T, dir, out string) {
				writeFile(t, filepath.Join(dir, "theirs.json"), "theirs\n")
				if err := os.MkdirAll(filepath.Join(out, "data"), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink(filepath.Join(dir, "theirs.json"), filepath.Join(out, "data", "taxonomy.json")); err != nil {
					t.Fatal(err)
				}
			},
			named: "data/taxonomy.json",
		},
		"a file the manifest does not list": {
			plant: func(t *testing.T, dir, out string) {
				_, s := smallStudy(t)
				if _, err := Publish(context.Background(), s, s.Compute(), Options{Out: out}); err != nil { // no site
					t.Fatal(err)
				}
				writeFile(t, filepath.Join(out, "index.html"), "<h1>my own page</h1>\n")
			},
			named: "index.html",
		},
	} {
		t.Run(name, func(t *testing.T) {
			dir, s := smallStudy(t)
			out := filepath.Join(dir, "out")
			tc.plant(t, dir, out)
			refusedUnchanged(t, s, dir, out, tc.named, true, "did not write", "--force", "empty or new folder")
		})
	}
}

// --force takes a checkout's files over: they are replaced, listed in the
// manifest, and from then on publish owns them (a publish without --force
// works); files publish does not write are never touched, and stale
// removal removes only what the manifest lists.
func TestPublishForceTakesOverAndOwnsOnlyWhatItWrote(t *testing.T) {
	dir, s := smallStudy(t)
	out := filepath.Join(dir, "out")
	writeFile(t, filepath.Join(out, "README.md"), "# impactbench-web\n")
	writeFile(t, filepath.Join(out, "data", "models.json"), `{"models": ["theirs"]}`)
	writeFile(t, filepath.Join(out, "data", "extra.json"), "theirs\n")
	if _, err := Publish(context.Background(), s, s.Compute(), Options{Out: out, Force: true}); err != nil {
		t.Fatalf("--force: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(out, "data", "models.json")); strings.Contains(string(b), "theirs") {
		t.Errorf("--force left data/models.json as it was: %s", b)
	}
	m, found, err := readManifest(filepath.Join(out, layout.PublishManifestFile))
	if err != nil || !found || !slices.Contains(m.Files, "data/models.json") {
		t.Fatalf("--force: the manifest does not own data/models.json (%v, %v): %v", found, err, m.Files)
	}
	// Owned now: publishing again, with the site and without --force, works.
	if err := publishErr(s, out); err != nil {
		t.Fatalf("publish after --force: %v", err)
	}
	// A file at a path publish generates, planted after it, is not its: a
	// publish that does not write it leaves it, and the one after that too.
	planted := filepath.Join(out, "scenarios", "alpha", "model-z", "m01_s001_v01.json")
	writeFile(t, planted, "theirs\n")
	if _, err := Publish(context.Background(), s, s.Compute(), Options{Out: out}); err != nil { // drops the site
		t.Fatal(err)
	}
	for _, keep := range []string{"README.md", "data/extra.json", "scenarios/alpha/model-z/m01_s001_v01.json"} {
		if _, err := os.Stat(filepath.Join(out, filepath.FromSlash(keep))); err != nil {
			t.Errorf("%s, which publish did not write, is gone: %v", keep, err)
		}
	}
	if _, err := os.Stat(filepath.Join(out, layout.SiteIndex)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the site publish wrote is still there without --site (%v)", err)
	}
}

// A publish killed after writing some files leaves a manifest that names
// them (written before the first file), so the next publish owns them and
// is not refused.
func TestKilledFirstPublishIsOwnedByTheNext(t *testing.T) {
	dir, s := smallStudy(t)
	out := filepath.Join(dir, "out")
	opts := Options{Out: out, Site: true}
	planned, err := publish(context.Background(), s, s.Compute(), opts, check, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The write pass's start, then one file, then the kill.
	w := newWriter(out, write, &Report{})
	if err := w.readOwned(); err != nil {
		t.Fatal(err)
	}
	w.planned = planned.seen
	if err := w.emit(layout.PublishedData(layout.PublishedModelsFile), []byte(`{"models": []}`)); err != nil {
		t.Fatal(err)
	}
	if err := publishErr(s, out); err != nil {
		t.Fatalf("publish after a killed one: %v", err)
	}
}

// In a folder publish has never written into, a file named like one of its
// temp files is not its own (it writes its manifest before its first temp
// file): publish leaves it there.
func TestTempsInAFolderPublishDidNotWriteAreKept(t *testing.T) {
	dir, s := smallStudy(t)
	out := filepath.Join(dir, "out")
	temp := filepath.Join(out, "data", ".taxonomy.json.tmp-0123456789abcdef")
	writeFile(t, temp, "theirs")
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(temp, old, old); err != nil {
		t.Fatal(err)
	}
	if err := publishErr(s, out); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(temp); err != nil {
		t.Errorf("publish removed a temp-named file in a folder it had not written into: %v", err)
	}
}

// refusedUnchanged checks a refused publish (dry run and real) into out,
// in the study project dir: a *FileError naming out/named whose message
// says each of says, and every file in out and in dir as it was before.
func refusedUnchanged(t *testing.T, s *study.Study, dir, out, named string, site bool, says ...string) {
	t.Helper()
	before, project := tree(t, out), tree(t, dir)
	path := filepath.Join(out, filepath.FromSlash(named))
	for _, dry := range []bool{true, false} {
		_, err := Publish(context.Background(), s, s.Compute(), Options{Out: out, Site: site, DryRun: dry})
		var fe *artifacts.FileError
		if !errors.As(err, &fe) || fe.Path != path {
			t.Fatalf("dry %v: want a *FileError naming %s, got %T %v", dry, path, err, err)
		}
		for _, say := range says {
			if !strings.Contains(err.Error(), say) {
				t.Errorf("dry %v: refusal does not say %q: %v", dry, say, err)
			}
		}
		if after := tree(t, out); !maps.Equal(before, after) {
			t.Errorf("dry %v: a refused publish changed --output", dry)
		}
		if after := tree(t, dir); !maps.Equal(project, after) {
			t.Errorf("dry %v: a refused publish changed files outside --output", dry)
		}
	}
}
