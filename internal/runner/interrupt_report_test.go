package runner

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/llm"
	"github.com/impactbench/impactbench/internal/phase"
)

// TestInterruptedSimulateReportsWhatItPaid: Ctrl-C in the middle of
// simulate still reports the phase ("stopped"), so the invocation's "spent
// now" counts the calls it paid before the interrupt.
func TestInterruptedSimulateReportsWhatItPaid(t *testing.T) {
	cfg, bench := project(t)
	base := newRunner(t, cfg, bench, Options{})
	if err := base.GenScenarios(t.Context()); err != nil {
		t.Fatal(err)
	}
	base.Close()

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	// The interrupt comes from inside the client, as the tenth call
	// returns its (paid) answer: some calls paid, then Ctrl-C, on every
	// run. (Polling a counter from outside raced the offline model, which
	// could finish first or have the tenth call cancelled unpaid.)
	var calls, answered atomic.Int64
	priced := pricedClients(0.01, &calls, nil)
	clients := func(m config.ModelConfig) (llm.Client, error) {
		inner, err := priced(m)
		if err != nil {
			return nil, err
		}
		return llm.ClientFunc(func(ctx context.Context, req llm.Request) (llm.Response, error) {
			resp, err := inner.Complete(ctx, req)
			if err == nil && answered.Add(1) == 10 {
				cancel()
			}
			return resp, err
		}), nil
	}
	cfg.Run.Concurrency.Simulate = 2
	r := newRunner(t, cfg, bench, Options{Clients: clients})
	err := r.Simulate(ctx, "offline-careful")
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("simulate: %v, want cancelled", err)
	}
	var stopped bool
	for _, p := range r.Report.Phases {
		if p.Phase == phase.StageSimulate && p.Status == phase.StatusStopped {
			stopped = true
		}
	}
	if !stopped || r.Report.Spent.Requests < 10 {
		t.Errorf("phases %+v, spent %d requests: want a stopped simulate counting the calls paid", r.Report.Phases, r.Report.Spent.Requests)
	}
}
