package config

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// Error reports every problem found in one file (config.yaml or
// benchmark.yaml). It is returned instead of the first problem so that a user
// can fix a whole file in one edit; the CLI maps it to exit code 2.
type Error struct {
	File     string // path as given by the caller
	Problems []Problem
}

// Problem is one finding. Line and Col are 1-based (0 = no position); Field is
// the key path, e.g. "targets[2].id".
type Problem struct {
	Line, Col int
	Field     string
	Msg       string
	// Err is an optional underlying cause (e.g. fs.ErrNotExist), exposed
	// through errors.Is/As.
	Err error
}

// Error prints one line per problem, in file order:
//
//	config.yaml:12:5: targets[2].id: duplicate target id "gpt-4o" (first at line 8)
func (e *Error) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.format(e.File)
	}
	return strings.Join(lines, "\n")
}

// Unwrap exposes each problem so errors.Is/As see their causes.
func (e *Error) Unwrap() []error {
	errs := make([]error, len(e.Problems))
	for i := range e.Problems {
		errs[i] = problemError{file: e.File, p: e.Problems[i]}
	}
	return errs
}

// location is "file:line:col", dropping the parts that are unknown.
func (p Problem) location(file string) string {
	var b strings.Builder
	b.WriteString(file)
	if p.Line > 0 {
		fmt.Fprintf(&b, ":%d", p.Line)
		if p.Col > 0 {
			fmt.Fprintf(&b, ":%d", p.Col)
		}
	}
	return b.String()
}

func (p Problem) format(file string) string {
	var b strings.Builder
	if loc := p.location(file); loc != "" {
		b.WriteString(loc)
		b.WriteString(": ")
	}
	if p.Field != "" {
		b.WriteString(p.Field)
		b.WriteString(": ")
	}
	b.WriteString(p.Msg)
	return b.String()
}

// problemError lets one Problem travel as an error (for errors.Join-style
// consumers) while keeping its cause reachable.
type problemError struct {
	file string
	p    Problem
}

func (e problemError) Error() string { return e.p.format(e.file) }
func (e problemError) Unwrap() error { return e.p.Err }

// problems accumulates findings while a file is decoded.
type problems struct {
	file string
	list []Problem
	// closed: a bound stopped the walk; later findings are not reported.
	closed bool
}

func (ps *problems) add(line, col int, field, format string, args ...any) {
	if ps.closed {
		return
	}
	ps.list = append(ps.list, Problem{Line: line, Col: col, Field: field, Msg: fmt.Sprintf(format, args...)})
}

// err returns nil when nothing was found, else an *Error sorted into file order.
func (ps *problems) err() error {
	if len(ps.list) == 0 {
		return nil
	}
	list := slices.Clone(ps.list)
	slices.SortStableFunc(list, func(a, b Problem) int {
		if c := cmp.Compare(a.Line, b.Line); c != 0 {
			return c
		}
		return cmp.Compare(a.Col, b.Col)
	})
	return &Error{File: ps.file, Problems: list}
}

// suggest returns the known word closest to s, or "" when nothing is close
// enough to be a plausible typo. Case, '_' and '-' are ignored first so that
// baseURL finds base_url.
func suggest(s string, known []string) string {
	ns := normalizeKey(s)
	for _, k := range known {
		if normalizeKey(k) == ns {
			return k
		}
	}
	best, bestD := "", 1<<30
	for _, k := range known {
		d := editDistance(strings.ToLower(s), strings.ToLower(k))
		if d < bestD {
			best, bestD = k, d
		}
	}
	// Short keys tolerate one edit, longer ones two; beyond that the
	// "suggestion" is noise.
	limit := 1
	if len([]rune(best)) >= 6 {
		limit = 2
	}
	if bestD <= limit && bestD < len([]rune(best)) {
		return best
	}
	return ""
}

func normalizeKey(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '_' || r == '-' || r == ' ' {
			return -1
		}
		return r
	}, strings.ToLower(s))
}

// editDistance is the optimal-string-alignment distance: Levenshtein plus
// adjacent transpositions, so "modle" is one edit from "model".
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}

// Suggest is the known word closest to s when it is close enough to be a
// typo, or "": the did-you-mean of config errors, for other inputs (a
// study's taxonomy.json) to say the same way.
func Suggest(s string, known []string) string { return suggest(s, known) }
