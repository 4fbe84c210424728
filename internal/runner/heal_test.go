package runner

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/llm"
	"github.com/impactbench/impactbench/internal/llm/offline"
	"github.com/impactbench/impactbench/internal/phase"
	"github.com/impactbench/impactbench/internal/summary"
)

// rewriting returns offline clients whose answers pass through edit (which
// may replace them), counting every call that reached the "provider".
func rewriting(calls *atomic.Int64, edit func(req llm.Request, text string) string) func(config.ModelConfig) (llm.Client, error) {
	return func(m config.ModelConfig) (llm.Client, error) {
		inner := offline.New(m, 0)
		return llm.ClientFunc(func(ctx context.Context, req llm.Request) (llm.Response, error) {
			calls.Add(1)
			resp, err := inner.Complete(ctx, req)
			if err == nil && edit != nil {
				resp.Text = edit(req, resp.Text)
			}
			return resp, err
		}), nil
	}
}

func phaseOf(r *Runner, name phase.Stage) summary.PhaseReport {
	for _, p := range r.Report.Phases {
		if p.Phase == name {
			return p
		}
	}
	return summary.PhaseReport{}
}

// simulated prepares a project whose scenarios and conversations of target
// offline-careful exist (offline models, healthy).
func simulated(t *testing.T) (*config.Config, string) {
	t.Helper()
	cfg, bench := project(t)
	r := newRunner(t, cfg, bench, Options{})
	if err := r.GenScenarios(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := r.Simulate(t.Context(), "offline-careful"); err != nil {
		t.Fatal(err)
	}
	r.Close()
	return cfg, bench
}

// Judge answers that are invalid (truncated JSON, or JSON without a
// verdict) fail their rows; the rerun against a healthy judge heals exactly
// those rows with fresh calls, and replays the others for free.
func TestInvalidJudgeAnswersHealOnRerun(t *testing.T) {
	for _, tc := range []struct{ name, answer string }{
		{"truncated JSON", `{"justification": "The assistant dec`},
		{"null verdict", `{"justification": "hard to say"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			cfg, bench := simulated(t)
			def := firstMetric(t, bench)
			var calls1 atomic.Int64
			r := newRunner(t, cfg, bench, Options{Clients: rewriting(&calls1, func(req llm.Request, text string) string {
				if req.Purpose == llm.PurposeJudge && req.Meta[llm.MetaMetricDefinition] == def {
					return tc.answer
				}
				return text
			})})
			if err := r.Evaluate(ctx, "offline-careful"); err != nil {
				t.Fatal(err)
			}
			first := phaseOf(r, phase.StageEvaluate)
			if first.Failed != 8 { // m01's 2 scenarios × 2 variants × 2 samples
				t.Fatalf("first run: %d failed rows, want the 8 of m01 (a null verdict must not pass for a result): %+v", first.Failed, first)
			}
			r.Close()

			var calls2 atomic.Int64
			r2 := newRunner(t, cfg, bench, Options{Clients: rewriting(&calls2, nil)})
			if err := r2.Evaluate(ctx, "offline-careful"); err != nil {
				t.Fatal(err)
			}
			second := phaseOf(r2, phase.StageEvaluate)
			if second.Failed != 0 || calls2.Load() != 8 || second.Reused != 8 {
				t.Fatalf("rerun: %d failed, %d calls, %d rows reused; want 0 failed, one fresh call per failed row (8), the 8 others reused", second.Failed, calls2.Load(), second.Reused)
			}
			scores, err := artifacts.ReadScores(filepath.Join(bench, "runs", "offline-careful", "scores.json"))
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range scores {
				if s.Present == nil {
					t.Errorf("%s: still no verdict after the rerun (%s)", s.ConvID, s.NullReason)
				}
			}
			r2.Close()
			var calls3 atomic.Int64
			r3 := newRunner(t, cfg, bench, Options{Clients: rewriting(&calls3, nil)})
			if err := r3.Evaluate(ctx, "offline-careful"); err != nil || calls3.Load() != 0 {
				t.Fatalf("third run: %v, %d calls: an answered call was paid twice", err, calls3.Load())
			}
		})
	}
}

// firstMetric returns the definition of the benchmark's first metric: the
// judge sees only the definition, never the metric id.
func firstMetric(t *testing.T, bench string) string {
	t.Helper()
	b, err := config.LoadBenchmark(filepath.Join(bench, "benchmark.yaml"))
	if err != nil || len(b.Metrics) == 0 {
		t.Fatalf("benchmark: %v", err)
	}
	return b.Metrics[0].Definition
}

// breakScenarios edits offline gen_scenarios answers: m01's first scenario
// gets a landmark past the last turn (repairable), m02's first scenario an
// empty user_goal (not repairable) in every round.
func breakScenarios(turns int) func(req llm.Request, text string) string {
	return func(req llm.Request, text string) string {
		if req.Purpose != llm.PurposeGenScenarios {
			return text
		}
		var out struct {
			Scenarios []map[string]any `json:"scenarios"`
		}
		if json.Unmarshal([]byte(text), &out) != nil || len(out.Scenarios) == 0 {
			return text
		}
		switch req.Meta[llm.MetaMetricID] {
		case "m01":
			lms, _ := out.Scenarios[0]["landmarks"].([]any)
			if len(lms) > 0 {
				lms[len(lms)-1].(map[string]any)["turn"] = turns + 1
			}
		case "m02":
			out.Scenarios[0]["user_goal"] = ""
		}
		b, _ := json.Marshal(out)
		return string(b)
	}
}

// One unrepairable scenario no longer blocks everything: the metric
// proceeds with its valid scenarios, simulate and evaluate run, the
// shortfall is reported (exit 1); the rerun tops the metric up with fresh
// attempts, keeping the valid scenarios and their ids, and simulates only
// the new ones.
func TestShortMetricDoesNotBlockTheRun(t *testing.T) {
	ctx := t.Context()
	cfg, bench := project(t)
	var calls atomic.Int64
	r := newRunner(t, cfg, bench, Options{Clients: rewriting(&calls, breakScenarios(cfg.Generation.Turns))})
	if err := r.Run(ctx, []string{"offline-careful"}); err != nil {
		t.Fatalf("run stopped: %v", err)
	}
	gen := phaseOf(r, phase.StageGenScenarios)
	if gen.Failed != 1 || len(gen.Failures) != 1 || gen.Failures[0].Row != "m02" || !strings.Contains(gen.Failures[0].Reason, "1 of 2 scenarios") {
		t.Fatalf("gen_scenarios report: %+v, want m02 short by one (1 of 2)", gen)
	}
	if sim := phaseOf(r, phase.StageSimulate); sim.Status != phase.StatusRan || sim.Rows != 3*2*2 {
		t.Fatalf("simulate: %+v, want it to run on the 3 valid base scenarios (12 conversations)", sim)
	}
	scs, err := artifacts.ReadScenarios(filepath.Join(bench, "scenarios.json"))
	if err != nil {
		t.Fatal(err)
	}
	before := map[string]artifacts.Scenario{}
	repaired := 0
	for _, s := range scs {
		before[s.ID] = s
		for _, kv := range s.Extra {
			if kv.Key == "_repairs" {
				repaired++
				if !strings.Contains(string(mustJSON(t, kv.Value)), "moved to turn 4") {
					t.Errorf("%s: _repairs = %s", s.ID, mustJSON(t, kv.Value))
				}
			}
		}
		for _, l := range s.Landmarks {
			if l.Turn > cfg.Generation.Turns {
				t.Errorf("%s: landmark at turn %d of %d", s.ID, l.Turn, cfg.Generation.Turns)
			}
		}
	}
	if repaired != 2 { // m01_s001's two variants
		t.Errorf("%d scenarios record a repair, want 2", repaired)
	}
	r.Close()

	var calls2 atomic.Int64
	r2 := newRunner(t, cfg, bench, Options{Clients: rewriting(&calls2, nil)})
	if err := r2.Run(ctx, []string{"offline-careful"}); err != nil {
		t.Fatal(err)
	}
	if n, _ := r2.Report.Failed(); n != 0 {
		t.Fatalf("rerun: %d rows failed: %+v", n, r2.Report.Phases)
	}
	scs, _ = artifacts.ReadScenarios(filepath.Join(bench, "scenarios.json"))
	if len(scs) != 2*2*2 {
		t.Fatalf("rerun: %d scenarios, want 8", len(scs))
	}
	for id, s := range before {
		found := false
		for _, n := range scs {
			if n.ID == id {
				found = true
				if string(mustJSON(t, n)) != string(mustJSON(t, s)) {
					t.Errorf("%s changed on the rerun", id)
				}
			}
		}
		if !found {
			t.Errorf("%s lost on the rerun", id)
		}
	}
	if sim := phaseOf(r2, phase.StageSimulate); sim.Reused != 12 || sim.Rows != 16 {
		t.Errorf("rerun simulate: %d of %d rows reused, want the 12 simulated before", sim.Reused, sim.Rows)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
