// Package sanitize makes text that came from outside the program safe to
// show: provider answers and error messages, and files in a benchmark
// folder anyone may have written. Terminal strips what a terminal would act
// on instead of showing; URL and URLsIn hide credentials embedded in URLs.
//
// It imports nothing of the project, so every package that prints or logs
// (config, llm, progress, report, cli) uses the same rules.
package sanitize

import (
	"io"
	"net/url"
	"regexp"
	"strings"
	"unicode/utf8"
)

// Terminal returns s without the characters a terminal interprets rather
// than displays: the C0 controls other than newline and tab (ESC starts
// every escape sequence: title changes, screen clears, OSC 52 clipboard
// writes; CR lets text overwrite what came before it on the line; BEL, NUL…),
// DEL, the C1 controls U+0080–U+009F (8-bit CSI and OSC on some
// terminals), and the bidirectional overrides and isolates (U+202A–U+202E,
// U+2066–U+2069), which reorder what is displayed. Invalid UTF-8 becomes
// U+FFFD: a lone byte 0x9b is CSI to a terminal in 8-bit mode.
//
// What is left of an escape sequence after its ESC is removed ("[2J",
// "]0;title") is shown as the plain text it is.
func Terminal(s string) string {
	i := firstUnsafe(s)
	if i < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	b.WriteString(s[:i])
	for _, r := range s[i:] { // ranging over a string yields U+FFFD for invalid bytes
		if !unsafeRune(r) {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// firstUnsafe returns the byte offset of the first rune Terminal removes or
// replaces, or -1.
func firstUnsafe(s string) int {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if unsafeRune(rune(c)) {
				return i
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && size == 1) || unsafeRune(r) {
			return i
		}
		i += size
	}
	return -1
}

func unsafeRune(r rune) bool {
	switch {
	case r == '\n' || r == '\t':
		return false
	case r < 0x20 || r == 0x7f:
		return true
	case r >= 0x80 && r <= 0x9f:
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true
	}
	return false
}

// Line is Terminal for text shown on one line: newlines and tabs become
// spaces too, and runs of white space collapse to one.
func Line(s string) string {
	return strings.Join(strings.Fields(Terminal(s)), " ")
}

// NewWriter returns a writer that passes what is written to w through
// Terminal, except SGR sequences (ESC [ digits and semicolons m: colours,
// bold, reset), which are kept. It is for output that mixes the program's
// own colours with text from outside: at worst outside text can change a
// colour, never move the cursor, clear the screen, set the title or write
// the clipboard. Each Write is filtered on its own; an escape sequence
// split across two writes loses its ESC.
func NewWriter(w io.Writer) io.Writer { return &sgrWriter{w: w} }

type sgrWriter struct{ w io.Writer }

func (s *sgrWriter) Write(p []byte) (int, error) {
	if _, err := io.WriteString(s.w, keepSGR(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}

// sgr matches one Select Graphic Rendition sequence.
var sgr = regexp.MustCompile(`\x1b\[[0-9;]{0,32}m`)

func keepSGR(s string) string {
	if firstUnsafe(s) < 0 {
		return s
	}
	var b strings.Builder
	last := 0
	for _, m := range sgr.FindAllStringIndex(s, -1) {
		b.WriteString(Terminal(s[last:m[0]]))
		b.WriteString(s[m[0]:m[1]])
		last = m[1]
	}
	b.WriteString(Terminal(s[last:]))
	return b.String()
}

// Redacted replaces a credential in a URL.
const Redacted = "REDACTED"

// URL returns raw with its credentials replaced by REDACTED: the whole
// userinfo (https://user:pass@host: a user name alone can be a key, as
// some gateways take it that way) and the value of every query parameter
// named like a credential (key, api_key, token, secret, auth, signature,
// password…). A URL without any comes back unchanged, byte for byte.
// Text that does not parse as a URL with a host loses its query and all
// before its last '@' (but the scheme), rather than risk echoing a
// credential.
func URL(raw string) string {
	if raw == "" || !strings.ContainsAny(raw, "@?") {
		return raw
	}
	u, err := url.Parse(raw)
	if err != nil || u.Opaque != "" || (u.Host == "" && strings.Contains(raw, "@")) {
		return crudeURL(raw)
	}
	changed := false
	if u.User != nil {
		u.User = url.User(Redacted)
		changed = true
	}
	if u.RawQuery != "" {
		q, err := url.ParseQuery(u.RawQuery)
		if err != nil {
			// A query that does not parse is dropped whole: it cannot be
			// told apart into safe and secret parameters.
			q = nil
			u.RawQuery = Redacted
			changed = true
		}
		secret := false
		for k := range q {
			if SecretName(k) {
				q[k] = []string{Redacted}
				secret = true
			}
		}
		if secret {
			u.RawQuery = q.Encode()
			changed = true
		}
	}
	if !changed {
		return raw
	}
	return u.String()
}

// crudeURL redacts text that does not parse as a URL with a host: all
// of its query, and everything before its last '@' but the scheme.
func crudeURL(s string) string {
	if i := strings.IndexAny(s, "?#"); i >= 0 {
		s = s[:i+1] + "***"
	}
	if i := strings.LastIndexByte(s, '@'); i >= 0 {
		scheme := ""
		if j := strings.Index(s, "://"); j >= 0 && j < i {
			scheme = s[:j+3]
		}
		s = scheme + "***" + s[i:]
	}
	return s
}

// urlInText finds URLs with a scheme inside free text (error messages:
// Go's HTTP client puts the request URL in every transport error). It
// stops at white space, quotes, angle brackets and '|' (our own field
// separators), which a URL holds only percent-encoded.
var urlInText = regexp.MustCompile("[a-zA-Z][a-zA-Z0-9+.-]{0,31}://[^\\s\"'<>`|]+")

// URLsIn returns s with every URL in it passed through URL.
func URLsIn(s string) string {
	if !strings.Contains(s, "://") {
		return s
	}
	return urlInText.ReplaceAllStringFunc(s, URL)
}

// SecretName reports whether a header or query parameter name is one that
// carries credentials (Authorization, X-Api-Key, api_key, key, token,
// access_token, secret, password, cookie, session, sig, signature…).
// Over-redacting costs a log line some detail; under-redacting leaks a key.
func SecretName(name string) bool {
	n := strings.ToLower(name)
	if n == "sig" {
		return true
	}
	for _, part := range []string{"auth", "key", "token", "secret", "cookie", "password", "passwd", "session", "signature", "credential"} {
		if strings.Contains(n, part) {
			return true
		}
	}
	return false
}

// NewTextWriter returns a writer that passes everything written to w
// through Terminal: for output that has no escape sequences of its own
// but carries names and text from files (the study's leaderboards and
// warnings). A character split across two writes is held until it is
// whole, so it is not taken for invalid UTF-8.
func NewTextWriter(w io.Writer) io.Writer { return &textWriter{w: w} }

type textWriter struct {
	w     io.Writer
	carry []byte // the start of a character cut by the end of a write
}

func (t *textWriter) Write(p []byte) (int, error) {
	b := append(t.carry, p...)
	cut := len(b)
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) {
				cut = i
			}
			break
		}
	}
	t.carry = append([]byte(nil), b[cut:]...)
	if _, err := io.WriteString(t.w, Terminal(string(b[:cut]))); err != nil {
		return 0, err
	}
	return len(p), nil
}
