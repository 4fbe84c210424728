package compare

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata")

// goldenReport is a user-model swap: alpha and beta trade places by a
// margin that rests on one base scenario per metric; B also ran delta.
func goldenReport(t *testing.T) *Report {
	t.Helper()
	a := closeSpec().run("baseline")
	sb := closeSpec().swapModels("alpha", "beta")
	sb["delta"] = map[string][]string{"m01": {"11", "10"}}
	b := sb.run("user-swap")
	a.Manifest, b.Manifest = testManifest(), testManifest()
	b.Manifest.UserModel = "0123456789abcdef0123"
	return mustCompare(t, a, b, testOpts)
}

func checkGolden(t *testing.T, name string, got []byte) {
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
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s differs (-want +got):\n%s", path, diff)
	}
}

func TestWriteTableGolden(t *testing.T) {
	var buf bytes.Buffer
	if err := goldenReport(t).WriteTable(&buf); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "table.golden", buf.Bytes())
}

func TestWriteJSONGolden(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out", "compare.json")
	if err := WriteJSON(path, goldenReport(t)); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "report.golden.json", got)
}

func TestWriteTableSections(t *testing.T) {
	far := mustCompare(t, farSpec().run("A"), farSpec().swapModels("alpha", "beta").run("B"), testOpts)
	same := mustCompare(t, farSpec().run("A"), farSpec().run("B"), testOpts)
	forcedOpts := testOpts
	forcedOpts.Force = true
	a, b := farSpec().run("A"), farSpec().run("B")
	b.Metrics[1].Definition = "changed"
	forced := mustCompare(t, a, b, forcedOpts)
	tests := []struct {
		name    string
		r       *Report
		want    []string
		notWant []string
	}{
		{"far swap", far,
			// Was +50.0 [+50.0, +50.0] on every track: a zero-width bootstrap
			// interval from 4 scenarios; then, with the betting hull, only the
			// all track's 8 scenarios established the order. With intervals
			// sized for 95 % (cluster-score, the track's two metrics as
			// strata), every track does, marked as resting on few scenarios.
			[]string{"all       alpha  beta  +50.0 [+19.6, +72.0]  -50.0 [-72.0, -19.6]  yes",
				"positive  alpha  beta  +50.0 [+5.1, +78.5]   -50.0 [-78.5, -5.1]   yes",
				"alpha  all       100.0% [79.0, 100.0] !  16 (8)     50.0% [28.0, 72.0] !    16 (8)     -50.0  [-72.0, -19.6] *",
				"Warning: only 8 base scenarios"},
			[]string{"none beyond uncertainty"}},
		{"identical", same, []string{"Order changes", "  none\n", "1.000 [1.000, 1.000]"}, []string{"beyond uncertainty"}},
		{"forced", forced, []string{"Comparable: NO (compared anyway because forced", "m02 definition differs (blocks comparison)", "checked: benchmark.yaml metrics only"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := tc.r.WriteTable(&buf); err != nil {
				t.Fatal(err)
			}
			out := buf.String()
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("table lacks %q:\n%s", w, out)
				}
			}
			for _, w := range tc.notWant {
				if strings.Contains(out, w) {
					t.Errorf("table has %q:\n%s", w, out)
				}
			}
			for i, line := range strings.Split(out, "\n") {
				if strings.TrimRight(line, " ") != line {
					t.Errorf("line %d has trailing spaces: %q", i+1, line)
				}
			}
		})
	}
}

type failWriter struct{ n int }

func (f *failWriter) Write(p []byte) (int, error) {
	if f.n == 0 {
		return 0, errors.New("disk full")
	}
	f.n--
	return len(p), nil
}

func TestWriteTableReportsWriteErrors(t *testing.T) {
	r := goldenReport(t)
	for _, n := range []int{0, 3, 12} {
		if err := r.WriteTable(&failWriter{n: n}); err == nil || !strings.Contains(err.Error(), "disk full") {
			t.Errorf("failing after %d writes: err = %v", n, err)
		}
	}
}
