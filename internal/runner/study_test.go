package runner

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/fault"
	"github.com/impactbench/impactbench/internal/llm"
	"github.com/impactbench/impactbench/internal/phase"
)

// studyProject is the scaffolded project with the example benchmark copied
// to each of names (benchmark.yaml's name set to the directory's).
func studyProject(t *testing.T, names ...string) (*config.Config, []string) {
	t.Helper()
	cfg, example := project(t)
	y, err := os.ReadFile(filepath.Join(example, "benchmark.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for _, n := range names {
		dir := filepath.Join(filepath.Dir(example), n)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		b := strings.Replace(string(y), "\nname: ", "\nname: "+n+" — ", 1)
		if err := os.WriteFile(filepath.Join(dir, "benchmark.yaml"), []byte(b), 0o644); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, dir)
	}
	if err := os.RemoveAll(example); err != nil {
		t.Fatal(err)
	}
	return cfg, dirs
}

// A study goes on past a benchmark whose generator output stays unusable
// and a target that fails every call: the other benchmarks finish, and the
// error and the summaries name each failure where it happened.
func TestStudyFinishesWhatItCanAndNamesEachFailure(t *testing.T) {
	cfg, dirs := studyProject(t, "alpha", "broken", "gamma")
	var calls atomic.Int64
	clients := pricedClients(0, &calls, nil)
	wrapped := func(m config.ModelConfig) (llm.Client, error) {
		c, err := clients(m)
		return llm.ClientFunc(func(ctx context.Context, req llm.Request) (llm.Response, error) {
			if req.Purpose == llm.PurposeGenScenarios && strings.HasPrefix(req.Meta[llm.MetaBenchmarkName], "broken") {
				return llm.Response{Text: "I would rather not write scenarios today."}, nil
			}
			if req.Purpose == llm.PurposeTarget && m.ID == "offline-careless" {
				return llm.Response{}, &llm.Error{Kind: llm.KindServer, StatusCode: 500, Provider: "fake", Model: m.Model, Message: "the target is down"}
			}
			return c.Complete(ctx, req)
		}), err
	}
	s, err := NewStudy(context.Background(), cfg, dirs, Options{Clients: wrapped})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	runErr := s.Run(t.Context(), nil)
	for _, want := range []string{"alpha: 16 row(s) failed in simulate offline-careless", "broken: 2 row(s) failed in gen_scenarios", "gamma: 16 row(s) failed in simulate offline-careless"} {
		if runErr == nil || !strings.Contains(runErr.Error(), want) {
			t.Errorf("study error %v does not say %q", runErr, want)
		}
	}
	var pe *PartialError
	if !errors.As(runErr, &pe) || fault.KindOf(runErr) == fault.Input {
		t.Errorf("study error %v is not a failure of rows alone (exit 1)", runErr)
	}
	sum := s.Summary()
	for i, name := range []string{"alpha", "broken", "gamma"} {
		b := sum.Benchmarks[i]
		if b.Benchmark != name {
			t.Fatalf("summary %d is %s, want %s", i, b.Benchmark, name)
		}
		failed := map[string]phase.Status{}
		for _, p := range b.Phases {
			if p.Failed > 0 {
				failed[p.Phase.String()+" "+p.Target] = p.Status
			}
		}
		if name == "broken" {
			if failed["gen_scenarios "] != phase.StatusFailed || len(failed) != 1 {
				t.Errorf("broken: failed phases %v, want only gen_scenarios", failed)
			}
			if _, err := os.Stat(filepath.Join(dirs[i], "results.json")); err == nil {
				t.Errorf("broken wrote results.json")
			}
			continue
		}
		if failed["simulate offline-careless"] != phase.StatusFailed || len(failed) != 1 {
			t.Errorf("%s: failed phases %v, want only simulate offline-careless", name, failed)
		}
		res, err := os.ReadFile(filepath.Join(dirs[i], "results.json"))
		if err != nil || !strings.Contains(string(res), `"offline-careful"`) {
			t.Errorf("%s: results.json of the healthy target missing (%v)", name, err)
		}
		convs, err := artifacts.ReadConversations(filepath.Join(dirs[i], "runs", "offline-careful", "conversations.json"))
		if err != nil || len(convs) != 16 {
			t.Errorf("%s: %d conversations of the healthy target (%v), want 16", name, len(convs), err)
		}
	}
}

// --max-cost is one ceiling for the whole study: every benchmark's calls
// count against it, and the study stops near it, not at a multiple of it.
func TestStudyHasOneCostCeiling(t *testing.T) {
	cfg, dirs := studyProject(t, "one", "two", "three")
	for _, d := range dirs {
		r := newRunner(t, cfg, d, Options{})
		if err := r.GenScenarios(t.Context()); err != nil {
			t.Fatal(err)
		}
		r.Close()
	}
	const price, ceiling = 0.01, 0.60
	cfg.Run.Concurrency.Simulate, cfg.Run.Concurrency.Evaluate = 2, 2
	var calls atomic.Int64
	s, err := NewStudy(context.Background(), cfg, dirs, Options{MaxCost: ceiling, Clients: pricedClients(price, &calls, nil)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Run(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	sum := s.Summary()
	// Calls already on the wire when the ceiling is reached still finish:
	// at most a lane's worth per target and stage.
	slack := float64(2*2*len(cfg.Targets)) * price
	if got := float64(calls.Load()) * price; got > ceiling+slack+1e-9 || got < ceiling-slack {
		t.Errorf("the study paid $%.2f against one ceiling of $%.2f (3 benchmarks)", got, ceiling)
	}
	if sum.Budget == nil || !sum.Budget.Stopped || sum.Budget.Remaining == 0 {
		t.Errorf("study budget %+v, want stopped with rows remaining", sum.Budget)
	}
}

// TestJoinOnce: the benchmarks' errors, each text once; one every
// benchmark gave as it is, one only some gave naming them; none: nil.
func TestJoinOnce(t *testing.T) {
	shared := fault.Inputf("target %q is not in config.yaml", "nope")
	own := errors.New("scenarios.json holds no scenarios")
	slugs := []string{"a", "b", "c"}
	for _, c := range []struct {
		name    string
		errs    []error
		want    string
		kind    fault.Kind
		benches []string // the first BenchError's, for --json
	}{
		{"none", []error{nil, nil, nil}, "", fault.Failure, nil},
		{"every one alike", []error{shared, shared, shared}, shared.Error(), fault.Input, nil},
		{"some alike", []error{own, nil, own}, "a, c: " + own.Error(), fault.Failure, []string{"a", "c"}},
		{"one", []error{nil, own, nil}, "b: " + own.Error(), fault.Failure, []string{"b"}},
		{"different", []error{shared, own, shared}, "a, c: " + shared.Error() + "\nb: " + own.Error(), fault.Input, []string{"a", "c"}},
	} {
		err := JoinOnce(slugs, c.errs)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
		if k := fault.KindOf(err); k != c.kind {
			t.Errorf("%s: kind %v, want %v", c.name, k, c.kind)
		}
		var be *BenchError
		if errors.As(err, &be) != (c.benches != nil) || (be != nil && !slices.Equal(be.Benches, c.benches)) {
			t.Errorf("%s: BenchError %+v, want benchmarks %v", c.name, be, c.benches)
		}
	}
}
