package simulate

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"

	"github.com/impactbench/impactbench/internal/layout"
	"github.com/impactbench/impactbench/internal/llm"
	"github.com/impactbench/impactbench/internal/llm/batch"
	"github.com/impactbench/impactbench/internal/work"
)

// The batch waves share the openings too.
//
// With shared openings every target's conversation of a row asks the same
// first-turn requests, and the targets' batch waves run side by side: each
// would put them in its own user batch, paying once per target. Instead the
// openings of every wave go through one openingBatch per bench and shard:
// the first wave to ask for an opening queues it, a wave that asks for one
// already queued or in a batch waits for that answer, and whichever wave
// holds the state file's turn sends everything queued so far as one batch
// (a group commit). Its state file is one for all targets
// (layout.OpeningBatchState), so a run killed mid-batch and resumed, by any
// target in any order, polls the batch already submitted instead of
// submitting its openings again. The answers reach the opening unit as in
// real time: the first target whose pass takes one stores it and pays, the
// others find it stored (openingRouter).

// isOpening reports whether req is a first-turn call of the simulated user
// (re-asks included): those go through the row's opening unit.
func isOpening(req llm.Request) bool { return req.Meta[llm.MetaTurn] == "1" }

// openingFlight is one opening request on its way through a batch.
type openingFlight struct {
	item batch.Item
	done chan struct{} // closed once res or err is set
	res  batch.Result
	err  error // the batch run failed as a whole
}

func (f *openingFlight) resolved() bool {
	select {
	case <-f.done:
		return true
	default:
		return false
	}
}

// openingBatch is the shared opening batch of one bench and state file.
type openingBatch struct {
	path string
	prov batch.Provider
	turn chan struct{} // held during a batch.Run: one at a time per state file

	mu      sync.Mutex
	flights map[string]*openingFlight // not yet answered, by custom_id
	queue   []*openingFlight          // not yet in a batch.Run
	users   int                       // waves joined and not yet left
	failed  bool                      // a wave left with an error: keep the state
}

type openingBatchKey struct {
	b    *work.Bench
	path string
}

// openingBatches are the shared opening batches in use in this process.
var openingBatches = struct {
	mu sync.Mutex
	m  map[openingBatchKey]*openingBatch
}{m: map[openingBatchKey]*openingBatch{}}

// openingStatePath is the state file of b's shared openings.
func openingStatePath(b *work.Bench) string {
	return filepath.Join(b.Files.Calls(), filepath.FromSlash(layout.OpeningBatchState(b.Opts.Shard)))
}

// joinOpeningBatch returns the shared opening batch of b, made on first use
// (a forced run then drops the batches of earlier invocations, as the
// targets' own waves do). Every join is paired with a leave.
func joinOpeningBatch(b *work.Bench, prov batch.Provider) (*openingBatch, error) {
	k := openingBatchKey{b, openingStatePath(b)}
	openingBatches.mu.Lock()
	defer openingBatches.mu.Unlock()
	ob := openingBatches.m[k]
	if ob == nil {
		if b.Opts.Force {
			if err := batch.Remove(k.path); err != nil {
				return nil, err
			}
		}
		ob = &openingBatch{path: k.path, prov: prov, turn: make(chan struct{}, 1), flights: map[string]*openingFlight{}}
		openingBatches.m[k] = ob
	}
	ob.users++
	return ob, nil
}

// leave ends a wave's use. When the last wave leaves and none failed, every
// answer is in the call store and the state file goes, like a target's own
// once its answers are stored; otherwise it stays for the resumed run.
func (ob *openingBatch) leave(b *work.Bench, ok bool) error {
	k := openingBatchKey{b, ob.path}
	openingBatches.mu.Lock()
	defer openingBatches.mu.Unlock()
	ob.failed = ob.failed || !ok
	if ob.users--; ob.users > 0 {
		return nil
	}
	delete(openingBatches.m, k)
	if ob.failed {
		return nil
	}
	return batch.Remove(ob.path)
}

// asked reports whether a wave already asked for the opening key.
func (ob *openingBatch) asked(key string) bool {
	ob.mu.Lock()
	defer ob.mu.Unlock()
	return ob.flights[key] != nil
}

// ask returns the flights of items, queueing those no wave asked for yet;
// mine are the ones this call queued (their price is this wave's).
func (ob *openingBatch) ask(items []batch.Item) (all []*openingFlight, mine map[*openingFlight]bool) {
	ob.mu.Lock()
	defer ob.mu.Unlock()
	mine = map[*openingFlight]bool{}
	for _, it := range items {
		f := ob.flights[it.CustomID]
		if f == nil {
			f = &openingFlight{item: it, done: make(chan struct{})}
			ob.flights[it.CustomID] = f
			ob.queue = append(ob.queue, f)
			mine[f] = true
		}
		all = append(all, f)
	}
	return all, mine
}

// wait returns once every flight is answered. A flight is queued, in the
// batch.Run of the wave holding the turn, or answered; so a wave that gets
// the turn with flights still unanswered finds them queued, and sends the
// queue (other waves' openings too) itself.
func (ob *openingBatch) wait(ctx context.Context, flights []*openingFlight, opts batch.Options) error {
	for {
		if allResolved(flights) {
			return nil
		}
		select {
		case ob.turn <- struct{}{}:
		case <-ctx.Done():
			return ctx.Err()
		}
		if allResolved(flights) { // answered by the run that held the turn
			<-ob.turn
			return nil
		}
		err := ob.runQueued(ctx, opts)
		<-ob.turn
		if err != nil {
			return err
		}
	}
}

func allResolved(flights []*openingFlight) bool {
	for _, f := range flights {
		if !f.resolved() {
			return false
		}
	}
	return true
}

// runQueued sends the queue as one batch.Run and answers its flights. A run
// stopped by its own context puts them back for another wave to send (the
// state file has the batches already submitted); any other failure is
// every waiting wave's.
func (ob *openingBatch) runQueued(ctx context.Context, opts batch.Options) error {
	ob.mu.Lock()
	fl := ob.queue
	ob.queue = nil
	ob.mu.Unlock()
	if len(fl) == 0 {
		return nil
	}
	items := make([]batch.Item, len(fl))
	for i, f := range fl {
		items[i] = f.item
	}
	res, err := batch.Run(ctx, ob.prov, ob.path, items, opts)
	ob.mu.Lock()
	defer ob.mu.Unlock()
	if err != nil && ctx.Err() != nil {
		ob.queue = append(fl, ob.queue...)
		return err
	}
	for i, f := range fl {
		if err != nil {
			f.err = fmt.Errorf("the openings' batch (%s): %w", ob.path, err)
		} else {
			f.res = res[i]
		}
		delete(ob.flights, f.item.CustomID)
		close(f.done)
	}
	return err
}
