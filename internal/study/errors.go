package study

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/impactbench/impactbench/internal/ids"
)

// InputError reports every problem found in the study's inputs
// (taxonomy.json, nutrition-label.json, models.yaml, and how they refer to
// the benchmarks): each names the file, the entry (a JSON path such as
// areas[0].subareas[2].groups[1].metric_ids[3], with its line) and the key
// at fault. The CLI maps it to exit code 2; nothing is written.
type InputError struct {
	Problems []Problem
}

// Problem is one finding.
type Problem struct {
	File  string // the file at fault, as found under the benchmarks directory
	Line  int    // 1-based; 0 when unknown
	Entry string // where in the file: a JSON path, or "models[3]"
	Key   string // the offending key or value, quoted in the message
	Msg   string
}

func (p Problem) String() string {
	var b strings.Builder
	b.WriteString(p.File)
	if p.Line > 0 {
		fmt.Fprintf(&b, ":%d", p.Line)
	}
	b.WriteString(": ")
	if p.Entry != "" {
		b.WriteString(p.Entry)
		b.WriteString(": ")
	}
	if p.Key != "" {
		b.WriteString(ids.Quote(p.Key)) // quoted and cut: it comes from a file
		b.WriteString(": ")
	}
	b.WriteString(p.Msg)
	return b.String()
}

// Error prints one line per problem, by file and line.
func (e *InputError) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.String()
	}
	return strings.Join(lines, "\n")
}

// problems collects findings; err returns nil or a sorted *InputError.
type problems []Problem

func (ps *problems) add(file string, line int, entry, key, format string, args ...any) {
	*ps = append(*ps, Problem{File: file, Line: line, Entry: entry, Key: key, Msg: fmt.Sprintf(format, args...)})
}

// maxProblems bounds a report: past it, the rest are summarised.
const maxProblems = 50

func (ps problems) err() error {
	if len(ps) == 0 {
		return nil
	}
	list := slices.Clone([]Problem(ps))
	slices.SortStableFunc(list, func(a, b Problem) int {
		return cmp.Or(cmp.Compare(a.File, b.File), cmp.Compare(a.Line, b.Line))
	})
	if len(list) > maxProblems {
		n := len(list) - maxProblems
		list = append(list[:maxProblems], Problem{File: list[maxProblems].File, Msg: fmt.Sprintf("… and %d more problems", n)})
	}
	return &InputError{Problems: list}
}
