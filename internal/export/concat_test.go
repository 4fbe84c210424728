package export

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestConcatUnionsColumns: a study's export is every benchmark's rows in
// turn over the union of their columns (a column first seen in a later
// table right after the one before it there); a demographic axis one
// benchmark lacks sits among the others, nullable and null on its rows.
func TestConcatUnionsColumns(t *testing.T) {
	a := rowsOf{
		cols: []Column{col("benchmark", String), nullable("demo_age", String), col("sample", Int), nullable("present", Bool)},
		rows: []Row{{"a", "adult", int64(0), true}, {"a", "child", int64(1), nil}},
	}
	b := rowsOf{
		cols: []Column{col("benchmark", String), nullable("demo_region", String), nullable("demo_age", String), col("sample", Int), nullable("present", Bool)},
		rows: []Row{{"b", "EU", "teen", int64(0), false}},
	}
	c := rowsOf{
		cols: []Column{col("benchmark", String), col("sample", Int), nullable("present", Bool), col("extra", Float)},
		rows: []Row{{"c", int64(2), true, 0.5}},
	}
	got, err := Concat(a, b, c)
	if err != nil {
		t.Fatal(err)
	}
	wantCols := []Column{col("benchmark", String), nullable("demo_region", String), nullable("demo_age", String), col("sample", Int), nullable("present", Bool), nullable("extra", Float)}
	if d := cmp.Diff(wantCols, got.Columns()); d != "" {
		t.Errorf("columns (-want +got):\n%s", d)
	}
	var rows []Row
	if err := got.Each(func(r Row) error { rows = append(rows, append(Row(nil), r...)); return nil }); err != nil {
		t.Fatal(err)
	}
	want := []Row{
		{"a", nil, "adult", int64(0), true, nil},
		{"a", nil, "child", int64(1), nil, nil},
		{"b", "EU", "teen", int64(0), false, nil},
		{"c", nil, nil, int64(2), true, 0.5},
	}
	if d := cmp.Diff(want, rows); d != "" {
		t.Errorf("rows (-want +got):\n%s", d)
	}
	// Written as CSV, the missing cells are empty.
	var buf bytes.Buffer
	if _, err := Write(got, CSV, &buf, Options{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "\nc,,,2,true,0.5\n") {
		t.Errorf("csv:\n%s", buf.String())
	}
	// One name, two kinds: refused rather than written as either.
	bad := rowsOf{cols: []Column{col("benchmark", String), col("sample", String)}}
	if _, err := Concat(a, bad); err == nil || !strings.Contains(err.Error(), "sample") {
		t.Errorf("kind conflict: %v", err)
	}
}

// TestNothingToExportIsKnown: a benchmark never evaluated (or never
// simulated) is ErrNothingToExport, which export all leaves out, and its
// message still says what to run.
func TestNothingToExportIsKnown(t *testing.T) {
	dir := t.TempDir()
	_, err := OpenJudged(Source{Dir: dir})
	if !errors.Is(err, ErrNothingToExport) || !strings.Contains(err.Error(), "run `impactbench evaluate") {
		t.Errorf("judged: %v", err)
	}
	_, err = OpenMessages(Source{Dir: dir})
	if !errors.Is(err, ErrNothingToExport) || !strings.Contains(err.Error(), "run `impactbench simulate") {
		t.Errorf("messages: %v", err)
	}
}
