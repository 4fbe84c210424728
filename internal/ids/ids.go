// Package ids holds the one rule for the ids impactbench reads from files
// people and models write (benchmark.yaml, config.yaml, scenarios.json,
// conversations.json, scores.json, labels.jsonl): metric ids, target ids,
// scenario ids and conv_ids. They become file and directory names
// (runs/<target>/, the call store's <target>/sim/<scenario>__s<n>.json),
// keys of labels people append, and text in a shell's reach, so each is
// checked when its file is read, before any of that happens.
//
// The rule: 1 to Max… characters, each an ASCII letter, a digit, '-', '_'
// or '.', not starting with '.' or '-' and not ending with '.'. Every id
// upstream ImpactBench writes fits it (metric ids m01, scenario ids
// m01_s001_v01 — <metric id>_sNNN_vNN —, target ids such as gpt-5.1 or
// claude-haiku-4-5, conv_ids <scenario id>__<target id>__s<sample>), and so
// do the older layouts' ids.
package ids

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Length bounds, in characters. A scenario id is a metric id plus
// "_sNNN_vNN"; a conv_id a scenario id, a target id and a sample index.
const (
	MaxName     = 100 // metric and target ids
	MaxScenario = 200
	MaxConv     = 400
)

// Allowed says, for messages, which characters an id may hold.
const Allowed = "letters, digits, '-', '_' and '.'"

// Problem explains why s is not an id of at most max characters, or
// returns "" when it is one.
func Problem(s string, max int) string {
	switch {
	case s == "":
		return "it is empty"
	case s == "." || s == "..":
		return "it is . or .."
	case strings.ContainsAny(s, `/\`):
		return "it contains a path separator"
	case !utf8.ValidString(s):
		return "it is not valid UTF-8"
	case strings.IndexFunc(s, unicode.IsControl) >= 0:
		return "it contains control characters"
	case utf8.RuneCountInString(s) > max:
		return fmt.Sprintf("it is longer than %d characters", max)
	case strings.ContainsAny(s, `<>:"|?*`):
		return `it contains one of <>:"|?* which Windows forbids in file names`
	case strings.TrimSpace(s) != s || strings.HasSuffix(s, "."):
		return "it starts or ends with a space, or ends with a dot"
	case s[0] == '.' || s[0] == '-':
		return "it starts with '.' or '-'"
	}
	for _, r := range s {
		if !allowed(r) {
			return fmt.Sprintf("it contains %q; an id holds only %s", r, Allowed)
		}
	}
	return ""
}

func allowed(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.'
}

// Quote writes a refused id for a message: quoted, and cut to 80
// characters so that a huge value cannot flood the terminal.
func Quote(s string) string {
	const keep = 80
	if utf8.RuneCountInString(s) <= keep {
		return fmt.Sprintf("%q", s)
	}
	cut := 0
	for i := range s {
		if cut == keep {
			return fmt.Sprintf("%q… (%d bytes)", s[:i], len(s))
		}
		cut++
	}
	return fmt.Sprintf("%q", s)
}
