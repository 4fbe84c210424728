package artifacts

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"strings"
)

// EachRawRow streams the top-level JSON array in path and calls fn with each
// element's raw bytes, in file order. Memory stays flat: one row at a time.
// Malformed JSON is reported with the byte offset, line and row index; an
// error returned by fn is wrapped as "<path> row <i>: …".
func EachRawRow(path string, fn func(i int, raw json.RawMessage) error) error {
	return eachRow(path, "", fn)
}

// eachRow is EachRawRow with a hint appended to file-level errors (which
// phase rewrites the file).
func eachRow(path, hint string, fn func(i int, raw json.RawMessage) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err // *PathError names the file
	}
	defer f.Close()
	dec := json.NewDecoder(bufio.NewReaderSize(f, 256<<10))
	fail := func(row int, err error) error {
		return fileError(path, hint, row, dec.InputOffset(), err)
	}
	tok, err := dec.Token()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return fmt.Errorf("%s: file is empty, expected a JSON array%s", path, hint)
		}
		return fail(-1, err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '[' {
		return fmt.Errorf("%s: expected a JSON array of rows at the top level, got %s%s", path, describeToken(tok), hint)
	}
	i := 0
	for dec.More() {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return fail(i, err)
		}
		if err := fn(i, raw); err != nil {
			return fmt.Errorf("%s row %d: %w", path, i, err)
		}
		i++
	}
	if _, err := dec.Token(); err != nil { // the closing ]
		return fail(i, err)
	}
	if tok, err := dec.Token(); !errors.Is(err, io.EOF) {
		if err != nil {
			return fail(-1, err)
		}
		return fmt.Errorf("%s: unexpected %s after the closing ] at byte %d%s", path, describeToken(tok), dec.InputOffset(), hint)
	}
	return nil
}

// fileError describes a JSON syntax error or truncation with its position.
func fileError(path, hint string, row int, inputOffset int64, err error) error {
	off := inputOffset
	var se *json.SyntaxError
	what := "malformed JSON"
	switch {
	case errors.As(err, &se):
		off = se.Offset
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		what = "file ends early (truncated JSON)"
		err = nil
		if st, serr := os.Stat(path); serr == nil {
			off = st.Size()
		}
	}
	loc := fmt.Sprintf("byte %d", off)
	if line, col, ok := lineCol(path, off); ok {
		loc = fmt.Sprintf("byte %d (line %d, column %d)", off, line, col)
	}
	if row >= 0 {
		loc += fmt.Sprintf(", in row %d", row)
	}
	if err != nil {
		return fmt.Errorf("%s: %s at %s: %w%s", path, what, loc, err, hint)
	}
	return fmt.Errorf("%s: %s at %s%s", path, what, loc, hint)
}

// lineCol converts a byte offset into a 1-based line and column by
// re-reading the file (only on the error path).
func lineCol(path string, off int64) (line, col int, ok bool) {
	f, err := os.Open(path)
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
		return fmt.Errorf("field %q: expected %s, got JSON %s", field, describeGoType(te.Type), te.Value)
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

// requireID reports a missing or empty "id" (rows cannot be joined without it).
func requireID(id string) error {
	if id == "" {
		return errors.New(`missing "id": every row needs its scenario id; fix or remove the row`)
	}
	return nil
}
