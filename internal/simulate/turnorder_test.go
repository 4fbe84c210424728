package simulate

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/impactbench/impactbench/internal/llm"
	"github.com/impactbench/impactbench/internal/schedule"
)

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
