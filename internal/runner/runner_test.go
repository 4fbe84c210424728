package runner

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/impactbench/impactbench/internal/aggregate"
	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/layout"
	"github.com/impactbench/impactbench/internal/llm"
	"github.com/impactbench/impactbench/internal/llm/offline"
	"github.com/impactbench/impactbench/internal/merge"
	"github.com/impactbench/impactbench/internal/phase"
	"github.com/impactbench/impactbench/internal/summary"
	"github.com/impactbench/impactbench/internal/work"
)

// project scaffolds the `impactbench init` project (offline models) in a temp dir.
func project(t *testing.T) (*config.Config, string) {
	t.Helper()
	dir := t.TempDir()
	if _, err := config.Scaffold(dir, false); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(filepath.Join(dir, "config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return cfg, filepath.Join(dir, "benchmarks", "example")
}

func newRunner(t *testing.T, cfg *config.Config, bench string, opts Options) *Runner {
	t.Helper()
	r, err := New(context.Background(), cfg, bench, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	return r
}

func TestShardsMergeIntoOutputsIdenticalToUnshardedRun(t *testing.T) {
	ctx := t.Context()
	cfgA, benchA := project(t)
	rA := newRunner(t, cfgA, benchA, Options{})
	if err := rA.Run(ctx, rA.Targets()); err != nil {
		t.Fatal(err)
	}
	rA.Close()

	cfgB, benchB := project(t)
	rB := newRunner(t, cfgB, benchB, Options{})
	if err := rB.GenScenarios(ctx); err != nil {
		t.Fatal(err)
	}
	rB.Close()
	const K = 3
	for i := range K {
		r := newRunner(t, cfgB, benchB, Options{Shard: layout.Shard{Index: i, Count: K}})
		if err := r.Run(ctx, r.Targets()); err != nil {
			t.Fatalf("shard %d: %v", i, err)
		}
		r.Close()
	}
	rM := newRunner(t, cfgB, benchB, Options{})
	reps, err := merge.Run(ctx, rM.Work(), rM.Targets())
	if err != nil {
		t.Fatal(err)
	}
	if len(reps) != 2 || reps[0].Shards != K {
		t.Fatalf("merge reports = %+v", reps)
	}
	if err := aggregate.Run(ctx, rM.Work()); err != nil {
		t.Fatal(err)
	}
	files := []string{"scenarios.json", "results.json"}
	for _, tg := range rM.Targets() {
		for _, f := range []string{"conversations.json", "scores.json", "cost.json"} {
			files = append(files, filepath.Join("runs", tg, f))
		}
	}
	for _, f := range files {
		a, errA := os.ReadFile(filepath.Join(benchA, f))
		b, errB := os.ReadFile(filepath.Join(benchB, f))
		if errA != nil || errB != nil {
			t.Fatalf("%s: %v %v", f, errA, errB)
		}
		if !bytes.Equal(a, b) {
			t.Errorf("%s differs between the unsharded and the merged sharded run", f)
		}
	}
}

// pricedClients returns offline clients that charge a fixed price per call
// and count the calls that reached them.
func pricedClients(price float64, calls *atomic.Int64, fail func(llm.Request) bool) func(config.ModelConfig) (llm.Client, error) {
	return func(m config.ModelConfig) (llm.Client, error) {
		inner := offline.New(m, 0)
		return llm.ClientFunc(func(ctx context.Context, req llm.Request) (llm.Response, error) {
			calls.Add(1)
			if fail != nil && fail(req) {
				return llm.Response{}, &llm.Error{Kind: llm.KindServer, StatusCode: 500, Provider: "fake", Model: m.Model, Message: "boom"}
			}
			resp, err := inner.Complete(ctx, req)
			resp.Usage.Cost, resp.Usage.CostKnown = price, true
			return resp, err
		}), nil
	}
}

func TestBudgetCeilingStopsSchedulingAndRerunFinishesWithoutRepaying(t *testing.T) {
	ctx := t.Context()
	cfg, bench := project(t)
	base := newRunner(t, cfg, bench, Options{})
	if err := base.GenScenarios(ctx); err != nil {
		t.Fatal(err)
	}
	base.Close()

	var calls atomic.Int64
	const price, ceiling = 0.01, 0.50
	// A fixed worker count bounds the calls in flight when the ceiling is
	// reached (concurrency: auto would size the workers from the rows).
	cfg.Run.Concurrency.Simulate = 4
	r := newRunner(t, cfg, bench, Options{MaxCost: ceiling, Clients: pricedClients(price, &calls, nil)})
	if err := r.Simulate(ctx, "offline-careful"); err != nil {
		t.Fatal(err)
	}
	spent := r.b.Models.Budget().Spent()
	// The ceiling can be passed only by the estimate error of calls already
	// in flight. The offline model's estimated price is $0 while this fake
	// charges $0.01, so the bound is one call per simulate worker.
	slack := float64(cfg.Run.Concurrency.Simulate) * price
	if spent > ceiling+slack+1e-9 {
		t.Fatalf("spent $%.4f: past the $%.2f ceiling by more than the in-flight calls ($%.2f)", spent, ceiling, slack)
	}
	if got := float64(calls.Load()) * price; got > ceiling+slack+1e-9 {
		t.Fatalf("%d calls made ($%.2f): past the ceiling by more than the in-flight calls", calls.Load(), got)
	}
	if calls.Load() >= 127 {
		t.Fatalf("%d calls: the ceiling stopped nothing", calls.Load())
	}
	var stopped *summary.PhaseReport
	for i, p := range r.Report.Phases {
		if p.Phase == phase.StageSimulate {
			stopped = &r.Report.Phases[i]
		}
	}
	if stopped == nil || stopped.Status != phase.StatusStopped || r.Report.Budget == nil || r.Report.Budget.Remaining == 0 {
		t.Fatalf("phase not reported as stopped with work remaining: %+v / %+v", stopped, r.Report.Budget)
	}
	if r.Report.Budget.Spent != spent || spent == 0 {
		t.Errorf("ceiling report says $%.4f spent, the budget says $%.4f", r.Report.Budget.Spent, spent)
	}
	if _, err := os.Stat(filepath.Join(bench, "runs", "offline-careful", "conversations.json")); err == nil {
		t.Fatal("a partial conversations.json was written")
	}
	r.Close()

	first := calls.Load()
	var calls2 atomic.Int64
	r2 := newRunner(t, cfg, bench, Options{Clients: pricedClients(price, &calls2, nil)})
	if err := r2.Simulate(ctx, "offline-careful"); err != nil {
		t.Fatal(err)
	}
	convs, err := artifacts.ReadConversations(filepath.Join(bench, "runs", "offline-careful", "conversations.json"))
	if err != nil || len(convs) != 16 {
		t.Fatalf("rerun: %d conversations, %v", len(convs), err)
	}
	// A full run from scratch makes `full` calls; the rerun must make only
	// the ones the first run did not pay for.
	var callsFull atomic.Int64
	cfgF, benchF := project(t)
	rf := newRunner(t, cfgF, benchF, Options{Clients: pricedClients(price, &callsFull, nil)})
	if err := rf.GenScenarios(ctx); err != nil {
		t.Fatal(err)
	}
	before := callsFull.Load()
	if err := rf.Simulate(ctx, "offline-careful"); err != nil {
		t.Fatal(err)
	}
	full := callsFull.Load() - before
	if first+calls2.Load() != full {
		t.Errorf("calls: first %d + rerun %d != fresh run %d (something was paid twice or skipped)", first, calls2.Load(), full)
	}
}

func TestFailedRowsAreRecordedAndOnlyThoseRetried(t *testing.T) {
	ctx := t.Context()
	cfg, bench := project(t)
	base := newRunner(t, cfg, bench, Options{})
	if err := base.GenScenarios(ctx); err != nil {
		t.Fatal(err)
	}
	base.Close()

	var calls atomic.Int64
	var targetCalls atomic.Int64
	fail := func(req llm.Request) bool {
		if req.Purpose != llm.PurposeTarget {
			return false
		}
		// Fail every 3rd distinct target call deterministically by seed.
		return req.Seed%3 == 0
	}
	r := newRunner(t, cfg, bench, Options{Clients: pricedClients(0, &calls, fail)})
	if err := r.Simulate(ctx, "offline-careful"); err != nil {
		t.Fatal(err)
	}
	n, _ := r.Report.Failed()
	if n == 0 {
		t.Fatal("no failures recorded")
	}
	convs, err := artifacts.ReadConversations(filepath.Join(bench, "runs", "offline-careful", "conversations.json"))
	if err != nil {
		t.Fatal(err)
	}
	errRows := 0
	for _, c := range convs {
		if c.Status == artifacts.StatusError {
			errRows++
			if c.StatusReason == "" {
				t.Errorf("%s: error without a reason", c.ConvID)
			}
		}
	}
	if errRows != n || len(convs) != 16 {
		t.Fatalf("conversations.json: %d rows, %d errors; report says %d failed", len(convs), errRows, n)
	}
	r.Close()

	// Rerun with a healthy provider: completed rows replay for free, only the
	// failed ones call the model again.
	counting := func(m config.ModelConfig) (llm.Client, error) {
		inner := offline.New(m, 0)
		return llm.ClientFunc(func(ctx context.Context, req llm.Request) (llm.Response, error) {
			targetCalls.Add(1)
			return inner.Complete(ctx, req)
		}), nil
	}
	r2 := newRunner(t, cfg, bench, Options{Clients: counting})
	if err := r2.Simulate(ctx, "offline-careful"); err != nil {
		t.Fatal(err)
	}
	var rep summary.PhaseReport
	for _, p := range r2.Report.Phases {
		if p.Phase == phase.StageSimulate {
			rep = p
		}
	}
	if rep.Status != phase.StatusRan || rep.Failed != 0 {
		t.Fatalf("rerun: %+v", rep)
	}
	if rep.Reused != 16-errRows {
		t.Errorf("rerun reused %d rows, want %d (only failed rows may run again)", rep.Reused, 16-errRows)
	}
	convs, _ = artifacts.ReadConversations(filepath.Join(bench, "runs", "offline-careful", "conversations.json"))
	for _, c := range convs {
		if c.Status == artifacts.StatusError {
			t.Errorf("%s still failed after rerun", c.ConvID)
		}
	}
}

func TestSecondProcessIsLockedOut(t *testing.T) {
	cfg, bench := project(t)
	r1 := newRunner(t, cfg, bench, Options{})
	_, err := New(context.Background(), cfg, bench, Options{})
	var le *work.ErrLocked
	if !errors.As(err, &le) || !strings.Contains(err.Error(), "another impactbench process") {
		t.Fatalf("second runner: %v", err)
	}
	r1.Close()
	r3, err := New(context.Background(), cfg, bench, Options{})
	if err != nil {
		t.Fatalf("after release: %v", err)
	}
	r3.Close()
}
