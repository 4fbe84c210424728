package export

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Format is an output file format.
type Format string

// The formats.
const (
	CSV     Format = "csv"
	JSONL   Format = "jsonl"
	Parquet Format = "parquet"
)

// Formats lists the formats, for help text and errors.
var Formats = []Format{CSV, JSONL, Parquet}

// ParseFormat checks a --format value.
func ParseFormat(s string) (Format, error) {
	for _, f := range Formats {
		if string(f) == s {
			return f, nil
		}
	}
	return "", fmt.Errorf("unknown format %q: want csv, jsonl or parquet", s)
}

// Writer writes a table's rows in one format. Close finishes the output
// (the Parquet footer, buffered bytes) but does not close the io.Writer.
type Writer interface {
	Write(Row) error
	Close() error
}

// Options choose how a table is written.
type Options struct {
	// RawCSV writes CSV text cells exactly as stored. By default a text
	// cell that a spreadsheet would read as a formula (see Neutralise) is
	// prefixed with an apostrophe. JSON Lines and Parquet always keep text
	// exact.
	RawCSV bool
}

// NewWriter starts a table with these columns on w.
func NewWriter(f Format, w io.Writer, cols []Column, o Options) (Writer, error) {
	switch f {
	case CSV:
		return newCSVWriter(w, cols, !o.RawCSV)
	case JSONL:
		return newJSONLWriter(w, cols), nil
	case Parquet:
		return newParquetWriter(w, cols)
	}
	return nil, fmt.Errorf("unknown format %q", f)
}

// Rows is a table that can stream its rows (Judged, Messages).
type Rows interface {
	Columns() []Column
	Each(Sink) error
}

// Write streams the whole table t to w in format f and returns the number
// of rows written. Input errors are *InputError.
func Write(t Rows, f Format, w io.Writer, o Options) (int64, error) {
	tw, err := NewWriter(f, w, t.Columns(), o)
	if err != nil {
		return 0, err
	}
	var n int64
	err = t.Each(func(r Row) error {
		n++
		return tw.Write(r)
	})
	if err != nil {
		return n, err
	}
	return n, tw.Close()
}

// csvWriter writes RFC 4180 CSV with a header row; null is an empty cell.
// Lines end in \n, not \r\n: encoding/csv's CRLF mode would also rewrite
// newlines inside quoted cells, changing transcript text.
type csvWriter struct {
	w          *csv.Writer
	cols       []Column
	rec        []string
	neutralise bool
}

func newCSVWriter(w io.Writer, cols []Column, neutralise bool) (*csvWriter, error) {
	c := &csvWriter{w: csv.NewWriter(w), cols: cols, rec: make([]string, len(cols)), neutralise: neutralise}
	for i, col := range cols {
		c.rec[i] = col.Name
	}
	if err := c.w.Write(c.rec); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *csvWriter) Write(r Row) error {
	for i, v := range r {
		if s, ok := v.(string); ok && c.neutralise {
			c.rec[i] = Neutralise(s)
		} else {
			c.rec[i] = csvCell(v)
		}
	}
	return c.w.Write(c.rec)
}

// Neutralise returns a CSV text cell as a spreadsheet shows it but never
// evaluates it: text starting with '=', '+', '-', '@', a tab or a carriage
// return (what Excel, LibreOffice and Google Sheets read as the start of a
// formula: =HYPERLINK(...) and =WEBSERVICE(...) turn a transcript into a
// live link or a request) gets a leading apostrophe, OWASP's rule for CSV
// injection. Only text cells pass here: numbers are written as numbers, so
// a negative number keeps its '-'.
func Neutralise(s string) string {
	if s != "" && strings.IndexByte(formulaStarts, s[0]) >= 0 {
		return "'" + s
	}
	return s
}

// formulaStarts are the first bytes that make a spreadsheet read a cell as
// a formula.
const formulaStarts = "=+-@\t\r"

func (c *csvWriter) Close() error {
	c.w.Flush()
	return c.w.Error()
}

// csvCell renders a value; floats in plain decimal notation with the fewest
// digits that read back as the same float64.
func csvCell(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case bool:
		return strconv.FormatBool(x)
	}
	panic(fmt.Sprintf("export: unexpected value type %T", v))
}

// jsonlWriter writes one JSON object per line, keys in column order.
type jsonlWriter struct {
	w    *bufio.Writer
	keys [][]byte // `"name":` per column, pre-encoded
	buf  bytes.Buffer
	enc  *json.Encoder
}

func newJSONLWriter(w io.Writer, cols []Column) *jsonlWriter {
	j := &jsonlWriter{w: bufio.NewWriterSize(w, 64<<10)}
	j.enc = json.NewEncoder(&j.buf)
	j.enc.SetEscapeHTML(false) // model text reads as written; still valid JSON
	for _, c := range cols {
		k, _ := json.Marshal(c.Name)
		j.keys = append(j.keys, append(k, ':'))
	}
	return j
}

func (j *jsonlWriter) Write(r Row) error {
	j.buf.Reset()
	j.buf.WriteByte('{')
	for i, v := range r {
		if i > 0 {
			j.buf.WriteByte(',')
		}
		j.buf.Write(j.keys[i])
		if err := j.enc.Encode(v); err != nil {
			return err
		}
		j.buf.Truncate(j.buf.Len() - 1) // Encode's newline
	}
	j.buf.WriteString("}\n")
	_, err := j.w.Write(j.buf.Bytes())
	return err
}

func (j *jsonlWriter) Close() error { return j.w.Flush() }
