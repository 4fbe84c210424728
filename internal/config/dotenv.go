package config

// A bounded port of the .env parser of github.com/joho/godotenv v1.5.1
// (MIT licence, Copyright (c) 2013 John Barton), which impactbench used
// directly before. It parses exactly as godotenv's UnmarshalBytes does
// (TestDotEnvMatchesGodotenv compares the two), with three differences
// that bound what a .env costs to read:
//
//   - a value's $VAR references are expanded only when the result stays
//     under MaxStringBytes, and all of a file's expansions under
//     MaxConfigBytes: godotenv expands each reference to the value of an
//     earlier key, so a 446-byte .env of ten keys, each referring ten
//     times to the one before ("billion laughs"), took 4.5 GB and
//     exported a 1 GB variable;
//   - comment lines are skipped in a loop (godotenv recurses once per
//     line: 4 MB of "#" lines took 530 MB of stack);
//   - a parse error gives the offset of the statement it stops at, so the
//     line of a malformed statement is found in one pass (it was found by
//     reparsing every prefix of the file: a 4 MB .env with its last line
//     malformed took over two minutes).
//
// godotenv's error messages quote the rest of the file, which holds the
// keys; this port's errors give a line and at most a variable's name.

import (
	"bytes"
	"regexp"
	"strings"
	"unicode"
)

const (
	dotEnvComment      = '#'
	dotEnvSingleQuote  = '\''
	dotEnvDoubleQuote  = '"'
	dotEnvExportPrefix = "export"
)

// dotEnvError is a .env statement that cannot be read: the 1-based line
// of the statement, the variable when it has one, and what is wrong.
type dotEnvError struct {
	line int
	key  string
	msg  string
}

func (e *dotEnvError) Error() string { return e.msg }

const dotEnvMalformed = "malformed line: expected KEY=value (quote values that contain spaces, # or quotes; close every quote)"

// dotEnvParser holds the state of one parse: the values so far (a value
// refers to earlier keys) and the bytes expansions have added.
type dotEnvParser struct {
	src      []byte
	out      map[string]string
	expanded int
}

// parseDotEnv parses src as godotenv.UnmarshalBytes does, within the
// bounds above.
func parseDotEnv(src []byte) (map[string]string, error) {
	p := &dotEnvParser{src: bytes.ReplaceAll(src, []byte("\r\n"), []byte("\n")), out: map[string]string{}}
	return p.out, p.parse()
}

// lineOf is the 1-based line of the statement that starts with rest.
func (p *dotEnvParser) lineOf(rest []byte) int {
	return 1 + bytes.Count(p.src[:len(p.src)-len(rest)], []byte("\n"))
}

func (p *dotEnvParser) parse() error {
	cutset := p.src
	for {
		cutset = dotEnvStatementStart(cutset)
		if cutset == nil {
			return nil
		}
		key, left, ok := dotEnvKeyName(cutset)
		if !ok {
			return &dotEnvError{line: p.lineOf(cutset), msg: dotEnvMalformed}
		}
		value, left, err := p.value(left, key)
		if err != nil {
			err.line = p.lineOf(cutset)
			return err
		}
		p.out[key] = value
		cutset = left
	}
}

// dotEnvStatementStart skips white space and comment lines; nil at the
// end of the file. (godotenv's getStatementStart, as a loop.)
func dotEnvStatementStart(src []byte) []byte {
	for {
		pos := bytes.IndexFunc(src, func(r rune) bool { return !unicode.IsSpace(r) })
		if pos == -1 {
			return nil
		}
		src = src[pos:]
		if src[0] != dotEnvComment {
			return src
		}
		pos = bytes.IndexFunc(src, func(r rune) bool { return r == '\n' })
		if pos == -1 {
			return nil
		}
		src = src[pos:]
	}
}

// dotEnvKeyName is godotenv's locateKeyName; ok is false where it fails.
func dotEnvKeyName(src []byte) (key string, cutset []byte, ok bool) {
	src = bytes.TrimLeftFunc(src, dotEnvIsSpace)
	if bytes.HasPrefix(src, []byte(dotEnvExportPrefix)) {
		trimmed := bytes.TrimPrefix(src, []byte(dotEnvExportPrefix))
		if bytes.IndexFunc(trimmed, dotEnvIsSpace) == 0 {
			src = bytes.TrimLeftFunc(trimmed, dotEnvIsSpace)
		}
	}
	offset := 0
loop:
	for i, char := range src {
		rchar := rune(char)
		if dotEnvIsSpace(rchar) {
			continue
		}
		switch char {
		case '=', ':':
			key = string(src[0:i])
			offset = i + 1
			break loop
		case '_':
		default:
			if unicode.IsLetter(rchar) || unicode.IsNumber(rchar) || rchar == '.' {
				continue
			}
			return "", nil, false
		}
	}
	if len(src) == 0 {
		return "", nil, false
	}
	key = strings.TrimRightFunc(key, unicode.IsSpace)
	return key, bytes.TrimLeftFunc(src[offset:], dotEnvIsSpace), true
}

// value is godotenv's extractVarValue.
func (p *dotEnvParser) value(src []byte, key string) (string, []byte, *dotEnvError) {
	quote, quoted := dotEnvQuotePrefix(src)
	if !quoted {
		endOfLine := bytes.IndexFunc(src, func(r rune) bool { return r == '\n' || r == '\r' })
		if endOfLine == -1 {
			endOfLine = len(src)
			if endOfLine == 0 {
				return "", nil, nil
			}
		}
		line := []rune(string(src[0:endOfLine]))
		endOfVar := len(line)
		if endOfVar == 0 {
			return "", src[endOfLine:], nil
		}
		for i := endOfVar - 1; i >= 0; i-- {
			if line[i] == dotEnvComment && i > 0 && dotEnvIsSpace(line[i-1]) {
				endOfVar = i
				break
			}
		}
		trimmed := strings.TrimFunc(string(line[0:endOfVar]), dotEnvIsSpace)
		v, err := p.expand(trimmed, key)
		return v, src[endOfLine:], err
	}
	for i := 1; i < len(src); i++ {
		if src[i] != quote || src[i-1] == '\\' {
			continue
		}
		isQuote := func(r rune) bool { return r == rune(quote) }
		value := string(bytes.TrimLeftFunc(bytes.TrimRightFunc(src[0:i], isQuote), isQuote))
		if quote == dotEnvDoubleQuote {
			var err *dotEnvError
			if value, err = p.expand(dotEnvExpandEscapes(value), key); err != nil {
				return "", nil, err
			}
		}
		return value, src[i+1:], nil
	}
	return "", nil, &dotEnvError{msg: dotEnvMalformed}
}

func dotEnvQuotePrefix(src []byte) (byte, bool) {
	if len(src) == 0 {
		return 0, false
	}
	switch src[0] {
	case dotEnvDoubleQuote, dotEnvSingleQuote:
		return src[0], true
	}
	return 0, false
}

// dotEnvIsSpace is godotenv's isSpace: white space but not a line break.
func dotEnvIsSpace(r rune) bool {
	switch r {
	case '\t', '\v', '\f', '\r', ' ', 0x85, 0xA0:
		return true
	}
	return false
}

var (
	dotEnvEscape   = regexp.MustCompile(`\\.`)
	dotEnvVarRef   = regexp.MustCompile(`(\\)?(\$)(\()?\{?([A-Z0-9_]+)?\}?`)
	dotEnvUnescape = regexp.MustCompile(`\\([^$])`)
)

func dotEnvExpandEscapes(s string) string {
	out := dotEnvEscape.ReplaceAllStringFunc(s, func(match string) string {
		switch strings.TrimPrefix(match, `\`) {
		case "n":
			return "\n"
		case "r":
			return "\r"
		}
		return match
	})
	return dotEnvUnescape.ReplaceAllString(out, "$1")
}

// expand is godotenv's expandVariables, which replaces $NAME and ${NAME}
// with the value of an earlier key of the file (\$ loses its backslash),
// after checking that the result is within the bounds.
func (p *dotEnvParser) expand(v, key string) (string, *dotEnvError) {
	matches := dotEnvVarRef.FindAllStringSubmatchIndex(v, -1)
	if len(matches) == 0 {
		return v, nil
	}
	// replacement is what one match becomes (godotenv's closure).
	replacement := func(m []int) string {
		s := v[m[0]:m[1]]
		switch {
		case m[2] >= 0: // \$…; godotenv also tests its second group for "(",
			// which is always "$", so $( is expanded like $
			return s[1:]
		case m[8] >= 0 && m[9] > m[8]:
			return p.out[v[m[8]:m[9]]]
		}
		return s
	}
	size, added := len(v), 0
	for _, m := range matches {
		r := replacement(m)
		size += len(r) - (m[1] - m[0])
		added += len(r)
	}
	if size > MaxStringBytes {
		return "", &dotEnvError{key: key, msg: "value is over the " + mib(MaxStringBytes) + " limit for one value once its $VAR references are expanded"}
	}
	if p.expanded+added > MaxConfigBytes {
		return "", &dotEnvError{key: key, msg: "the values' $VAR references expand to more than " + mib(MaxConfigBytes) + " in all"}
	}
	p.expanded += added
	var b strings.Builder
	b.Grow(size)
	last := 0
	for _, m := range matches {
		b.WriteString(v[last:m[0]])
		b.WriteString(replacement(m))
		last = m[1]
	}
	b.WriteString(v[last:])
	return b.String(), nil
}
