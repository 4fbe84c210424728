package schedule

import (
	"container/heap"
	"context"
	"sync"
)

// Lane bounds the rows in flight of one kind. A row offered without
// waiting for room (a verdict on a conversation just finished, a
// conversation offered while scenarios are generated) queues here as a
// closure until a row of the lane finishes and hands it its slot: a
// goroutine per queued row cost a stack each, and a judge behind a fast
// simulation queued 100,000 of them (1 GB).
//
// Queued rows start by rank, then in the order they were offered. A
// study ranks each benchmark's rows by the benchmark's place in it, so
// its benchmarks finish one after another rather than all in the last
// seconds: each writes its files and results while the next one's calls
// keep the pools full, instead of every benchmark's output landing at
// once while the last conversations wait for the processor.
type Lane struct {
	slots chan struct{}
	mu    sync.Mutex
	queue rowQueue
	seq   uint64
}

type queuedRow struct {
	rank           int
	seq            uint64
	run, cancelled func()
	stop           func() bool   // stops the cancellation hook (rows offered without waiting)
	taken          chan struct{} // closed when the row starts (rows whose caller waits)
	gone           bool          // cancelled or started (under Lane.mu)
}

// rowQueue is a min-heap of queued rows by rank, then offer order.
type rowQueue []*queuedRow

func (q rowQueue) Len() int { return len(q) }
func (q rowQueue) Less(i, j int) bool {
	if q[i].rank != q[j].rank {
		return q[i].rank < q[j].rank
	}
	return q[i].seq < q[j].seq
}
func (q rowQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *rowQueue) Push(x any)   { *q = append(*q, x.(*queuedRow)) }
func (q *rowQueue) Pop() any {
	old := *q
	x := old[len(old)-1]
	old[len(old)-1] = nil
	*q = old[:len(old)-1]
	return x
}

// NewLane returns a lane that runs up to n rows at once.
func NewLane(n int) *Lane { return &Lane{slots: make(chan struct{}, max(1, n))} }

// Cap is how many rows of the lane run at once.
func (l *Lane) Cap() int { return cap(l.slots) }

// Go runs a row in the lane, in a goroutine of its own (the row's flow
// waits for it). Rows waiting for room start by rank, then in the order
// they were offered. With wait, the caller waits until its row starts:
// a feeder reading rows from a file then holds only the rows in flight.
// Otherwise the row queues in the lane until there is room. When ctx ends
// before there is room, a queued row's cancelled runs instead of run; a
// waiting caller gets false and nothing runs. Otherwise Go reports true.
func (l *Lane) Go(ctx context.Context, wait bool, rank int, run, cancelled func()) bool {
	l.mu.Lock()
	select {
	case l.slots <- struct{}{}:
		l.mu.Unlock()
		go l.runIn(run)
		return true
	default:
	}
	l.seq++
	q := &queuedRow{rank: rank, seq: l.seq, run: run, cancelled: cancelled}
	if wait {
		q.taken = make(chan struct{})
	} else {
		q.stop = context.AfterFunc(ctx, func() {
			if l.drop(q) {
				cancelled()
			}
		})
	}
	heap.Push(&l.queue, q)
	l.mu.Unlock()
	if !wait {
		return true
	}
	select {
	case <-q.taken:
		return true
	case <-ctx.Done():
		// Taken meanwhile: it runs, as if the slot had come first.
		return !l.drop(q)
	}
}

// drop marks a queued row gone unless it has started; it reports whether
// it dropped it.
func (l *Lane) drop(q *queuedRow) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if q.gone {
		return false
	}
	q.gone = true
	return true
}

// Backlog reports whether rows are waiting for room in the lane.
func (l *Lane) Backlog() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.queue.Len() > 0
}

// runIn runs a row holding a slot, then hands the slot to the next queued
// row or frees it.
func (l *Lane) runIn(run func()) {
	for {
		run()
		if run = l.next(); run == nil {
			return
		}
	}
}

// next takes the next queued row for the slot just freed, or frees it.
func (l *Lane) next() func() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for l.queue.Len() > 0 {
		q := heap.Pop(&l.queue).(*queuedRow)
		if q.gone {
			continue
		}
		q.gone = true
		if q.stop != nil {
			q.stop()
		}
		if q.taken != nil {
			close(q.taken)
		}
		return q.run
	}
	<-l.slots
	return nil
}

// Lanes are the lanes of a run by key, each made on first use with the
// size its key gets.
type Lanes[K comparable] struct {
	size func(K) int
	mu   sync.Mutex
	m    map[K]*Lane
}

// NewLanes returns lanes sized by size.
func NewLanes[K comparable](size func(K) int) *Lanes[K] {
	return &Lanes[K]{size: size, m: map[K]*Lane{}}
}

// Of is the lane of k.
func (l *Lanes[K]) Of(k K) *Lane {
	l.mu.Lock()
	defer l.mu.Unlock()
	if c, ok := l.m[k]; ok {
		return c
	}
	c := NewLane(l.size(k))
	l.m[k] = c
	return c
}
