package cli

import (
	"fmt"
	"io"

	"github.com/impactbench/impactbench/internal/llm"
	"github.com/impactbench/impactbench/internal/progress"
)

// printSpent is the summary's line of what the run paid and what it did
// not: answers replayed from the call store. Those are not only earlier
// runs' — with shared openings (the default) the second target of a row
// is given the opening the first one paid for, in the same fresh run —
// so the line names both sources instead of calling them all "reused
// from earlier runs". With nothing replayed (a fresh run with independent
// openings, or a rerun whose every phase was already done) that part is
// left out rather than reporting "0 calls" not paid.
func printSpent(w io.Writer, prefix string, spent, replayed llm.Usage) {
	fmt.Fprintf(w, "%sspent now: %s (%d calls, %d in / %d out tokens)",
		prefix, progress.Dollars(spent), spent.Requests, spent.InputTokens, spent.OutputTokens)
	if replayed.Requests > 0 {
		fmt.Fprintf(w, "; stored answers replayed, not paid: %d calls worth %s (from earlier runs, or an opening already paid for another target)",
			replayed.Requests, progress.Dollars(replayed))
	}
	fmt.Fprintln(w)
}
