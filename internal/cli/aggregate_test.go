package cli

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// twoBenchProject is the finished project with a second benchmark, zz, a
// copy of example with its runs, and neither results.json.
func twoBenchProject(t *testing.T) string {
	t.Helper()
	dir := copyProject(t)
	src := filepath.Join(dir, "benchmarks", "example")
	dst := filepath.Join(dir, "benchmarks", "zz")
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range []string{"example", "zz"} {
		if err := os.Remove(filepath.Join(dir, "benchmarks", b, "results.json")); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func resultsExist(dir string, benches ...string) bool {
	for _, b := range benches {
		if _, err := os.Stat(filepath.Join(dir, "benchmarks", b, "results.json")); err != nil {
			return false
		}
	}
	return true
}

// TestAggregateSeveral: `aggregate all` and `aggregate b1 b2 …` aggregate
// every benchmark named (all: alphabetical; else in the order given), with
// --json one array of run objects.
func TestAggregateSeveral(t *testing.T) {
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"all"}, []string{"example", "zz"}},
		{[]string{"zz", "example"}, []string{"zz", "example"}},
	} {
		dir := twoBenchProject(t)
		code, out, errs := run(t, dir, append(append([]string{"aggregate"}, c.args...), "--json")...)
		if code != 0 {
			t.Fatalf("aggregate %v: exit %d\n%s", c.args, code, errs)
		}
		var objs []runJSON
		if err := json.Unmarshal([]byte(out), &objs); err != nil {
			t.Fatalf("aggregate %v --json: not an array of run objects: %v\n%s", c.args, err, out)
		}
		var got []string
		for _, o := range objs {
			got = append(got, o.Benchmark)
			if o.Command != "aggregate" || o.ExitCode != 0 || len(o.Results) != 2 || o.Report == nil {
				t.Errorf("aggregate %v: %s's object: command %q, exit %d, %d results, report %v", c.args, o.Benchmark, o.Command, o.ExitCode, len(o.Results), o.Report)
			}
		}
		if strings.Join(got, " ") != strings.Join(c.want, " ") {
			t.Errorf("aggregate %v: benchmarks %v, want %v", c.args, got, c.want)
		}
		if !resultsExist(dir, "example", "zz") {
			t.Errorf("aggregate %v: a results.json is missing", c.args)
		}
	}
	dir := twoBenchProject(t)
	code, out, errs := run(t, dir, "aggregate", "all")
	if code != 0 || !resultsExist(dir, "example", "zz") {
		t.Errorf("aggregate all (text): exit %d\n%s%s", code, out, errs)
	}
	if i, j := strings.Index(errs, "== example\n"), strings.Index(errs, "== zz\n"); i < 0 || j < i {
		t.Errorf("aggregate all (text) does not head each benchmark's lines with its name:\n%s", errs)
	}
}

// TestAggregateSeveralBadNames: names that are no benchmark are exit 2
// naming every one of them, before any benchmark is aggregated; `all`
// goes alone.
func TestAggregateSeveralBadNames(t *testing.T) {
	dir := twoBenchProject(t)
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"example", "nope1", "zz", "nope2"}, []string{"2 benchmarks not found: nope1, nope2"}},
		{[]string{"example", "nope1"}, []string{`benchmark "nope1" not found`}},
		{[]string{"all", "example"}, []string{"`all` is every benchmark: give it alone"}},
	} {
		code, _, errs := run(t, dir, append([]string{"aggregate"}, c.args...)...)
		if code != ExitUsage {
			t.Errorf("aggregate %v: exit %d, want 2\n%s", c.args, code, errs)
		}
		for _, w := range c.want {
			if !strings.Contains(errs, w) {
				t.Errorf("aggregate %v: stderr lacks %q:\n%s", c.args, w, errs)
			}
		}
		if resultsExist(dir, "example") || resultsExist(dir, "zz") {
			t.Fatalf("aggregate %v wrote a results.json", c.args)
		}
	}
}

// TestAggregateSeveralOneFails: a benchmark that fails does not stop the
// others; the error names it, with its exit code (a damaged scores.json:
// 2), and --json has its object with the error.
func TestAggregateSeveralOneFails(t *testing.T) {
	dir := twoBenchProject(t)
	scores := filepath.Join(dir, "benchmarks", "example", "runs", "offline-careful", "scores.json")
	if err := os.WriteFile(scores, []byte("[{"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := run(t, dir, "aggregate", "all", "--json")
	if code != ExitUsage || !strings.Contains(errs, "example: ") || !strings.Contains(errs, "scores.json") {
		t.Errorf("aggregate all with example's scores.json damaged: exit %d, want 2 naming example and the file\n%s", code, errs)
	}
	var objs []runJSON
	if err := json.Unmarshal([]byte(out), &objs); err != nil || len(objs) != 2 {
		t.Fatalf("--json: want two run objects: %v\n%s", err, out)
	}
	if objs[0].Benchmark != "example" || objs[0].ExitCode != ExitUsage || objs[0].Error == nil || objs[1].ExitCode != 0 {
		t.Errorf("--json: example exit %d error %v; zz exit %d", objs[0].ExitCode, objs[0].Error, objs[1].ExitCode)
	}
	if resultsExist(dir, "example") || !resultsExist(dir, "zz") {
		t.Errorf("want zz aggregated and example not")
	}
}
