package config

// This file reads .env, the file of KEY=value lines that holds the
// project's API keys. It accepts what github.com/joho/godotenv v1.5.1
// accepts and gives the same values (comments, `export`, `KEY: value`,
// single- and double-quoted values over several lines, escapes in double
// quotes, $VAR and ${VAR} references to keys defined earlier in the file),
// quirks included, because people's .env files were written for godotenv.
// TestDotEnvMatchesGodotenv and FuzzDotEnv check that, with godotenv itself
// as the oracle.
//
// It exists because godotenv puts no bound on what a file may cost: a
// 446-byte .env of ten keys, each referring ten times to the one before,
// took 4.5 GB, and every comment line costs it a level of recursion (4 MB
// of "#" lines took 530 MB of stack). Here the file is read in one forward
// pass over its bytes, without recursion; the size of every expanded value
// is known before it is built, and one value may not expand beyond
// MaxStringBytes nor all of them beyond MaxConfigBytes.

import (
	"bytes"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// dotEnvMalformed is the message for a statement that is not KEY=value.
// Like every message here it quotes nothing of the file: it holds keys.
const dotEnvMalformed = "malformed line: expected KEY=value (quote values that contain spaces, # or quotes; close every quote)"

// dotEnvError is a problem in .env: the 1-based line where the statement
// starts, the variable's name when it is known, and what is wrong.
type dotEnvError struct {
	line int
	key  string
	msg  string
}

func (e *dotEnvError) Error() string { return e.msg }

// parseDotEnv reads the variables a .env file sets. A variable set twice
// keeps its last value.
func parseDotEnv(src []byte) (map[string]string, error) {
	// godotenv reads CR LF as LF before anything else; a CR alone stays
	// and ends an unquoted value.
	if bytes.Contains(src, []byte("\r\n")) {
		src = bytes.ReplaceAll(src, []byte("\r\n"), []byte("\n"))
	}
	s := &envScanner{src: src, line: 1, vars: map[string]string{}}
	for {
		s.skipBlanksAndComments()
		if s.pos == len(s.src) {
			return s.vars, nil
		}
		if err := s.statement(); err != nil {
			return nil, err
		}
	}
}

// envScanner walks .env once from start to end. line is the line pos is
// on, stmtLine the one the statement being read starts on; expanded
// counts the bytes of the values that had references.
type envScanner struct {
	src      []byte
	pos      int
	line     int
	stmtLine int
	vars     map[string]string
	expanded int
}

// fail is the error for the statement being read.
func (s *envScanner) fail(key, msg string) error {
	return &dotEnvError{line: s.stmtLine, key: key, msg: msg}
}

// moveTo advances pos to i, keeping line in step.
func (s *envScanner) moveTo(i int) {
	s.line += bytes.Count(s.src[s.pos:i], []byte{'\n'})
	s.pos = i
}

// skipBlanksAndComments moves past white space (any Unicode space, line
// ends included) and comment lines, which run from # to the next LF.
func (s *envScanner) skipBlanksAndComments() {
	for s.pos < len(s.src) {
		r, n := utf8.DecodeRune(s.src[s.pos:])
		switch {
		case unicode.IsSpace(r):
			s.moveTo(s.pos + n)
		case r == '#':
			end := bytes.IndexByte(s.src[s.pos:], '\n')
			if end < 0 {
				s.moveTo(len(s.src))
			} else {
				s.moveTo(s.pos + end + 1)
			}
		default:
			return
		}
	}
}

// statement reads one KEY=value (or KEY: value) starting at pos, which is
// neither blank nor a comment, and records it.
func (s *envScanner) statement() error {
	s.stmtLine = s.line
	start := s.pos
	if rest := s.src[start:]; bytes.HasPrefix(rest, []byte("export")) {
		if r, _ := utf8.DecodeRune(rest[len("export"):]); isLatin1Space(r) && r != '\n' {
			start = skipInLine(s.src, start+len("export"))
			if start == len(s.src) {
				return s.fail("", dotEnvMalformed)
			}
		}
	}

	// The name runs to the first = or :. Only letters, digits, _, . and
	// white space other than LF may come before it, each byte judged on
	// its own as a Latin-1 character.
	sep := -1
	for i := start; i < len(s.src); i++ {
		c := s.src[i]
		if c == '=' || c == ':' {
			sep = i
			break
		}
		if !isNameByte(c) {
			return s.fail("", dotEnvMalformed)
		}
	}
	if sep < 0 {
		// The file ends before this statement's = or :. godotenv reads
		// the statement as the value of the empty name.
		s.moveTo(start)
		v, err := s.unquotedValue("")
		if err != nil {
			return err
		}
		s.vars[""] = v
		return nil
	}
	key := trimLatin1Space(string(s.src[start:sep]))
	s.moveTo(sep + 1)
	s.moveTo(skipInLine(s.src, s.pos))

	var v string
	var err error
	if s.pos < len(s.src) && (s.src[s.pos] == '"' || s.src[s.pos] == '\'') {
		v, err = s.quotedValue(key)
	} else {
		v, err = s.unquotedValue(key)
	}
	if err != nil {
		return err
	}
	s.vars[key] = v
	return nil
}

// quotedValue reads a value in quotes starting at pos. It ends at the
// first quote of its kind whose byte before is not a backslash; trailing
// quote characters are dropped from what is inside (so "a\"" is `a\`).
// Single quotes give the bytes as they are; double quotes read the
// escapes \n and \r, drop the backslash of any other escape, and expand
// references. Whatever follows the closing quote is read as a new
// statement.
func (s *envScanner) quotedValue(key string) (string, error) {
	q := s.src[s.pos]
	open := s.pos
	end := -1
	for i := open + 1; i < len(s.src); i++ {
		if s.src[i] == q && s.src[i-1] != '\\' {
			end = i
			break
		}
	}
	if end < 0 {
		return "", s.fail(key, dotEnvMalformed)
	}
	inside := bytes.TrimRight(s.src[open+1:end], string(q))
	s.moveTo(end + 1)
	if q == '\'' {
		return string(inside), nil
	}
	return s.expand(key, unescapeDoubleQuoted(inside))
}

// unquotedValue reads a value without quotes starting at pos. It ends at
// the line's end (LF or a lone CR); from its last # that follows white
// space on, it is a comment. White space around it is dropped, each byte
// that is not UTF-8 becomes U+FFFD, and references are expanded.
func (s *envScanner) unquotedValue(key string) (string, error) {
	rest := s.src[s.pos:]
	n := bytes.IndexAny(rest, "\n\r")
	if n < 0 {
		n = len(rest)
	}
	raw := rest[:n]
	s.moveTo(s.pos + n)

	cut := len(raw)
	prevSpace := false
	for i := 0; i < len(raw); {
		r, size := utf8.DecodeRune(raw[i:])
		if r == '#' && prevSpace {
			cut = i
		}
		prevSpace = isLatin1Space(r)
		i += size
	}
	v := trimLatin1Space(validUTF8PerByte(raw[:cut]))
	return s.expand(key, v)
}

// unescapeDoubleQuoted reads the backslash escapes of a double-quoted
// value: \n and \r are LF and CR, \$ stays as it is (for expand to read),
// and any other escaped byte stands for itself. A backslash at the very
// end stays.
func unescapeDoubleQuoted(in []byte) string {
	if bytes.IndexByte(in, '\\') < 0 {
		return string(in)
	}
	var b strings.Builder
	b.Grow(len(in))
	for i := 0; i < len(in); i++ {
		c := in[i]
		if c != '\\' || i+1 == len(in) {
			b.WriteByte(c)
			continue
		}
		i++
		switch next := in[i]; next {
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case '$':
			b.WriteString(`\$`)
		default:
			b.WriteByte(next)
		}
	}
	return b.String()
}

// dotEnvRef is a reference in a value: $ followed by an optional (, an
// optional {, a name of A-Z, 0-9 and _, and an optional }. $A, ${A}, $(A
// and $A} alike stand for A's value so far in the file ("" for a name not
// yet set; the process's environment is not consulted). With no name the
// text stays as it is. A backslash right before the $ keeps the reference
// as text and is itself dropped.
type dotEnvRef struct {
	start, end int    // the text the reference spans, its backslash included
	name       string // "" when there is none
	escaped    bool
}

// nextRef finds the first reference in v at or after i; ok is false when
// there is none.
func nextRef(v string, i int) (ref dotEnvRef, ok bool) {
	for ; i < len(v); i++ {
		switch {
		case v[i] == '$':
			ref = dotEnvRef{start: i}
		case v[i] == '\\' && i+1 < len(v) && v[i+1] == '$':
			ref = dotEnvRef{start: i, escaped: true}
			i++
		default:
			continue
		}
		j := i + 1
		if j < len(v) && v[j] == '(' {
			j++
		}
		if j < len(v) && v[j] == '{' {
			j++
		}
		nameStart := j
		for j < len(v) && isRefNameByte(v[j]) {
			j++
		}
		ref.name = v[nameStart:j]
		if j < len(v) && v[j] == '}' {
			j++
		}
		ref.end = j
		return ref, true
	}
	return dotEnvRef{}, false
}

// replacement is what a reference stands for in the value.
func (s *envScanner) replacement(v string, ref dotEnvRef) string {
	switch {
	case ref.escaped:
		return v[ref.start+1 : ref.end]
	case ref.name == "":
		return v[ref.start:ref.end]
	default:
		return s.vars[ref.name]
	}
}

// expand replaces the references in v. It measures the result first and
// refuses one over MaxStringBytes, or one that takes the values expanded
// so far over MaxConfigBytes, before building anything.
func (s *envScanner) expand(key, v string) (string, error) {
	if strings.IndexByte(v, '$') < 0 {
		return v, nil
	}
	size, refs, escapes := 0, 0, 0
	last := 0
	for ref, ok := nextRef(v, 0); ok; ref, ok = nextRef(v, ref.end) {
		switch {
		case ref.escaped:
			escapes++
		case ref.name != "":
			refs++
		}
		size += ref.start - last + len(s.replacement(v, ref))
		last = ref.end
		if size > MaxStringBytes {
			break
		}
	}
	size += len(v) - last
	if refs == 0 && escapes == 0 {
		return v, nil // a $ with no name after it stays as it is
	}
	if size > MaxStringBytes {
		return "", s.fail(key, fmt.Sprintf("value is over the %s limit for one value once its $VAR references are expanded", mib(MaxStringBytes)))
	}
	if refs > 0 {
		if s.expanded+size > MaxConfigBytes {
			return "", s.fail(key, fmt.Sprintf("the values' $VAR references expand to more than %s in all", mib(MaxConfigBytes)))
		}
		s.expanded += size
	}

	var b strings.Builder
	b.Grow(size)
	last = 0
	for ref, ok := nextRef(v, 0); ok; ref, ok = nextRef(v, ref.end) {
		b.WriteString(v[last:ref.start])
		b.WriteString(s.replacement(v, ref))
		last = ref.end
	}
	b.WriteString(v[last:])
	return b.String(), nil
}

// isLatin1Space reports the white space godotenv trims from names and
// unquoted values: the Latin-1 spaces, not the rest of Unicode's.
func isLatin1Space(r rune) bool {
	switch r {
	case '\t', '\n', '\v', '\f', '\r', ' ', 0x85, 0xA0:
		return true
	}
	return false
}

// trimLatin1Space drops Latin-1 white space from both ends of s.
func trimLatin1Space(s string) string {
	return strings.TrimFunc(s, isLatin1Space)
}

// skipInLine returns the index of the first rune at or after i that is
// not Latin-1 white space, LF counting as not white here.
func skipInLine(src []byte, i int) int {
	for i < len(src) {
		r, n := utf8.DecodeRune(src[i:])
		if !isLatin1Space(r) || r == '\n' {
			break
		}
		i += n
	}
	return i
}

// isNameByte reports whether byte c, read as a Latin-1 character, may be
// part of a variable's name before its = or :.
func isNameByte(c byte) bool {
	r := rune(c)
	return unicode.IsLetter(r) || unicode.IsNumber(r) || c == '_' || c == '.' ||
		(isLatin1Space(r) && c != '\n')
}

// isRefNameByte reports whether c may be part of a referenced name.
func isRefNameByte(c byte) bool {
	return 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_'
}

// validUTF8PerByte returns raw as a string with each byte that is not
// part of a UTF-8 character replaced by U+FFFD, one per byte.
func validUTF8PerByte(raw []byte) string {
	if utf8.Valid(raw) {
		return string(raw)
	}
	var b strings.Builder
	b.Grow(len(raw) + 8)
	for i := 0; i < len(raw); {
		r, n := utf8.DecodeRune(raw[i:])
		if r == utf8.RuneError && n == 1 {
			b.WriteRune(utf8.RuneError)
		} else {
			b.Write(raw[i : i+n])
		}
		i += n
	}
	return b.String()
}
