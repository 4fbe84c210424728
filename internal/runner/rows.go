package runner

import (
	"container/heap"
	"context"
	"hash/maphash"
	"math"
	"sync"
	"time"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/llm"
	"github.com/impactbench/impactbench/internal/progress"
)

// Rows are the unit of work. Every row — a metric's base scenarios and
// their demographic variants, a conversation, a verdict — runs once per
// invocation under the call-store unit it is stored in, and is awaited by
// whatever needs its result: the ordered writer of its output file, or the
// row that depends on it (a verdict on its conversation). A row started
// before its output knew it would need it (a conversation started while
// other metrics were still being generated) is found in its set and
// awaited like any other: there is one way a row is made, whoever asks first.

// rowOut is how a row ended and what it cost in this invocation.
type rowOut[T any] struct {
	status RowStatus
	stored bool   // the row's result is in the call store (a failed row's too)
	val    *T     // the row's result, when the row keeps it for its awaiters
	reason string // why it failed (RowFailed)
	spent  llm.Usage
	saved  llm.Usage
	took   time.Duration
}

// rowState is one row of this invocation: claimed once by its unit and
// key, finished once.
type rowState[T any] struct {
	key  string
	done chan struct{}
	// prev is a row of the same unit with another key (a conversation
	// started from a scenario that changed before its output was known):
	// it ends before this one opens the unit, which one process may hold
	// only once at a time.
	prev *rowState[T]

	mu   sync.Mutex
	out  rowOut[T]
	then []func(rowOut[T])
}

func newRowState[T any](key string) *rowState[T] {
	return &rowState[T]{key: key, done: make(chan struct{})}
}

// finish records the outcome and hands it to everything waiting for it.
func (s *rowState[T]) finish(o rowOut[T]) {
	s.mu.Lock()
	s.out = o
	fns := s.then
	s.then = nil
	close(s.done)
	s.mu.Unlock()
	for _, f := range fns {
		f(o)
	}
}

// onDone calls f with the outcome once the row ends (at once if it has).
func (s *rowState[T]) onDone(f func(rowOut[T])) {
	s.mu.Lock()
	select {
	case <-s.done:
		o := s.out
		s.mu.Unlock()
		f(o)
	default:
		s.then = append(s.then, f)
		s.mu.Unlock()
	}
}

// waitPrev waits for the row this one replaces, if any, to let go of the unit.
func (s *rowState[T]) waitPrev() {
	if s.prev != nil {
		<-s.prev.done
		s.prev = nil
	}
}

// rowSet is the rows of one kind of one benchmark, by call-store unit.
type rowSet[T any] struct {
	mu sync.Mutex
	m  map[string]*rowState[T]
	// retired are finished rows whose output has them, kept only as what
	// a later awaiter reads (status and whether it is stored) under
	// hashes of their unit and key: a row asked for again in this
	// invocation (the next round of run --until, the evaluate pass after
	// verdicts made while conversations ended) is found, not made and
	// counted again, and 100,000 rows take a few MB, not their
	// conversations.
	retired map[uint64]retiredRow
	seed    maphash.Seed
}

type retiredRow struct {
	key    uint64
	status RowStatus
	stored bool
}

// claim returns the row of unit made from key: the one already claimed,
// or a new one (created) that the caller must start.
func (s *rowSet[T]) claim(unit, key string) (st *rowState[T], created bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string]*rowState[T]{}
		s.retired = map[uint64]retiredRow{}
		s.seed = maphash.MakeSeed()
	}
	u := maphash.String(s.seed, unit)
	if d, ok := s.retired[u]; ok {
		if d.key == maphash.String(s.seed, key) {
			st = newRowState[T](key)
			st.out = rowOut[T]{status: d.status, stored: d.stored}
			close(st.done)
			return st, false
		}
		delete(s.retired, u)
	}
	old := s.m[unit]
	if old != nil && old.key == key {
		return old, false
	}
	st = newRowState[T](key)
	st.prev = old
	s.m[unit] = st
	return st, true
}

// retire keeps a finished row only as its status and stored flag: its
// value is in the call store and its cost is counted.
func (s *rowSet[T]) retire(unit string, st *rowState[T]) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m[unit] != st {
		return
	}
	<-st.done
	delete(s.m, unit)
	s.retired[maphash.String(s.seed, unit)] = retiredRow{key: maphash.String(s.seed, st.key), status: st.out.status, stored: st.out.stored}
}

// rowSets are a benchmark's rows in flight or finished in this invocation.
type rowSets struct {
	convs    rowSet[artifacts.Conversation]
	verdicts rowSet[artifacts.Score]
}

func newRowSets() *rowSets { return &rowSets{} }

// laneKey names a lane: one kind of row for one target ("" for rows of no target).
type laneKey struct {
	stage  Stage
	target string
}

// lanes bound the rows in flight of each kind and target across the whole
// study: run.concurrency's value for the stage (a cap, as upstream), or
// with auto a ceiling high enough that the provider pools' adaptive limits,
// not the lane, decide how many calls are in flight.
type lanes struct {
	e  *env
	mu sync.Mutex
	m  map[laneKey]*lane
}

func newLanes(e *env) *lanes { return &lanes{e: e, m: map[laneKey]*lane{}} }

func (l *lanes) of(stage Stage, target string) *lane {
	l.mu.Lock()
	defer l.mu.Unlock()
	k := laneKey{stage, target}
	if c, ok := l.m[k]; ok {
		return c
	}
	n := l.e.workers(l.configured(stage), math.MaxInt)
	if l.configured(stage) <= 0 {
		n = min(n, laneCeiling(l.e.cfg, stage, target))
	}
	c := newLane(n)
	l.m[k] = c
	return c
}

func (l *lanes) configured(stage Stage) int {
	cc := l.e.cfg.Run.Concurrency
	switch stage {
	case StageSimulate:
		return cc.Simulate
	case StageEvaluate, StageRepeats:
		return cc.Evaluate
	case StageGenScenarios:
		return cc.GenScenarios
	}
	return 0
}

// lane bounds the rows in flight of one stage and target. A row offered
// without waiting for room (a verdict on a conversation just finished, a
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
type lane struct {
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
	gone           bool          // cancelled or started (under lane.mu)
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

func newLane(n int) *lane { return &lane{slots: make(chan struct{}, n)} }

// cap is how many rows of the lane run at once.
func (l *lane) cap() int { return cap(l.slots) }

// goRow runs a row of this benchmark in lane l (see lane.goRow), ranked by
// the benchmark's place in the study.
func (r *Runner) goRow(ctx context.Context, l *lane, wait bool, run, cancelled func()) bool {
	return l.goRow(ctx, wait, r.rank, run, cancelled)
}

// goRow runs a row in the lane, in a goroutine of its own (the row's flow
// waits for it). Rows waiting for room start by rank, then in the order
// they were offered. With wait, the caller waits until its row starts:
// a feeder reading rows from a file then holds only the rows in flight.
// Otherwise the row queues in the lane until there is room. When ctx ends
// before there is room, a queued row's cancelled runs instead of run; a
// waiting caller gets false and nothing runs. Otherwise goRow reports true.
func (l *lane) goRow(ctx context.Context, wait bool, rank int, run, cancelled func()) bool {
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
func (l *lane) drop(q *queuedRow) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if q.gone {
		return false
	}
	q.gone = true
	return true
}

// backlog reports whether rows are waiting for room in the lane.
func (l *lane) backlog() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.queue.Len() > 0
}

// runIn runs a row holding a slot, then hands the slot to the next queued
// row or frees it.
func (l *lane) runIn(run func()) {
	for {
		run()
		if run = l.next(); run == nil {
			return
		}
	}
}

// next takes the next queued row for the slot just freed, or frees it.
func (l *lane) next() func() {
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

// bars are the study's progress bars, one per stage and target, shared by
// every benchmark: a study shows "simulate gpt-4o" once, over all of them.
type bars struct {
	prog *progress.Tracker
	mu   sync.Mutex
	m    map[laneKey]*sharedBar
}

type sharedBar struct {
	key   laneKey
	bar   *progress.Bar
	parts int // open parts; the bar ends when the last one closes
	total int
}

func newBars(p *progress.Tracker) *bars { return &bars{prog: p, m: map[laneKey]*sharedBar{}} }

// barPart is one output's share of a bar.
type barPart struct {
	b   *bars
	s   *sharedBar
	n   int
	end bool
}

// open adds an output's n rows to the bar of stage and target.
func (b *bars) open(stage Stage, target string, n int) *barPart {
	b.mu.Lock()
	defer b.mu.Unlock()
	k := laneKey{stage, target}
	s := b.m[k]
	if s == nil {
		label := stage.String()
		if target != "" {
			label += " " + target
		}
		s = &sharedBar{key: k, bar: b.prog.Start(label, 0)}
		b.m[k] = s
	}
	s.parts++
	s.total += n
	s.bar.SetTotal(s.total)
	return &barPart{b: b, s: s, n: n}
}

// setTotal changes this part's row count (the rows became known).
func (p *barPart) setTotal(n int) {
	p.b.mu.Lock()
	defer p.b.mu.Unlock()
	p.s.total += n - p.n
	p.n = n
	p.s.bar.SetTotal(p.s.total)
}

// close ends this part; the bar ends with its last part.
func (p *barPart) close() {
	if p == nil {
		return
	}
	p.b.mu.Lock()
	defer p.b.mu.Unlock()
	if p.end {
		return
	}
	p.end = true
	p.s.parts--
	if p.s.parts == 0 {
		p.s.bar.End()
		delete(p.b.m, p.s.key)
	}
}

func (p *barPart) bar() *progress.Bar { return p.s.bar }
