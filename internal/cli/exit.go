package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/impactbench/impactbench/internal/fault"
	"github.com/impactbench/impactbench/internal/sanitize"
)

// Exit codes (documented in docs/commands.md, the README and `impactbench help exit-codes`).
const (
	ExitOK          = 0   // success
	ExitFailure     = 1   // run failure: rows failed, provider errors, lock held
	ExitUsage       = 2   // bad usage or bad input (flags, config, benchmark files), or a refused overwrite (see phase.RefusedError)
	ExitInterrupted = 130 // interrupted (Ctrl-C / SIGTERM); everything completed is saved
)

// usagef is a command-line mistake (exit 2, kind "usage").
func usagef(format string, args ...any) error { return fault.Usagef(format, args...) }

// exitCode maps an error to the process exit code — the one place that
// does, from the error's kind alone (package fault).
func exitCode(err error) int {
	if err == nil {
		return ExitOK
	}
	switch fault.KindOf(err) {
	case fault.Interrupted:
		return ExitInterrupted
	case fault.Usage, fault.Config, fault.Input, fault.Refused:
		return ExitUsage
	}
	return ExitFailure
}

// Error kinds: the "kind" of a --json error object (docs/json.md), each
// the name of a fault.Kind. Each names what to do about it, finer than
// the exit code; every kind maps to exactly one code (exitCode).
const (
	KindUsage       = "usage"       // flags or arguments: fix the command line
	KindConfig      = "config"      // config.yaml, a missing key or ${VAR}
	KindInput       = "input"       // benchmark files or a state the command cannot run from
	KindRefused     = "refused"     // an overwrite that would lose rows or verdicts (--accept-fewer)
	KindPartial     = "partial"     // some rows failed after retries; rerun to retry them
	KindProvider    = "provider"    // a provider refused or failed (auth, quota, …)
	KindLocked      = "locked"      // another process holds the benchmark
	KindInterrupted = "interrupted" // Ctrl-C / SIGTERM; completed work is saved
	KindFailure     = "failure"     // anything else
)

// errorKind classifies err for --json.
func errorKind(err error) string { return fault.KindOf(err).String() }

// errorJSON is what a failing command writes on stderr under --json: one
// line, the last stderr writes.
type errorJSON struct {
	Error errorBody `json:"error"`
}

type errorBody struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Kind    string `json:"kind"`
}

// printErrorJSON writes err as one errorJSON line; interrupted is the
// message for an interrupted run.
func printErrorJSON(w io.Writer, err error, interrupted string) {
	msg := err.Error()
	if errors.Is(err, context.Canceled) {
		msg = interrupted
	}
	b, _ := json.Marshal(errorJSON{errorBody{Code: exitCode(err), Message: msg, Kind: errorKind(err)}})
	fmt.Fprintf(w, "%s\n", b)
}

const interruptedMsg = "interrupted — everything completed so far is saved; run the same command again to continue"

// interruptedForcedMsg replaces interruptedMsg for a forced run: the same
// command again would reset every unit once more and pay again for what
// this run did, not continue it.
const interruptedForcedMsg = "interrupted — everything completed so far is saved, but --force starts over each time: " +
	"run it again with --force to redo everything (paying again for what this run did), " +
	"or without it (--force=false if config.yaml sets run.force) to keep the outputs it had not replaced yet"

func (g *globals) printError(err error) {
	if errors.Is(err, context.Canceled) {
		g.printInterrupted()
		return
	}
	// Errors carry text from providers and files: shown, never acted on.
	fmt.Fprintf(g.stderr, "impactbench: %s\n", sanitize.Terminal(err.Error()))
}

// printInterrupted prints the interrupted message once, whichever of the
// run's return and the signal handler's forced exit gets there first.
func (g *globals) printInterrupted() {
	g.interruptedOnce.Do(func() {
		fmt.Fprintln(g.stderr, "impactbench: "+g.interruptedMessage())
	})
}

// interruptedMessage is what an interrupted command says: how to go on.
func (g *globals) interruptedMessage() string {
	if g.forced.Load() {
		return interruptedForcedMsg
	}
	return interruptedMsg
}
