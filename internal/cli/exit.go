package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/llm"
	"github.com/impactbench/impactbench/internal/runner"
)

// Exit codes (documented in the README and `impactbench help exit-codes`).
const (
	ExitOK          = 0   // success
	ExitFailure     = 1   // run failure: rows failed, provider errors, lock held
	ExitUsage       = 2   // bad usage or bad input (flags, config, benchmark files), or a refused overwrite (see runner.RefusedError)
	ExitInterrupted = 130 // interrupted (Ctrl-C / SIGTERM); everything completed is saved
)

// usageError is a command-line mistake.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return &usageError{fmt.Sprintf(format, args...)} }

// exitCode maps an error to the process exit code — the one place that does.
func exitCode(err error) int {
	if err == nil {
		return ExitOK
	}
	var ue *usageError
	var ce *config.Error
	var ie *runner.InputError
	var re *runner.RefusedError
	var fe *artifacts.FileError
	switch {
	case errors.Is(err, context.Canceled):
		return ExitInterrupted
	case errors.As(err, &ue), errors.As(err, &ce), errors.As(err, &ie), errors.As(err, &re), errors.As(err, &fe):
		return ExitUsage
	case llm.KindOf(err) == llm.KindConfig:
		return ExitUsage
	}
	return ExitFailure
}

func (g *globals) printError(err error) {
	if errors.Is(err, context.Canceled) {
		g.printInterrupted()
		return
	}
	fmt.Fprintf(g.stderr, "impactbench: %v\n", err)
}

// printInterrupted prints the interrupted message once, whichever of the
// run's return and the signal handler's forced exit gets there first.
func (g *globals) printInterrupted() {
	g.interruptedOnce.Do(func() {
		fmt.Fprintln(g.stderr, "impactbench: interrupted — everything completed so far is saved; run the same command again to continue")
	})
}
