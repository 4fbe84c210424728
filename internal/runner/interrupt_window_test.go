package runner

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
)

// A process killed after a phase's output is in place but before its
// cost.json entry and manifest record are written must not leave the phase
// looking finished: the next run used to trust the output (no record: "made
// elsewhere"), skip the phase, and cost.json lacked its entry for good (the
// kill -9 test in cmd/impactbench found it). Here the death in that window
// is a cost.json that cannot be written (a directory in its place): the
// phase fails right after writing its output. Once cost.json can be written
// again, each phase must be redone (free, from stored calls), and the run
// must end with files identical to an undisturbed run's.
func TestPhaseStoppedBetweenOutputAndRecordIsRedone(t *testing.T) {
	ctx := t.Context()
	cfgRef, benchRef := project(t)
	ref := newRunner(t, cfgRef, benchRef, Options{})
	if err := ref.Run(ctx, ref.Targets()); err != nil {
		t.Fatal(err)
	}
	ref.Close()

	cfg, bench := project(t)
	r0 := newRunner(t, cfg, bench, Options{})
	target := r0.Targets()[0]
	r0.Close()
	steps := []struct {
		phase, output, cost string
		run                 func(context.Context, *Runner) error
	}{
		{"gen_scenarios", "scenarios.json", "cost.json",
			func(ctx context.Context, r *Runner) error { return r.GenScenarios(ctx) }},
		{"simulate", "runs/" + target + "/conversations.json", "runs/" + target + "/cost.json",
			func(ctx context.Context, r *Runner) error { return r.Simulate(ctx, target) }},
		{"evaluate", "runs/" + target + "/scores.json", "runs/" + target + "/cost.json",
			func(ctx context.Context, r *Runner) error { return r.Evaluate(ctx, target) }},
	}
	for _, s := range steps {
		costPath := filepath.Join(bench, s.cost)
		restore := blockFile(t, costPath)
		r := newRunner(t, cfg, bench, Options{})
		if err := s.run(ctx, r); err == nil {
			t.Fatalf("%s: succeeded although %s could not be written", s.phase, s.cost)
		}
		r.Close()
		if _, err := os.Stat(filepath.Join(bench, s.output)); err != nil {
			t.Fatalf("%s: %s not written before cost.json: the test does not reach the window", s.phase, s.output)
		}
		restore()
		r = newRunner(t, cfg, bench, Options{})
		if err := s.run(ctx, r); err != nil {
			t.Fatalf("%s after the stop: %v", s.phase, err)
		}
		r.Close()
	}
	r := newRunner(t, cfg, bench, Options{})
	if err := r.Run(ctx, r.Targets()); err != nil {
		t.Fatal(err)
	}
	files := []string{"scenarios.json", "cost.json", "results.json"}
	for _, tg := range r.Targets() {
		for _, f := range []string{"conversations.json", "scores.json", "cost.json"} {
			files = append(files, filepath.Join("runs", tg, f))
		}
	}
	for _, f := range files {
		want, errA := os.ReadFile(filepath.Join(benchRef, f))
		got, errB := os.ReadFile(filepath.Join(bench, f))
		if errA != nil || errB != nil {
			t.Fatalf("%s: %v %v", f, errA, errB)
		}
		if !bytes.Equal(want, got) {
			t.Errorf("%s differs from the undisturbed run's:\n%s\nwant:\n%s", f, got, want)
		}
	}
}

// blockFile puts a non-empty directory where path is, so that writing path
// fails; restore puts the file back as it was.
func blockFile(t *testing.T, path string) (restore func()) {
	t.Helper()
	old, err := os.ReadFile(path)
	had := err == nil
	if had {
		if err := os.Remove(path); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(path, "blocked"), 0o755); err != nil {
		t.Fatal(err)
	}
	return func() {
		if err := os.RemoveAll(path); err != nil {
			t.Fatal(err)
		}
		if had {
			if err := os.WriteFile(path, old, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}
