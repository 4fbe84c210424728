package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/impactbench/impactbench/internal/racemode"
	"github.com/impactbench/impactbench/internal/results"
	"github.com/impactbench/impactbench/internal/study/studytest"
)

// TestItemsCommand: on the finished example project, items lists every
// base scenario with --all, the weak ones (with reasons) without, and
// --json carries the same items with the thresholds.
func TestItemsCommand(t *testing.T) {
	dir := copyProject(t)
	code, all, errs := run(t, dir, "items", "example", "--all")
	if code != 0 {
		t.Fatalf("items --all: %d %s", code, errs)
	}
	code, js, errs := run(t, dir, "items", "example", "--all", "--json")
	if code != 0 {
		t.Fatalf("items --all --json: %d %s", code, errs)
	}
	var got itemsJSON
	if err := json.Unmarshal([]byte(js), &got); err != nil {
		t.Fatal(err)
	}
	if got.Benchmark != "example" || got.NItems == 0 || len(got.Items) != got.NItems || len(got.Targets) != 2 || got.Thresholds.Spread != results.WeakSpread {
		t.Fatalf("items --json: %s", js)
	}
	// The text lists the same base scenarios, each once.
	for _, it := range got.Items {
		if strings.Count(all, "  "+it.Base+"  ") != 1 {
			t.Errorf("text lacks %s exactly once:\n%s", it.Base, all)
		}
		if len(it.ByTarget) != 2 || it.N == 0 || it.PassRate == nil {
			t.Errorf("item %+v", it)
		}
	}
	if !strings.HasPrefix(all, "Item analysis of example: ") || !strings.Contains(all, "WEAK BECAUSE") {
		t.Errorf("text:\n%s", all)
	}
	// Without --all: the weak ones only, each with its reasons.
	code, weak, _ := run(t, dir, "items", "example")
	if code != 0 {
		t.Fatalf("items: %d", code)
	}
	for _, it := range got.Items {
		listed := strings.Contains(weak, "  "+it.Base+"  ")
		if listed != (len(it.Weak) > 0) {
			t.Errorf("%s weak=%v listed=%v:\n%s", it.Base, it.Weak, listed, weak)
		}
		if len(it.Weak) > 0 && !strings.Contains(weak, it.Weak[0]) {
			t.Errorf("%s: reason %q not printed", it.Base, it.Weak[0])
		}
	}
}

// TestItemsBadRepeats: a repeats.json row without its repeat number stops
// items with exit 2 naming the file, row and field.
func TestItemsBadRepeats(t *testing.T) {
	dir := copyProject(t)
	runs, _ := filepath.Glob(filepath.Join(dir, "benchmarks", "example", "runs", "*"))
	if len(runs) == 0 {
		t.Fatal("no runs")
	}
	path := filepath.Join(runs[0], "repeats.json")
	if err := os.WriteFile(path, []byte(`[{"repeat": 1, "id": "m01_s001_v01", "metric_id": "m01", "sample": 0, "present": true}, {"id": "m01_s001_v01"}]`), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errs := run(t, dir, "items", "example")
	if code != ExitUsage || !strings.Contains(errs, "repeats.json row 1") || !strings.Contains(errs, "repeat") {
		t.Errorf("exit %d, stderr %s", code, errs)
	}
}

// TestItemsOnEveryJulyBenchmark: items runs on each of the 17 benchmarks
// of the rebuilt July 2026 study, with the label-only models' verdicts in
// the benchmarks that hold them (as the published index has them): a
// target with rows on some metrics and none on the others, which used to
// panic in the item-total correlation on the 13 benchmarks that have
// label metrics.
func TestItemsOnEveryJulyBenchmark(t *testing.T) {
	racemode.SkipHeavy(t)
	if testing.Short() {
		t.Skip("rebuilds the 16-model July study")
	}
	dir, pub := julyProject(t)
	if err := pub.WriteLabelRunsInSources(dir); err != nil {
		t.Fatal(err)
	}
	benches := map[string]bool{}
	withLabel := map[string]bool{}
	for _, rows := range pub.ScenarioIndex {
		for _, r := range rows {
			benches[r.Benchmark] = true
			if len(r.Verdicts) > 14 {
				withLabel[r.Benchmark] = true
			}
		}
	}
	if len(withLabel) != 13 {
		t.Errorf("%d benchmarks with label-only verdicts, want 13", len(withLabel))
	}
	if len(benches) != 17 {
		t.Fatalf("%d July benchmarks, want 17", len(benches))
	}
	for b := range benches {
		code, out, errs := run(t, dir, "items", b, "--all", "--json")
		if code != 0 {
			t.Errorf("items %s: exit %d\n%s", b, code, errs)
			continue
		}
		var got itemsJSON
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatalf("items %s: %v", b, err)
		}
		want := 14
		if withLabel[b] {
			want = 16
		}
		if got.NItems == 0 || len(got.Items) != got.NItems || len(got.Targets) != want {
			t.Errorf("items %s: %d items (%d listed) over %d targets, want every base scenario over %d targets", b, got.NItems, len(got.Items), len(got.Targets), want)
		}
	}
}

// julyProject rebuilds the July 2026 study (internal/study/studytest) in
// a temporary directory, in memory when the machine has /dev/shm.
func julyProject(t *testing.T) (string, *studytest.Published) {
	t.Helper()
	base := ""
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		base = "/dev/shm"
	}
	dir, err := os.MkdirTemp(base, "impactbench-cli-july-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	pub, err := studytest.WriteDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	return dir, pub
}

// TestItemsAndReportAll: `items all` and `report all` go over every
// benchmark of the project, as aggregate does: one that cannot be
// analysed (never run) is named in the error (exit 2) and the others are
// still printed or written; with --json, one array of the benchmarks that
// succeeded; several names work the same way.
func TestItemsAndReportAll(t *testing.T) {
	dir := copyProject(t)
	example := filepath.Join(dir, "benchmarks", "example")
	second := filepath.Join(dir, "benchmarks", "second")
	if err := os.CopyFS(second, os.DirFS(example)); err != nil {
		t.Fatal(err)
	}
	unrun := filepath.Join(dir, "benchmarks", "unrun")
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
