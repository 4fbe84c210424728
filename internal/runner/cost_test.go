package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/llm/batch/fakebatch"
	"github.com/impactbench/impactbench/internal/llm/llmtest"
	"github.com/impactbench/impactbench/internal/phase"
	"github.com/impactbench/impactbench/internal/plan"
	"github.com/impactbench/impactbench/internal/summary"
	"github.com/impactbench/impactbench/internal/work"
)

// TestCostByModel: cost.json records, per phase and per model, the tokens
// read from and written to the providers' prompt caches and what caching
// saved; the run summary says it too.
func TestCostByModel(t *testing.T) {
	cfg, bench := simProject(t)
	// The simulated user reads 600 of its 1,000 input tokens from a cache
	// (OpenAI writes are free and not reported); the target caches nothing.
	user := realtimeFake(t, fakeUser, llmtest.Usage{Input: 1000, Output: 50, Cached: 600})
	target := realtimeFake(t, fakeTarget, targetUsage)
	cfg.UserModel = openAIModel("gpt-4o-mini", user.APIKey(), user.BaseURL(), false)
	cfg.Targets[0] = openAIModel("gpt-4o", target.APIKey(), target.BaseURL(), false)
	cfg.Targets[0].ID = "t1"
	r := newRunner(t, cfg, bench, Options{})
	if err := r.Simulate(t.Context(), "t1"); err != nil {
		t.Fatal(err)
	}
	if err := r.Evaluate(t.Context(), "t1"); err != nil {
		t.Fatal(err)
	}
	rows := len(conversations(t, bench))
	b, err := os.ReadFile(filepath.Join(bench, "runs", "t1", "cost.json"))
	if err != nil {
		t.Fatal(err)
	}
	var costs map[string]artifacts.PhaseCost
	if err := json.Unmarshal(b, &costs); err != nil {
		t.Fatal(err)
	}
	sim := costs["simulate"]
	calls := rows * simTurns
	// gpt-4o-mini: input $0.15, cached $0.075, writes at the input price.
	saving := float64(calls) * 600 * (0.15 - 0.075) / 1e6
	near := func(a, b float64) bool { return math.Abs(a-b) <= 1e-6 }
	u, tg := sim.Models["user_model: gpt-4o-mini"], sim.Models["target: gpt-4o"]
	if u.Requests != calls || u.CachedInputTokens != 600*calls || u.CacheWriteTokens != 0 || !near(u.CacheSaving, saving) {
		t.Errorf("user model in cost.json: %+v (want %d calls, %d read, saving %.6f)\n%s", u, calls, 600*calls, saving, b)
	}
	if tg.Requests != calls || tg.InputTokens != 800*calls || tg.CachedInputTokens != 0 || tg.CacheSaving != 0 {
		t.Errorf("target in cost.json: %+v", tg)
	}
	if sim.CachedInputTokens != 600*calls || sim.CacheWriteTokens != 0 || !near(sim.CacheSaving, saving) ||
		!near(u.Cost+tg.Cost, sim.Cost) {
		t.Errorf("simulate in cost.json: %+v", sim)
	}
	if len(costs["evaluate"].Models) != 1 {
		t.Errorf("evaluate's models: %+v", costs["evaluate"].Models)
	}
	note := summary.CacheNote(r.Report.Spent)
	if !strings.Contains(note, "net saving $") || !strings.Contains(note, "read from it") {
		t.Errorf("summary note %q", note)
	}
}

// TestDryRunCountsStoredAnswers: after a valid hand edit of one user_goal
// in scenarios.json, the dry run says that only that scenario's
// conversations and their verdicts would run now (the example:
// it priced the whole simulate phase and called evaluate up to date), and
// the run then does exactly that.
func TestDryRunCountsStoredAnswers(t *testing.T) {
	ctx := t.Context()
	cfg, bench := project(t)
	r := newRunner(t, cfg, bench, Options{})
	if err := r.Run(ctx, r.Targets()); err != nil {
		t.Fatal(err)
	}
	r.Close()
	path := filepath.Join(bench, "scenarios.json")
	scs, err := artifacts.ReadScenarios(path)
	if err != nil {
		t.Fatal(err)
	}
	scs[3].UserGoal += " And quickly, please."
	if err := artifacts.WriteScenarios(path, scs); err != nil {
		t.Fatal(err)
	}
	samples, targets := cfg.Generation.NumSamples, len(cfg.Targets)

	dry := newRunner(t, cfg, bench, Options{DryRun: true})
	if err := dry.Run(ctx, dry.Targets()); err != nil {
		t.Fatal(err)
	}
	dry.Close()
	now := map[string]int{}
	for _, p := range dry.Report.Plan {
		name, _, _ := strings.Cut(p.Phase, " (")
		now[name] += p.RowsNow
		if p.RowsNow > 0 && p.CostNow < 0 {
			t.Errorf("%s: cost now %v", p.Phase, p.CostNow)
		}
	}
	// simulate has a user and a target row per target.
	if now["simulate"] != 2*samples*targets || now["evaluate"] != samples*targets {
		t.Errorf("dry run: rows that would run now %v, want simulate %d (user and target rows) and evaluate %d", now, 2*samples*targets, samples*targets)
	}

	run := newRunner(t, cfg, bench, Options{})
	if err := run.Run(ctx, run.Targets()); err != nil {
		t.Fatal(err)
	}
	ran := map[phase.Stage]int{}
	for _, p := range run.Report.Phases {
		ran[p.Phase] += p.Rows - p.Reused
	}
	if ran[phase.StageSimulate] != samples*targets || ran[phase.StageEvaluate] != samples*targets {
		t.Errorf("the run made %d conversations and %d verdicts, want %d each", ran[phase.StageSimulate], ran[phase.StageEvaluate], samples*targets)
	}
}

// TestDryRunBill: the dry run prices every phase four ways (real time at
// list prices, with prompt caching, through the batch APIs, as configured)
// and says how long each takes; generation never batches.
func TestDryRunBill(t *testing.T) {
	cfg, bench := project(t)
	cfg.Generation.Turns = 6
	cfg.UserModel = config.ModelConfig{Model: "claude-sonnet-4-6", Source: "anthropic", APIKey: "k", Batch: true}
	cfg.EvaluatorModels = []config.ModelConfig{{Model: "gpt-5.4-mini", Source: "openai", APIKey: "k", Batch: true}}
	cfg.Targets = []config.ModelConfig{{ID: "t1", Model: "gpt-4o", Source: "openai", APIKey: "k"}}
	r := newRunner(t, cfg, bench, Options{DryRun: true})
	if err := r.Run(t.Context(), r.Targets()); err != nil {
		t.Fatal(err)
	}
	for _, p := range r.Report.Plan {
		gen := strings.HasPrefix(p.Phase, "gen_")
		if gen != (p.CostBatch == nil) {
			t.Errorf("%s: batch price %v (generation has none; simulate and evaluate do)", p.Phase, p.CostBatch)
		}
		if !p.CostKnown || p.CostList <= 0 || p.CostCached > p.CostList || (p.CostBatch != nil && *p.CostBatch >= p.CostCached) {
			t.Errorf("%s: list $%.4f, cached $%.4f, batch %v", p.Phase, p.CostList, p.CostCached, p.CostBatch)
		}
		batched := strings.Contains(p.Phase, "user, batch") || strings.HasPrefix(p.Phase, "evaluate")
		if batched && p.Cost != *p.CostBatch || !batched && p.Cost != p.CostCached {
			t.Errorf("%s: as configured $%.4f", p.Phase, p.Cost)
		}
		if p.WallSecs <= 0 {
			t.Errorf("%s: no wall time", p.Phase)
		}
	}
	tot := plan.TotalOf(r.Report.Plan)
	if !(tot.ListUSD > tot.CachedUSD && tot.CachedUSD > tot.ConfigUSD && tot.ConfigUSD > tot.BatchUSD) {
		t.Errorf("bill %+v", tot)
	}
}

// TestStudyAllBatched: `batch: true` on the simulated user, the target and
// the judge in one study run: every benchmark's conversations go in batch
// waves and its verdicts in one batch, nothing is submitted twice, and
// every row is complete.
func TestStudyAllBatched(t *testing.T) {
	cfg, dirs := studyProject(t, "alpha", "beta")
	gen := cfg.UserModel // offline: generation has no batch mode
	cfg.GeneratorModel = &gen
	cfg.Generation.Turns = simTurns
	work.BatchPollInterval = 2 * time.Millisecond
	// Answers differ by the request's seed, so two samples of a scenario
	// are two conversations (and two verdicts), as with a real model.
	seeded := func(answer func(llmtest.ChatRequest) string) func(llmtest.ChatRequest) string {
		return func(req llmtest.ChatRequest) string { return answer(req) + fmt.Sprintf(" %d", *req.Seed) }
	}
	user := batchFake(t, seeded(fakeUser), userUsage, fakebatch.Options{PollsBeforeDone: 1})
	target := batchFake(t, seeded(fakeTarget), targetUsage, fakebatch.Options{PollsBeforeDone: 1})
	judge := fakebatch.NewOpenAI(t, fakebatch.Options{Answer: func(string, llmtest.ChatRequest) fakebatch.Outcome {
		return fakebatch.Outcome{Reply: llmtest.Text(`{"justification": "j", "evidence": [], "present": false}`, llmtest.Usage{Input: 900, Output: 20})}
	}})
	cfg.UserModel = openAIModel("gpt-4o-mini", user.APIKey(), user.BaseURL(), true)
	cfg.Targets = []config.ModelConfig{openAIModel("gpt-4o", target.APIKey(), target.BaseURL(), true)}
	cfg.Targets[0].ID = "t1"
	cfg.EvaluatorModels = []config.ModelConfig{openAIModel("gpt-4o-mini", judge.APIKey(), judge.BaseURL(), true)}
	// The fidelity audit's calls are real time even for a batch judge
	// (docs/config.md); this fake serves batches only.
	cfg.Validity.Audit = false
	s, err := NewStudy(context.Background(), cfg, dirs, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Run(t.Context(), nil); err != nil {
		for _, b := range s.Summary().Benchmarks {
			for _, p := range b.Phases {
				t.Logf("%s %s %s: %s %v", b.Benchmark, p.Phase, p.Status, p.Reason, p.Failures)
			}
		}
		t.Fatal(err)
	}
	rows := 0
	for _, d := range dirs {
		convs, err := artifacts.ReadConversations(filepath.Join(d, "runs", "t1", "conversations.json"))
		if err != nil {
			t.Fatal(err)
		}
		checkComplete(t, convs, len(convs))
		scores, err := artifacts.ReadScores(filepath.Join(d, "runs", "t1", "scores.json"))
		if err != nil || len(scores) != len(convs) {
			t.Fatalf("%s: %d scores for %d conversations (%v)", d, len(scores), len(convs), err)
		}
		for _, sc := range scores {
			if sc.Present == nil {
				t.Errorf("%s %s: no verdict (%s)", d, sc.ConvID, sc.NullReason)
			}
		}
		rows += len(convs)
	}
	// One submission per call: the copied benchmarks may send the same
	// request (the same custom_id) in their own batches, each paid once.
	for name, srv := range map[string]*fakebatch.Server{"user": user, "target": target} {
		if n := srv.TotalSubmissions(); n != rows*simTurns {
			t.Errorf("%s: %d requests submitted, want %d", name, n, rows*simTurns)
		}
	}
	if n := judge.TotalSubmissions(); n != rows {
		t.Errorf("judge: %d verdicts submitted, want %d", n, rows)
	}
}
