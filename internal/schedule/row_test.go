package schedule

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

func TestSetClaimsEachRowOnce(t *testing.T) {
	var s Set[int]
	a, created := s.Claim("u1", "k1")
	if !created {
		t.Fatal("first claim did not create the row")
	}
	if b, created := s.Claim("u1", "k1"); created || b != a {
		t.Fatal("a second claim of the same unit and key made another row")
	}
	// The same unit from another key replaces it, after the old one ends.
	c, created := s.Claim("u1", "k2")
	if !created || c == a {
		t.Fatal("a new key did not make a new row")
	}
	waited := make(chan struct{})
	go func() { c.WaitPrev(); close(waited) }()
	select {
	case <-waited:
		t.Fatal("the new row did not wait for the row it replaces")
	case <-time.After(20 * time.Millisecond):
	}
	v := 7
	a.Finish(Outcome[int]{Status: Done, Stored: true, Val: &v})
	<-waited
}

func TestRetiredRowsAreFoundByOutcome(t *testing.T) {
	var s Set[string]
	r, _ := s.Claim("u", "k")
	v := "conversation"
	r.Finish(Outcome[string]{Status: Reused, Stored: true, Val: &v})
	s.Retire("u", r)
	again, created := s.Claim("u", "k")
	if created {
		t.Fatal("a retired row was made again")
	}
	o := again.Outcome()
	if o.Status != Reused || !o.Stored || o.Val != nil {
		t.Errorf("retired row's outcome %+v: want its status and stored flag, not its value", o)
	}
	if _, created := s.Claim("u", "other key"); !created {
		t.Error("a retired unit asked for with another key was not made anew")
	}
}

// Retire waits for the row to finish without holding the set: other rows
// are claimed meanwhile.
func TestRetireDoesNotHoldTheSetWhileItWaits(t *testing.T) {
	var s Set[int]
	slow, _ := s.Claim("slow", "k")
	retired := make(chan struct{})
	go func() { s.Retire("slow", slow); close(retired) }()
	claimed := make(chan struct{})
	go func() { s.Claim("other", "k"); close(claimed) }()
	select {
	case <-claimed:
	case <-time.After(5 * time.Second):
		t.Fatal("Claim blocked while Retire waited for an unfinished row")
	}
	slow.Finish(Outcome[int]{Status: Done})
	<-retired
}

func TestOnDoneRunsOnceWhateverTheOrder(t *testing.T) {
	var s Set[int]
	r, _ := s.Claim("u", "k")
	var n atomic.Int32
	r.OnDone(func(Outcome[int]) { n.Add(1) })
	r.Finish(Outcome[int]{Status: Failed, Reason: "x"})
	r.OnDone(func(o Outcome[int]) {
		if o.Reason != "x" {
			t.Errorf("late awaiter got %+v", o)
		}
		n.Add(1)
	})
	if n.Load() != 2 {
		t.Errorf("%d awaiters called, want 2", n.Load())
	}
}

func TestForEachStopsHandingOutRowsWhenCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	var ran atomic.Int32
	err := ForEach(ctx, 1000, 4, func(ctx context.Context, i int) {
		if ran.Add(1) == 10 {
			cancel()
		}
	})
	if err == nil || ran.Load() >= 1000 {
		t.Errorf("ForEach ran %d rows and returned %v after cancel", ran.Load(), err)
	}
	if err := ForEach(t.Context(), 0, 4, func(context.Context, int) { t.Error("ran a row of none") }); err != nil {
		t.Error(err)
	}
}
