package artifacts

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"os"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/impactbench/impactbench/internal/fault"
	"github.com/impactbench/impactbench/internal/fsx"
)

// Input limits. Files people edit and files models fill are read with these
// bounds so that a damaged or hostile file fails fast with a message instead
// of being read for minutes (a 300 MB field fails after at most
// 2 × MaxRowBytes read).
const (
	// MaxFieldBytes bounds any single string value (a transcript message, a
	// persona, a justification): 1 MiB, about four times the longest reply
	// the largest max_tokens allows.
	MaxFieldBytes = 1 << 20
	// MaxRowBytes bounds one row of a JSON array file (one conversation with
	// all its turns): 64 MiB.
	MaxRowBytes = 64 << 20
	// MaxObjectFileBytes bounds files read whole (cost.json, run_manifest.json).
	MaxObjectFileBytes = 16 << 20
)

// FileError is a damaged or invalid input file: which file, which row (or
// line) and which field. The CLI maps it to exit code 2.
type FileError struct {
	Path  string
	Row   int    // 0-based row of the top-level array; -1 when not within a row
	Line  int    // 1-based line of the problem (or of the row's start); 0 unknown
	Field string // JSON path within the row, e.g. transcript[3].content; "" for the whole row
	Err   error  // what is wrong
	Hint  string // how to fix it, appended
}

func (e *FileError) Error() string {
	var b strings.Builder
	b.WriteString(e.Path)
	if e.Row >= 0 {
		fmt.Fprintf(&b, " row %d", e.Row)
	}
	if e.Line > 0 {
		fmt.Fprintf(&b, " (line %d)", e.Line)
	}
	b.WriteString(": ")
	msg := e.Err.Error()
	if fe, ok := e.Err.(*fieldError); ok {
		msg = fe.msg
	}
	if e.Field != "" {
		fmt.Fprintf(&b, "field %q: ", e.Field)
	}
	b.WriteString(msg)
	b.WriteString(e.Hint)
	return b.String()
}

func (e *FileError) Unwrap() error { return e.Err }

// fieldError is a problem with one field of a row.
type fieldError struct {
	field string
	msg   string
}

func (e *fieldError) Error() string { return fmt.Sprintf("field %q: %s", e.field, e.msg) }

func fieldErrf(field, format string, args ...any) error {
	return &fieldError{field: field, msg: fmt.Sprintf(format, args...)}
}

// fieldOf returns the field an error names, if any.
func fieldOf(err error) string {
	if fe, ok := err.(*fieldError); ok {
		return fe.field
	}
	return ""
}

// errRowTooLarge is returned by the guard when one row passes MaxRowBytes.
var errRowTooLarge = errors.New("row too large")

// badUTF8 is returned by the guard at the first byte that is not UTF-8.
type badUTF8 struct{ off int64 }

func (e *badUTF8) Error() string { return fmt.Sprintf("not valid UTF-8 at byte %d", e.off) }

// guard sits between the file and the JSON decoder: it rejects bytes that
// are not UTF-8 (encoding/json would silently turn them into U+FFFD) and
// stops reading once the current row has grown past the row limit, so a
// huge value is not buffered whole before it is refused.
type guard struct {
	r        io.Reader
	n        int64  // bytes handed to the decoder so far
	rowStart int64  // decoder offset where the current row starts
	maxRow   int64  // 0: no row limit
	carry    []byte // an incomplete UTF-8 sequence at the end of the last read
	err      error
}

func (g *guard) Read(p []byte) (int, error) {
	if g.err != nil {
		return 0, g.err
	}
	n, err := g.r.Read(p)
	if n > 0 {
		if bad := g.checkUTF8(p[:n]); bad >= 0 {
			g.err = &badUTF8{off: g.n + int64(bad)}
			g.n += int64(bad)
			return bad, g.err
		}
		g.n += int64(n)
		// The decoder reads ahead at most about its buffer's size, which
		// doubles as a row grows: 2× the limit is never reached by a row
		// within it.
		if g.maxRow > 0 && g.n-g.rowStart > 2*g.maxRow+1<<20 {
			g.err = errRowTooLarge
			return n, g.err
		}
	}
	if errors.Is(err, io.EOF) && len(g.carry) > 0 {
		g.err = &badUTF8{off: g.n - int64(len(g.carry))}
		return n, g.err
	}
	return n, err
}

// checkUTF8 validates b, continuing a sequence split by the previous read.
// It returns the index in b of the first invalid byte, or -1.
func (g *guard) checkUTF8(b []byte) int {
	start := 0
	if len(g.carry) > 0 {
		// Complete the split sequence with up to 3 bytes of b.
		need := min(utf8.UTFMax-len(g.carry), len(b))
		buf := append(append([]byte{}, g.carry...), b[:need]...)
		if !utf8.FullRune(buf) {
			g.carry = buf
			return -1
		}
		r, size := utf8.DecodeRune(buf)
		if r == utf8.RuneError && size <= 1 {
			return 0
		}
		start = size - len(g.carry)
		g.carry = g.carry[:0]
	}
	rest := b[start:]
	if utf8.Valid(rest) {
		return -1
	}
	// Find the bad byte, keeping a sequence cut off by the end of b.
	for i := 0; i < len(rest); {
		c := rest[i]
		if c < utf8.RuneSelf {
			i++
			continue
		}
		if !utf8.FullRune(rest[i:]) {
			g.carry = append(g.carry[:0], rest[i:]...)
			return -1
		}
		r, size := utf8.DecodeRune(rest[i:])
		if r == utf8.RuneError && size == 1 {
			return start + i
		}
		i += size
	}
	return -1
}

// lineAt returns the 1-based line of byte offset off in path, skipping the
// separators (whitespace and commas) that precede a row so that a row's
// line is the line of its opening brace. Only called on the error path.
// The file is opened as it was for reading (fsx.Open): one swapped for a
// named pipe meanwhile gives no line instead of blocking.
func lineAt(path string, off int64, skipSep bool) int {
	f, err := fsx.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	r := bufio.NewReader(f)
	line := 1
	for pos := int64(0); ; pos++ {
		c, err := r.ReadByte()
		if err != nil {
			return line
		}
		if pos >= off && (!skipSep || !strings.ContainsRune(" \t\r\n,", rune(c))) {
			return line
		}
		if c == '\n' {
			line++
		}
	}
}

// jsonPath tracks where a byte of one JSON value is: object keys and array
// indexes from the outside in.
type jsonPath []pathElem

type pathElem struct {
	obj       bool
	key       string
	idx       int
	expectKey bool
}

func (p jsonPath) String() string {
	var b strings.Builder
	for _, e := range p {
		if e.obj {
			if e.expectKey {
				break // between keys: the object itself
			}
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(e.key)
		} else {
			b.WriteString("[" + strconv.Itoa(e.idx) + "]")
		}
	}
	return b.String()
}

// walkJSON scans one JSON value (possibly cut short) and calls visit for
// each string with its span [start, end) in raw and the path of the value
// (for keys, the path including the key). visit returns false to stop.
func walkJSON(raw []byte, visit func(p jsonPath, start, end int, isKey bool) bool) {
	var stack jsonPath
	for i := 0; i < len(raw); {
		switch c := raw[i]; c {
		case '{':
			stack = append(stack, pathElem{obj: true, expectKey: true})
			i++
		case '[':
			stack = append(stack, pathElem{})
			i++
		case '}', ']':
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
			i++
		case ',':
			if n := len(stack); n > 0 {
				if stack[n-1].obj {
					stack[n-1].expectKey = true
				} else {
					stack[n-1].idx++
				}
			}
			i++
		case ':':
			if n := len(stack); n > 0 {
				stack[n-1].expectKey = false
			}
			i++
		case '"':
			j := i + 1
			for j < len(raw) && raw[j] != '"' {
				if raw[j] == '\\' {
					j++
				}
				j++
			}
			end := min(j+1, len(raw))
			isKey := len(stack) > 0 && stack[len(stack)-1].obj && stack[len(stack)-1].expectKey
			if isKey {
				stack[len(stack)-1].key = string(raw[i+1 : min(j, len(raw))])
				stack[len(stack)-1].expectKey = false
				if !visit(stack, i, end, true) {
					return
				}
				stack[len(stack)-1].expectKey = true
			} else if !visit(stack, i, end, false) {
				return
			}
			i = end
		default:
			i++
		}
	}
}

// pathAt is the path of the value holding byte off of raw ("" for the row).
func pathAt(raw []byte, off int) string {
	path := ""
	walkJSON(raw, func(p jsonPath, start, end int, _ bool) bool {
		if off >= start && off < end {
			path = p.String()
			return false
		}
		return start <= off
	})
	return path
}

// lastPath is the path of the last key or value that starts in raw: where
// a file cut short stops.
func lastPath(raw []byte) string {
	path := ""
	walkJSON(raw, func(p jsonPath, _, _ int, _ bool) bool {
		path = p.String()
		return true
	})
	return path
}

// longString finds the first string value of raw longer than limit bytes.
func longString(raw []byte, limit int) (path string, size int, ok bool) {
	walkJSON(raw, func(p jsonPath, start, end int, isKey bool) bool {
		if end-start-2 > limit {
			path, size, ok = p.String(), end-start-2, true
			return false
		}
		return true
	})
	return path, size, ok
}

// keySet remembers the keys seen in one file to find duplicated rows. It
// keeps a 128-bit hash per key instead of the key, so 100,000 rows cost a
// few MB; a false "duplicate" would need a 128-bit collision.
type keySet struct {
	seeds [2]maphash.Seed
	first map[[2]uint64]int
}

func newKeySet() *keySet {
	return &keySet{seeds: [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}, first: map[[2]uint64]int{}}
}

// add records key at row i and returns the row where it was first seen, or -1.
func (s *keySet) add(key string, i int) int {
	h := [2]uint64{maphash.String(s.seeds[0], key), maphash.String(s.seeds[1], key)}
	if j, dup := s.first[h]; dup {
		return j
	}
	s.first[h] = i
	return -1
}

// LimitedReadFile reads a file read whole (cost.json, run_manifest.json,
// config files), refusing one larger than limit bytes.
func LimitedReadFile(path string, limit int64) ([]byte, error) {
	f, err := OpenInput(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, &FileError{Path: path, Row: -1, Err: fmt.Errorf("file is larger than the %s limit for this file", FormatBytes(limit))}
	}
	return b, nil
}

// OpenInput opens an input file for reading: links are followed (a
// benchmark folder or a file in it may be a link), anything but a regular
// file (a directory, a named pipe that would block the reader) is a
// *FileError. A missing file stays an fs.ErrNotExist *PathError.
func OpenInput(path string) (*os.File, error) {
	f, err := fsx.Open(path)
	var nr *fsx.NotRegularError
	if errors.As(err, &nr) {
		return nil, &FileError{Path: path, Row: -1, Err: fmt.Errorf("it is %s, not a regular file", nr.What)}
	}
	return f, err // *PathError names the file
}

// FormatBytes writes a size limit the way the README states it.
func FormatBytes(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return strconv.FormatInt(n>>20, 10) + " MiB"
	case n >= 1<<10 && n%(1<<10) == 0:
		return strconv.FormatInt(n>>10, 10) + " KiB"
	}
	return strconv.FormatInt(n, 10) + " bytes"
}

// DecodeObjectFile decodes a JSON object file read whole (cost.json,
// run_manifest.json) into its keys in file order, refusing bytes that are
// not UTF-8, malformed or truncated JSON and values over MaxFieldBytes,
// with the line and field of the problem.
func DecodeObjectFile(path string, data []byte) (Object, error) {
	fail := func(off int, err error) error {
		return &FileError{Path: path, Row: -1, Line: 1 + bytes.Count(data[:min(off, len(data))], []byte("\n")), Field: pathAt(data, off), Err: err}
	}
	if !utf8.Valid(data) {
		off := invalidUTF8At(data)
		return nil, fail(off, fmt.Errorf("bytes that are not UTF-8 at byte %d", off))
	}
	if field, n, long := longString(data, MaxFieldBytes); long {
		return nil, &FileError{Path: path, Row: -1, Field: field, Err: fmt.Errorf("%s long, over the %s limit for one value", FormatBytes(int64(n)), FormatBytes(MaxFieldBytes))}
	}
	obj, err := decodeObjectRaw(data)
	if err != nil {
		var se *json.SyntaxError
		var td *TrailingDataError
		off := len(data)
		what := "file ends early (truncated JSON)"
		switch {
		case errors.As(err, &se):
			off, what = int(se.Offset), "malformed JSON: "+err.Error()
		case errors.As(err, &td):
			off, what = int(td.Offset)+1, err.Error()
		case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		default:
			what = err.Error()
			off = 0
		}
		return nil, fail(max(off-1, 0), errors.New(what))
	}
	return obj, nil
}

func invalidUTF8At(b []byte) int {
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size == 1 {
			return i
		}
		i += size
	}
	return len(b)
}

// lineOfKey is the line of the first top-level occurrence of "key": in an
// object file (a best effort for messages).
func lineOfKey(data []byte, key string) int {
	needle, _ := json.Marshal(key)
	i := bytes.Index(data, needle)
	if i < 0 {
		return 0
	}
	return 1 + bytes.Count(data[:i], []byte("\n"))
}

func joinPath(parent, child string) string {
	if child == "" {
		return parent
	}
	return parent + "." + child
}

// ReadObjectFile reads a JSON object file whole (run_manifest.json) into v
// with the input guards: a missing file is fs.ErrNotExist; anything else
// wrong is a *FileError naming the file, the line and the field.
func ReadObjectFile(path string, v any) error {
	data, err := LimitedReadFile(path, MaxObjectFileBytes)
	if err != nil {
		return err
	}
	if _, err := DecodeObjectFile(path, data); err != nil {
		return err
	}
	if err := json.Unmarshal(data, v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			key := te.Field
			if i := strings.LastIndexByte(key, '.'); i >= 0 {
				key = key[i+1:]
			}
			return &FileError{Path: path, Row: -1, Line: lineOfKey(data, key), Field: te.Field,
				Err: fmt.Errorf("expected %s, got JSON %s", describeGoType(te.Type), te.Value)}
		}
		return &FileError{Path: path, Row: -1, Err: err}
	}
	return nil
}

// FieldErrorf is an error about one field of a row, for the callbacks of
// EachRawRow, EachScenario and the like: the row reader turns it into a
// *FileError naming the file, the row, its line and the field.
func FieldErrorf(field, format string, args ...any) error {
	return fieldErrf(field, format, args...)
}

// FaultKind: a damaged input file is fixed in the file.
func (e *FileError) FaultKind() fault.Kind { return fault.Input }
