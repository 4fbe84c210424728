// Package userreply reads the simulated user's replies: the message to
// send (Parse), its hidden reasoning (Thought), and the seeded typing
// noise of a perfunctory user (Perturb). A reply is model output: Parse
// never invents text, and a reply in the requested format reads back
// exactly (fuzzed).
package userreply

import (
	"math/rand/v2"
	"slices"
	"strings"
	"unicode"
)

// Parse extracts the message from a simulated user's
// "Thought: …\nMessage: …" reply and reports whether it ends the dialogue.
//
// The message starts at the first line labelled "Message:" (any case,
// optionally indented or dressed in markdown such as "**Message:**",
// "## Message:", "- Message:", "> Message:") and runs to the end of the
// text or to a later "Thought:" line, which is not part of it (upstream
// included it). Without a label, the whole reply minus a leading Thought
// paragraph is the message. Surrounding quotes and emphasis are removed.
// terminate is true when the message, ignoring leading quotes, punctuation
// and markdown, starts with "terminate conversation" (any case).
func Parse(raw string) (message string, terminate bool) {
	message, terminate, _ = ParseRepairs(raw)
	return message, terminate
}

// Repairs ParseRepairs reports: fixed phrases, never the reply's text.
const (
	RepairNoLabel     = "read a reply without a Message: label"
	RepairLateThought = "removed a Thought: part after the message"
	RepairUnwrapped   = "removed quotes or emphasis around the message"
)

// ParseRepairs is Parse that also says what it had to repair to read the
// message (the Repair… phrases); nil for a reply in the requested format.
func ParseRepairs(raw string) (message string, terminate bool, repairs []string) {
	lines := strings.Split(strings.ReplaceAll(raw, "\r\n", "\n"), "\n")
	start := -1
	var first string
	for i, l := range lines {
		if label, rest, ok := lineLabel(l); ok && label == "message" {
			start, first = i, rest
			break
		}
	}
	var msg string
	if start >= 0 {
		parts := []string{first}
		for _, l := range lines[start+1:] {
			if label, _, ok := lineLabel(l); ok && label == "thought" {
				repairs = append(repairs, RepairLateThought)
				break
			}
			parts = append(parts, l)
		}
		msg = strings.Join(parts, "\n")
	} else {
		msg = withoutLeadingThought(lines)
		repairs = append(repairs, RepairNoLabel)
	}
	u := unwrap(msg)
	if u != strings.TrimSpace(msg) {
		repairs = append(repairs, RepairUnwrapped)
	}
	msg = u
	return msg, isTerminate(msg), repairs
}

// Thought returns the simulated user's hidden reasoning: the text of
// the "Thought:" parts of its reply, which Parse leaves out of the
// message. Each part runs to the next "Message:" line; in a reply without
// a Message label, to the end of the leading paragraph, as
// Parse reads it.
func Thought(raw string) string {
	lines := strings.Split(strings.ReplaceAll(raw, "\r\n", "\n"), "\n")
	labelled := slices.ContainsFunc(lines, func(l string) bool {
		label, _, ok := lineLabel(l)
		return ok && label == "message"
	})
	var parts []string
	in := false
	for _, l := range lines {
		if label, rest, ok := lineLabel(l); ok {
			in = label == "thought"
			if in {
				parts = append(parts, rest)
			}
			continue
		}
		if in && !labelled && strings.TrimSpace(l) == "" {
			break
		}
		if in {
			parts = append(parts, l)
		}
	}
	return strings.TrimSpace(strings.Join(parts, "\n"))
}

const markdownLead = "#>-*_ \t"

// lineLabel recognises "message:" and "thought:" labels at the start of a line.
func lineLabel(line string) (label, rest string, ok bool) {
	s := strings.TrimLeft(line, markdownLead)
	lead := line[:len(line)-len(s)]
	for _, l := range []string{"message", "thought"} {
		if len(s) < len(l) || !strings.EqualFold(s[:len(l)], l) {
			continue
		}
		r := strings.TrimLeft(s[len(l):], " \t")
		emph := strings.ContainsAny(lead, "*_")
		if emph { // closing emphasis before the colon: **Message**:
			r = strings.TrimLeft(r, "*_ \t")
		}
		if !strings.HasPrefix(r, ":") {
			continue
		}
		r = r[1:]
		if emph { // closing emphasis after the colon: **Message:**
			r = strings.TrimLeft(r, " \t")
			r = strings.TrimPrefix(strings.TrimPrefix(r, "**"), "__")
			r = strings.TrimPrefix(strings.TrimPrefix(r, "*"), "_")
		}
		return l, strings.TrimSpace(r), true
	}
	return "", "", false
}

// withoutLeadingThought drops a leading "Thought:" paragraph (up to the
// first blank line) from an unlabelled reply.
func withoutLeadingThought(lines []string) string {
	i := 0
	for i < len(lines) && strings.TrimSpace(lines[i]) == "" {
		i++
	}
	if i < len(lines) {
		if label, _, ok := lineLabel(lines[i]); ok && label == "thought" {
			for i < len(lines) && strings.TrimSpace(lines[i]) != "" {
				i++
			}
		}
	}
	return strings.Join(lines[i:], "\n")
}

var wrappers = [][2]string{
	{`"`, `"`}, {"“", "”"}, {"'", "'"}, {"‘", "’"}, {"**", "**"}, {"__", "__"}, {"*", "*"}, {"_", "_"}, {"`", "`"},
}

// unwrap trims whitespace and removes quotes or emphasis enclosing the whole
// message, but not when the same mark also occurs inside (`"a" and "b"`).
func unwrap(s string) string {
	for {
		s = strings.TrimSpace(s)
		changed := false
		for _, w := range wrappers {
			if len(s) < len(w[0])+len(w[1]) || !strings.HasPrefix(s, w[0]) || !strings.HasSuffix(s, w[1]) {
				continue
			}
			inner := s[len(w[0]) : len(s)-len(w[1])]
			if strings.Contains(inner, w[0]) || strings.Contains(inner, w[1]) {
				continue
			}
			s, changed = inner, true
			break
		}
		if !changed {
			return s
		}
	}
}

func isTerminate(msg string) bool {
	t := strings.TrimLeftFunc(strings.ToLower(msg), func(r rune) bool {
		return unicode.IsSpace(r) || unicode.IsPunct(r) || unicode.IsSymbol(r)
	})
	return strings.HasPrefix(t, "terminate conversation")
}

// Perturb adds "perfunctory" typing noise like upstream's, but seeded, so a
// rerun reproduces it: each upper-case letter is lower-cased with
// probability 1/2, then ⌊n/150⌋ random adjacent pairs are swapped and the
// characters at ⌊n/200⌋ random positions deleted (n = characters; repeated
// positions collapse). A non-empty message never becomes empty.
func Perturb(msg string, seed uint64) string {
	r := []rune(msg)
	n := len(r)
	if n == 0 {
		return msg
	}
	rng := rand.New(rand.NewPCG(seed, seed^0x6a09e667f3bcc909))
	for i, c := range r {
		if unicode.IsUpper(c) && rng.IntN(2) == 0 {
			r[i] = unicode.ToLower(c)
		}
	}
	for range n / 150 {
		i := rng.IntN(n - 1)
		r[i], r[i+1] = r[i+1], r[i]
	}
	if k := n / 200; k > 0 {
		drop := make(map[int]bool, k)
		for range k {
			drop[rng.IntN(n)] = true
		}
		kept := r[:0]
		for i, c := range r {
			if !drop[i] {
				kept = append(kept, c)
			}
		}
		r = kept
	}
	out := string(r)
	if strings.TrimSpace(out) == "" {
		return msg
	}
	return out
}

// MarkdownLead is what markdown may put before a line's text (headings,
// quotes, list markers), which Parse skips before a label.
const MarkdownLead = markdownLead

// LineLabel recognises a "message:" or "thought:" label at the start of a
// line, as Parse does, for checks of a reply that read it line by line.
func LineLabel(line string) (label, rest string, ok bool) { return lineLabel(line) }
