package clientset

import (
	"testing"

	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/llm/ratelimit"
	"github.com/impactbench/impactbench/internal/phase"
)

func TestStartConcurrencyFollowsThePhaseOfTheRole(t *testing.T) {
	cfg := &config.Config{}
	cfg.Run.Concurrency.Simulate, cfg.Run.Concurrency.Evaluate, cfg.Run.Concurrency.GenScenariosExpand = 64, 20, 8
	for role, want := range map[string]int{
		"user_model": 64, "targets[2]": 64, "evaluator_model": 20, "evaluator_models[1]": 20,
		"generator_model": 8, "": 0, "landmark_model": 0,
	} {
		if got := StartConcurrency(cfg, role); got != want {
			t.Errorf("startConcurrency(%q) = %d, want %d", role, got, want)
		}
	}
}

// TestLaneCeilingFollowsItsOwnPools: an auto lane holds twice what its own
// pools may have in flight, not twice the largest pool of the run, so a
// study's targets do not each hold hundreds of conversations at once.
func TestLaneCeilingFollowsItsOwnPools(t *testing.T) {
	cfg := &config.Config{
		UserModel:       config.ModelConfig{Model: "u", MaxConcurrency: 64},
		Targets:         []config.ModelConfig{{ID: "a", Model: "a", MaxConcurrency: 32}, {ID: "b", Model: "b", MaxConcurrency: 500}, {ID: "c", Model: "c"}},
		EvaluatorModels: []config.ModelConfig{{Model: "j", MaxConcurrency: 16}},
	}
	for _, tc := range []struct {
		stage  phase.Stage
		target string
		want   int
	}{
		{phase.StageSimulate, "a", 128},                                 // the user's 64 binds
		{phase.StageSimulate, "b", 1000},                                // the target's 500
		{phase.StageSimulate, "c", 2 * ratelimit.DefaultMaxConcurrency}, // unset: the default ceiling
		{phase.StageEvaluate, "a", 32},                                  // the judge's 16
		{phase.StageGenScenarios, "", 1000},                             // other stages: the run-wide ceiling
	} {
		if got := LaneCeiling(cfg, tc.stage, tc.target); got != tc.want {
			t.Errorf("LaneCeiling(%s, %q) = %d, want %d", tc.stage, tc.target, got, tc.want)
		}
	}
}
