package runner

import (
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
type lane struct {
	slots chan struct{}
	mu    sync.Mutex
	queue []*queuedRow
	head  int
}

type queuedRow struct {
	run, cancelled func()
	stop           func() bool // stops the cancellation hook
	gone           bool        // cancelled or started (under lane.mu)
}

func newLane(n int) *lane { return &lane{slots: make(chan struct{}, n)} }

// cap is how many rows of the lane run at once.
func (l *lane) cap() int { return cap(l.slots) }

// goRow runs a row in lane, in a goroutine of its own (the row's flow
// waits for it). With wait, the caller waits for room first:
// a feeder reading rows from a file then holds only the rows in flight.
// Otherwise the row queues in the lane until there is room. When ctx ends
// before there is room, cancelled runs instead of run. goRow reports
// whether the row was handed on (false: ctx ended while the caller
// waited; nothing runs).
func (e *env) goRow(ctx context.Context, l *lane, wait bool, run, cancelled func()) bool {
	if wait {
		select {
		case l.slots <- struct{}{}:
		case <-ctx.Done():
			return false
		}
		go l.runIn(run)
		return true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	select {
	case l.slots <- struct{}{}:
		go l.runIn(run)
		return true
	default:
	}
	q := &queuedRow{run: run, cancelled: cancelled}
	q.stop = context.AfterFunc(ctx, func() {
		l.mu.Lock()
		gone := q.gone
		q.gone = true
		l.mu.Unlock()
		if !gone {
			cancelled()
		}
	})
	l.queue = append(l.queue, q)
	return true
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
	for l.head < len(l.queue) {
		q := l.queue[l.head]
		l.queue[l.head] = nil
		l.head++
		if l.head > 1024 && 2*l.head > len(l.queue) {
			// A queue that never empties (verdicts behind a long
			// simulation) would otherwise only grow.
			l.queue, l.head = append(l.queue[:0], l.queue[l.head:]...), 0
		}
		if q.gone {
			continue
		}
		q.gone = true
		q.stop()
		return q.run
	}
	l.queue, l.head = l.queue[:0], 0
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
