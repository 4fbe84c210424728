package schedule

import (
	"hash/maphash"
	"sync"
	"time"
)

// Status is how one row ended in an invocation.
type Status int

// The row statuses.
const (
	Done    Status = iota // made now, with calls paid
	Reused                // replayed from the call store, nothing paid
	Failed                // stored with its failure (retried by the next run)
	Stopped               // not finished: interrupted, cost ceiling, provider error
)

// Outcome is how a row ended in this invocation.
type Outcome[T any] struct {
	Status Status
	Stored bool   // the row's result is stored (a failed row's too)
	Val    *T     // the row's result, when the row keeps it for its awaiters
	Reason string // why it failed (Failed)
	Took   time.Duration
}

// Row is one row of this invocation: claimed once by its unit and key,
// finished once.
type Row[T any] struct {
	key  string
	done chan struct{}
	// prev is a row of the same unit with another key (a conversation
	// started from a scenario that changed before its output was known):
	// it ends before this one opens the unit, which one process may hold
	// only once at a time.
	prev *Row[T]

	mu   sync.Mutex
	out  Outcome[T]
	then []func(Outcome[T])
}

func newRow[T any](key string) *Row[T] {
	return &Row[T]{key: key, done: make(chan struct{})}
}

// Key is what the row is made from (its cache key).
func (r *Row[T]) Key() string { return r.key }

// Done is closed once the row has finished.
func (r *Row[T]) Done() <-chan struct{} { return r.done }

// Outcome is how the row ended; call it after Done is closed.
func (r *Row[T]) Outcome() Outcome[T] {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.out
}

// Finish records the outcome and hands it to everything waiting for it.
func (r *Row[T]) Finish(o Outcome[T]) {
	r.mu.Lock()
	r.out = o
	fns := r.then
	r.then = nil
	close(r.done)
	r.mu.Unlock()
	for _, f := range fns {
		f(o)
	}
}

// OnDone calls f with the outcome once the row ends (at once if it has).
func (r *Row[T]) OnDone(f func(Outcome[T])) {
	r.mu.Lock()
	select {
	case <-r.done:
		o := r.out
		r.mu.Unlock()
		f(o)
	default:
		r.then = append(r.then, f)
		r.mu.Unlock()
	}
}

// WaitPrev waits for the row this one replaces, if any, to let go of the unit.
func (r *Row[T]) WaitPrev() {
	if r.prev != nil {
		<-r.prev.done
		r.prev = nil
	}
}

// Set is the rows of one kind of one benchmark, by call-store unit.
type Set[T any] struct {
	mu sync.Mutex
	m  map[string]*Row[T]
	// retired are finished rows whose output has them, kept only as what
	// a later awaiter reads (status and whether it is stored) under
	// hashes of their unit and key: a row asked for again in this
	// invocation (the next round of run --until, the evaluate pass after
	// verdicts made while conversations ended) is found, not made and
	// counted again, and 100,000 rows take a few MB, not their
	// conversations.
	retired map[uint64]retired
	seed    maphash.Seed
}

type retired struct {
	key    uint64
	status Status
	stored bool
}

// Claim returns the row of unit made from key: the one already claimed,
// or a new one (created) that the caller must start.
func (s *Set[T]) Claim(unit, key string) (row *Row[T], created bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string]*Row[T]{}
		s.retired = map[uint64]retired{}
		s.seed = maphash.MakeSeed()
	}
	u := maphash.String(s.seed, unit)
	if d, ok := s.retired[u]; ok {
		if d.key == maphash.String(s.seed, key) {
			row = newRow[T](key)
			row.out = Outcome[T]{Status: d.status, Stored: d.stored}
			close(row.done)
			return row, false
		}
		delete(s.retired, u)
	}
	old := s.m[unit]
	if old != nil && old.key == key {
		return old, false
	}
	row = newRow[T](key)
	row.prev = old
	s.m[unit] = row
	return row, true
}

// Retire keeps a finished row only as its status and stored flag: its
// value is in the call store and its cost is counted. It waits for the
// row to finish first, without holding the set's lock.
func (s *Set[T]) Retire(unit string, row *Row[T]) {
	<-row.done
	o := row.Outcome()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m[unit] != row {
		return
	}
	delete(s.m, unit)
	s.retired[maphash.String(s.seed, unit)] = retired{key: maphash.String(s.seed, row.key), status: o.Status, stored: o.Stored}
}
