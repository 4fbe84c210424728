package runner

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/impactbench/impactbench/internal/llm"
)

// slowFirstMetric delays the first metric's scenario generation, so every
// other metric's variants exist long before scenarios.json can be written.
func slowFirstMetric(first string, d time.Duration) func(llm.Request) error {
	return func(req llm.Request) error {
		if req.Purpose == llm.PurposeGenScenarios && req.Meta[llm.MetaMetricName] == first {
			time.Sleep(d)
		}
		return nil
	}
}

func TestRunSimulatesVariantsWhileOtherMetricsAreGenerated(t *testing.T) {
	ctx := t.Context()
	cfg, bench := project(t)
	r0 := newRunner(t, cfg, bench, Options{})
	if err := r0.GenMetrics(ctx); err != nil {
		t.Fatal(err)
	}
	first := r0.Bench().Metrics[0].Name
	r0.Close()

	var log callLog
	r := newRunner(t, cfg, bench, Options{Clients: log.clients(slowFirstMetric(first, 300*time.Millisecond))})
	if err := r.Run(ctx, r.Targets()); err != nil {
		t.Fatal(err)
	}
	r.Close()
	firstSim, lastGen := -1, -1
	for i, p := range log.purposes {
		switch p {
		case llm.PurposeGenScenarios, llm.PurposeExpand:
			lastGen = i
		case llm.PurposeUser, llm.PurposeTarget:
			if firstSim < 0 {
				firstSim = i
			}
		}
	}
	if firstSim < 0 || firstSim > lastGen {
		t.Fatalf("the first simulation call (#%d) came after the last generation call (#%d): simulate waited for gen_scenarios", firstSim, lastGen)
	}
	// Early conversations are simulate's rows: paid once, reported as run
	// (not as reused), and nothing is left over.
	sims := log.count(llm.PurposeUser) + log.count(llm.PurposeTarget) + log.count(llm.PurposeLandmark)
	calls := 0
	for _, p := range r.Report.Phases {
		if p.Phase == "simulate (started early)" {
			t.Errorf("a complete run reports conversations left over from early simulation: %+v", p)
		}
		if p.Phase == "simulate" {
			if p.Status != "ran" || p.Reused != 0 || p.Rows != 16 {
				t.Errorf("simulate %s: %+v, want ran, 16 rows, none reused", p.Target, p)
			}
			calls += p.Calls
		}
	}
	if calls != sims {
		t.Errorf("simulate reports %d calls, the provider answered %d simulation calls", calls, sims)
	}

	// Phase by phase, with the barrier: the same files byte for byte, and
	// the same number of calls (no conversation was paid twice).
	cfgB, benchB := project(t)
	var logB callLog
	rB := newRunner(t, cfgB, benchB, Options{Clients: logB.clients(nil)})
	for _, step := range []func(context.Context) error{rB.GenMetrics, rB.GenScenarios} {
		if err := step(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for _, tg := range rB.Targets() {
		if err := rB.Simulate(ctx, tg); err != nil {
			t.Fatal(err)
		}
		if err := rB.Evaluate(ctx, tg); err != nil {
			t.Fatal(err)
		}
	}
	rB.Close()
	genCalls := log.count(llm.PurposeGenMetrics)
	if got, want := len(log.purposes)-genCalls, len(logB.purposes)-logB.count(llm.PurposeGenMetrics); got != want {
		t.Errorf("streamed run made %d calls after gen_metrics, phase by phase %d", got, want)
	}
	for _, f := range []string{"scenarios.json", "runs/offline-careful/conversations.json", "runs/offline-careful/scores.json", "runs/offline-careful/cost.json", "runs/offline-careless/conversations.json"} {
		a, errA := os.ReadFile(filepath.Join(bench, f))
		b, errB := os.ReadFile(filepath.Join(benchB, f))
		if errA != nil || errB != nil || !bytes.Equal(a, b) {
			t.Errorf("%s differs between a streamed run and phase by phase (%v, %v)", f, errA, errB)
		}
	}

	// --force redoes every conversation once: an early one is taken over,
	// not wiped and paid again when simulate opens it.
	var forced callLog
	rF := newRunner(t, cfg, bench, Options{Force: true, Clients: forced.clients(slowFirstMetric(first, 300*time.Millisecond))})
	if err := rF.Run(ctx, rF.Targets()); err != nil {
		t.Fatal(err)
	}
	rF.Close()
	for _, p := range []llm.Purpose{llm.PurposeUser, llm.PurposeTarget, llm.PurposeJudge} {
		if a, b := forced.count(p), log.count(p); a != b {
			t.Errorf("run --force made %d %s calls, the first run %d", a, p, b)
		}
	}
}
