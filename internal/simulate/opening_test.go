package simulate

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/impactbench/impactbench/internal/callstore"
	"github.com/impactbench/impactbench/internal/layout"
	"github.com/impactbench/impactbench/internal/llm"
)

// countingUser answers after a pause, counting the calls it is sent.
type countingUser struct{ n atomic.Int64 }

func (c *countingUser) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	c.n.Add(1)
	time.Sleep(20 * time.Millisecond) // long enough for the other targets to ask meanwhile
	return llm.Response{Text: "Message: hello " + req.Meta[llm.MetaTurn], Usage: llm.Usage{Requests: 1, InputTokens: 10}}, nil
}

// TestOpeningPaidOnce: the targets of a row ask for the same opening at
// once, each through its own opening of the row's unit (as their rows
// do): one call is paid, every target gets its answer, and each row's
// stats say who paid; later turns go to the row's own unit; after a
// restart (a new store on the same directory) nothing is paid again.
func TestOpeningPaidOnce(t *testing.T) {
	dir := t.TempDir()
	id := callstore.Identity{Provider: "fake", Model: "user"}
	opening := llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "turn 1"}}, Seed: 7, Meta: map[string]string{llm.MetaTurn: "1"}}
	run := func(targets int) (*countingUser, []callstore.Stats) {
		store := callstore.Open(dir, false)
		defer store.Close()
		inner := &countingUser{}
		stats := make([]callstore.Stats, targets)
		var wg sync.WaitGroup
		for k := range targets {
			wg.Go(func() {
				row, err := store.Unit(layout.SimUnit("t"+string(rune('a'+k)), "s1", 0))
				if err != nil {
					t.Error(err)
					return
				}
				defer row.Close()
				name := layout.OpeningUnit("s1", 0)
				ou, err := store.Unit(name)
				if err != nil {
					t.Error(err)
					return
				}
				ru := rowUser{Client: openingRouter{first: ou.Client(id, inner), rest: row.Client(id, inner), id: id, lock: dir + "\x00" + name}, opening: ou}
				defer ru.close()
				resp, err := ru.Complete(t.Context(), opening)
				if err != nil || resp.Text != "Message: hello 1" {
					t.Errorf("target %d: %q, %v", k, resp.Text, err)
				}
				next := opening
				next.Meta = map[string]string{llm.MetaTurn: "2"}
				next.Seed = uint64(100 + k)
				if _, err := ru.Complete(t.Context(), next); err != nil {
					t.Error(err)
				}
				stats[k] = ru.stats(row.Stats())
			})
		}
		wg.Wait()
		return inner, stats
	}
	inner, stats := run(3)
	if got := inner.n.Load(); got != 1+3 {
		t.Errorf("3 targets: %d calls sent, want 4 (one opening, one second turn each)", got)
	}
	misses := 0
	for _, s := range stats {
		misses += s.Misses
	}
	if misses != 4 {
		t.Errorf("the rows' stats count %d paid calls, want 4", misses)
	}
	inner, _ = run(3)
	if got := inner.n.Load(); got != 0 {
		t.Errorf("after a restart %d calls were paid again", got)
	}
}

// TestKeyedLocksWaitUnderContext: a second holder waits for the first,
// gives up when its context ends, and the lock is dropped once free.
func TestKeyedLocksWaitUnderContext(t *testing.T) {
	k := keyedLocks{m: map[string]*keyLock{}}
	unlock, err := k.lock(t.Context(), "a")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel()
	if _, err := k.lock(ctx, "a"); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("second lock while held: %v, want the context's deadline", err)
	}
	other, err := k.lock(t.Context(), "b")
	if err != nil {
		t.Fatalf("another key waits: %v", err)
	}
	other()
	unlock()
	again, err := k.lock(t.Context(), "a")
	if err != nil {
		t.Fatal(err)
	}
	again()
	if len(k.m) != 0 {
		t.Errorf("%d locks left after every holder let go", len(k.m))
	}
}
