package publish

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/fault"
	"github.com/impactbench/impactbench/internal/layout"
)

// TestPublishRefusesFilesChangedBetweenItsPasses: a file planted or
// edited between the check pass and the write pass, at a path publish is
// about to write or remove, is not overwritten or removed: publish stops
// with a *FileError naming it (exit 2), the planted bytes stay, and the
// manifest it leaves lists no file publish did not write — a refused file
// is listed only if the last publish owned it, with the record it had, so
// the next publish refuses it again rather than taking it over. The same
// holds for a file planted after the write pass's last look, right before
// the rename (or removal) itself.
func TestPublishRefusesFilesChangedBetweenItsPasses(t *testing.T) {
	const mine = "<h1>my own page</h1>\n"
	for name, tc := range map[string]struct {
		prepare  func(t *testing.T, out string) // after the first publish
		named    string                         // planted or edited between the passes
		site     bool                           // the second publish's --site
		says     string
		atCommit string // what it says when the file is planted at the last instant, if not says
		wrote    bool   // whether the second publish wrote a file that was not there before the refusal
		removing bool
	}{
		"a file planted where publish found none and creates it": {
			// The first publish had no site: index.html is new.
			named: "index.html", site: true, says: "already exists and an earlier publish did not write it", wrote: true,
			atCommit: "was changed while publish ran (there was no file there when publish checked the folder; now there is one)",
		},
		"a file planted where an owned file was missing, after a write": {
			prepare: func(t *testing.T, out string) {
				for _, rel := range []string{"data/models.json", "index.html"} {
					if err := os.Remove(filepath.Join(out, filepath.FromSlash(rel))); err != nil {
						t.Fatal(err)
					}
				}
			},
			named: "index.html", site: true, says: "there was no file there when publish checked the folder", wrote: true,
		},
		"an owned file edited that publish would overwrite": {
			prepare: func(t *testing.T, out string) {
				// As an earlier publish left it: other bytes, recorded.
				old := `{"models": []}` + "\n"
				writeFile(t, filepath.Join(out, "data", "models.json"), old)
				m, _, err := readManifest(filepath.Join(out, layout.PublishManifestFile))
				if err != nil {
					t.Fatal(err)
				}
				m.Written["data/models.json"] = sum([]byte(old))
				b, err := json.Marshal(m)
				if err != nil {
					t.Fatal(err)
				}
				writeFile(t, filepath.Join(out, layout.PublishManifestFile), string(b))
			},
			named: "data/models.json", site: true, says: "its bytes differ from the sha256",
		},
		"an owned file edited that publish would remove": {
			named: "index.html", site: false, says: "publish does not remove", removing: true,
		},
	} {
		for _, when := range []string{"between the passes", "at the commit"} {
			t.Run(name+", "+when, func(t *testing.T) {
				dir, s := smallStudy(t)
				out := filepath.Join(dir, "out")
				first := !strings.HasPrefix(name, "a file planted where publish found none")
				if _, err := Publish(context.Background(), s, s.Compute(), Options{Out: out, Site: first}); err != nil {
					t.Fatal(err)
				}
				if tc.prepare != nil {
					tc.prepare(t, out)
				}
				mpath := filepath.Join(out, layout.PublishManifestFile)
				before, _, err := readManifest(mpath)
				if err != nil {
					t.Fatal(err)
				}
				onDisk := tree(t, out)
				named := filepath.Join(out, filepath.FromSlash(tc.named))
				says := tc.says
				if when == "between the passes" {
					betweenPasses = func() { writeFile(t, named, mine) }
				} else {
					// After the write pass's last look: the rename itself
					// must see it.
					atCommit = func(p string) {
						if p == named {
							writeFile(t, named, mine)
						}
					}
					if tc.atCommit != "" {
						says = tc.atCommit
					}
				}
				defer func() { betweenPasses, atCommit = nil, nil }()
				rep, err := Publish(context.Background(), s, s.Compute(), Options{Out: out, Site: tc.site})
				betweenPasses, atCommit = nil, nil
				var fe *artifacts.FileError
				if !errors.As(err, &fe) || fe.Path != named || fault.KindOf(err) != fault.Input || !strings.Contains(err.Error(), says) {
					t.Fatalf("got %v (report %+v), want an input error naming %s saying %q", err, rep, named, says)
				}
				if b, err := os.ReadFile(named); err != nil || string(b) != mine {
					t.Fatalf("%s: %q %v, want the planted bytes left", tc.named, b, err)
				}
				after, _, err := readManifest(mpath)
				if err != nil {
					t.Fatal(err)
				}
				wrote := false
				for _, rel := range after.Files {
					rec, ok := after.Written[rel]
					if !ok {
						t.Errorf("the manifest lists %s without a record: the next publish would trust it by its path", rel)
						continue
					}
					if _, was := onDisk[filepath.FromSlash(rel)]; !was && rel != tc.named {
						wrote = true
					}
					b, err := os.ReadFile(filepath.Join(out, filepath.FromSlash(rel)))
					if rel == tc.named {
						if old, had := before.Written[rel]; !had || rec != old || (err == nil && sum(b) == rec) {
							t.Errorf("the manifest records the refused %s as %+v (before: %+v, had %v)", rel, rec, old, had)
						}
						continue
					}
					if err != nil || sum(b) != rec {
						t.Errorf("the manifest records %s as %+v; it is %v (%v)", rel, rec, sum(b), err)
					}
				}
				if wrote != tc.wrote {
					t.Errorf("the manifest lists files written before the refusal: %v, want %v", wrote, tc.wrote)
				}
				// The next publish, nothing planted, still refuses the file:
				// it is not publish's.
				if _, err := Publish(context.Background(), s, s.Compute(), Options{Out: out, Site: tc.site}); !errors.As(err, &fe) || fe.Path != named {
					t.Errorf("publishing again: %v, want the refusal of %s", err, named)
				}
				if b, err := os.ReadFile(named); err != nil || string(b) != mine {
					t.Errorf("%s after publishing again: %q %v", tc.named, b, err)
				}
			})
		}
	}
}
