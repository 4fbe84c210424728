package adaptrun_test

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/impactbench/impactbench/internal/adaptive"
	"github.com/impactbench/impactbench/internal/adaptrun"
	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/llm"
	"github.com/impactbench/impactbench/internal/llm/offline"
	"github.com/impactbench/impactbench/internal/runner"
	ibstudy "github.com/impactbench/impactbench/internal/study"
)

// pricedClients are the offline models at a fixed price per call, so a
// cost ceiling is reached (the offline model itself costs nothing).
func pricedClients(price float64, calls *atomic.Int64) func(config.ModelConfig) (llm.Client, error) {
	return func(m config.ModelConfig) (llm.Client, error) {
		inner := offline.New(m, 0)
		return llm.ClientFunc(func(ctx context.Context, req llm.Request) (llm.Response, error) {
			calls.Add(1)
			resp, err := inner.Complete(ctx, req)
			resp.Usage.Cost, resp.Usage.CostKnown = price, true
			return resp, err
		}), nil
	}
}

// runPriced runs the adaptive study once under a cost ceiling.
func runPriced(t *testing.T, cfgPath string, ceiling float64, calls *atomic.Int64) (*adaptrun.Result, error) {
	t.Helper()
	cfg, err := config.LoadWithOptions(cfgPath, config.LoadOptions{AllowMissingEnv: true})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Run.Concurrency.Simulate, cfg.Run.Concurrency.Evaluate = 2, 2
	benches := filepath.Join(cfg.Dir, "benchmarks")
	s, err := runner.NewStudy(t.Context(), cfg, []string{filepath.Join(benches, "example")}, runner.Options{Stderr: io.Discard, MaxCost: ceiling, Clients: pricedClients(0.01, calls)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	o := adaptrun.Options{Dir: benches, Design: adaptive.Options{Max: 6}, Logf: t.Logf}
	return adaptrun.Run(t.Context(), study{s}, nil, o)
}

// TestCostCeilingMidRound: --max-cost reached inside a round is a stop
// the user asked for, as in a fixed run: no error (exit 0), Stopped says
// the ceiling, the study on disk loads and looks (complete for the rounds
// finished), and a rerun without a ceiling finishes the round in flight
// and goes on: the two processes pay exactly one uninterrupted run's calls
// and end on its scenario set. Ceilings from 5 % to 75 % of the whole
// run's cost cut it in the first, second and third rounds, in
// gen_scenarios (a growth's new scenarios), simulate and evaluate.
func TestCostCeilingMidRound(t *testing.T) {
	var all atomic.Int64
	whole := project(t)
	res, err := runPriced(t, whole, 0, &all)
	if err != nil {
		t.Fatal(err)
	}
	want := readSet(t, whole)
	for _, share := range []float64{0.05, 0.3, 0.45, 0.6, 0.75} {
		var first, second atomic.Int64
		p := project(t)
		got, err := runPriced(t, p, float64(all.Load())*0.01*share, &first)
		if err != nil || got.Stopped != adaptrun.StoppedCost {
			t.Errorf("ceiling at %.0f %% of the run: %+v, %v; want a stop at the cost ceiling without an error", 100*share, got, err)
			continue
		}
		st, err := studyOf(p)
		if err == nil {
			_, err = adaptive.Look(st, st.Clusters, adaptive.Options{Max: 6})
		}
		if err != nil {
			t.Errorf("ceiling at %.0f %%: the study left on disk does not load: %v", 100*share, err)
		}
		again, err := runPriced(t, p, 0, &second)
		if err != nil || again.Stopped != res.Stopped {
			t.Errorf("ceiling at %.0f %%, resumed: %+v, %v; want %q as uninterrupted", 100*share, again, err, res.Stopped)
		}
		t.Logf("ceiling at %.0f %%: stopped in round %d after %d calls; resumed: %d calls (uninterrupted: %d)", 100*share, got.Rounds, first.Load(), second.Load(), all.Load())
		if first.Load()+second.Load() != all.Load() {
			t.Errorf("ceiling at %.0f %%: %d + %d calls, want %d (one uninterrupted run)", 100*share, first.Load(), second.Load(), all.Load())
		}
		if !bytes.Equal(readSet(t, p), want) {
			t.Errorf("ceiling at %.0f %%: the resumed study ended on another scenario set", 100*share)
		}
	}
}

func readSet(t *testing.T, cfgPath string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(filepath.Dir(cfgPath), "benchmarks", "example", "scenarios.json"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func studyOf(cfgPath string) (*ibstudy.Study, error) {
	return ibstudy.Load(filepath.Join(filepath.Dir(cfgPath), "benchmarks"))
}
