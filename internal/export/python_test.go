package export

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// readParquetPy prints a Parquet file's columns and rows as JSON, through
// pyarrow, else pandas (which needs pyarrow or fastparquet itself).
const readParquetPy = `
import json, sys
try:
    import pyarrow.parquet as pq
    t = pq.read_table(sys.argv[1])
    cols, rows = t.column_names, t.to_pylist()
except ImportError:
    import pandas as pd
    df = pd.read_parquet(sys.argv[1])
    cols = list(df.columns)
    rows = df.astype(object).where(df.notna(), None).to_dict("records")
json.dump({"columns": cols, "rows": rows}, sys.stdout, default=lambda o: o.item())
`

// TestParquetPython reads the judged table's Parquet file with Python's
// pyarrow or pandas, when installed (skipped otherwise).
func TestParquetPython(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not installed")
	}
	if exec.Command(py, "-c", "import pyarrow").Run() != nil && exec.Command(py, "-c", "import pandas").Run() != nil {
		t.Skip("python3 has neither pyarrow nor pandas")
	}
	j, err := OpenJudged(fixture(t))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "judged.parquet")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	n, err := Write(j, Parquet, f, Options{})
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(py, "-c", readParquetPy, path).Output()
	if err != nil {
		t.Fatalf("python: %v", err)
	}
	var got struct {
		Columns []string         `json:"columns"`
		Rows    []map[string]any `json:"rows"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("python output: %v\n%s", err, out)
	}
	if d := cmp.Diff(names(j.Columns()), got.Columns); d != "" {
		t.Errorf("columns (-want +python):\n%s", d)
	}
	if int64(len(got.Rows)) != n {
		t.Fatalf("python read %d rows, want %d", len(got.Rows), n)
	}
	// Spot checks against the fixture: a panel judge's verdict, a null
	// verdict kept, a null demographic value, a cost and an integer.
	checks := []struct {
		row  int
		col  string
		want any
	}{
		{0, "judge", "ja"}, {0, "present", true}, {0, "conv_cost", 0.001234}, {0, "sample", float64(0)},
		{1, "judge", "jb"}, {1, "present", false},
		{2, "present", nil}, {2, "demo_home_region", nil}, {2, "conv_cost", nil},
		{4, "passed", false}, {4, "demo_age", "7"}, {4, "sample", float64(1)},
	}
	for _, c := range checks {
		if v := got.Rows[c.row][c.col]; !cmp.Equal(v, c.want) {
			t.Errorf("row %d %s = %#v, want %#v", c.row, c.col, v, c.want)
		}
	}
}
