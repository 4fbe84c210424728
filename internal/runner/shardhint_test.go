package runner

import (
	"bytes"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/impactbench/impactbench/internal/fault"
	"github.com/impactbench/impactbench/internal/layout"
	"github.com/impactbench/impactbench/internal/merge"
	"github.com/impactbench/impactbench/internal/progress"
)

// TestShardHintsNameTheMergeThatWorks: a shard's last line and a merge
// missing shards say how to merge. Workers that shared only a store
// (store:, IMPACTBENCH_STORE; pods with disks of their own) have no shard
// files but their own, so a plain merge can never succeed for them: both
// messages name --from-store, and only then.
func TestShardHintsNameTheMergeThatWorks(t *testing.T) {
	for _, c := range []struct {
		name      string
		store     bool
		done      string
		fromStore bool
	}{
		{"project's own call store", false, "shard 1/2 done; when every shard has finished run `impactbench merge example`", false},
		{"a store the workers share", true, "shard 1/2 done; when every shard has finished run `impactbench merge example --from-store`", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg, bench := project(t)
			var store string
			if c.store {
				store = filepath.Join(t.TempDir(), "calls")
			}
			var log bytes.Buffer
			tr := progress.New(&syncWriter{w: &log}, progress.Lines, time.Hour)
			defer tr.Close()
			r := newRunner(t, cfg, bench, Options{Store: store})
			if err := r.GenScenarios(t.Context()); err != nil {
				t.Fatal(err)
			}
			r.Close()
			r = newRunner(t, cfg, bench, Options{Store: store, Shard: layout.Shard{Index: 1, Count: 2}, Progress: tr})
			if err := r.Run(t.Context(), r.Targets()); err != nil {
				t.Fatal(err)
			}
			r.Close()
			if !strings.Contains(log.String(), c.done) {
				t.Errorf("the shard's log does not say %q:\n%s", c.done, log.String())
			}

			m := newRunner(t, cfg, bench, Options{Store: store})
			_, err := merge.Run(t.Context(), m.Work(), m.Targets())
			if err == nil || !strings.Contains(err.Error(), "shard(s) 0 of 2 missing") {
				t.Fatalf("merge without shard 0: %v", err)
			}
			if got := strings.Contains(err.Error(), "are merged with --from-store"); got != c.fromStore {
				t.Errorf("merge without shard 0 names --from-store: %v, want %v: %v", got, c.fromStore, err)
			}
		})
	}
}

// TestShardDryRunSaysNothingDone: a dry run of a shard plans it and calls
// nothing, so its log must not say the shard is done and to merge.
func TestShardDryRunSaysNothingDone(t *testing.T) {
	cfg, bench := project(t)
	r := newRunner(t, cfg, bench, Options{})
	if err := r.GenScenarios(t.Context()); err != nil {
		t.Fatal(err)
	}
	r.Close()
	var log bytes.Buffer
	tr := progress.New(&syncWriter{w: &log}, progress.Lines, time.Hour)
	defer tr.Close()
	r = newRunner(t, cfg, bench, Options{DryRun: true, Shard: layout.Shard{Index: 1, Count: 2}, Progress: tr})
	if err := r.Run(t.Context(), r.Targets()); err != nil {
		t.Fatal(err)
	}
	r.Close()
	if strings.Contains(log.String(), "shard 1/2 done") || strings.Contains(log.String(), "impactbench merge") {
		t.Errorf("a dry run of shard 1/2 says it is done:\n%s", log.String())
	}
}

// TestRefusedMergeWritesNothing: a merge missing a shard exits 2 naming it
// and changes no file, also when what is missing is only a later target's
// shard, or only a shard's scores (its task died between simulate and
// evaluate): no target's files are merged before every target's shards
// are found.
func TestRefusedMergeWritesNothing(t *testing.T) {
	for _, c := range []struct {
		name    string
		remove  []string // files of the last target's shard 1 of 2
		missing string
	}{
		{"the last target's scores of one shard", []string{layout.ScoresFile}, "scores shard(s) 1 of 2 missing"},
		{"the last target's shard", []string{layout.ConversationsFile, layout.ScoresFile, layout.CostFile}, "conversations shard(s) 1 of 2 missing"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg, bench := project(t)
			r := newRunner(t, cfg, bench, Options{})
			if err := r.GenScenarios(t.Context()); err != nil {
				t.Fatal(err)
			}
			r.Close()
			for i := range 2 {
				r := newRunner(t, cfg, bench, Options{Shard: layout.Shard{Index: i, Count: 2}})
				if err := r.Run(t.Context(), r.Targets()); err != nil {
					t.Fatal(err)
				}
				r.Close()
			}
			m := newRunner(t, cfg, bench, Options{})
			targets := m.Targets()
			last := m.Work().Files.RunDir(targets[len(targets)-1])
			for _, name := range c.remove {
				if err := os.Remove(filepath.Join(last, layout.Shard{Index: 1, Count: 2}.File(name))); err != nil {
					t.Fatal(err)
				}
			}
			before := tree(t, bench)
			_, err := merge.Run(t.Context(), m.Work(), targets)
			if err == nil || fault.KindOf(err) != fault.Input || !strings.Contains(err.Error(), c.missing) {
				t.Fatalf("merge: %v, want an input error saying %q", err, c.missing)
			}
			if after := tree(t, bench); !maps.Equal(before, after) {
				t.Errorf("the refused merge changed files: %d before, %d after", len(before), len(after))
				for p, b := range after {
					if before[p] != b {
						t.Errorf("  %s written", p)
					}
				}
			}
		})
	}
}

// tree is every file under dir by path, with its contents, and every
// directory.
func tree(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			files[p+"/"] = "directory"
			return nil
		}
		b, err := os.ReadFile(p)
		files[p] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// TestReplayNeedsScenarios: merge --from-store (a replay) in a project
// without scenarios.json is an input error naming the file to copy, before
// anything is opened or written: it calls no model, so it could not
// generate the set, and the set must be the one the workers ran.
func TestReplayNeedsScenarios(t *testing.T) {
	cfg, bench := project(t)
	before := tree(t, cfg.Dir)
	_, err := New(t.Context(), cfg, bench, Options{Replay: true, Store: filepath.Join(t.TempDir(), "calls")})
	want := "merge --from-store needs the " + layout.ScenariosFile + " the workers ran (it calls no model, so it cannot write one): copy " + filepath.Join(filepath.Base(filepath.Dir(bench)), filepath.Base(bench), layout.ScenariosFile)
	if err == nil || fault.KindOf(err) != fault.Input || !strings.Contains(err.Error(), want) {
		t.Fatalf("replay without scenarios: %v, want an input error saying %q", err, want)
	}
	if after := tree(t, cfg.Dir); !maps.Equal(before, after) {
		t.Errorf("the refused replay wrote in the project: %d files before, %d after", len(before), len(after))
	}
}

// TestReplayRefusesAMissingStoreDirectory: merge --from-store with a store
// directory that is not there (a mistyped path) is an input error saying
// so, writing nothing, rather than a replay asking an empty store for
// every call and telling to run every shard again; a worker still opens a
// store directory new to the study.
func TestReplayRefusesAMissingStoreDirectory(t *testing.T) {
	cfg, bench := project(t)
	r := newRunner(t, cfg, bench, Options{})
	if err := r.GenScenarios(t.Context()); err != nil {
		t.Fatal(err)
	}
	r.Close()
	missing := filepath.Join(t.TempDir(), "not-there", "calls")
	for _, store := range []string{missing, "file://" + filepath.ToSlash(missing)} {
		before := tree(t, cfg.Dir)
		_, err := New(t.Context(), cfg, bench, Options{Replay: true, Store: store, StoreFrom: "IMPACTBENCH_STORE"})
		want := "IMPACTBENCH_STORE: " + store + ": store not usable: no such directory; merge --from-store reads the store the workers wrote"
		if err == nil || fault.KindOf(err) != fault.Input || !strings.Contains(err.Error(), want) {
			t.Errorf("replay of %s: %v, want an input error saying %q", store, err, want)
		}
		if after := tree(t, cfg.Dir); !maps.Equal(before, after) {
			t.Errorf("the refused replay wrote in the project")
		}
		if _, err := os.Stat(missing); err == nil {
			t.Errorf("the refused replay made %s", missing)
		}
	}
	// A worker opens it (newRunner fails the test otherwise).
	newRunner(t, cfg, bench, Options{Store: missing, Shard: layout.Shard{Index: 0, Count: 2}}).Close()
}
