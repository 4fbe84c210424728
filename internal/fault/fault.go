// Package fault is impactbench's one vocabulary for errors a person must
// act on. Every such error has a Kind — a mistake on the command line, in
// config.yaml, in an input file, an overwrite refused, rows that failed,
// a provider that refused, a benchmark locked by another process — and the
// CLI derives the exit code and the --json "kind" from the Kind alone, in
// one place.
//
// Error is the one error for bad input: its kind, the file, row, line and
// field at fault, a message, a hint and the cause (Unwrap). Errors that
// report many problems at once (config.yaml's, the study inputs', a
// labels file's) keep their own types, which name each problem's file,
// line and field, and say their kind through the Kinder interface.
package fault

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// Kind is what a person does about an error.
type Kind int

// The kinds, from the most specific. Failure is anything else.
const (
	Failure     Kind = iota // a run failure: rows failed, provider errors, I/O
	Usage                   // flags or arguments: fix the command line
	Config                  // config.yaml, a missing key or ${VAR}
	Input                   // benchmark files, or a state the command cannot run from
	Refused                 // an overwrite that would lose rows or verdicts (--accept-fewer)
	Partial                 // some rows failed after retries; rerun to retry them
	Provider                // a provider refused or failed (auth, quota, …)
	Locked                  // another process holds the benchmark
	Interrupted             // Ctrl-C / SIGTERM; completed work is saved
)

var kindNames = [...]string{"failure", "usage", "config", "input", "refused", "partial", "provider", "locked", "interrupted"}

func (k Kind) String() string {
	if k < 0 || int(k) >= len(kindNames) {
		return "failure"
	}
	return kindNames[k]
}

// Kinder is an error that knows its kind.
type Kinder interface {
	error
	FaultKind() Kind
}

// KindOf is err's kind: Interrupted when a cancelled context is anywhere
// in it; else the kind of the outermost error in its chain that has one
// (a wrapper that names a kind decides for what it wraps). An error may
// join several (a study whose benchmarks failed in different ways): then
// the branch whose kind asks most of a person wins — a mistake on the
// command line, a refused overwrite, config.yaml, an input file, failed
// rows, a lock, a provider — else Failure.
func KindOf(err error) Kind {
	if errors.Is(err, context.Canceled) {
		return Interrupted
	}
	return kindOf(err)
}

func kindOf(err error) Kind {
	switch e := err.(type) {
	case nil:
		return Failure
	case Kinder:
		return e.FaultKind()
	case interface{ Unwrap() error }:
		return kindOf(e.Unwrap())
	case interface{ Unwrap() []error }:
		best := Failure
		for _, b := range e.Unwrap() {
			if k := kindOf(b); rank[k] > rank[best] {
				best = k
			}
		}
		return best
	}
	return Failure
}

// rank orders the kinds of joined errors.
var rank = map[Kind]int{Failure: 0, Provider: 1, Locked: 2, Partial: 3, Input: 4, Config: 5, Refused: 6, Usage: 7, Interrupted: 8}

// Error is one problem with the input: what kind, where (file, row, line,
// column, field — each optional) and what, with the cause kept.
type Error struct {
	Kind  Kind
	File  string // the file at fault ("" for a command line or a state)
	Row   int    // 1-based row of a JSON array or line of a JSON Lines file; 0 unknown
	Line  int    // 1-based line in the file; 0 unknown
	Col   int    // 1-based column; 0 unknown
	Field string // the key path within the row or file, e.g. transcript[3].content
	Msg   string // what is wrong ("" uses Err's text)
	Hint  string // what to do, appended after the message
	Err   error  // the cause, if any
}

// FaultKind is the error's kind.
func (e *Error) FaultKind() Kind { return e.Kind }

// Unwrap is the cause.
func (e *Error) Unwrap() error { return e.Err }

// Error prints "file row N (line L): field "f": message hint", leaving out
// what is unknown.
func (e *Error) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		if e.Row > 0 {
			fmt.Fprintf(&b, " row %d", e.Row)
		}
		switch {
		case e.Line > 0 && e.Col > 0:
			fmt.Fprintf(&b, " (line %d, column %d)", e.Line, e.Col)
		case e.Line > 0:
			fmt.Fprintf(&b, " (line %d)", e.Line)
		}
		b.WriteString(": ")
	}
	if e.Field != "" {
		fmt.Fprintf(&b, "field %q: ", e.Field)
	}
	switch {
	case e.Msg != "":
		b.WriteString(e.Msg)
	case e.Err != nil:
		b.WriteString(e.Err.Error())
	}
	b.WriteString(e.Hint)
	return b.String()
}

// Inputf is an input error with a formatted message. A %w verb keeps its
// operand as the cause.
func Inputf(format string, args ...any) error { return newf(Input, format, args...) }

// Usagef is a command-line mistake with a formatted message.
func Usagef(format string, args ...any) error { return newf(Usage, format, args...) }

// Configf is a config.yaml problem with a formatted message.
func Configf(format string, args ...any) error { return newf(Config, format, args...) }

func newf(k Kind, format string, args ...any) error {
	err := fmt.Errorf(format, args...)
	return &Error{Kind: k, Msg: err.Error(), Err: errors.Unwrap(err)}
}

// AsInput wraps err as an input error, keeping it as the cause (nil
// stays nil).
func AsInput(err error) error {
	if err == nil {
		return nil
	}
	return &Error{Kind: Input, Err: err}
}
