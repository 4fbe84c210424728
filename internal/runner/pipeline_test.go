package runner

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/llm"
	"github.com/impactbench/impactbench/internal/llm/offline"
	"github.com/impactbench/impactbench/internal/phase"
	"github.com/impactbench/impactbench/internal/summary"
)

// callLog records the purpose of every call in the order calls were made.
type callLog struct {
	mu       sync.Mutex
	purposes []llm.Purpose
	// answered counts only calls that got an answer (a cancelled call
	// is logged but never paid for).
	answered map[llm.Purpose]int
}

func (l *callLog) clients(fail func(llm.Request) error) func(config.ModelConfig) (llm.Client, error) {
	return func(m config.ModelConfig) (llm.Client, error) {
		inner := offline.New(m, 0)
		return llm.ClientFunc(func(ctx context.Context, req llm.Request) (llm.Response, error) {
			l.mu.Lock()
			l.purposes = append(l.purposes, req.Purpose)
			l.mu.Unlock()
			if fail != nil {
				if err := fail(req); err != nil {
					return llm.Response{}, err
				}
			}
			resp, err := inner.Complete(ctx, req)
			if err == nil {
				l.mu.Lock()
				if l.answered == nil {
					l.answered = map[llm.Purpose]int{}
				}
				l.answered[req.Purpose]++
				l.mu.Unlock()
			}
			return resp, err
		}), nil
	}
}

func (l *callLog) paid(p llm.Purpose) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.answered[p]
}

func (l *callLog) count(p llm.Purpose) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, x := range l.purposes {
		if x == p {
			n++
		}
	}
	return n
}

func TestRunJudgesConversationsWhileOthersAreSimulated(t *testing.T) {
	ctx := t.Context()
	cfg, bench := project(t)
	cfg.Run.Concurrency.Simulate = 2 // 16 conversations per target: most still to come when the first ends
	// Scenarios first: with them generated in the same run, the offline
	// model simulates every conversation before scenarios.json is written
	// (early.go), and there would be nothing left to overlap with.
	r0 := newRunner(t, cfg, bench, Options{})
	if err := r0.GenScenarios(ctx); err != nil {
		t.Fatal(err)
	}
	r0.Close()
	var log callLog
	r := newRunner(t, cfg, bench, Options{Clients: log.clients(nil)})
	if err := r.Run(ctx, r.Targets()); err != nil {
		t.Fatal(err)
	}
	r.Close()
	firstJudge, lastSim := -1, -1
	for i, p := range log.purposes {
		switch p {
		case llm.PurposeJudge:
			if firstJudge < 0 {
				firstJudge = i
			}
		case llm.PurposeUser, llm.PurposeTarget:
			lastSim = i
		}
	}
	if firstJudge < 0 || firstJudge > lastSim {
		t.Fatalf("the first judge call (#%d) came after the last simulation call (#%d): evaluate waited for simulate", firstJudge, lastSim)
	}
	for _, tg := range r.Targets() {
		var ev *summary.PhaseReport
		for i, p := range r.Report.Phases {
			if p.Phase == phase.StageEvaluate && p.Target == tg {
				ev = &r.Report.Phases[i]
			}
		}
		if ev == nil || ev.Status != phase.StatusRan || ev.Rows != 16 || ev.Reused != 0 || ev.Calls != 16 {
			t.Errorf("%s: evaluate report %+v, want ran, 16 rows, 16 judge calls, none reused", tg, ev)
		}
	}

	// The same project run phase by phase (no pipeline) writes the same
	// scores, byte for byte.
	cfgB, benchB := project(t)
	runPhaseByPhase(t, newRunner(t, cfgB, benchB, Options{}))
	for _, tg := range r.Targets() {
		for _, f := range []string{"conversations.json", "scores.json", "cost.json"} {
			a, errA := os.ReadFile(filepath.Join(bench, "runs", tg, f))
			b, errB := os.ReadFile(filepath.Join(benchB, "runs", tg, f))
			if errA != nil || errB != nil || !bytes.Equal(a, b) {
				t.Errorf("runs/%s/%s differs between a pipelined run and phase-by-phase (%v, %v)", tg, f, errA, errB)
			}
		}
	}

	// A rerun pays for nothing.
	var again callLog
	r2 := newRunner(t, cfg, bench, Options{Clients: again.clients(nil)})
	if err := r2.Run(ctx, r2.Targets()); err != nil {
		t.Fatal(err)
	}
	if n := len(again.purposes); n != 0 {
		t.Errorf("a rerun made %d calls", n)
	}
	r2.Close()

	// Outputs rebuilt from the call store alone (every row answered from
	// disk, so what the writers and judges see went through a JSON round
	// trip) are the bytes the live run wrote from memory, for no calls.
	want := map[string][]byte{}
	for _, tg := range r.Targets() {
		for _, f := range []string{"conversations.json", "scores.json"} {
			path := filepath.Join(bench, "runs", tg, f)
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			want[path] = b
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
		}
	}
	var rebuilt callLog
	r3 := newRunner(t, cfg, bench, Options{Clients: rebuilt.clients(nil)})
	if err := r3.Run(ctx, r3.Targets()); err != nil {
		t.Fatal(err)
	}
	r3.Close()
	if n := len(rebuilt.purposes); n != 0 {
		t.Errorf("rebuilding the outputs from the store made %d calls", n)
	}
	for path, b := range want {
		if got, err := os.ReadFile(path); err != nil || !bytes.Equal(got, b) {
			t.Errorf("%s rebuilt from the store differs from the live run's (%v)", path, err)
		}
	}
}

func TestPipelinedJudgeAuthFailureStopsTheRun(t *testing.T) {
	ctx := t.Context()
	cfg, bench := project(t)
	cfg.Run.Concurrency.Simulate = 1
	pre := newRunner(t, cfg, bench, Options{})
	if err := pre.GenScenarios(ctx); err != nil {
		t.Fatal(err)
	}
	pre.Close()
	var log callLog
	authErr := &llm.Error{Kind: llm.KindAuth, StatusCode: 401, Provider: "fake", Message: "invalid api key"}
	r := newRunner(t, cfg, bench, Options{Clients: log.clients(func(req llm.Request) error {
		if req.Purpose == llm.PurposeJudge {
			return authErr
		}
		return nil
	})})
	err := r.Run(ctx, r.Targets())
	if llm.KindOf(err) != llm.KindAuth {
		t.Fatalf("Run = %v, want the judge's auth error", err)
	}
	t.Logf("target calls: %d", log.count(llm.PurposeTarget))
	// One conversation at a time: the judge's failure on the first finished
	// conversation stops simulation long before the 32 conversations end.
	if n := log.count(llm.PurposeTarget); n >= 32*cfg.Generation.Turns/2 {
		t.Errorf("%d target calls after the judge failed: simulation was not stopped", n)
	}
	for _, tg := range r.Targets() {
		if _, err := os.Stat(filepath.Join(bench, "runs", tg, "scores.json")); err == nil {
			t.Errorf("%s: scores.json written although the judge failed", tg)
		}
	}
}

// Two targets naming one rate_pool share one limiter pool (the stricter
// limits win); without it each model has its own.
func TestRatePoolSharesLimitsAcrossModels(t *testing.T) {
	ctx := t.Context()
	for _, shared := range []bool{false, true} {
		cfg, bench := project(t)
		for i := range cfg.Targets {
			cfg.Targets[i].RPM = 100000 * (i + 1)
			if shared {
				cfg.Targets[i].RatePool = "family"
			}
		}
		r := newRunner(t, cfg, bench, Options{})
		if err := r.Run(ctx, r.Targets()); err != nil {
			t.Fatal(err)
		}
		var targetPools []string
		var calls int64
		for _, st := range r.b.Models.Stats() {
			if strings.Contains(st.Pool, "offline-care") || strings.Contains(st.Pool, "pool:family") {
				targetPools = append(targetPools, st.Pool)
				calls += st.Calls
				if shared && st.Configured.RPM != 100000 {
					t.Errorf("shared pool RPM %d, want the stricter 100000", st.Configured.RPM)
				}
			}
		}
		want := 2
		if shared {
			want = 1
		}
		if len(targetPools) != want || calls == 0 {
			t.Errorf("rate_pool shared=%v: target pools %q (%d calls), want %d", shared, targetPools, calls, want)
		}
		// Each target still got its own model: the runs differ by care.
		a, _ := os.ReadFile(filepath.Join(bench, "runs", "offline-careful", "scores.json"))
		b, _ := os.ReadFile(filepath.Join(bench, "runs", "offline-careless", "scores.json"))
		if len(a) == 0 || bytes.Equal(a, b) {
			t.Errorf("rate_pool shared=%v: the two targets' scores are identical or missing: one client served both", shared)
		}
		r.Close()
	}
}
