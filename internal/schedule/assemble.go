package schedule

import "sync"

// Assembler writes n rows to an output in row order while they are still
// being made, so the output is ready moments after the last row instead
// of after a second pass over every stored row (which on a 2-core machine
// was most of a run's tail). Rows finish out of order: a finished row
// that the cursor has not reached yet is kept in memory while few are
// waiting, else read back (from the call store) when its turn comes, so
// memory stays bounded however far the cursor lags.
type Assembler[T any] struct {
	n     int
	keep  int
	read  func(i int) (T, error)
	write func(*T) error
	ch    chan finished[T]
	done  chan struct{}
	stop  sync.Once

	// Owned by the goroutine until done is closed.
	seen    []bool
	waiting map[int]*T
	next    int
	err     error
}

type finished[T any] struct {
	i   int
	val *T // nil: read it back with read
}

// StartAssembler writes the n rows with write as they finish, in order.
// keep bounds the finished rows held in memory ahead of the cursor; read
// fetches row i when it was not kept.
func StartAssembler[T any](n, keep int, read func(i int) (T, error), write func(*T) error) *Assembler[T] {
	a := &Assembler[T]{n: n, keep: max(1, keep), read: read, write: write,
		ch: make(chan finished[T], max(1, keep)), done: make(chan struct{}),
		seen: make([]bool, n), waiting: map[int]*T{}}
	go a.loop()
	return a
}

// Add reports that row i is finished; val is its value (nil: read it
// back). The caller must not modify val afterwards.
func (a *Assembler[T]) Add(i int, val *T) { a.ch <- finished[T]{i, val} }

func (a *Assembler[T]) loop() {
	defer close(a.done)
	for f := range a.ch {
		if a.err != nil || f.i < a.next || a.seen[f.i] {
			continue
		}
		a.seen[f.i] = true
		if f.i == a.next {
			a.put(f.val)
		} else if f.val != nil && len(a.waiting) < a.keep {
			a.waiting[f.i] = f.val
		}
		for a.err == nil && a.next < a.n && a.seen[a.next] {
			v := a.waiting[a.next]
			delete(a.waiting, a.next)
			a.put(v)
		}
	}
}

// put writes row a.next (v, or read back when v is nil).
func (a *Assembler[T]) put(v *T) {
	if v == nil {
		val, err := a.read(a.next)
		if err != nil {
			a.err = err
			return
		}
		v = &val
	}
	if err := a.write(v); err != nil {
		a.err = err
		return
	}
	a.next++
}

// Close waits for the rows added so far and reports whether every row was
// written, and the first error. Calling it again (or after Stop) returns
// the same answer.
func (a *Assembler[T]) Close() (complete bool, err error) {
	a.Stop()
	return a.err == nil && a.next == a.n, a.err
}

// Stop stops taking rows and waits for the ones added; it is safe to call
// more than once.
func (a *Assembler[T]) Stop() {
	a.stop.Do(func() { close(a.ch) })
	<-a.done
}
