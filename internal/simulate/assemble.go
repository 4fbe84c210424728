package simulate

import (
	"fmt"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/llm"
	"github.com/impactbench/impactbench/internal/schedule"
	"github.com/impactbench/impactbench/internal/work"
)

// convFile is conversations.json being written in row order by a
// schedule.Assembler while simulate is still running, with the usage of
// the rows written: in all, and the simulated user's and the audit's
// parts (rows that record them).
type convFile struct {
	w                  *artifacts.ArrayWriter
	asm                *schedule.Assembler[artifacts.Conversation]
	total, user, audit llm.Usage
}

// startConvFile writes n rows to w as they finish; keep bounds the
// finished rows held in memory ahead of the cursor; read fetches row i's
// stored conversation.
func startConvFile(w *artifacts.ArrayWriter, n, keep int, read func(i int) (artifacts.Conversation, error)) *convFile {
	f := &convFile{w: w}
	f.asm = schedule.StartAssembler(n, keep, read, f.write)
	return f
}

func (f *convFile) write(c *artifacts.Conversation) error {
	f.total = f.total.Add(work.UsageOf(c.Usage))
	if c.UserUsage != nil {
		f.user = f.user.Add(work.UsageOf(*c.UserUsage))
	}
	if c.AuditUsage != nil {
		f.audit = f.audit.Add(work.UsageOf(*c.AuditUsage))
	}
	return f.w.Write(c)
}

// add reports that row i is stored; conv is its conversation (the caller
// must not modify it afterwards).
func (f *convFile) add(i int, conv *artifacts.Conversation) { f.asm.Add(i, conv) }

// close waits for the rows handed in so far. With every row written it
// commits the file and returns the rows' total usage; otherwise (rows
// missing, or an error) the file is discarded and the target left as it was.
func (f *convFile) close() (llm.Usage, bool, error) {
	complete, err := f.asm.Close()
	if err != nil || !complete {
		f.w.Abort()
		return llm.Usage{}, false, err
	}
	if err := f.w.Close(); err != nil {
		return llm.Usage{}, false, err
	}
	return f.total, true, nil
}

// abort discards the file (safe after close).
func (f *convFile) abort() {
	f.asm.Stop()
	f.w.Abort()
}

// readConv is the assembler's read for simulate: the row's stored result.
func readConv(b *work.Bench, t *Target, rows []simRow) func(i int) (artifacts.Conversation, error) {
	return func(i int) (artifacts.Conversation, error) {
		var conv artifacts.Conversation
		if _, ok := b.Store.ReadResult(t.unit(rows[i].id, rows[i].sample), &conv); !ok {
			return conv, fmt.Errorf("simulate %s: result of %s sample %d missing from %s", t.id, rows[i].id, rows[i].sample, b.Store.Location())
		}
		return conv, nil
	}
}
