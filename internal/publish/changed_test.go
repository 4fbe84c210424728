package publish

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/layout"
	"github.com/impactbench/impactbench/internal/study"
)

// checkManifestRecordsOut fails unless the manifest lists with its size and
// sha256 exactly the files under out that publish writes, as they are now.
func checkManifestRecordsOut(t *testing.T, out string) {
	t.Helper()
	m, found, err := readManifest(filepath.Join(out, layout.PublishManifestFile))
	if err != nil || !found {
		t.Fatalf("manifest: found %v, %v", found, err)
	}
	if len(m.Written) != len(m.Files) {
		t.Errorf("the manifest lists %d files and records %d", len(m.Files), len(m.Written))
	}
	for _, rel := range m.Files {
		b, err := os.ReadFile(filepath.Join(out, filepath.FromSlash(rel)))
		if err != nil {
			t.Errorf("%s: %v", rel, err)
			continue
		}
		h := sha256.Sum256(b)
		if want := (written{Size: int64(len(b)), SHA256: hex.EncodeToString(h[:])}); m.Written[rel] != want {
			t.Errorf("manifest records %s as %+v; it is %+v", rel, m.Written[rel], want)
		}
	}
}

// A file an earlier publish wrote and someone changed since (hand-edited,
// replaced by a link) is not publish's any more: the next publish refuses
// it before writing anything, dry run or not — a *FileError (exit 2)
// naming it, saying it was changed since publish wrote it and that --force
// takes it over — whether it would overwrite it or, no longer writing it,
// remove it; every file is left byte for byte as it was. --force then
// overwrites (or removes) it, and publish owns it again.
func TestPublishRefusesFilesChangedSinceItWroteThem(t *testing.T) {
	for name, tc := range map[string]struct {
		change   func(t *testing.T, dir, out string)
		named    string // the file the refusal names, under out
		site     bool   // whether the second publish has --site
		removing bool   // whether the second publish would remove it
	}{
		"an edited data file": {
			change: func(t *testing.T, _, out string) {
				writeFile(t, filepath.Join(out, "data", "models.json"), `{"models": ["my edit"]}`)
			},
			named: "data/models.json", site: true,
		},
		"an edited scenario file of the same size": {
			change: func(t *testing.T, _, out string) {
				path := filepath.Join(out, "scenarios", "alpha", "model-a", "m01_s001_v01.json")
				b, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				b[len(b)/2] ^= 1
				writeFile(t, path, string(b))
			},
			named: "scenarios/alpha/model-a/m01_s001_v01.json", site: true,
		},
		"a file replaced by a link": {
			change: func(t *testing.T, dir, out string) {
				writeFile(t, filepath.Join(dir, "mine.json"), "{}\n")
				path := filepath.Join(out, "data", "taxonomy.json")
				if err := os.Remove(path); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink(filepath.Join(dir, "mine.json"), path); err != nil {
					t.Fatal(err)
				}
			},
			named: "data/taxonomy.json", site: true,
		},
		"an edited file publish would remove": {
			change: func(t *testing.T, _, out string) {
				writeFile(t, filepath.Join(out, "index.html"), "<h1>my own page now</h1>\n")
			},
			named: "index.html", site: false, removing: true,
		},
	} {
		t.Run(name, func(t *testing.T) {
			dir, s := smallStudy(t)
			out := filepath.Join(dir, "out")
			if err := publishErr(s, out); err != nil { // with the site
				t.Fatal(err)
			}
			tc.change(t, dir, out)
			verb := "overwrite"
			if tc.removing {
				verb = "remove"
			}
			before := tree(t, out)
			refusedUnchanged(t, s, dir, out, tc.named, tc.site, "changed since publish wrote it", "--force", verb)
			named := filepath.Join(out, filepath.FromSlash(tc.named))

			rep, err := Publish(context.Background(), s, s.Compute(), Options{Out: out, Site: tc.site, Force: true})
			if err != nil {
				t.Fatalf("--force: %v", err)
			}
			st, err := os.Lstat(named)
			switch {
			case tc.removing:
				if !errors.Is(err, os.ErrNotExist) || len(rep.Removed) == 0 {
					t.Errorf("--force left %s (%v), removed %v", tc.named, err, rep.Removed)
				}
			case err != nil || !st.Mode().IsRegular() || before[filepath.FromSlash(tc.named)] == tree(t, out)[filepath.FromSlash(tc.named)]:
				t.Errorf("--force did not overwrite %s (%v)", tc.named, err)
			}
			checkManifestRecordsOut(t, out)
			// Owned again: a publish without --force works.
			if _, err := Publish(context.Background(), s, s.Compute(), Options{Out: out, Site: tc.site}); err != nil {
				t.Fatalf("publish after --force: %v", err)
			}
		})
	}
}

// A manifest from before the sha256 records (files only) keeps working:
// its files are trusted by path as before (an edit of one is overwritten),
// and the next publish records them; an edit after that is refused.
func TestPublishWithAManifestWithoutRecords(t *testing.T) {
	dir, s := smallStudy(t)
	out := filepath.Join(dir, "out")
	if err := publishErr(s, out); err != nil {
		t.Fatal(err)
	}
	mpath := filepath.Join(out, layout.PublishManifestFile)
	m, _, err := readManifest(mpath)
	if err != nil {
		t.Fatal(err)
	}
	old, err := json.MarshalIndent(map[string][]string{"files": m.Files}, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, mpath, string(old))
	models := filepath.Join(out, "data", "models.json")
	want, _ := os.ReadFile(models)
	writeFile(t, models, `{"models": ["edited before the records"]}`)

	rep, err := Publish(context.Background(), s, s.Compute(), Options{Out: out, Site: true})
	if err != nil {
		t.Fatalf("publish with an old manifest: %v", err)
	}
	if got, _ := os.ReadFile(models); string(got) != string(want) || len(rep.Written) != 1 {
		t.Errorf("publish with an old manifest wrote %v, data/models.json is %s", rep.Written, got)
	}
	checkManifestRecordsOut(t, out)

	writeFile(t, models, `{"models": ["edited after"]}`)
	var fe *artifacts.FileError
	if err := publishErr(s, out); !errors.As(err, &fe) || fe.Path != models {
		t.Fatalf("an edit after the records: want a *FileError naming %s, got %v", models, err)
	}
}

// A republish killed after rewriting a file leaves that file trusted by
// path (the manifest drops its record before the first write), not looking
// changed by someone else: the next publish completes and records it.
func TestKilledRepublishIsOwnedByTheNext(t *testing.T) {
	dir, s := smallStudy(t)
	out := filepath.Join(dir, "out")
	opts := Options{Out: out, Site: true}
	if _, err := Publish(context.Background(), s, s.Compute(), opts); err != nil {
		t.Fatal(err)
	}
	planned, err := publish(context.Background(), s, s.Compute(), opts, check, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The write pass's start, then one changed file, then the kill.
	w := newWriter(out, write, &Report{})
	if err := w.readOwned(); err != nil {
		t.Fatal(err)
	}
	w.planned, w.intact = planned.seen, planned.intact
	if err := w.emit(layout.PublishedData(layout.PublishedModelsFile), []byte(`{"models": ["new"]}`)); err != nil {
		t.Fatal(err)
	}
	if err := publishErr(s, out); err != nil {
		t.Fatalf("publish after a killed one: %v", err)
	}
	checkManifestRecordsOut(t, out)
}

// The manifest records every file publish wrote as it is; a republish
// with nothing changed checks them against it and rewrites nothing, the
// manifest included.
func TestRepublishRecordsEveryFile(t *testing.T) {
	dir, s := smallStudy(t)
	out := filepath.Join(dir, "out")
	if err := publishErr(s, out); err != nil {
		t.Fatal(err)
	}
	checkManifestRecordsOut(t, out)
	s0 := snapshot(t, out)
	s2, err := study.Load(filepath.Join(dir, "benchmarks"))
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Publish(context.Background(), s2, s2.Compute(), Options{Out: out, Site: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Written) != 0 || rep.Unchanged != rep.Files || len(rep.Removed) != 0 {
		t.Errorf("unchanged study: wrote %v, removed %v", rep.Written, rep.Removed)
	}
	if got := touched(s0, snapshot(t, out)); len(got) != 0 {
		t.Errorf("unchanged study: replaced %v", got)
	}
}

// A manifest whose records are not publish's — a record of a file it does
// not list, a record without its size or sha256 — is refused as not
// publish's own, naming the manifest; nothing changes.
func TestPublishRefusesBadRecords(t *testing.T) {
	const hash = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	for name, records := range map[string]string{
		"a file it does not list": `{"data/models.json": {"size": 1, "sha256": "` + hash + `"}}`,
		"an empty record":         `{"data/taxonomy.json": {}}`,
		"a short sha256":          `{"data/taxonomy.json": {"size": 1, "sha256": "0123"}}`,
		"a negative size":         `{"data/taxonomy.json": {"size": -1, "sha256": "` + hash + `"}}`,
		"another key":             `{"data/taxonomy.json": {"size": 1, "sha256": "` + hash + `", "md5": ""}}`,
		"another key, no size":    `{"data/taxonomy.json": {"sha256": "` + hash + `", "md5": ""}}`,
		"no size":                 `{"data/taxonomy.json": {"sha256": "` + hash + `"}}`,
		"a key twice":             `{"data/taxonomy.json": {"size": 1, "size": 1, "sha256": "` + hash + `"}}`,
	} {
		t.Run(name, func(t *testing.T) {
			dir, s := smallStudy(t)
			out := filepath.Join(dir, "out")
			mpath := filepath.Join(out, layout.PublishManifestFile)
			writeFile(t, mpath, `{"files": ["data/taxonomy.json"], "written": `+records+`}`)
			before := tree(t, out)
			var fe *artifacts.FileError
			if err := publishErr(s, out); !errors.As(err, &fe) || fe.Path != mpath || !strings.Contains(err.Error(), "publish") {
				t.Fatalf("want a *FileError naming %s, got %v", mpath, err)
			}
			if after := tree(t, out); !maps.Equal(before, after) {
				t.Error("a refused publish changed --output")
			}
		})
	}
}
