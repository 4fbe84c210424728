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

	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/llm"
	"github.com/impactbench/impactbench/internal/llm/ratelimit"
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
	if got := idleConnsPerHost(cfg); got < inFlight {
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

	client := llm.NewHTTPClient(idleConnsPerHost(cfg))
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
		stage  Stage
		target string
		want   int
	}{
		{StageSimulate, "a", 128},                                 // the user's 64 binds
		{StageSimulate, "b", 1000},                                // the target's 500
		{StageSimulate, "c", 2 * ratelimit.DefaultMaxConcurrency}, // unset: the default ceiling
		{StageEvaluate, "a", 32},                                  // the judge's 16
		{StageGenScenarios, "", 1000},                             // other stages: the run-wide ceiling
	} {
		if got := laneCeiling(cfg, tc.stage, tc.target); got != tc.want {
			t.Errorf("laneCeiling(%s, %q) = %d, want %d", tc.stage, tc.target, got, tc.want)
		}
	}
}

// heldLane returns a lane of one slot, held by a row that runs until
// release is closed (counted in wg).
func heldLane(t *testing.T, wg *sync.WaitGroup) (*lane, chan struct{}) {
	l, release := newLane(1), make(chan struct{})
	wg.Add(1)
	l.goRow(t.Context(), true, 0, func() { defer wg.Done(); <-release }, wg.Done)
	return l, release
}

// TestLaneQueuesRowsInOrderAndCancelsThem: rows offered to a full lane wait
// as queued closures, start in order as slots free, and when their context
// ends before a slot frees, run their cancellation instead.
func TestLaneQueuesRowsInOrderAndCancelsThem(t *testing.T) {
	var mu sync.Mutex
	var order []int
	var wg sync.WaitGroup
	l, release := heldLane(t, &wg)
	for i := range 2000 {
		wg.Add(1)
		l.goRow(t.Context(), false, 0, func() {
			defer wg.Done()
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
		}, func() { t.Errorf("row %d cancelled", i); wg.Done() })
	}
	close(release)
	wg.Wait()
	for i, v := range order {
		if v != i {
			t.Fatalf("row %d ran at position %d", v, i)
		}
	}
	if len(order) != 2000 {
		t.Fatalf("%d rows ran, want 2000", len(order))
	}

	ctx, cancel := context.WithCancel(t.Context())
	block := make(chan struct{})
	var ran, cancelled atomic.Int32
	var wg2 sync.WaitGroup
	wg2.Add(1)
	l.goRow(ctx, true, 0, func() { defer wg2.Done(); <-block }, wg2.Done)
	for range 10 {
		wg2.Add(1)
		l.goRow(ctx, false, 0, func() { ran.Add(1); wg2.Done() }, func() { cancelled.Add(1); wg2.Done() })
	}
	cancel()
	for deadline := time.Now().Add(10 * time.Second); cancelled.Load() < 10 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond) // the hooks run on their own goroutines
	}
	close(block)
	wg2.Wait()
	if ran.Load() != 0 || cancelled.Load() != 10 {
		t.Errorf("after cancel: %d ran, %d cancelled; want 0 and 10", ran.Load(), cancelled.Load())
	}
}

// TestLaneStartsRowsByRank: rows waiting for room start by rank (a study's
// earlier benchmark first), then in the order offered, whether their caller
// waits (a feeder reading a file) or not; a waiting caller whose context
// ends gets false and its row never runs.
func TestLaneStartsRowsByRank(t *testing.T) {
	var mu sync.Mutex
	var order []string
	var wg sync.WaitGroup
	l, release := heldLane(t, &wg)
	row := func(name string) func() {
		return func() {
			defer wg.Done()
			mu.Lock()
			order = append(order, name)
			mu.Unlock()
		}
	}
	queued := func() int {
		l.mu.Lock()
		defer l.mu.Unlock()
		return l.queue.Len()
	}
	offer := func(rank int, name string, wait bool) {
		wg.Add(1)
		n := queued()
		if wait {
			go l.goRow(t.Context(), true, rank, row(name), func() { t.Errorf("%s cancelled", name) })
			for queued() == n {
				time.Sleep(time.Millisecond)
			}
			return
		}
		l.goRow(t.Context(), false, rank, row(name), func() { t.Errorf("%s cancelled", name) })
	}
	offer(2, "b2-first", false)
	offer(1, "b1-feeder", true)
	offer(2, "b2-second", true)
	offer(0, "b0", false)
	offer(1, "b1-offered", false)

	ctx, cancel := context.WithCancel(t.Context())
	gave := make(chan bool)
	go func() {
		gave <- l.goRow(ctx, true, 0, func() { t.Error("a row whose caller gave up ran") }, func() { t.Error("cancelled ran for a waiting caller") })
	}()
	for queued() < 6 {
		time.Sleep(time.Millisecond)
	}
	cancel()
	if <-gave {
		t.Error("a waiting caller whose context ended got true")
	}
	close(release)
	wg.Wait()
	want := []string{"b0", "b1-feeder", "b1-offered", "b2-first", "b2-second"}
	if fmt.Sprint(order) != fmt.Sprint(want) {
		t.Errorf("rows started %v, want %v", order, want)
	}
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
	l.goRow(t.Context(), false, 0, wg.Done, func() { t.Error("cancelled"); wg.Done() })
	c.Complete(t.Context(), llm.Request{Priority: 3}) // a row waits
	close(release)
	wg.Wait()
	c.Complete(t.Context(), llm.Request{Priority: 3}) // drained
	if fmt.Sprint(rec.got) != fmt.Sprint([]int{-3, 3, -3}) {
		t.Errorf("priorities sent %v, want [-3 3 -3]", rec.got)
	}
}
