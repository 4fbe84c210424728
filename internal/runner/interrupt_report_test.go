package runner

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
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
	var calls atomic.Int64
	priced := pricedClients(0.01, &calls, nil)
	cfg.Run.Concurrency.Simulate = 2
	r := newRunner(t, cfg, bench, Options{Clients: priced})
	go func() {
		for calls.Load() < 10 { // some calls paid, then the interrupt
			time.Sleep(time.Millisecond)
		}
		cancel()
	}()
	err := r.Simulate(ctx, "offline-careful")
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("simulate: %v, want cancelled", err)
	}
	var stopped bool
	for _, p := range r.Report.Phases {
		if p.Phase == StageSimulate && p.Status == StatusStopped {
			stopped = true
		}
	}
	if !stopped || r.Report.Spent.Requests < 10 {
		t.Errorf("phases %+v, spent %d requests: want a stopped simulate counting the calls paid", r.Report.Phases, r.Report.Spent.Requests)
	}
}
