package ratelimit

import (
	"container/heap"
	"context"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/impactbench/impactbench/internal/llm"
)

// A release that fills the pool again admits the head and leaves the next
// waiter asleep: waking it would only have it find the pool full.
func TestReleaseDoesNotWakeTheHeadOfAFullPool(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	p := newPool("p", Limits{MaxInFlight: 1}, Options{Now: func() time.Time { return now }}.withDefaults())
	tk, err := p.acquire(context.Background(), 10, 10, 0)
	if err != nil {
		t.Fatal(err)
	}
	first := &waiter{ready: make(chan struct{}, 1), seq: 1, in: 10, out: 10, enqueued: now}
	second := &waiter{ready: make(chan struct{}, 1), seq: 2, in: 10, out: 10, enqueued: now}
	p.mu.Lock()
	heap.Push(&p.queue, first)
	heap.Push(&p.queue, second)
	p.mu.Unlock()

	p.release(tk, &llm.Response{}, nil)

	if !first.granted || len(first.ready) != 1 {
		t.Fatalf("the head was not admitted and told: granted %v, told %d", first.granted, len(first.ready))
	}
	if len(second.ready) != 0 {
		t.Fatal("the next waiter was woken although the pool is full again")
	}
	// A release with room left still tells the new head to look again.
	p.release(first.t, &llm.Response{}, nil)
	if !second.granted {
		t.Fatal("the second waiter was not admitted when the slot came free")
	}
}

// The call a release admits goes before the rest of the releasing caller's
// work: on one processor, the admitted caller runs before the releaser
// returns from Complete.
func TestReleaseYieldsToTheAdmittedCall(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	r := NewRegistry(Options{})
	var releaserBack, admittedFirst atomic.Bool
	proceed := make(chan struct{})
	holding := make(chan struct{})
	c := r.Wrap("p", Limits{MaxInFlight: 1}, llm.ClientFunc(func(ctx context.Context, req llm.Request) (llm.Response, error) {
		if req.Priority == 1 { // the first call holds the slot until told
			close(holding)
			<-proceed
		}
		return llm.Response{}, nil
	}))
	done := make(chan struct{})
	go func() {
		_, _ = c.Complete(context.Background(), llm.Request{Priority: 1})
		releaserBack.Store(true)
		close(done)
	}()
	<-holding
	admitted := make(chan struct{})
	go func() {
		defer close(admitted)
		_, _ = c.Complete(context.Background(), llm.Request{Priority: 2})
	}()
	// The second call queues behind the first.
	for {
		st, _ := r.PoolStats("p")
		if st.Queued == 1 {
			break
		}
		runtime.Gosched()
	}
	// Watch the admitted call from inside its client: did it start before
	// the releaser got back?
	r2 := c.(*limitedClient)
	inner := r2.next
	r2.next = llm.ClientFunc(func(ctx context.Context, req llm.Request) (llm.Response, error) {
		if req.Priority == 2 {
			admittedFirst.Store(!releaserBack.Load())
		}
		return inner.Complete(ctx, req)
	})
	close(proceed)
	<-done
	<-admitted
	if !admittedFirst.Load() {
		t.Fatal("the releasing caller went on before the call it admitted was sent")
	}
}
