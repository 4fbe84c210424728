package report

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
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
