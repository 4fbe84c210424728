package simulate

import (
	"context"
	"sync"

	"github.com/impactbench/impactbench/internal/callstore"
	"github.com/impactbench/impactbench/internal/layout"
	"github.com/impactbench/impactbench/internal/llm"
	"github.com/impactbench/impactbench/internal/work"
)

// One opening for every target (generation.independent_openings: false,
// the default).
//
// The simulated user's first turn depends on the scenario, the sample and
// the master seed, never on the target (the target has said nothing yet),
// so stages.SimSpec.SharedOpening seeds it without the target and every
// target's conversation of a row sends the same first-turn requests. Those
// go through one call-store unit per row (layout.OpeningUnit) instead of
// the conversation's own, so whichever target asks first pays and every
// other finds the answer stored: in this process (a keyed lock makes the
// others wait for the first, not race it), after a kill (the answer is
// stored before it is handed out), in a resumed run, and in another shard
// or process running other targets of the row (a race there pays twice
// but converges on the first answer stored, as every store write does).
// Every target is then sent the same opening message, which also pairs the
// comparison between targets more tightly.

// sharedOpenings reports whether the targets of a row share the opening.
func sharedOpenings(b *work.Bench) bool { return !b.Cfg.Generation.IndependentOpenings }

// rowUser is a conversation's simulated user: its first turn's calls go
// through the row's opening unit (when shared), the others through the
// conversation's unit.
type rowUser struct {
	llm.Client
	opening *callstore.Unit // nil: the opening is the conversation's own
}

// openRowUser wraps inner (the user model's client, or the batch waves'
// stand-in) for the conversation of row stored in u.
func (t *Target) openRowUser(u *callstore.Unit, row convRow, inner llm.Client) (rowUser, error) {
	rest := u.Client(t.userID, inner)
	if !t.sharedOpening {
		return rowUser{Client: rest}, nil
	}
	name := layout.OpeningUnit(row.sc.ID, row.sample)
	ou, err := t.b.Store.Unit(name)
	if err != nil {
		return rowUser{}, err
	}
	r := openingRouter{first: ou.Client(t.userID, inner), rest: rest, id: t.userID, lock: t.b.Store.Location() + "\x00" + name}
	return rowUser{Client: r, opening: ou}, nil
}

// stats adds the opening's calls made for this conversation to st, the
// conversation unit's.
func (r rowUser) stats(st callstore.Stats) callstore.Stats {
	if r.opening == nil {
		return st
	}
	o := r.opening.Stats()
	st.Hits += o.Hits
	st.Misses += o.Misses
	st.Spent = st.Spent.Add(o.Spent)
	st.Saved = st.Saved.Add(o.Saved)
	return st
}

func (r rowUser) close() {
	if r.opening != nil {
		_ = r.opening.Close()
	}
}

// openingRouter sends the first turn's calls (llm.MetaTurn "1", re-asks
// included) to first, one at a time per request across this process's
// targets, and every other call to rest.
type openingRouter struct {
	first, rest llm.Client
	id          callstore.Identity
	lock        string // the store and the opening unit
}

func (r openingRouter) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	if req.Meta[llm.MetaTurn] != "1" {
		return r.rest.Complete(ctx, req)
	}
	unlock, err := openingLocks.lock(ctx, r.lock+"\x00"+callstore.Key(r.id, req))
	if err != nil {
		return llm.Response{}, err
	}
	defer unlock()
	// The first holder of the lock pays and stores the answer; the
	// others find it stored (the unit looks in the store before it pays).
	return r.first.Complete(ctx, req)
}

// openingLocks serialise the targets' identical opening calls in this
// process.
var openingLocks = keyedLocks{m: map[string]*keyLock{}}

// keyedLocks are mutexes by key, waited for under a context, each dropped
// when nobody holds or waits for it.
type keyedLocks struct {
	mu sync.Mutex
	m  map[string]*keyLock
}

type keyLock struct {
	ch chan struct{} // holds a token while the lock is held
	n  int           // holders and waiters
}

// lock takes key's lock, or gives up when ctx ends.
func (k *keyedLocks) lock(ctx context.Context, key string) (unlock func(), err error) {
	k.mu.Lock()
	l := k.m[key]
	if l == nil {
		l = &keyLock{ch: make(chan struct{}, 1)}
		k.m[key] = l
	}
	l.n++
	k.mu.Unlock()
	release := func() {
		k.mu.Lock()
		if l.n--; l.n == 0 {
			delete(k.m, key)
		}
		k.mu.Unlock()
	}
	select {
	case l.ch <- struct{}{}:
		return func() { <-l.ch; release() }, nil
	case <-ctx.Done():
		release()
		return nil, ctx.Err()
	}
}
