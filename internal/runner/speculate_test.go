package runner

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/llm"
	"github.com/impactbench/impactbench/internal/phase"
	"github.com/impactbench/impactbench/internal/simulate"
)

// firstMetricName generates the project's metrics and returns the first's name.
func firstMetricName(t *testing.T, cfg *config.Config, bench string) string {
	t.Helper()
	r := newRunner(t, cfg, bench, Options{})
	defer r.Close()
	if err := r.GenMetrics(t.Context()); err != nil {
		t.Fatal(err)
	}
	return r.Bench().Metrics[0].Name
}

// runPhaseByPhase runs every stage as its own command would, one after
// the other (no overlap), and closes r.
func runPhaseByPhase(t *testing.T, r *Runner) {
	t.Helper()
	defer r.Close()
	ctx := t.Context()
	for _, step := range []func(context.Context) error{r.GenMetrics, r.GenScenarios} {
		if err := step(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for _, tg := range r.Targets() {
		if err := r.Simulate(ctx, tg); err != nil {
			t.Fatal(err)
		}
		if err := r.Evaluate(ctx, tg); err != nil {
			t.Fatal(err)
		}
	}
}

// firstMetricWaitsFor holds the generation of the first metric's scenarios
// until log has a call of purpose p (or a minute has passed: a run that
// makes none early then fails its test on the order of the calls, rather
// than hanging). A fixed delay instead depends on how loaded the machine is.
func firstMetricWaitsFor(first string, log *callLog, p llm.Purpose) func(llm.Request) error {
	return func(req llm.Request) error {
		if req.Purpose == llm.PurposeGenScenarios && req.Meta[llm.MetaMetricName] == first {
			for deadline := time.Now().Add(time.Minute); log.count(p) == 0 && time.Now().Before(deadline); {
				time.Sleep(time.Millisecond)
			}
		}
		return nil
	}
}

func TestRunSimulatesVariantsWhileOtherMetricsAreGenerated(t *testing.T) {
	ctx := t.Context()
	cfg, bench := project(t)
	first := firstMetricName(t, cfg, bench)

	var log callLog
	r := newRunner(t, cfg, bench, Options{Clients: log.clients(firstMetricWaitsFor(first, &log, llm.PurposeJudge))})
	if err := r.Run(ctx, r.Targets()); err != nil {
		t.Fatal(err)
	}
	r.Close()
	firstSim, firstJudge, lastGen := -1, -1, -1
	for i, p := range log.purposes {
		switch p {
		case llm.PurposeGenScenarios, llm.PurposeExpand:
			lastGen = i
		case llm.PurposeUser, llm.PurposeTarget:
			if firstSim < 0 {
				firstSim = i
			}
		case llm.PurposeJudge:
			if firstJudge < 0 {
				firstJudge = i
			}
		}
	}
	if firstSim < 0 || firstSim > lastGen {
		t.Fatalf("the first simulation call (#%d) came after the last generation call (#%d): simulate waited for gen_scenarios", firstSim, lastGen)
	}
	if firstJudge < 0 || firstJudge > lastGen {
		t.Errorf("the first judge call (#%d) came after the last generation call (#%d): early conversations waited for gen_scenarios to be judged", firstJudge, lastGen)
	}
	for _, p := range r.Report.Phases {
		if p.Phase == phase.StageEvaluate && (p.Status != phase.StatusRan || p.Reused != 0 || p.Rows != 16 || p.Calls != log.count(llm.PurposeJudge)/2) {
			t.Errorf("evaluate %s: %+v, want ran, 16 rows, none reused, %d judge calls", p.Target, p, log.count(llm.PurposeJudge)/2)
		}
	}
	// Early conversations are simulate's rows: paid once, reported as run
	// (not as reused), and nothing is left over.
	sims := log.count(llm.PurposeUser) + log.count(llm.PurposeTarget) + log.count(llm.PurposeLandmark)
	calls, reports := 0, 0
	for _, p := range r.Report.Phases {
		if p.Phase == phase.StageSimulate {
			reports++
			if p.Status != phase.StatusRan || p.Reused != 0 || p.Rows != 16 {
				t.Errorf("simulate %s: %+v, want ran, 16 rows, none reused", p.Target, p)
			}
			calls += p.Calls
		}
	}
	if calls != sims || reports != len(r.Targets()) {
		t.Errorf("simulate reports %d calls in %d reports, the provider answered %d simulation calls for %d targets", calls, reports, sims, len(r.Targets()))
	}

	// Phase by phase, with the barrier: the same files byte for byte, and
	// the same number of calls (no conversation was paid twice).
	cfgB, benchB := project(t)
	var logB callLog
	runPhaseByPhase(t, newRunner(t, cfgB, benchB, Options{Clients: logB.clients(nil)}))
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
	rF := newRunner(t, cfg, bench, Options{Force: true, Clients: forced.clients(firstMetricWaitsFor(first, &forced, llm.PurposeJudge))})
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

// A run stopped while scenarios are still being generated keeps the
// conversations it started early: the summary says what they cost, and the
// next run reuses them.
func TestEarlyConversationsOfAStoppedRunAreKept(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	cfg, bench := project(t)
	first := firstMetricName(t, cfg, bench)

	// The stop comes right after the first judge answer, and the first
	// metric's scenarios are held until then: at the stop some early
	// conversation has been judged and generation is still under way,
	// however slowly the machine runs (a fixed delay was not enough on a
	// loaded one).
	var log callLog
	var once sync.Once
	stopped := make(chan struct{})
	stopAfterFirstVerdict := func() {
		defer close(stopped)
		defer cancel()
		for deadline := time.Now().Add(time.Minute); log.paid(llm.PurposeJudge) == 0 && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond)
		}
	}
	r := newRunner(t, cfg, bench, Options{Clients: log.clients(func(req llm.Request) error {
		switch {
		case req.Purpose == llm.PurposeJudge:
			once.Do(func() { go stopAfterFirstVerdict() })
		case req.Purpose == llm.PurposeGenScenarios && req.Meta[llm.MetaMetricName] == first:
			select { // a run that never judges early fails below, not hangs
			case <-stopped:
			case <-time.After(time.Minute):
			}
		}
		return nil
	})})
	if err := r.Run(ctx, r.Targets()); err == nil {
		t.Fatal("a cancelled run returned no error")
	}
	r.Close()
	judgeCalls, simCalls := 0, 0
	for _, p := range r.Report.Phases {
		switch p.Phase {
		case phase.StageSimulate:
			if p.Status != phase.StatusStopped || p.Calls == 0 || p.Spent.Requests != p.Calls {
				t.Errorf("simulate of the early conversations: %+v, want stopped, with what it paid", p)
			}
			simCalls += p.Calls
		case phase.StageEvaluate:
			if p.Status != phase.StatusStopped {
				t.Errorf("evaluate of the early conversations: %+v, want stopped", p)
			}
			judgeCalls += p.Calls
		}
	}
	if paid := log.paid(llm.PurposeUser) + log.paid(llm.PurposeTarget) + log.paid(llm.PurposeLandmark); simCalls != paid {
		t.Fatalf("the summary's simulate lines say %d calls, the provider answered %d simulation calls", simCalls, paid)
	}

	var again callLog
	r2 := newRunner(t, cfg, bench, Options{Clients: again.clients(nil)})
	if err := r2.Run(t.Context(), r2.Targets()); err != nil {
		t.Fatal(err)
	}
	r2.Close()
	cfgC, benchC := project(t)
	var clean callLog
	rC := newRunner(t, cfgC, benchC, Options{Clients: clean.clients(nil)})
	if err := rC.Run(t.Context(), rC.Targets()); err != nil {
		t.Fatal(err)
	}
	rC.Close()
	if n := log.paid(llm.PurposeJudge); n == 0 || n != judgeCalls {
		t.Errorf("%d judge calls answered before the stop, the summary's evaluate lines say %d", n, judgeCalls)
	}
	for _, p := range []llm.Purpose{llm.PurposeUser, llm.PurposeTarget, llm.PurposeJudge} {
		if a, b, c := log.paid(p), again.paid(p), clean.paid(p); a+b != c {
			t.Errorf("%s calls: %d before the stop + %d after = %d, a clean run %d (something was paid twice or skipped)", p, a, b, a+b, c)
		}
	}
	for _, f := range []string{"scenarios.json", "runs/offline-careful/conversations.json", "runs/offline-careless/scores.json"} {
		a, errA := os.ReadFile(filepath.Join(bench, f))
		b, errB := os.ReadFile(filepath.Join(benchC, f))
		if errA != nil || errB != nil || !bytes.Equal(a, b) {
			t.Errorf("%s after a stopped and a resumed run differs from a clean run's (%v, %v)", f, errA, errB)
		}
	}
}

// Batch waves want every conversation at once, at half price: no target
// whose turns go through them starts conversations early in real time.
func TestNoEarlyConversationsWithBatchWaves(t *testing.T) {
	cfg, bench := project(t)
	r := newRunner(t, cfg, bench, Options{})
	defer r.Close()
	tg, err := simulate.NewTarget(r.b, cfg.Targets[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close()
	if !r.startsEarly(tg, 8) {
		t.Fatal("a real-time target gets no early conversations")
	}
	cfg.UserModel.Batch = true // the offline model has no batch API: still real time
	if !r.startsEarly(tg, 8) {
		t.Fatal("batch: true on a model without a batch API stopped early conversations")
	}
	cfg.UserModel = config.ModelConfig{Model: "gpt-4o-mini", Source: "openai", APIKey: "sk-test", Batch: true}
	if r.startsEarly(tg, 8) {
		t.Fatal("early conversations for a target simulated in batch waves")
	}
}

// With scenarios.json up to date nothing is generated, so nothing starts
// early and simulate runs exactly as it always did.
func TestNoEarlySimulationWhenScenariosAreUpToDate(t *testing.T) {
	ctx := t.Context()
	cfg, bench := project(t)
	r0 := newRunner(t, cfg, bench, Options{})
	if err := r0.GenScenarios(ctx); err != nil {
		t.Fatal(err)
	}
	r0.Close()
	r := newRunner(t, cfg, bench, Options{})
	defer r.Close()
	flows, err := r.openTargets(r.Targets())
	if err != nil {
		t.Fatal(err)
	}
	defer closeTargets(flows)
	if off := r.speculate(ctx, flows); off != nil {
		t.Fatal("conversations start early although gen_scenarios has nothing to do")
	}
}
