package report

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/impactbench/impactbench/internal/fsx"
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

	l := ReadLive(bench, cache)
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
	if l := ReadLive(bench, cache); l.Running {
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
	l := ReadLive(bench, cache)
	if !l.Running || l.Holder != "shard 1/2: "+me {
		t.Errorf("running = %v, holder %q; want shard 1/2 named", l.Running, l.Holder)
	}

	// A holder on another machine: running while the lock is held.
	other := filepath.Join(cache, ".lock.shard-0-of-2")
	touch(t, other, "pid 1, host another-node, started 2026-11-29T00:00:00Z, label benchmark b shard 0/2")
	touch(t, filepath.Join(cache, ".lock.shard-1-of-2"), "")
	if l := ReadLive(bench, cache); l.Running {
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
	if l := ReadLive(bench, cache); !l.Running || !strings.Contains(l.Holder, "shard 0/2: pid 1, host another-node") {
		t.Errorf("a held lock of another host: running = %v, holder %q", l.Running, l.Holder)
	}
}
