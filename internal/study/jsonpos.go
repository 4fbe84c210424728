package study

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"unicode/utf8"
)

// jsonLines maps each value's path in a JSON document (areas[0].name,
// [3].metrics[1]) to the 1-based line it starts on, so messages about a
// decoded value can point into the file.
type jsonLines map[string]int

// Bounds on a JSON study input, checked while it is indexed and before it
// is decoded, so that no input of a few MB costs more than a few tens of
// MB: the values, the nesting, a key's length and the bytes of every
// value's path (the index holds one path per value). The published July
// 2026 taxonomy.json (120 KB) has 2,515 values (the bound is 20 times
// that), 8 levels and keys of 10 bytes at most.
const (
	maxJSONValues    = 50_000
	maxJSONDepth     = 64
	maxJSONKeyBytes  = 256
	maxJSONPathBytes = 16 << 20
)

// lineCounter gives the line of byte offsets that mostly come in
// increasing order, counting each line break once (a file indexed value by
// value costs time linear in its size, not in size × values).
type lineCounter struct {
	data      []byte
	off, line int
}

func (c *lineCounter) at(off int) int {
	for off < len(c.data) && bytes.IndexByte([]byte(" \t\r\n:,"), c.data[off]) >= 0 {
		off++
	}
	off = min(off, len(c.data))
	if off < c.off {
		c.off, c.line = 0, 1
	}
	c.line += bytes.Count(c.data[c.off:off], []byte("\n"))
	c.off = off
	return c.line
}

// indexer walks a document once, recording where every value starts and
// refusing what the readers must not accept: duplicate keys (encoding/json
// keeps the last one silently) and the bounds above.
type indexer struct {
	dec     *json.Decoder
	lines   lineCounter
	out     jsonLines
	values  int
	pathSum int
}

// indexJSON walks data once and records where every value starts. It
// returns an error naming the line for malformed JSON, bytes that are not
// UTF-8, a duplicate key, or a bound passed.
func indexJSON(data []byte) (jsonLines, error) {
	if !utf8.Valid(data) {
		off := 0
		for off < len(data) {
			r, size := utf8.DecodeRune(data[off:])
			if r == utf8.RuneError && size == 1 {
				break
			}
			off += size
		}
		return nil, errAtLine(1+bytes.Count(data[:off], []byte("\n")), "bytes that are not UTF-8 (at byte %d); save the file as UTF-8", off)
	}
	ix := &indexer{dec: json.NewDecoder(bytes.NewReader(data)), lines: lineCounter{data: data, line: 1}, out: jsonLines{}}
	ix.dec.UseNumber()
	if err := ix.walk("", 0); err != nil {
		var le *lineError
		if errors.As(err, &le) {
			return nil, err
		}
		off := int(ix.dec.InputOffset())
		var se *json.SyntaxError
		if errors.As(err, &se) {
			off = int(se.Offset)
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, errAtLine(ix.lines.at(len(data)), "file ends early (truncated JSON)")
		}
		return nil, errAtLine(ix.lines.at(off), "malformed JSON: %v", err)
	}
	if _, err := ix.dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errAtLine(ix.lines.at(int(ix.dec.InputOffset())), "unexpected data after the JSON value")
	}
	return ix.out, nil
}

// lineError is a refusal of a JSON input at a line.
type lineError struct {
	line int
	msg  string
}

func (e *lineError) Error() string { return fmt.Sprintf("line %d: %s", e.line, e.msg) }

func errAtLine(line int, format string, args ...any) error {
	return &lineError{line: line, msg: fmt.Sprintf(format, args...)}
}

func (ix *indexer) fail(format string, args ...any) error {
	return errAtLine(ix.lines.at(int(ix.dec.InputOffset())), format, args...)
}

func (ix *indexer) walk(path string, depth int) error {
	if depth > maxJSONDepth {
		return ix.fail("nested more than %d levels deep", maxJSONDepth)
	}
	if ix.values++; ix.values > maxJSONValues {
		return ix.fail("more than %d values: over the limit for this file", maxJSONValues)
	}
	if ix.pathSum += len(path); ix.pathSum > maxJSONPathBytes {
		return ix.fail("the paths of its values add up to more than %d MiB (long keys over many values): over the limit for this file", maxJSONPathBytes>>20)
	}
	ix.out[path] = ix.lines.at(int(ix.dec.InputOffset()))
	tok, err := ix.dec.Token()
	if err != nil {
		return err
	}
	switch tok {
	case json.Delim('{'):
		err = ix.object(path, depth)
	case json.Delim('['):
		for i := 0; ix.dec.More(); i++ {
			if err := ix.walk(path+"["+strconv.Itoa(i)+"]", depth+1); err != nil {
				return err
			}
		}
		_, err = ix.dec.Token()
	}
	return err
}

func (ix *indexer) object(path string, depth int) error {
	seen := map[string]int{}
	for ix.dec.More() {
		line := ix.lines.at(int(ix.dec.InputOffset()))
		k, err := ix.dec.Token()
		if err != nil {
			return err
		}
		key, _ := k.(string)
		if len(key) > maxJSONKeyBytes {
			return ix.fail("a key of %d bytes, over the %d-byte limit for a key", len(key), maxJSONKeyBytes)
		}
		if first, dup := seen[key]; dup {
			where := path
			if where == "" {
				where = "the top-level object"
			}
			return ix.fail("duplicate key %q in %s (first at line %d): a JSON reader would keep only one of them", key, where, first)
		}
		seen[key] = line
		if err := ix.walk(joinPath(path, key), depth+1); err != nil {
			return err
		}
	}
	_, err := ix.dec.Token()
	return err
}

func joinPath(parent, key string) string {
	if parent == "" {
		return key
	}
	return parent + "." + key
}

func indexPath(parent string, i int) string { return parent + "[" + strconv.Itoa(i) + "]" }

// line is the line of path, or of its nearest recorded ancestor.
func (l jsonLines) line(path string) int {
	for p := path; ; {
		if n, ok := l[p]; ok {
			return n
		}
		i := max(bytes.LastIndexByte([]byte(p), '.'), bytes.LastIndexByte([]byte(p), '['))
		if i <= 0 {
			return l[""]
		}
		p = p[:i]
	}
}
