package runner

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/llm/llmtest"
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
	note := CacheNote(r.Report.Spent)
	if !strings.Contains(note, "net saving $") || !strings.Contains(note, "read from it") {
		t.Errorf("summary note %q", note)
	}
}
