package runner

import (
	"path/filepath"
	"testing"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/llm/offline"
)

// The run block carries each model's configured temperature (null when
// none is set) and the seeds its calls carried, as the client reported
// them (the offline model sends none and says why).
func TestRunBlockRecordsTemperatureAndSeeds(t *testing.T) {
	ctx := t.Context()
	cfg, bench := project(t)
	temp := 0.4
	cfg.Targets[0].Temperature = &temp
	cfg.UserModel.Temperature = nil
	r := newRunner(t, cfg, bench, Options{})
	if err := r.GenScenarios(ctx); err != nil {
		t.Fatal(err)
	}
	target := cfg.Targets[0].ID
	if err := r.Simulate(ctx, target); err != nil {
		t.Fatal(err)
	}
	convs, err := artifacts.ReadConversations(filepath.Join(bench, "runs", target, "conversations.json"))
	if err != nil || len(convs) == 0 {
		t.Fatalf("%d conversations, %v", len(convs), err)
	}
	for _, c := range convs {
		run := c.Run
		if v, ok := run.TargetTemperature.Get(); !ok || v != temp {
			t.Fatalf("%s: target_temperature %v (set %v), want %v", c.ConvID, v, ok, temp)
		}
		if _, ok := run.UserTemperature.Get(); ok || run.UserTemperature.IsZero() {
			t.Fatalf("%s: user_temperature %+v, want null", c.ConvID, run.UserTemperature)
		}
		if sent, why := run.UserSeeds.Sent(); sent != nil || why != offline.NoSeedReason {
			t.Fatalf("%s: user_seeds %v %q, want not sent: %q", c.ConvID, sent, why, offline.NoSeedReason)
		}
		// A user who ends the conversation at turn 1 leaves no target call.
		if sent, why := run.TargetSeeds.Sent(); len(sent) > 0 || (why != offline.NoSeedReason && len(c.Transcript) > 0) {
			t.Fatalf("%s: target_seeds %v %q, want not sent: %q", c.ConvID, sent, why, offline.NoSeedReason)
		}
	}
}
