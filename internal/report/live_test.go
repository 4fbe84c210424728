package report

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/impactbench/impactbench/internal/fault"
	"github.com/impactbench/impactbench/internal/fsx"
	"github.com/impactbench/impactbench/internal/layout"
)

func touch(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// mustReadLive is ReadLive, failing the test on its error.
func mustReadLive(t *testing.T, bench, cache string) Live {
	t.Helper()
	l, err := ReadLive(bench, cache)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestReadLive(t *testing.T) {
	bench, cache := t.TempDir(), t.TempDir()
	calls := filepath.Join(cache, "calls")
	touch(t, filepath.Join(calls, "gen_scenarios", "m01.json"), "{}")
	touch(t, filepath.Join(calls, "gen_scenarios", "m02.jsonl"), "")
	sim := filepath.Join(calls, "gpt", "sim")
	touch(t, filepath.Join(sim, "a__s0.json"), "{}")
	touch(t, filepath.Join(sim, "b__s0.json"), "{}")
	touch(t, filepath.Join(sim, "b__s0.jsonl"), "") // completed before, redone now
	touch(t, filepath.Join(sim, "c__s0.jsonl"), "")
	touch(t, filepath.Join(sim, ".tmp-1"), "")
	touch(t, filepath.Join(calls, "gpt", "eval", "a__s0.json"), "{}")
	touch(t, filepath.Join(bench, "runs", "gpt", "conversations.shard-0-of-2.json"), `[{"id": "a", "t": [{"x": "]}"}]}, {"id": "b"}]`)
	touch(t, filepath.Join(bench, "runs", "gpt", "scores.shard-1-of-2.json"), `[{"id": "a"`)
	touch(t, filepath.Join(cache, ".lock"), "pid "+strconv.Itoa(os.Getpid())+", started now")

	l := mustReadLive(t, bench, cache)
	if !l.Running || l.Holder == "" {
		t.Errorf("running = %v (%q), want true: this process holds it", l.Running, l.Holder)
	}
	if l.Generated != (UnitCount{Stored: 1, InProgress: 1}) {
		t.Errorf("gen_scenarios = %+v", l.Generated)
	}
	want := TargetLive{Simulate: UnitCount{Stored: 1, InProgress: 2}, Evaluate: UnitCount{Stored: 1}}
	if l.Targets["gpt"] != want {
		t.Errorf("gpt = %+v, want %+v", l.Targets["gpt"], want)
	}
	shards := l.Shards["gpt"]
	if len(shards) != 2 || shards[0].Rows != 2 || shards[1].Rows != -1 {
		t.Errorf("shards = %+v, want 2 rows and one unreadable", shards)
	}
	if got := liveCell(l.Targets["gpt"].Simulate, 16); got != "1/16 stored, 2 in progress" {
		t.Errorf("cell %q", got)
	}

	// A lock file whose process is gone is not a run in progress.
	touch(t, filepath.Join(cache, ".lock"), "pid 999999999, started then")
	if l := mustReadLive(t, bench, cache); l.Running {
		t.Error("a dead pid reads as running")
	}
}

// TestReadLiveShards: shards running at once on one directory hold their
// own locks (the benchmark's lock only shared): the benchmark reads as
// running, naming each live shard, and not once their processes are gone.
// A holder on another host is judged by the lock itself.
func TestReadLiveShards(t *testing.T) {
	bench, cache := t.TempDir(), t.TempDir()
	host, _ := os.Hostname()
	me := "pid " + strconv.Itoa(os.Getpid()) + ", host " + host + ", started 2026-11-29T00:00:00Z, label benchmark b shard 1/2"
	touch(t, filepath.Join(cache, ".lock"), "pid 999999999, host "+host+", started 2026-11-28T00:00:00Z") // an earlier run's line
	touch(t, filepath.Join(cache, ".lock.shard-1-of-2"), me)
	touch(t, filepath.Join(cache, ".lock.shard-0-of-2"), "pid 999999999, host "+host+", started 2026-11-28T00:00:00Z")
	touch(t, filepath.Join(cache, ".lock.shard-x-of-2"), me) // not a shard's lock
	l := mustReadLive(t, bench, cache)
	if !l.Running || l.Holder != "shard 1/2: "+me {
		t.Errorf("running = %v, holder %q; want shard 1/2 named", l.Running, l.Holder)
	}

	// A holder on another machine: running while the lock is held.
	other := filepath.Join(cache, ".lock.shard-0-of-2")
	touch(t, other, "pid 1, host another-node, started 2026-11-29T00:00:00Z, label benchmark b shard 0/2")
	touch(t, filepath.Join(cache, ".lock.shard-1-of-2"), "")
	if l := mustReadLive(t, bench, cache); l.Running {
		t.Errorf("a free lock of another host reads as running: %q", l.Holder)
	}
	f, err := os.OpenFile(other, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := fsx.TryLock(f); err != nil {
		t.Fatal(err)
	}
	if l := mustReadLive(t, bench, cache); !l.Running || !strings.Contains(l.Holder, "shard 0/2: pid 1, host another-node") {
		t.Errorf("a held lock of another host: running = %v, holder %q", l.Running, l.Holder)
	}
}

// TestReadLiveRefusesCrowdedFolders: a folder status reads holding more
// entries than its bound — the call store's calls/, the cache folder
// (where the shard locks are), runs/ — is an input error naming the
// folder and the limit from ReadLive and from status (text and --json,
// of a benchmark and of a study), not shown as nothing stored; at the
// bound it is read. Nothing is written either way.
func TestReadLiveRefusesCrowdedFolders(t *testing.T) {
	defer func(b, r int) { layout.MaxBenchmarkEntries, layout.MaxRunEntries = b, r }(layout.MaxBenchmarkEntries, layout.MaxRunEntries)
	layout.MaxBenchmarkEntries, layout.MaxRunEntries = 4, 3
	for _, tc := range []struct {
		name   string
		folder func(b layout.Bench) string
	}{
		{"calls", layout.Bench.Calls},
		{"cache", func(b layout.Bench) string { return b.Cache }},
		{"runs", layout.Bench.RunsDir},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := t.TempDir()
			b := layout.ForProject(p, layout.BenchDir(p, "b"))
			touch(t, filepath.Join(b.Calls(), "gpt", "sim", "a__s0.json"), "{}")
			touch(t, filepath.Join(b.RunDir("gpt"), "x"), "")
			folder := tc.folder(b)
			limit := layout.MaxRunEntries
			if tc.name == "cache" {
				limit = layout.MaxBenchmarkEntries
			}
			ents, err := os.ReadDir(folder)
			if err != nil {
				t.Fatal(err)
			}
			for i := len(ents); i < limit; i++ {
				touch(t, filepath.Join(folder, fmt.Sprintf(".n%d", i)), "")
			}
			l, err := ReadLive(b.Dir, b.Cache)
			if err != nil {
				t.Fatalf("at the bound: %v", err)
			}
			if l.Targets["gpt"].Simulate.Stored != 1 {
				t.Errorf("at the bound: targets %+v, want gpt's unit", l.Targets)
			}
			touch(t, filepath.Join(folder, "one-more"), "")
			before := treeOf(t, p)
			_, err = ReadLive(b.Dir, b.Cache)
			opts := StatusOptions{CacheDir: b.Cache}
			study := []StudyBench{{Dir: b.Dir, CacheDir: b.Cache}}
			var out bytes.Buffer
			for what, err := range map[string]error{
				"ReadLive":             err,
				"Status":               Status(&out, b.Dir, nil, opts),
				"WriteStatusJSON":      WriteStatusJSON(&out, b.Dir, nil, opts),
				"StudyStatus":          StudyStatus(&out, study, nil, opts),
				"WriteStudyStatusJSON": WriteStudyStatusJSON(&out, study, nil, opts),
			} {
				var many *fsx.TooManyEntriesError
				if !errors.As(err, &many) || many.Path != folder || fault.KindOf(err) != fault.Input ||
					!strings.Contains(err.Error(), fmt.Sprintf("%s holds more than %d entries", folder, limit)) {
					t.Errorf("%s over the bound: err = %v, want an input error naming %s and its limit", what, err, folder)
				}
			}
			if out.Len() != 0 {
				t.Errorf("status refused, yet wrote %q", out.String())
			}
			if after := treeOf(t, p); !maps.Equal(before, after) {
				t.Error("reading status changed files")
			}
		})
	}
}

// TestReportRefusesACrowdedRunsFolder: runs/ holding more entries than
// its bound is an input error naming the folder and the limit from Load,
// WriteFile (impactbench report) and status without a call store, not
// a report of no runs; at the bound its run is read. Nothing is written
// when it is refused.
func TestReportRefusesACrowdedRunsFolder(t *testing.T) {
	defer func(r int) { layout.MaxRunEntries = r }(layout.MaxRunEntries)
	layout.MaxRunEntries = 3
	p := t.TempDir()
	b := layout.Bench{Dir: layout.BenchDir(p, "b")}
	touch(t, filepath.Join(b.RunDir("gpt"), "x"), "")
	for i := 1; i < layout.MaxRunEntries; i++ {
		touch(t, filepath.Join(b.RunsDir(), fmt.Sprintf(".n%d", i)), "")
	}
	in, err := Load(b.Dir, Settings{})
	if err != nil {
		t.Fatalf("at the bound: %v", err)
	}
	if len(in.Runs) != 1 || in.Runs[0].Target != "gpt" {
		t.Fatalf("at the bound: runs %+v, want gpt's", in.Runs)
	}
	touch(t, filepath.Join(b.RunsDir(), "one-more"), "")
	before := treeOf(t, p)
	_, loadErr := Load(b.Dir, Settings{})
	_, writeErr := WriteFile(t.Context(), b.Dir, Options{})
	var out bytes.Buffer
	for what, err := range map[string]error{
		"Load":            loadErr,
		"WriteFile":       writeErr,
		"Status":          Status(&out, b.Dir, nil, StatusOptions{}),
		"WriteStatusJSON": WriteStatusJSON(&out, b.Dir, nil, StatusOptions{}),
	} {
		var many *fsx.TooManyEntriesError
		if !errors.As(err, &many) || many.Path != b.RunsDir() || fault.KindOf(err) != fault.Input ||
			!strings.Contains(err.Error(), fmt.Sprintf("%s holds more than %d entries", b.RunsDir(), layout.MaxRunEntries)) {
			t.Errorf("%s over the bound: err = %v, want an input error naming %s and its limit", what, err, b.RunsDir())
		}
	}
	if out.Len() != 0 {
		t.Errorf("status refused, yet wrote %q", out.String())
	}
	if after := treeOf(t, p); !maps.Equal(before, after) {
		t.Error("a refused report changed files")
	}
}

// treeOf is every file under root with its content.
func treeOf(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		out[p] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
