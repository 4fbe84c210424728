package artifacts

import (
	"bytes"
	"strings"
	"unicode"
	"unicode/utf8"
)

// A judge's quotes are checked against the assistant's messages loosely
// enough that copying through JSON and prose does not fail them, and no
// looser: case, runs of whitespace, the kind of quote mark (straight,
// curly, guillemets) and markdown emphasis (*, `) are ignored; surrounding
// quote marks and trailing punctuation of the quote itself are dropped; an
// ellipsis ("..." or "…") in a quote stands for omitted words, so the parts
// around it must appear in that order in the same message. Everything else
// must match character for character.

// NoQuote reports whether a judge's quote says "nothing to quote" (empty,
// "none", "n/a", "null" or only punctuation): such an item is not evidence
// and not checked.
func NoQuote(q string) bool {
	frags := quoteFragments(q)
	if len(frags) == 0 {
		return true
	}
	if len(frags) == 1 {
		switch string(frags[0]) {
		case "none", "n/a", "null", "nothing":
			return true
		}
	}
	return false
}

// QuoteFinder locates quotes in a transcript's assistant messages. The
// user's messages never count: a quote of the simulated user is not
// evidence of what the assistant did. It is not safe for concurrent use.
type QuoteFinder struct {
	transcript []Turn
	msgs       []int // transcript indices of the assistant messages
	norm       []normText
}

// NewQuoteFinder indexes the assistant messages of transcript when it is
// first asked for a quote: most verdicts of a large run quote nothing, and
// the index is several times the messages' size.
func NewQuoteFinder(transcript []Turn) *QuoteFinder {
	return &QuoteFinder{transcript: transcript}
}

func (f *QuoteFinder) index() {
	if f.transcript == nil {
		return
	}
	for i, t := range f.transcript {
		if t.Role != "assistant" {
			continue
		}
		f.msgs = append(f.msgs, i)
		f.norm = append(f.norm, normalize(t.Content, true))
	}
	f.transcript = nil
}

// Find returns the transcript index of the first assistant message holding
// quote and the byte span [start, end) of the quoted words in its content.
// ok is false when no assistant message holds it (or quote is NoQuote).
func (f *QuoteFinder) Find(quote string) (msg, start, end int, ok bool) {
	if msg, start, end, ok = f.find(quote); ok || !strings.Contains(quote, `\`) {
		return msg, start, end, ok
	}
	// The transcript reaches the judge JSON-encoded; a judge may copy its
	// escapes ("\n", "\"") instead of what they stand for.
	return f.find(jsonUnescaper.Replace(quote))
}

var jsonUnescaper = strings.NewReplacer(`\n`, "\n", `\r`, "\r", `\t`, "\t", `\"`, `"`, `\\`, `\`, `\/`, "/")

func (f *QuoteFinder) find(quote string) (msg, start, end int, ok bool) {
	frags := quoteFragments(quote)
	if len(frags) == 0 {
		return 0, 0, 0, false
	}
	f.index()
	for k, n := range f.norm {
		if s, e, found := n.find(frags); found {
			return f.msgs[k], s, e, true
		}
	}
	return 0, 0, 0, false
}

// Locate turns a judge's quotes into Quote records, dropping NoQuote items;
// missing lists the quotes found in no assistant message.
func (f *QuoteFinder) Locate(quotes []string) (out []Quote, missing []string) {
	for _, q := range quotes {
		if NoQuote(q) {
			continue
		}
		rec := Quote{Text: q}
		if m, _, _, ok := f.Find(q); ok {
			rec.Message = &m
		} else {
			missing = append(missing, q)
		}
		out = append(out, rec)
	}
	return out, missing
}

// normText is a normalised text with, for each of its bytes, where the
// original bytes it came from start (when made with offsets).
type normText struct {
	s     []byte
	start []int32 // a message is far below 2 GiB (MaxFieldBytes)
	text  string  // the original
}

// endAt is where the original bytes of normalised byte k end. k must come
// from a rune, not from a collapsed whitespace run: matches are trimmed of
// spaces at both ends (fragmentTrim).
func (n normText) endAt(k int) int {
	at := int(n.start[k])
	_, size := utf8.DecodeRuneInString(n.text[at:])
	return at + size
}

const canonicalQuote = '"'

func isQuoteMark(r rune) bool {
	switch r {
	case '"', '\'', '\u201c', '\u201d', '\u201e', '\u201f', '\u2018', '\u2019', '\u201a', '\u201b',
		'\u00ab', '\u00bb', '\u2039', '\u203a', '\u2032', '\u2033', '\uff02', '\uff07':
		return true
	}
	return false
}

func isEmphasis(r rune) bool { return r == '*' || r == '`' }

// normalize lower-cases text, maps every quote mark to one, drops emphasis
// marks and collapses whitespace runs to one space (none at either end).
// With offsets it records where each normalised byte came from.
func normalize(text string, offsets bool) normText {
	n := normText{s: make([]byte, 0, len(text)), text: text}
	if offsets {
		n.start = make([]int32, 0, len(text))
	}
	space := -1 // original offset of a pending whitespace run, -1 if none
	var buf [utf8.UTFMax]byte
	for i := 0; i < len(text); {
		r, size := utf8.DecodeRuneInString(text[i:])
		at := i
		i += size
		switch {
		case unicode.IsSpace(r):
			if space < 0 {
				space = at
			}
			continue
		case isEmphasis(r):
			continue
		case isQuoteMark(r):
			r = canonicalQuote
		default:
			r = unicode.ToLower(r)
		}
		if space >= 0 && len(n.s) > 0 {
			n.s = append(n.s, ' ')
			if offsets {
				n.start = append(n.start, int32(space))
			}
		}
		space = -1
		w := utf8.EncodeRune(buf[:], r)
		n.s = append(n.s, buf[:w]...)
		if offsets {
			for range w {
				n.start = append(n.start, int32(at))
			}
		}
	}
	return n
}

// find looks for the fragments in order; the span runs from the first
// fragment's start to the last one's end, in original bytes.
func (n normText) find(frags [][]byte) (start, end int, ok bool) {
	pos, first := 0, -1
	last := 0
	for _, fr := range frags {
		i := bytes.Index(n.s[pos:], fr)
		if i < 0 {
			return 0, 0, false
		}
		i += pos
		if first < 0 {
			first = i
		}
		pos = i + len(fr)
		last = pos
	}
	return int(n.start[first]), n.endAt(last - 1), true
}

// fragmentTrim is what a quote's parts may start or end with without it
// counting: quote marks, brackets around an elision, sentence punctuation.
const fragmentTrim = " \"()[].,;:!?"

// quoteFragments normalises a quote and splits it at its ellipses into the
// non-empty parts that must be found.
func quoteFragments(q string) [][]byte {
	q = strings.ReplaceAll(q, "\u2026", "...")
	var out [][]byte
	for _, part := range strings.Split(q, "...") {
		s := bytes.Trim(normalize(part, false).s, fragmentTrim)
		if len(s) > 0 {
			out = append(out, s)
		}
	}
	return out
}
