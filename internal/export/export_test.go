package export

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/parquet-go/parquet-go"

	"github.com/impactbench/impactbench/internal/config"
)

var update = flag.Bool("update", false, "rewrite golden files")

// fixture is testdata/fx: two targets, a two-judge panel, an
// `evaluate --judge jc` output, failed and legacy rows, two demographic axes
// (one with a space in its name, one value null, one a number).
func fixture(t *testing.T) Source {
	t.Helper()
	dir := filepath.Join("testdata", "fx")
	b, err := config.LoadBenchmark(filepath.Join(dir, "benchmark.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return Source{Dir: dir, Metrics: b.Metrics, Judges: []string{"ja", "jb"}, Models: map[string]string{"t2": "cfg-model-2"}}
}

// collect gathers a table's rows (copies: the sink's Row is reused).
func collect(t *testing.T, tb Rows) [][]any {
	t.Helper()
	var out [][]any
	if err := tb.Each(func(r Row) error {
		out = append(out, append([]any(nil), r...))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if d := cmp.Diff(string(want), string(got)); d != "" {
		t.Errorf("%s differs (-want +got):\n%s", name, d)
	}
}

func names(cols []Column) []string {
	out := make([]string, len(cols))
	for i, c := range cols {
		out[i] = c.Name
	}
	return out
}

// TestJudgedHeaderGolden pins the judged table's columns.
func TestJudgedHeaderGolden(t *testing.T) {
	j, err := OpenJudged(fixture(t))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, c := range j.Columns() {
		q := ""
		if c.Nullable {
			q = "?"
		}
		fmt.Fprintf(&b, "%s %s%s\n", c.Name, c.Kind, q)
	}
	golden(t, "judged_columns.golden", []byte(b.String()))
}

// TestJudgedFixture checks every row of the fixture's judged table: one row
// per conversation per judge, null verdicts kept.
func TestJudgedFixture(t *testing.T) {
	j, err := OpenJudged(fixture(t))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	n, err := Write(j, CSV, &buf, Options{})
	if err != nil {
		t.Fatal(err)
	}
	// t1 scores.json: 4 rows × panel of 2, but the legacy row has one
	// verdict and no per-judge ones (1 row); judges/jc: 4 × 1; t2: 1.
	if want := int64(3*2 + 1 + 4 + 1); n != want {
		t.Errorf("rows = %d, want %d", n, want)
	}
	golden(t, "fx_judged.golden.csv", buf.Bytes())
}

func TestMessagesFixture(t *testing.T) {
	m, err := OpenMessages(fixture(t))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	n, err := Write(m, JSONL, &buf, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if n != 4+0+2+2+2 {
		t.Errorf("rows = %d, want 10 (one per transcript message)", n)
	}
	golden(t, "fx_messages.golden.jsonl", buf.Bytes())
}

// TestFormatsReadBack writes both tables in every format and reads each file
// back: the values must be identical to the rows produced (in CSV, with
// --raw; without it, text a spreadsheet would run as a formula, such as the
// fixture's "=1+1", reads back with its apostrophe).
func TestFormatsReadBack(t *testing.T) {
	src := fixture(t)
	j, err := OpenJudged(src)
	if err != nil {
		t.Fatal(err)
	}
	m, err := OpenMessages(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, tb := range []Rows{j, m} {
		want := collect(t, tb)
		for _, f := range append(Formats, "csv --raw") {
			o := Options{RawCSV: f == "csv --raw"}
			if o.RawCSV {
				f = CSV
			}
			var buf bytes.Buffer
			if _, err := Write(tb, f, &buf, o); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			gotCols, got := ReadBack(t, f, buf.Bytes(), tb.Columns())
			if d := cmp.Diff(names(tb.Columns()), gotCols); d != "" {
				t.Errorf("%s: header differs (-want +got):\n%s", f, d)
			}
			want := want
			if f == CSV {
				// The file keeps \r\n inside quoted cells (checked below);
				// Go's csv.Reader drops the \r when reading it back.
				want = crlfToLF(want)
				if !o.RawCSV {
					want = neutralised(want)
				}
			}
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("%s (raw %v): values differ after reading back (-want +got):\n%s", f, o.RawCSV, d)
			}
		}
	}
}

// neutralised applies Neutralise to every text value.
func neutralised(rows [][]any) [][]any {
	out := make([][]any, len(rows))
	for i, r := range rows {
		out[i] = append([]any(nil), r...)
		for k, v := range out[i] {
			if s, ok := v.(string); ok {
				out[i][k] = Neutralise(s)
			}
		}
	}
	return out
}

func crlfToLF(rows [][]any) [][]any {
	out := make([][]any, len(rows))
	for i, r := range rows {
		out[i] = append([]any(nil), r...)
		for k, v := range out[i] {
			if s, ok := v.(string); ok {
				out[i][k] = strings.ReplaceAll(s, "\r\n", "\n")
			}
		}
	}
	return out
}

// TestCSVQuoting: RFC 4180 quoting, newlines (and \r\n) inside cells kept
// byte for byte, a header row, null as an empty cell.
func TestCSVQuoting(t *testing.T) {
	m, err := OpenMessages(fixture(t))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := Write(m, CSV, &buf, Options{}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"benchmark,target,conv_id,source,scenario_id,sample,message_index,turn,role,content\n",
		`,user,"a, ""quoted""` + "\nsecond line\"\n",
		",assistant,\"réponse <b>&</b>\r\nfin\"\n",
		",user,\n", // an empty message
	} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("CSV lacks %q:\n%s", want, buf.String())
		}
	}
}

// ReadBack parses a written table into typed rows (nil for null).
func ReadBack(t testing.TB, f Format, data []byte, cols []Column) ([]string, [][]any) {
	t.Helper()
	var err error
	var header []string
	var rows [][]any
	switch f {
	case CSV:
		header, rows, err = readCSV(data, cols)
	case JSONL:
		header, rows, err = readJSONL(data, cols)
	case Parquet:
		header, rows, err = readParquet(data, cols)
	}
	if err != nil {
		t.Fatalf("reading back %s: %v", f, err)
	}
	return header, rows
}

func readCSV(data []byte, cols []Column) ([]string, [][]any, error) {
	recs, err := csv.NewReader(bytes.NewReader(data)).ReadAll()
	if err != nil || len(recs) == 0 {
		return nil, nil, fmt.Errorf("%v (%d records)", err, len(recs))
	}
	var rows [][]any
	for _, rec := range recs[1:] {
		row := make([]any, len(rec))
		for i, s := range rec {
			if row[i], err = parseCell(s, cols[i]); err != nil {
				return nil, nil, err
			}
		}
		rows = append(rows, row)
	}
	return recs[0], rows, nil
}

func parseCell(s string, c Column) (any, error) {
	if s == "" && c.Nullable {
		return nil, nil
	}
	switch c.Kind {
	case Int:
		return strconv.ParseInt(s, 10, 64)
	case Float:
		return strconv.ParseFloat(s, 64)
	case Bool:
		return strconv.ParseBool(s)
	}
	return s, nil
}

func readJSONL(data []byte, cols []Column) ([]string, [][]any, error) {
	var header []string
	var rows [][]any
	for i, line := range bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n")) {
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.UseNumber()
		var obj map[string]any
		if err := dec.Decode(&obj); err != nil {
			return nil, nil, fmt.Errorf("line %d: %w", i+1, err)
		}
		if dec.More() {
			return nil, nil, fmt.Errorf("line %d: more than one value", i+1)
		}
		keys, err := objectKeys(line)
		if err != nil {
			return nil, nil, err
		}
		if header == nil {
			header = keys
		}
		row := make([]any, len(cols))
		for k, c := range cols {
			v := obj[c.Name]
			if n, ok := v.(json.Number); ok {
				if c.Kind == Int {
					v, err = n.Int64()
				} else {
					v, err = n.Float64()
				}
				if err != nil {
					return nil, nil, err
				}
			}
			row[k] = v
		}
		rows = append(rows, row)
	}
	return header, rows, nil
}

// objectKeys lists a JSON object's keys in file order.
func objectKeys(obj []byte) ([]string, error) {
	dec := json.NewDecoder(bytes.NewReader(obj))
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		keys = append(keys, tok.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return nil, err
		}
	}
	return keys, nil
}

func readParquet(data []byte, cols []Column) ([]string, [][]any, error) {
	r := parquet.NewReader(bytes.NewReader(data))
	defer r.Close()
	var header []string
	for _, f := range r.Schema().Fields() {
		header = append(header, f.Name())
	}
	for i, f := range r.Schema().Fields() {
		if i < len(cols) && f.Optional() != cols[i].Nullable {
			return nil, nil, fmt.Errorf("column %s: optional = %v, want %v", f.Name(), f.Optional(), cols[i].Nullable)
		}
	}
	var rows [][]any
	buf := make([]parquet.Row, 16)
	for {
		n, err := r.ReadRows(buf)
		for _, pr := range buf[:n] {
			row := make([]any, len(pr))
			for _, v := range pr {
				i := v.Column()
				switch {
				case v.IsNull():
					row[i] = nil
				case cols[i].Kind == Int:
					row[i] = v.Int64()
				case cols[i].Kind == Float:
					row[i] = v.Double()
				case cols[i].Kind == Bool:
					row[i] = v.Boolean()
				default:
					row[i] = string(v.ByteArray())
				}
			}
			rows = append(rows, row)
		}
		if errors.Is(err, io.EOF) {
			return header, rows, nil
		}
		if err != nil {
			return nil, nil, err
		}
	}
}

// TestInputErrors: a broken input is an *InputError naming the file; a
// failing sink is not.
func TestInputErrors(t *testing.T) {
	dir := t.TempDir()
	copyTree(t, filepath.Join("testdata", "fx"), dir)
	src := fixture(t)
	src.Dir = dir
	j, err := OpenJudged(src)
	if err != nil {
		t.Fatal(err)
	}
	sinkErr := errors.New("disk full")
	err = j.Each(func(Row) error { return sinkErr })
	var ie *InputError
	if !errors.Is(err, sinkErr) || errors.As(err, &ie) {
		t.Errorf("sink failure: got %v, want the sink's error and no InputError", err)
	}

	cases := []struct {
		file, content string
		open          bool // fails on open rather than while streaming
		want          string
	}{
		{"runs/t2/scores.json", `[{"id": "x", "sample": "one"}]`, false, `scores.json row 0 (line 1): field "sample"`},
		{"runs/t1/conversations.json", `[{"id": "x"`, false, "file ends early (truncated JSON)"},
		{"scenarios.json", `{"not": "an array"}`, true, "expected a JSON array of rows"},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			d := t.TempDir()
			copyTree(t, filepath.Join("testdata", "fx"), d)
			if err := os.WriteFile(filepath.Join(d, c.file), []byte(c.content), 0o644); err != nil {
				t.Fatal(err)
			}
			s := src
			s.Dir = d
			j, err := OpenJudged(s)
			if !c.open {
				if err != nil {
					t.Fatal(err)
				}
				err = j.Each(func(Row) error { return nil })
			}
			if !errors.As(err, &ie) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), filepath.Join(d, c.file)) {
				t.Errorf("got %v, want an InputError naming %s and containing %q", err, c.file, c.want)
			}
		})
	}
	for _, rm := range []string{"scenarios.json", "runs/t1/conversations.json"} {
		d := t.TempDir()
		copyTree(t, filepath.Join("testdata", "fx"), d)
		os.Remove(filepath.Join(d, rm))
		s := src
		s.Dir = d
		j, err := OpenJudged(s)
		if err == nil {
			err = j.Each(func(Row) error { return nil })
		}
		if !errors.As(err, &ie) || !strings.Contains(err.Error(), rm+" does not exist") {
			t.Errorf("without %s: got %v, want an InputError saying it does not exist", rm, err)
		}
	}
	empty := Source{Dir: t.TempDir()}
	if _, err := OpenJudged(empty); !errors.As(err, &ie) || !strings.Contains(err.Error(), "no scores.json") {
		t.Errorf("no runs: got %v", err)
	}
	if _, err := OpenMessages(empty); !errors.As(err, &ie) || !strings.Contains(err.Error(), "no conversations.json") {
		t.Errorf("no runs: got %v", err)
	}
}

func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.Walk(src, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if info.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestDemoColumnNames(t *testing.T) {
	got := demoColumnNames([]string{"age", "home region", "home-region", "Geschlecht/ß"})
	want := []string{"demo_age", "demo_home_region", "demo_home_region_2", "demo_Geschlecht__"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
}

func TestParseFormat(t *testing.T) {
	for _, f := range Formats {
		if got, err := ParseFormat(string(f)); err != nil || got != f {
			t.Errorf("ParseFormat(%q) = %q, %v", f, got, err)
		}
	}
	if _, err := ParseFormat("xlsx"); err == nil {
		t.Error("ParseFormat(xlsx): no error")
	}
}

// TestParquetEncodings pins the widely readable layout: PLAIN values (no
// DELTA_* encodings, which older pyarrow and other readers reject).
func TestParquetEncodings(t *testing.T) {
	j, err := OpenJudged(fixture(t))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := Write(j, Parquet, &buf, Options{}); err != nil {
		t.Fatal(err)
	}
	f, err := parquet.OpenFile(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	for _, rg := range f.Metadata().RowGroups {
		for _, c := range rg.Columns {
			for _, e := range c.MetaData.Encoding {
				if s := e.String(); s != "PLAIN" && s != "RLE" {
					t.Errorf("column %v: encoding %s", c.MetaData.PathInSchema, s)
				}
			}
		}
	}
}
