package artifacts

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"reflect"
	"strings"

	"github.com/impactbench/impactbench/internal/fsx"
	"github.com/impactbench/impactbench/internal/ids"
)

// EachRawRow streams the top-level JSON array in path and calls fn with each
// element's raw bytes, in file order. Memory stays flat: one row at a time.
// Every problem is a *FileError naming the file, the row, its line and,
// where there is one, the field: malformed or truncated JSON, bytes that
// are not UTF-8, a row over MaxRowBytes, a string over MaxFieldBytes, and
// any error fn returns.
func EachRawRow(path string, fn func(i int, raw json.RawMessage) error) error {
	return eachRow(path, "", fn)
}

// eachRow is EachRawRow with a hint appended to errors (which phase
// rewrites the file).
func eachRow(path, hint string, fn func(i int, raw json.RawMessage) error) error {
	rr, err := openRows(path, hint)
	if err != nil {
		return err
	}
	defer rr.f.Close()
	for rr.More() {
		var raw json.RawMessage
		if err := rr.Next(&raw); err != nil {
			return err
		}
		if err := CheckFieldSizes(raw); err != nil {
			return rr.Fail(err)
		}
		if err := fn(rr.row, raw); err != nil {
			return rr.Fail(err)
		}
	}
	return rr.Close()
}

// CheckFieldSizes refuses a row holding a string over MaxFieldBytes. Rows
// shorter than the limit cannot hold one, so most rows cost nothing.
func CheckFieldSizes(raw []byte) error {
	if len(raw) <= MaxFieldBytes {
		return nil
	}
	if field, n, long := longString(raw, MaxFieldBytes); long {
		return fieldErrf(field, "%s long, over the %s limit for one value", FormatBytes(int64(n)), FormatBytes(MaxFieldBytes))
	}
	return nil
}

// RowReader streams a top-level JSON array row by row through the input
// guards (UTF-8, row size). Its errors are *FileError.
type RowReader struct {
	path, hint string
	f          *os.File
	g          *guard
	dec        *json.Decoder
	row        int   // index of the row last returned by Next (-1 before)
	start, end int64 // the last row's span in the file
}

// OpenRows opens a JSON array file; ok is false when it does not exist.
// Call More/Next for each row, then Close (which also checks the end).
func OpenRows(path, hint string) (rr *RowReader, ok bool, err error) {
	rr, err = openRows(path, hint)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	return rr, true, nil
}

func openRows(path, hint string) (*RowReader, error) {
	f, err := OpenInput(path)
	if err != nil {
		return nil, err
	}
	g := &guard{r: bufio.NewReaderSize(f, ioBuffer), maxRow: MaxRowBytes}
	rr := &RowReader{path: path, hint: hint, f: f, g: g, dec: json.NewDecoder(g), row: -1}
	tok, err := rr.dec.Token()
	if err != nil {
		defer f.Close()
		if errors.Is(err, io.EOF) {
			return nil, &FileError{Path: path, Row: -1, Err: errors.New("file is empty, expected a JSON array"), Hint: hint}
		}
		return nil, rr.syntax(-1, err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '[' {
		f.Close()
		return nil, &FileError{Path: path, Row: -1, Line: 1, Err: fmt.Errorf("expected a JSON array of rows at the top level, got %s", describeToken(tok)), Hint: hint}
	}
	return rr, nil
}

// More reports whether another row follows.
func (rr *RowReader) More() bool { return rr.dec.More() }

// Next decodes the next row into v.
func (rr *RowReader) Next(v any) error {
	rr.row++
	rr.start = rr.dec.InputOffset()
	rr.g.rowStart = rr.start
	if err := rr.dec.Decode(v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			rr.end = rr.dec.InputOffset()
			return rr.Fail(decodeErr(err))
		}
		return rr.syntax(rr.row, err)
	}
	rr.end = rr.dec.InputOffset()
	if rr.end-rr.start > MaxRowBytes {
		return rr.Fail(fmt.Errorf("row is %s long, over the %s limit for one row", FormatBytes(rr.end-rr.start), FormatBytes(MaxRowBytes)))
	}
	return nil
}

// Span is the last row's byte span (the offset before it, and after it).
func (rr *RowReader) Span() (start, end int64) { return rr.start, rr.end }

// Path is the file being read.
func (rr *RowReader) Path() string { return rr.path }

// Row is the index of the last row returned by Next.
func (rr *RowReader) Row() int { return rr.row }

// Fail wraps err as a *FileError for the current row: with its line and,
// when err names one, its field.
func (rr *RowReader) Fail(err error) error {
	var fe *FileError
	if errors.As(err, &fe) {
		return err
	}
	return &FileError{Path: rr.path, Row: rr.row, Line: lineAt(rr.path, rr.start, true), Field: fieldOf(err), Err: err, Hint: rr.hint}
}

// Close checks that the array is closed and nothing follows it, and closes
// the file.
func (rr *RowReader) Close() error {
	defer rr.f.Close()
	if _, err := rr.dec.Token(); err != nil { // the closing ]
		return rr.syntax(rr.row+1, err)
	}
	if tok, err := rr.dec.Token(); !errors.Is(err, io.EOF) {
		if err != nil {
			return rr.syntax(-1, err)
		}
		off := rr.dec.InputOffset()
		return &FileError{Path: rr.path, Row: -1, Line: lineAt(rr.path, off, false),
			Err: fmt.Errorf("unexpected %s after the closing ] at byte %d", describeToken(tok), off), Hint: rr.hint}
	}
	return nil
}

// syntax describes a JSON syntax error, truncation, bad UTF-8 or an
// oversized row at its position, naming the field when it can be found.
func (rr *RowReader) syntax(row int, err error) error {
	off := rr.dec.InputOffset()
	var se *json.SyntaxError
	var bu *badUTF8
	what, truncated := "malformed JSON", false
	switch {
	case errors.Is(err, errRowTooLarge):
		return &FileError{Path: rr.path, Row: row, Line: lineAt(rr.path, rr.start, true), Field: rr.fieldAt(rr.start+MaxRowBytes, false),
			Err: fmt.Errorf("row is over the %s limit for one row (a value in it is far too long)", FormatBytes(MaxRowBytes)), Hint: rr.hint}
	case errors.As(err, &bu):
		what, off, err = "bytes that are not UTF-8", bu.off, nil
	case errors.As(err, &se):
		off = se.Offset
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		what, truncated = "file ends early (truncated JSON)", true
		err = nil
		if st, serr := rr.f.Stat(); serr == nil {
			off = st.Size()
		}
	}
	line, col, _ := lineCol(rr.path, off)
	loc := fmt.Sprintf("byte %d (line %d, column %d)", off, line, col)
	if row >= 0 {
		loc += fmt.Sprintf(", in row %d", row)
	}
	field := ""
	if row >= 0 {
		field = rr.fieldAt(off, truncated)
	}
	if truncated && field != "" {
		loc += ", which is the last field read"
	}
	msg := fmt.Errorf("%s at %s", what, loc)
	if err != nil {
		msg = fmt.Errorf("%s at %s: %w", what, loc, err)
	}
	return &FileError{Path: rr.path, Row: -1, Line: line, Field: field, Err: msg, Hint: rr.hint}
}

// fieldAt names the field of the current row that holds file offset off
// (cut: the last field before the file ends), re-reading at most
// MaxRowBytes of the row (error path only).
func (rr *RowReader) fieldAt(off int64, cut bool) string {
	if off <= rr.start {
		return ""
	}
	b := make([]byte, min(off-rr.start, MaxRowBytes))
	m, _ := rr.f.ReadAt(b, rr.start)
	lead := len(b[:m]) - len(bytes.TrimLeft(b[:m], " \t\r\n,"))
	b = b[lead:m]
	if len(b) == 0 {
		return ""
	}
	if cut {
		return lastPath(b)
	}
	return pathAt(b, len(b)-1)
}

// lineCol converts a byte offset into a 1-based line and column by
// re-reading the file (only on the error path; opened with fsx.Open, as
// for lineAt).
func lineCol(path string, off int64) (line, col int, ok bool) {
	f, err := fsx.Open(path)
	if err != nil {
		return 0, 0, false
	}
	defer f.Close()
	r := bufio.NewReader(io.LimitReader(f, off))
	line, col = 1, 1
	for {
		b, err := r.ReadByte()
		if err != nil {
			return line, col, true
		}
		if b == '\n' {
			line++
			col = 1
		} else {
			col++
		}
	}
}

// decodeErr rewrites encoding/json errors into "field "x": expected …, got …".
func decodeErr(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		// Drop the names of our private embedding types from the path.
		field := strings.TrimPrefix(strings.TrimPrefix(te.Field, "convFields."), "scoreFields.")
		if field == "" {
			return fmt.Errorf("expected %s, got JSON %s", describeGoType(te.Type), te.Value)
		}
		return fieldErrf(field, "expected %s, got JSON %s", describeGoType(te.Type), te.Value)
	}
	return err
}

func describeGoType(t reflect.Type) string {
	null := ""
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
		null = " or null"
	}
	var s string
	switch t.Kind() {
	case reflect.Bool:
		s = "true/false"
	case reflect.String:
		s = "a string"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		s = "an integer"
	case reflect.Float32, reflect.Float64:
		s = "a number"
	case reflect.Slice, reflect.Array:
		s = "an array"
	case reflect.Struct, reflect.Map:
		s = "an object"
	default:
		s = t.String()
	}
	return s + null
}

// strictUnmarshal decodes one row object into v, first checking that the
// row is an object (so `[1,2]` or `"x"` rows get a clear message).
func strictUnmarshal(raw []byte, v any) error {
	t := bytes.TrimLeft(raw, " \t\r\n")
	if len(t) == 0 || t[0] != '{' {
		return fmt.Errorf("expected a JSON object, got %s", describeRaw(t))
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return decodeErr(err)
	}
	return nil
}

func describeRaw(t []byte) string {
	if len(t) == 0 {
		return "nothing"
	}
	switch t[0] {
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	case '{':
		return "an object"
	}
	return "a number"
}

// Hints appended to file-level errors.
const (
	hintScenarios     = "; fix the file or re-run gen_scenarios (with force) to regenerate it"
	hintConversations = "; fix the file or re-run simulate for this model to regenerate it"
	hintScores        = "; fix the file or re-run evaluate for this model to regenerate it"
)

// requireID reports a missing or empty "id" (rows cannot be joined without
// it) and one that is not a scenario id (package ids): ids name call-store
// files and labels, so a hostile one is refused when its file is read.
func requireID(id string) error {
	if id == "" {
		return fieldErrf("id", "missing or empty: every row needs its scenario id; fix or remove the row")
	}
	return checkID("id", "scenario id", id, ids.MaxScenario)
}

// checkID refuses a value of field that is not an id of at most max
// characters (package ids); kind names what the value is.
func checkID(field, kind, v string, max int) error {
	if why := ids.Problem(v, max); why != "" {
		return fieldErrf(field, "%s is not a valid %s (%s); ids hold only %s: fix the row", ids.Quote(v), kind, why, ids.Allowed)
	}
	return nil
}

// checkMetricID refuses a metric_id that is not an id; "" is left to the
// callers (required in conversations and verdicts).
func checkMetricID(v string) error {
	if v == "" {
		return nil
	}
	return checkID("metric_id", "metric id", v, ids.MaxName)
}

// checkConvID refuses a conv_id that is not an id; "" (upstream's rows
// carry none) is left to the callers.
func checkConvID(v string) error {
	if v == "" {
		return nil
	}
	return checkID("conv_id", "conv_id", v, ids.MaxConv)
}
