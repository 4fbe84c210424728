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
// quote marks and trailing punctuation of the quote itself are dropped; JSON
// escapes copied from the encoded transcript count as what they stand for.
// An ellipsis ("..." or "…") in a quote stands for omitted words: the parts
// around it must appear in that order in one message. Everything else must
// match character for character, and:
//   - a quote, and each part of it, starts and ends on word boundaries: "can"
//     is not found in "cannot", nor "I can" in "I can't";
//   - each part is at least MinQuoteWords words or MinQuoteChars characters
//     long (a quote of a whole assistant message may be shorter): "the",
//     "a ... e" or "I can ... tell you" are not evidence of anything. A quote
//     too short is unverified, as one found nowhere is.
//
// A quote found as written, its ellipsis included (the assistant wrote
// "..." too), needs no splitting.

// The minimum length of a quote's part: MinQuoteWords words or
// MinQuoteChars characters (after normalising, spaces included), whichever
// it reaches. In scripts written without spaces (Han, Hiragana, Katakana)
// each character counts as a word.
const (
	MinQuoteWords = 4
	MinQuoteChars = 20
)

// NoQuote reports whether a judge's quote says "nothing to quote" (empty,
// "none", "n/a", "null" or only punctuation): such an item is not evidence
// and not checked.
func NoQuote(q string) bool {
	_, frags := parseQuote(q)
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
	whole, parts := parseQuote(quote)
	if len(parts) == 0 {
		return 0, 0, 0, false
	}
	f.index()
	for k, n := range f.norm {
		if s, e, found := n.findQuote(whole, parts); found {
			return f.msgs[k], s, e, true
		}
	}
	return 0, 0, 0, false
}

// QuoteTooShort reports whether a part of q between its ellipses (or q,
// having none) is shorter than the minimum (MinQuoteWords, MinQuoteChars).
// Such a quote is found only as a whole assistant message, or as written
// with its ellipsis when the assistant wrote one: for a quote found nowhere
// it says why. NoQuote items are not too short: they quote nothing.
func QuoteTooShort(q string) bool {
	if NoQuote(q) {
		return false
	}
	_, parts := parseQuote(q)
	return !allLongEnough(parts)
}

// Locate turns a judge's quotes into Quote records, dropping NoQuote items;
// missing lists the quotes that are not evidence: found in no assistant
// message, or too short (QuoteTooShort).
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

// normalize lower-cases text, maps every quote mark to one and "…" to
// "...", drops emphasis marks and collapses whitespace runs to one space
// (none at either end).
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
		if r == '\u2026' { // an ellipsis reads as a quote writes it
			w = copy(buf[:], "...")
		}
		n.s = append(n.s, buf[:w]...)
		if offsets {
			for range w {
				n.start = append(n.start, int32(at))
			}
		}
	}
	return n
}

// findQuote finds a quote in the message: as written (whole, ellipses
// kept) when it is long enough or is the whole message, else part by part
// when every part is long enough.
func (n normText) findQuote(whole []byte, parts [][]byte) (start, end int, ok bool) {
	if longEnough(whole) || bytes.Equal(whole, bytes.Trim(n.s, fragmentTrim)) {
		if start, end, ok = n.find([][]byte{whole}); ok {
			return start, end, ok
		}
	}
	if len(parts) == 1 && bytes.Equal(parts[0], whole) || !allLongEnough(parts) {
		return 0, 0, false
	}
	return n.find(parts)
}

// find looks for the fragments in order, each on word boundaries; the span
// runs from the first fragment's start to the last one's end, in original
// bytes.
func (n normText) find(frags [][]byte) (start, end int, ok bool) {
	pos, first := 0, -1
	last := 0
	for _, fr := range frags {
		i := indexWords(n.s, fr, pos)
		if i < 0 {
			return 0, 0, false
		}
		if first < 0 {
			first = i
		}
		pos = i + len(fr)
		last = pos
	}
	return int(n.start[first]), n.endAt(last - 1), true
}

// indexWords is the first index at or after from where fr occurs in s
// beginning and ending on a word boundary, or -1.
func indexWords(s, fr []byte, from int) int {
	for from <= len(s) {
		i := bytes.Index(s[from:], fr)
		if i < 0 {
			return -1
		}
		i += from
		if wordBoundary(s, i) && wordBoundary(s, i+len(fr)) {
			return i
		}
		_, size := utf8.DecodeRune(s[i:])
		from = i + size
	}
	return -1
}

// wordBoundary reports whether s[:k] and s[k:] meet between words: not
// between two letters or digits, and not at an apostrophe inside a word
// (after normalising, the canonical quote mark between two letters, as in
// "can't"). Characters of scripts written without spaces are words of
// their own.
func wordBoundary(s []byte, k int) bool {
	if k <= 0 || k >= len(s) {
		return true
	}
	a, na := utf8.DecodeLastRune(s[:k])
	b, nb := utf8.DecodeRune(s[k:])
	switch {
	case isWordRune(a) && isWordRune(b):
		return false
	case a == canonicalQuote && isWordRune(b):
		before, _ := utf8.DecodeLastRune(s[:k-na])
		return !isWordRune(before)
	case isWordRune(a) && b == canonicalQuote:
		after, _ := utf8.DecodeRune(s[k+nb:])
		return !isWordRune(after)
	}
	return true
}

// isWordRune: a letter, digit or combining mark that joins its neighbours
// into one word.
func isWordRune(r rune) bool {
	return (unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r)) && !standalone(r)
}

// standalone: a character of a script written without spaces between
// words; each is treated as a word.
func standalone(r rune) bool {
	return unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana)
}

// longEnough: p (a normalised quote part) has MinQuoteWords words or
// MinQuoteChars characters.
func longEnough(p []byte) bool {
	if utf8.RuneCount(p) >= MinQuoteChars {
		return true
	}
	words, inWord := 0, false
	for i, r := range string(p) {
		switch {
		case standalone(r):
			words, inWord = words+1, false
		case isWordRune(r):
			if !inWord {
				words++
			}
			inWord = true
		case r == canonicalQuote && inWord && !wordBoundary(p, i):
			// an apostrophe inside a word: the word goes on
		default:
			inWord = false
		}
	}
	return words >= MinQuoteWords
}

func allLongEnough(parts [][]byte) bool {
	for _, p := range parts {
		if !longEnough(p) {
			return false
		}
	}
	return true
}

// fragmentTrim is what a quote's parts may start or end with without it
// counting: quote marks, brackets around an elision, sentence punctuation.
const fragmentTrim = " \"()[].,;:!?"

// parseQuote normalises a quote: whole is all of it (its ellipses written
// "..."), parts are its non-empty parts between ellipses, each trimmed of
// fragmentTrim.
func parseQuote(q string) (whole []byte, parts [][]byte) {
	q = strings.ReplaceAll(q, "\u2026", "...")
	for _, part := range strings.Split(q, "...") {
		s := bytes.Trim(normalize(part, false).s, fragmentTrim)
		if len(s) > 0 {
			parts = append(parts, s)
		}
	}
	return bytes.Trim(normalize(q, false).s, fragmentTrim), parts
}
