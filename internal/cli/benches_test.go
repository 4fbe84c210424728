package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// threeBenchmarks is the finished project with two more benchmarks: second,
// a finished copy of example, and unrun, example's benchmark.yaml alone.
func threeBenchmarks(t *testing.T) (dir, example, second, unrun string) {
	t.Helper()
	dir = copyProject(t)
	example = filepath.Join(dir, "benchmarks", "example")
	second = filepath.Join(dir, "benchmarks", "second")
	if err := os.CopyFS(second, os.DirFS(example)); err != nil {
		t.Fatal(err)
	}
	unrun = filepath.Join(dir, "benchmarks", "unrun")
	if err := os.MkdirAll(unrun, 0o755); err != nil {
		t.Fatal(err)
	}
	yaml, err := os.ReadFile(filepath.Join(example, "benchmark.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(unrun, "benchmark.yaml"), yaml, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, example, second, unrun
}

// TestItemsAndReportAll: `items all` and `report all` go over every
// benchmark of the project, as aggregate does: one that cannot be
// analysed (never run) is named in the error (exit 2) and the others are
// still printed or written; with --json, one array of the benchmarks that
// succeeded; several names work the same way.
func TestItemsAndReportAll(t *testing.T) {
	dir, example, second, unrun := threeBenchmarks(t)

	code, out, errs := run(t, dir, "items", "all", "--all")
	if code != ExitUsage || !strings.Contains(errs, "unrun") || !strings.Contains(errs, "has no scored conversations yet") {
		t.Fatalf("items all: exit %d, stderr %s", code, errs)
	}
	if !strings.Contains(out, "Item analysis of example: ") || !strings.Contains(out, "\n\nItem analysis of second: ") || strings.Contains(out, "unrun") {
		t.Errorf("items all printed:\n%s", out)
	}
	code, js, _ := run(t, dir, "items", "all", "--json")
	var objs []itemsJSON
	if err := json.Unmarshal([]byte(js), &objs); err != nil || code != ExitUsage {
		t.Fatalf("items all --json: exit %d, %v: %s", code, err, js)
	}
	if len(objs) != 2 || objs[0].Benchmark != "example" || objs[1].Benchmark != "second" || objs[0].NItems == 0 || objs[0].NItems != objs[1].NItems {
		t.Errorf("items all --json: %s", js)
	}
	// Two names: both, exit 0; one name keeps the single object.
	if code, js, errs := run(t, dir, "items", "second", "example", "--json"); code != 0 || !strings.HasPrefix(js, "[") || strings.Index(js, `"second"`) > strings.Index(js, `"example"`) {
		t.Errorf("items second example: exit %d %s %s", code, js, errs)
	}
	if code, js, _ := run(t, dir, "items", "example", "--json"); code != 0 || !strings.HasPrefix(js, "{") {
		t.Errorf("items example --json: exit %d %s", code, js)
	}

	for _, b := range []string{example, second, unrun} {
		os.Remove(filepath.Join(b, "report.html"))
	}
	code, out, errs = run(t, dir, "report", "all")
	if code != 0 {
		t.Fatalf("report all: exit %d %s", code, errs)
	}
	for _, b := range []string{example, second, unrun} {
		path := filepath.Join(b, "report.html")
		if _, err := os.Stat(path); err != nil || !strings.Contains(out, path+"\n") {
			t.Errorf("report all: %s not written or not printed (%v):\n%s", path, err, out)
		}
	}
	code, js, errs = run(t, dir, "report", "example", "second", "--json")
	var reps []reportJSON
	if err := json.Unmarshal([]byte(js), &reps); err != nil || code != 0 || len(reps) != 2 || reps[1].Benchmark != "second" || reps[1].Bytes == 0 || len(reps[1].Results) != 2 {
		t.Errorf("report example second --json: exit %d %v %s %s", code, err, js, errs)
	}
}

// TestExportAll: `export all` writes the study as one table, every
// benchmark's rows told apart by the benchmark column; a benchmark with
// nothing judged yet is left out and named on stderr, while naming it is
// an error that writes nothing.
func TestExportAll(t *testing.T) {
	dir, _, _, _ := threeBenchmarks(t)
	code, one, errs := run(t, dir, "export", "example", "--format", "jsonl")
	if code != 0 {
		t.Fatalf("export example: %d %s", code, errs)
	}
	code, all, errs := run(t, dir, "export", "all", "--format", "jsonl")
	if code != 0 || !strings.Contains(errs, "left out 1 benchmark(s) with nothing to export yet: unrun") {
		t.Fatalf("export all: exit %d, stderr %s", code, errs)
	}
	n := strings.Count(one, "\n")
	if n == 0 || strings.Count(all, "\n") != 2*n || strings.Count(all, `{"benchmark":"second",`) != n || !strings.HasPrefix(all, one) {
		t.Errorf("export all: %d lines, want example's %d then second's", strings.Count(all, "\n"), n)
	}
	out := filepath.Join(t.TempDir(), "study.csv")
	if code, _, errs := run(t, dir, "export", "example", "unrun", "-o", out); code != ExitUsage || !strings.Contains(errs, "run `impactbench evaluate unrun` first") {
		t.Errorf("export example unrun: exit %d %s", code, errs)
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("a failed export wrote its file")
	}
	if code, msgs, errs := run(t, dir, "export", "all", "--messages", "--format", "jsonl"); code != 0 || !strings.Contains(msgs, `{"benchmark":"second",`) || !strings.Contains(errs, "unrun") {
		t.Errorf("export all --messages: exit %d %s", code, errs)
	}
}
