package runner

import (
	"fmt"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/llm"
)

// convAssembler writes conversations.json in row order while simulate is
// still running, so the file is ready moments after the last conversation
// instead of after a second pass over every stored row (which on a 2-core
// machine was most of the run's tail). Rows finish out of order: a finished
// row that the cursor has not reached yet is kept in memory while few are
// waiting, else read back from the call store when its turn comes, so
// memory stays bounded however far the cursor lags.
type convAssembler struct {
	w    *artifacts.ArrayWriter
	n    int
	keep int
	read func(i int) (artifacts.Conversation, error)
	ch   chan finishedConv
	done chan struct{}

	// Owned by the goroutine until done is closed.
	finished []bool
	waiting  map[int]*artifacts.Conversation
	next     int
	total    llm.Usage
	// user and audit are the simulated user's and the audit's parts of
	// total (rows that record them); read them after close.
	user, audit llm.Usage
	err         error
}

type finishedConv struct {
	i    int
	conv *artifacts.Conversation // nil: read it back with read
}

// startAssembler writes the n rows to w as they finish. keep bounds the
// finished rows held in memory ahead of the cursor; read fetches row i's
// stored conversation.
func startAssembler(w *artifacts.ArrayWriter, n, keep int, read func(i int) (artifacts.Conversation, error)) *convAssembler {
	a := &convAssembler{w: w, n: n, keep: max(1, keep), read: read,
		ch: make(chan finishedConv, max(1, keep)), done: make(chan struct{}),
		finished: make([]bool, n), waiting: map[int]*artifacts.Conversation{}}
	go a.loop()
	return a
}

// add reports that row i is stored; conv is its conversation (the caller
// must not modify it afterwards).
func (a *convAssembler) add(i int, conv *artifacts.Conversation) { a.ch <- finishedConv{i, conv} }

func (a *convAssembler) loop() {
	defer close(a.done)
	for f := range a.ch {
		if a.err != nil || f.i < a.next || a.finished[f.i] {
			continue
		}
		a.finished[f.i] = true
		if f.i == a.next {
			a.write(f.conv)
		} else if f.conv != nil && len(a.waiting) < a.keep {
			a.waiting[f.i] = f.conv
		}
		for a.err == nil && a.next < a.n && a.finished[a.next] {
			c := a.waiting[a.next]
			delete(a.waiting, a.next)
			a.write(c)
		}
	}
}

// write appends row a.next (c, or read back when c is nil).
func (a *convAssembler) write(c *artifacts.Conversation) {
	if c == nil {
		conv, err := a.read(a.next)
		if err != nil {
			a.err = err
			return
		}
		c = &conv
	}
	a.total = a.total.Add(usageOf(c.Usage))
	if c.UserUsage != nil {
		a.user = a.user.Add(usageOf(*c.UserUsage))
	}
	if c.AuditUsage != nil {
		a.audit = a.audit.Add(usageOf(*c.AuditUsage))
	}
	if err := a.w.Write(c); err != nil {
		a.err = err
		return
	}
	a.next++
}

// close waits for the rows handed in so far. With every row written it
// commits the file and returns the rows' total usage; otherwise (rows
// missing, or an error) the file is discarded and the target left as it was.
func (a *convAssembler) close() (llm.Usage, bool, error) {
	close(a.ch)
	<-a.done
	if a.err != nil || a.next < a.n {
		a.w.Abort()
		return llm.Usage{}, false, a.err
	}
	if err := a.w.Close(); err != nil {
		return llm.Usage{}, false, err
	}
	return a.total, true, nil
}

// abort discards the file (safe after close).
func (a *convAssembler) abort() {
	select {
	case <-a.done:
	default:
		close(a.ch)
		<-a.done
	}
	a.w.Abort()
}

// readConv is the assembler's read for simulate: the row's stored result.
func (r *Runner) readConv(t *simTarget, rows []simRow) func(i int) (artifacts.Conversation, error) {
	return func(i int) (artifacts.Conversation, error) {
		var conv artifacts.Conversation
		if _, ok := r.store.ReadResult(t.unit(rows[i].id, rows[i].sample), &conv); !ok {
			return conv, fmt.Errorf("simulate %s: result of %s sample %d missing from %s", t.id, rows[i].id, rows[i].sample, r.store.Dir())
		}
		return conv, nil
	}
}
