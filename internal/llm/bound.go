package llm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"unicode/utf8"
)

// Bounds on what is accepted from a provider. max_tokens is a request, not
// a guarantee: a broken or hostile server can answer megabytes, and one
// stored reply over the readers' limit for one value
// (artifacts.MaxFieldBytes, 1 MiB) would make every later command refuse
// the benchmark's files, while every later turn re-sent it as input.
const (
	// MaxReplyBytes bounds the text of one reply as it is stored: its size
	// JSON-encoded the way the result files encode it (ReplyCost), escapes
	// included. 256 KiB is about 64,000 tokens of English; a conversation of
	// config.MaxTurns (100) turns, each a user message plus its hidden
	// thought (parts of one reply) and a target reply, then stays under the
	// readers' 64 MiB limit for one row, and every value under their 1 MiB
	// limit for one value, whatever characters the reply holds.
	MaxReplyBytes = 256 << 10

	// MaxWireString bounds one JSON string in a provider's response body as
	// it arrives: longer strings are cut there, before the SDK decodes the
	// body, so a 40 MiB reply costs 40 MiB of reading, not 40 MiB held
	// several times over. Four times MaxReplyBytes: escaping on the wire is
	// never more expensive than in our files, so no reply that fits
	// MaxReplyBytes is cut here.
	MaxWireString = 4 * MaxReplyBytes

	// MaxBodyBytes bounds a response body after its strings are cut; a body
	// still larger (thousands of text blocks) is not an answer but a fault.
	MaxBodyBytes = 4 << 20

	// MaxWireBytes bounds the bytes read for one response (after transport
	// decompression), cut strings included.
	MaxWireBytes = 64 << 20
)

// ErrResponseTooLarge is the read error of a response body past
// MaxBodyBytes or MaxWireBytes. Adapters report it as a failed attempt
// (KindServer), retried like other bad answers.
var ErrResponseTooLarge = errors.New("the provider's answer is too large")

// ErrNotJSONObject is the read error of a successful (2xx) response whose
// body is not a JSON object ("null", "[]", a bare string, an HTML page):
// every provider answers a chat call with an object, and some SDKs crash
// on anything else.
var ErrNotJSONObject = errors.New("the provider's answer is not a JSON object")

// BodyWatch collects what the bounded transport did to the responses of
// one call: the names of the JSON keys whose string values it cut.
type BodyWatch struct {
	mu  sync.Mutex
	cut map[string]bool
}

type watchKey struct{}

// WatchBody returns a context whose requests report cuts to the returned
// watch. Adapters call it once per call and ask Cut afterwards.
func WatchBody(ctx context.Context) (context.Context, *BodyWatch) {
	w := &BodyWatch{}
	return context.WithValue(ctx, watchKey{}, w), w
}

// Cut reports whether a string value of any of the named keys was cut
// (any key at all when none is named).
func (w *BodyWatch) Cut(keys ...string) bool {
	if w == nil {
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(keys) == 0 {
		return len(w.cut) > 0
	}
	for _, k := range keys {
		if w.cut[k] {
			return true
		}
	}
	return false
}

func (w *BodyWatch) add(key string) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.cut == nil {
		w.cut = map[string]bool{}
	}
	if len(w.cut) < 64 {
		w.cut[key] = true
	}
}

// boundedBody filters a JSON body as it is read, in constant memory. It
// tracks only what it must: whether it is inside a string, escapes, the
// last string followed by ':' (the key of the value that follows), and the
// length of the current string. Bytes that are not JSON pass through
// unchanged apart from over-long "strings"; a non-JSON error page is
// returned as is, for the SDK to report.
type boundedBody struct {
	src        io.ReadCloser
	watch      *BodyWatch
	wantObject bool
	// The bounds: MaxWireString, MaxBodyBytes, MaxWireBytes (tests use less).
	maxString        int
	maxBody, maxWire int64

	read int64 // bytes read from src
	out  int64 // bytes passed on

	started bool // the first non-space byte was seen
	state   int
	esc     int    // in a string: escStart after '\\', else hex digits of \uXXXX still to come
	strLen  int    // bytes of the current string so far
	cur     []byte // the current string's first bytes (a possible key)
	last    []byte // the last complete string (a key if ':' follows)
	key     string // the key of the value being read
	err     error
}

const (
	stOutside = iota
	stString
	stSkip // inside a cut string: dropped up to its closing quote
)

// maxKeyLen bounds how much of a string is remembered as a possible key.
const maxKeyLen = 64

func newBoundedBody(src io.ReadCloser, w *BodyWatch, wantObject bool, maxString int) *boundedBody {
	return &boundedBody{src: src, watch: w, wantObject: wantObject, maxString: maxString, maxBody: MaxBodyBytes, maxWire: MaxWireBytes}
}

func (b *boundedBody) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	for {
		n, err := b.src.Read(p)
		b.read += int64(n)
		o := b.filter(p[:n], p) // in place: the output never overtakes the input
		b.out += int64(o)
		switch {
		case b.err != nil:
			return 0, b.err
		case b.read > b.maxWire:
			b.err = fmt.Errorf("%w: over %d MiB", ErrResponseTooLarge, b.maxWire>>20)
			return 0, b.err
		case b.out > b.maxBody:
			b.err = fmt.Errorf("%w: over %d MiB after cutting strings longer than %d KiB", ErrResponseTooLarge, b.maxBody>>20, b.maxString>>10)
			return 0, b.err
		}
		if err == io.EOF && b.wantObject && !b.started {
			b.err = fmt.Errorf("%w: the body is empty", ErrNotJSONObject)
			return o, b.err
		}
		if o > 0 || err != nil {
			return o, err
		}
	}
}

func (b *boundedBody) Close() error { return b.src.Close() }

// filter copies in to out (len(out) >= len(in); they may be the same
// slice, as byte i is written at or before position i), cutting long
// strings, and returns the bytes written.
func (b *boundedBody) filter(in, out []byte) int {
	o := 0
	for i := 0; i < len(in); {
		// Inside a string, runs of plain bytes (no quote, no backslash)
		// are copied or dropped whole: a reply is almost all string.
		if b.state == stString && b.esc == 0 {
			run := plainRun(in[i:])
			run = run[:max(min(len(run), b.maxString-b.strLen), 0)]
			if len(run) > 0 {
				o += copy(out[o:], run)
				b.strLen += len(run)
				if n := maxKeyLen - len(b.cur); n > 0 {
					b.cur = append(b.cur, run[:min(n, len(run))]...)
				}
				i += len(run)
				continue
			}
		}
		if b.state == stSkip && b.esc == 0 {
			if n := len(plainRun(in[i:])); n > 0 {
				i += n
				continue
			}
		}
		c := in[i]
		i++
		switch b.state {
		case stOutside:
			if !b.started && !isSpace(c) {
				b.started = true
				if b.wantObject && c != '{' {
					b.err = fmt.Errorf("%w (it starts with %q)", ErrNotJSONObject, c)
					return o
				}
			}
			switch c {
			case '"':
				b.state, b.strLen, b.esc, b.cur = stString, 0, 0, b.cur[:0]
			case ':':
				b.key = string(b.last)
			}
			out[o] = c
			o++
		case stString:
			o = b.stringByte(c, out, o)
		case stSkip:
			switch {
			case b.esc != 0:
				b.esc = 0
			case c == '\\':
				b.esc = 1
			case c == '"':
				b.state = stOutside
			}
		}
	}
	return o
}

// stringByte passes on byte c of a string, at out[o:], and returns the new
// end of out: the closing quote ends the string; at the length bound,
// between two characters, it closes the string and skips the rest of it.
// It follows escapes so that an escaped quote does not end the string.
func (b *boundedBody) stringByte(c byte, out []byte, o int) int {
	if b.esc == 0 && c == '"' {
		b.state = stOutside
		b.last = append(b.last[:0], b.cur...)
		out[o] = c
		return o + 1
	}
	if b.strLen >= b.maxString && b.esc == 0 && !utf8Continuation(c) {
		// Cut here, between two characters: close the string and
		// drop the rest of it.
		b.watch.add(b.key)
		out[o] = '"'
		b.state, b.esc = stSkip, 0
		if c == '\\' {
			b.esc = 1
		}
		b.last = b.last[:0]
		return o + 1
	}
	out[o] = c
	o++
	b.strLen++
	if len(b.cur) < maxKeyLen {
		b.cur = append(b.cur, c)
	}
	switch {
	case b.esc == escStart:
		b.esc = 0
		if c == 'u' {
			b.esc = 4 // the four hex digits of \uXXXX follow
		}
	case b.esc > 0:
		b.esc--
	case c == '\\':
		b.esc = escStart
	}
	return o
}

// plainRun returns the start of p up to its first quote or backslash.
func plainRun(p []byte) []byte {
	if j := bytes.IndexAny(p, `"\`); j >= 0 {
		return p[:j]
	}
	return p
}

// escStart is boundedBody.esc right after a backslash inside a string.
const escStart = -1

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func utf8Continuation(c byte) bool { return c&0xC0 == 0x80 }

// ReplyCost is the number of bytes s takes JSON-encoded in the result
// files, at most: each character counted at the longer of Python's
// ensure_ascii escaping (conversations.json, scores.json: non-ASCII as
// \uXXXX, surrogate pairs above U+FFFF) and Go's encoding/json escaping
// (the call store, the report: <, >, & and U+2028/9 as \uXXXX), excluding
// the quotes.
func ReplyCost(s string) int {
	n := 0
	for i := 0; i < len(s); {
		c, size := runeCost(s, i)
		n += c
		i += size
	}
	return n
}

func runeCost(s string, i int) (cost, size int) {
	c := s[i]
	if c < utf8.RuneSelf {
		switch {
		case c == '"' || c == '\\' || c == '\n' || c == '\r' || c == '\t' || c == '\b' || c == '\f':
			return 2, 1
		case c < 0x20 || c == 0x7f || c == '<' || c == '>' || c == '&':
			return 6, 1
		}
		return 1, 1
	}
	r, size := utf8.DecodeRuneInString(s[i:])
	if r > 0xFFFF {
		return 12, size
	}
	return 6, size // includes U+FFFD for an invalid byte
}

// BoundReply returns text cut at a character boundary so that
// ReplyCost(text) <= MaxReplyBytes, and whether it was cut.
func BoundReply(text string) (string, bool) {
	if len(text)*6 <= MaxReplyBytes {
		return text, false // no character costs more than 6 bytes per byte
	}
	n := 0
	for i := 0; i < len(text); {
		c, size := runeCost(text, i)
		if n+c > MaxReplyBytes {
			return text[:i], true
		}
		n += c
		i += size
	}
	return text, false
}

// BoundResponse applies BoundReply to r's text, marking it Truncated when
// cut. The call store applies it to answers it replays, so one stored by
// an earlier version that accepted anything is bounded too.
func BoundResponse(r Response) Response {
	if t, cut := BoundReply(r.Text); cut {
		r.Text, r.Truncated = t, true
	}
	return r
}
