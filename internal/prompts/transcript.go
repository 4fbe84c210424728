package prompts

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/impactbench/impactbench/internal/artifacts"
)

// Transcripts reach a model as data it cannot mistake for our own prompt:
// a JSON array with one message object per line. Model text is untrusted —
// a target's reply may contain "USER: …" lines, a fake verdict, a closing
// delimiter or orders for the judge — but inside a JSON string every quote,
// backslash and line break is escaped, so no content can end its message,
// start another or step outside the array. The templates tell the model
// that each "content" is data to assess, not instructions.

// RefusedNote is what a model reading a transcript (the judge, the audit,
// the simulated user, the target itself on its next turn) sees in place of
// a target reply its provider stopped for safety without giving any text
// (artifacts.Conversation.Refused). Brackets mark it as ours, not the
// assistant's words; the stored message stays empty.
const RefusedNote = "[no reply: the model's provider stopped this reply for safety and returned no text]"

// MarkRefused returns ts with each message listed in refused whose content
// is blank replaced by RefusedNote. ts is not modified; with nothing to
// mark it is returned as it is.
func MarkRefused(ts []artifacts.Turn, refused []int) []artifacts.Turn {
	var out []artifacts.Turn
	for _, i := range refused {
		if i < 0 || i >= len(ts) || strings.TrimSpace(ts[i].Content) != "" {
			continue
		}
		if out == nil {
			out = slices.Clone(ts)
		}
		out[i].Content = RefusedNote
	}
	if out == nil {
		return ts
	}
	return out
}

// EncodeTranscript renders a transcript for a prompt:
//
//	[
//	{"role":"user","content":"…"},
//	{"role":"assistant","content":"…"}
//	]
//
// Each message is one line: line breaks, control characters, Unicode line
// and paragraph separators and bidirectional-text controls inside content
// are written as JSON escapes, so a line is a message and nothing else.
// DecodeTranscript reverses it exactly (for valid UTF-8 content).
func EncodeTranscript(ts []artifacts.Turn) string {
	var b strings.Builder
	b.WriteString("[\n")
	for i, t := range ts {
		b.WriteString(EncodeMessage(t))
		if i < len(ts)-1 {
			b.WriteByte(',')
		}
		b.WriteByte('\n')
	}
	b.WriteString("]")
	return b.String()
}

// EncodeMessage renders one message as a one-line JSON object
// {"role":"…","content":"…"}, escaped as EncodeTranscript describes.
func EncodeMessage(t artifacts.Turn) string {
	var buf strings.Builder // its String does not copy, as bytes.Buffer's does
	enc := json.NewEncoder(&buf)
	// '<', '>' and '&' stay readable: this is a prompt, not HTML.
	enc.SetEscapeHTML(false)
	// A struct of two strings cannot fail to encode.
	_ = enc.Encode(struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	}{t.Role, t.Content})
	return escapeInvisible(strings.TrimSuffix(buf.String(), "\n"))
}

// escapeInvisible writes as \uXXXX the runes encoding/json leaves raw that
// could still break a line or disguise text: C1 controls (U+0085 is a line
// break to some readers), DEL, and bidirectional-text controls. They can
// only occur inside JSON strings here, where the escape means the same rune.
func escapeInvisible(s string) string {
	if !strings.ContainsFunc(s, mustEscape) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if mustEscape(r) {
			fmt.Fprintf(&b, `\u%04x`, r)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

func mustEscape(r rune) bool {
	switch {
	case r == 0x7f, r >= 0x80 && r <= 0x9f: // DEL, C1 controls
		return true
	case r == 0x061c, r == 0x200e, r == 0x200f, r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true // bidirectional-text controls
	case r == 0x2028, r == 0x2029: // encoding/json escapes these already; kept for clarity
		return true
	}
	return false
}

// DecodeTranscript parses EncodeTranscript's output strictly: the "[" and
// "]" lines, one message object per line in between with exactly the keys
// "role" and "content". It is the check that a rendered prompt kept every
// message in its own container.
func DecodeTranscript(s string) ([]artifacts.Turn, error) {
	lines := strings.Split(s, "\n")
	if len(lines) < 2 || lines[0] != "[" || lines[len(lines)-1] != "]" {
		return nil, errors.New(`transcript must start with a "[" line and end with a "]" line`)
	}
	body := lines[1 : len(lines)-1]
	out := make([]artifacts.Turn, 0, len(body))
	for i, l := range body {
		if i < len(body)-1 {
			var ok bool
			if l, ok = strings.CutSuffix(l, ","); !ok {
				return nil, fmt.Errorf("transcript line %d: no comma after the message", i+2)
			}
		}
		t, err := DecodeMessage(l)
		if err != nil {
			return nil, fmt.Errorf("transcript line %d: %w", i+2, err)
		}
		out = append(out, t)
	}
	return out, nil
}

// DecodeMessage parses one EncodeMessage line strictly.
func DecodeMessage(line string) (artifacts.Turn, error) {
	if !utf8.ValidString(line) || strings.ContainsAny(line, "\n\r") {
		return artifacts.Turn{}, errors.New("a message must be one line of valid UTF-8")
	}
	dec := json.NewDecoder(strings.NewReader(line))
	dec.DisallowUnknownFields()
	var m struct {
		Role    *string `json:"role"`
		Content *string `json:"content"`
	}
	if err := dec.Decode(&m); err != nil {
		return artifacts.Turn{}, fmt.Errorf("not a message object: %w", err)
	}
	if strings.TrimSpace(line[dec.InputOffset():]) != "" {
		return artifacts.Turn{}, errors.New("text after the message object")
	}
	if m.Role == nil || m.Content == nil {
		return artifacts.Turn{}, errors.New(`a message needs "role" and "content"`)
	}
	return artifacts.Turn{Role: *m.Role, Content: *m.Content}, nil
}
