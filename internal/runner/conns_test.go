package runner

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/impactbench/impactbench/internal/clientset"
	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/llm"
	"github.com/impactbench/impactbench/internal/llm/ratelimit"
	"github.com/impactbench/impactbench/internal/phase"
	"github.com/impactbench/impactbench/internal/schedule"
)

// TestModelsOnOneHostKeepTheirConnections: a study's user, four targets
// and a judge on one host, each 64 calls in flight, must reuse their
// connections round after round instead of closing what does not fit an
// idle pool sized for one model and dialling again.
func TestModelsOnOneHostKeepTheirConnections(t *testing.T) {
	m := func(name string) config.ModelConfig { return config.ModelConfig{Model: name, MaxConcurrency: 64} }
	cfg := &config.Config{
		UserModel:       m("user"),
		Targets:         []config.ModelConfig{m("t1"), m("t2"), m("t3"), m("t4")},
		EvaluatorModels: []config.ModelConfig{m("judge")},
	}
	const inFlight = 6 * 64
	if got := clientset.IdleConnsPerHost(cfg); got < inFlight {
		t.Fatalf("idle pool %d < %d calls the pools may have in flight", got, inFlight)
	}

	var dials atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(20 * time.Millisecond)
		io.WriteString(w, `{}`)
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			dials.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()

	client := llm.NewHTTPClient(clientset.IdleConnsPerHost(cfg))
	const rounds = 4
	for range rounds {
		var wg sync.WaitGroup
		for range inFlight {
			wg.Go(func() {
				req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, srv.URL, nil)
				resp, err := client.Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			})
		}
		wg.Wait()
	}
	// One connection per call in flight, dialled in the first round; the
	// old pool of 256 redialled 128 in every later round (768 in all).
	if d := dials.Load(); d > inFlight+inFlight/10 {
		t.Errorf("%d connections dialled for %d rounds of %d calls in flight; want about %d", d, rounds, inFlight, inFlight)
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
		if got := clientset.LaneCeiling(cfg, tc.stage, tc.target); got != tc.want {
			t.Errorf("clientset.LaneCeiling(%s, %q) = %d, want %d", tc.stage, tc.target, got, tc.want)
		}
	}
}

// heldLane returns a lane of one slot, held by a row that runs until
// release is closed (counted in wg).
func heldLane(t *testing.T, wg *sync.WaitGroup) (*schedule.Lane, chan struct{}) {
	l, release := schedule.NewLane(1), make(chan struct{})
	wg.Add(1)
	l.Go(t.Context(), true, 0, func() { defer wg.Done(); <-release }, wg.Done)
	return l, release
}

// recordPriority is a client that records the priority of each call.
type recordPriority struct{ got []int }

func (c *recordPriority) Complete(_ context.Context, req llm.Request) (llm.Response, error) {
	c.got = append(c.got, req.Priority)
	return llm.Response{Text: "ok"}, nil
}

// TestTurnOrderFlipsWhenTheLaneDrains: while rows wait for room in the
// lane, a conversation's later turns go first (the stage's Priority as it
// is); once none wait, earlier turns go first (negated).
func TestTurnOrderFlipsWhenTheLaneDrains(t *testing.T) {
	var wg sync.WaitGroup
	l, release := heldLane(t, &wg)
	rec := &recordPriority{}
	c := turnOrder{rec, l}
	c.Complete(t.Context(), llm.Request{Priority: 3}) // nothing waits yet
	wg.Add(1)
	l.Go(t.Context(), false, 0, wg.Done, func() { t.Error("cancelled"); wg.Done() })
	c.Complete(t.Context(), llm.Request{Priority: 3}) // a row waits
	close(release)
	wg.Wait()
	c.Complete(t.Context(), llm.Request{Priority: 3}) // drained
	if fmt.Sprint(rec.got) != fmt.Sprint([]int{-3, 3, -3}) {
		t.Errorf("priorities sent %v, want [-3 3 -3]", rec.got)
	}
}
