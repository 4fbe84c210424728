package userreply

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// The simulated user's reply is model output, fuzzed. Seeds: userReplyCases
// and testdata/fuzz/<Fuzz…>/ (every regression the fuzzers found).

// FuzzParse: no reply panics; the message is text of the reply
// (one stretch of it, trimmed, give or take spaces at line ends: the
// parser never invents or reorders text),
// valid UTF-8 when the reply is; "terminate" only when the message says so.
func FuzzParse(f *testing.F) {
	for _, c := range userReplyCases {
		f.Add(c.raw)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		msg, term := Parse(raw)
		thought := Thought(raw)
		// The label line's own trailing spaces go with the label.
		if !strings.Contains(trimLineEnds(strings.ReplaceAll(raw, "\r\n", "\n")), trimLineEnds(msg)) {
			t.Fatalf("message %q is not text of the reply %q", msg, raw)
		}
		if msg != strings.TrimSpace(msg) {
			t.Fatalf("message %q is not trimmed", msg)
		}
		if utf8.ValidString(raw) && (!utf8.ValidString(msg) || !utf8.ValidString(thought)) {
			t.Fatalf("valid UTF-8 reply %q gave invalid message %q or thought %q", raw, msg, thought)
		}
		if term && !strings.Contains(strings.ToLower(msg), "terminate conversation") {
			t.Fatalf("terminate without the words: %q", msg)
		}
	})
}

// FuzzRoundTrip: a reply written as the prompt asks,
// "Thought: <t>\nMessage: <m>", reads back as exactly m, with t as the
// thought, for every m the format can carry (no carriage return, no
// "Thought:" line inside, not wrapped in quotes or emphasis as a whole,
// first line without surrounding spaces) and every one-line t.
func FuzzRoundTrip(f *testing.F) {
	f.Add("plan it", "hi there")
	f.Add("", "line1\nline2\n\nline3")
	f.Add("they asked", "Terminate conversation.")
	f.Add("x", `"a" or "b"?`)
	f.Add("**bold**", "*sigh* fine")
	f.Add("Message: not this", "Message: this")
	f.Fuzz(func(t *testing.T, thought, msg string) {
		if strings.ContainsAny(thought, "\r\n") || strings.Contains(msg, "\r") || msg != strings.TrimSpace(msg) || unwrap(msg) != msg {
			return
		}
		lines := strings.Split(msg, "\n")
		if lines[0] != strings.TrimSpace(lines[0]) {
			return
		}
		for _, l := range lines[1:] {
			if label, _, ok := lineLabel(l); ok && label == "thought" {
				return
			}
		}
		raw := "Thought: " + thought + "\nMessage: " + msg
		got, term := Parse(raw)
		if got != msg {
			t.Fatalf("reply %q: message %q, want %q", raw, got, msg)
		}
		if term != isTerminate(msg) {
			t.Fatalf("reply %q: terminate %v", raw, term)
		}
		if th := Thought(raw); th != strings.TrimSpace(thought) {
			t.Fatalf("reply %q: thought %q, want %q", raw, th, strings.TrimSpace(thought))
		}
	})
}

// trimLineEnds drops the white space at the end of every line.
func trimLineEnds(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRightFunc(l, unicode.IsSpace)
	}
	return strings.Join(lines, "\n")
}
