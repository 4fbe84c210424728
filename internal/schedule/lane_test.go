package schedule

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// heldLane returns a lane of one slot, held by a row that runs until
// release is closed (counted in wg).
func heldLane(t *testing.T, wg *sync.WaitGroup) (*Lane, chan struct{}) {
	l, release := NewLane(1), make(chan struct{})
	wg.Add(1)
	l.Go(t.Context(), true, 0, func() { defer wg.Done(); <-release }, wg.Done)
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
		l.Go(t.Context(), false, 0, func() {
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
	l.Go(ctx, true, 0, func() { defer wg2.Done(); <-block }, wg2.Done)
	for range 10 {
		wg2.Add(1)
		l.Go(ctx, false, 0, func() { ran.Add(1); wg2.Done() }, func() { cancelled.Add(1); wg2.Done() })
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
			go l.Go(t.Context(), true, rank, row(name), func() { t.Errorf("%s cancelled", name) })
			for queued() == n {
				time.Sleep(time.Millisecond)
			}
			return
		}
		l.Go(t.Context(), false, rank, row(name), func() { t.Errorf("%s cancelled", name) })
	}
	offer(2, "b2-first", false)
	offer(1, "b1-feeder", true)
	offer(2, "b2-second", true)
	offer(0, "b0", false)
	offer(1, "b1-offered", false)

	ctx, cancel := context.WithCancel(t.Context())
	gave := make(chan bool)
	go func() {
		gave <- l.Go(ctx, true, 0, func() { t.Error("a row whose caller gave up ran") }, func() { t.Error("cancelled ran for a waiting caller") })
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
