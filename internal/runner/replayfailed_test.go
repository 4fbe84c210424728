package runner

import (
	"bytes"
	"hash/fnv"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/impactbench/impactbench/internal/aggregate"
	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/layout"
	"github.com/impactbench/impactbench/internal/llm"
	"github.com/impactbench/impactbench/internal/merge"
)

// TestReplayKeepsFailedRows: workers sharing a store whose rows failed
// for good (a target's error, a judge's) wrote them into their shard
// files, failed, as one process would; merge --from-store (a replay)
// must write them alike instead of asking the store for calls no worker
// could make, and give the files a merge of the shard files gives.
func TestReplayKeepsFailedRows(t *testing.T) {
	ctx := t.Context()
	store := filepath.Join(t.TempDir(), "calls")
	// A third of the target's turns and of the verdicts fail, the same
	// ones in every process.
	fail := func(req llm.Request) bool {
		if req.Purpose != llm.PurposeTarget && req.Purpose != llm.PurposeJudge {
			return false
		}
		h := fnv.New32a()
		for _, m := range req.Messages {
			h.Write([]byte(m.Content))
		}
		return h.Sum32()%3 == 0
	}
	var calls atomic.Int64
	cfg, bench := project(t)
	r := newRunner(t, cfg, bench, Options{Store: store})
	if err := r.GenScenarios(ctx); err != nil {
		t.Fatal(err)
	}
	r.Close()
	for i := range 2 {
		r := newRunner(t, cfg, bench, Options{Store: store, Shard: layout.Shard{Index: i, Count: 2}, Clients: pricedClients(0, &calls, fail)})
		if err := r.Run(ctx, r.Targets()); err != nil {
			t.Fatalf("shard %d: %v", i, err)
		}
		if n, _ := r.Report.Failed(); n == 0 {
			t.Fatalf("shard %d: no row failed; the test fails none", i)
		}
		r.Close()
	}
	m := newRunner(t, cfg, bench, Options{})
	if _, err := merge.Run(ctx, m.Work(), m.Targets()); err != nil {
		t.Fatal(err)
	}
	if err := aggregate.Run(ctx, m.Work()); err != nil {
		t.Fatal(err)
	}
	m.Close()

	cfgB, benchB := anotherMachine(t, bench)
	before := calls.Load()
	rB := newRunner(t, cfgB, benchB, Options{Store: store, Replay: true, Clients: pricedClients(0, &calls, fail)})
	if err := rB.Run(ctx, rB.Targets()); err != nil {
		t.Fatalf("merge --from-store of a study with failed rows: %v", err)
	}
	if n := calls.Load() - before; n != 0 {
		t.Errorf("the replay made %d calls", n)
	}
	files := []string{layout.ResultsFile}
	for _, tg := range rB.Targets() {
		for _, f := range []string{layout.ConversationsFile, layout.ScoresFile, layout.CostFile} {
			files = append(files, filepath.Join("runs", tg, f))
		}
	}
	sameAsMerged(t, bench, benchB, files)
}

// anotherMachine is a second copy of the project holding only bench's
// scenarios.json, as a machine that merges from the store has.
func anotherMachine(t *testing.T, bench string) (cfg *config.Config, benchB string) {
	t.Helper()
	cfg, benchB = project(t)
	sc, err := os.ReadFile(filepath.Join(bench, layout.ScenariosFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(benchB, layout.ScenariosFile), sc, 0o644); err != nil {
		t.Fatal(err)
	}
	return cfg, benchB
}

// sameAsMerged fails unless every file (relative to the benchmark) is
// byte-identical in bench, merged from shard files, and in benchB, merged
// from the store.
func sameAsMerged(t *testing.T, bench, benchB string, files []string) {
	t.Helper()
	for _, f := range files {
		a, errA := os.ReadFile(filepath.Join(bench, f))
		b, errB := os.ReadFile(filepath.Join(benchB, f))
		if errA != nil || errB != nil {
			t.Fatalf("%s: %v %v", f, errA, errB)
		}
		if !bytes.Equal(a, b) {
			t.Errorf("%s differs between the merge of the shard files and merge --from-store", f)
		}
	}
}
