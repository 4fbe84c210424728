package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/impactbench/impactbench/internal/layout"
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

// TestItemsJudgeRepaired: score rows whose verdict took a repair to read
// (_repairs) are counted per item, in --json (judge_repaired) and in the
// table's JUDGE REPAIRED column; the example's clean verdicts give none
// (no judge_repaired key, "—").
func TestItemsJudgeRepaired(t *testing.T) {
	dir := copyProject(t)
	_, clean, _ := run(t, dir, "items", "example", "--all", "--json")
	if strings.Contains(clean, "judge_repaired") {
		t.Fatalf("clean verdicts, yet judge_repaired:\n%s", clean)
	}
	runs, _ := filepath.Glob(filepath.Join(dir, layout.BenchmarksDirName, "example", layout.RunsDirName, "*", layout.ScoresFile))
	if len(runs) == 0 {
		t.Fatal("no scores")
	}
	b, err := os.ReadFile(runs[0])
	if err != nil {
		t.Fatal(err)
	}
	var rows []map[string]any
	if err := json.Unmarshal(b, &rows); err != nil || len(rows) < 2 {
		t.Fatalf("%d rows: %v", len(rows), err)
	}
	base := func(id any) string { s := id.(string); return s[:strings.LastIndex(s, "_v")] }
	want := map[string]int{}
	for _, r := range rows[:2] {
		r["_repairs"] = []string{"removed prose around the JSON object"}
		want[base(r["id"])]++
	}
	if b, err = json.Marshal(rows); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(runs[0], b, 0o644); err != nil {
		t.Fatal(err)
	}
	code, js, errs := run(t, dir, "items", "example", "--all", "--json")
	if code != 0 {
		t.Fatalf("items --json: %d %s", code, errs)
	}
	var got itemsJSON
	if err := json.Unmarshal([]byte(js), &got); err != nil {
		t.Fatal(err)
	}
	_, text, _ := run(t, dir, "items", "example", "--all")
	if !strings.Contains(text, "JUDGE REPAIRED") {
		t.Errorf("no JUDGE REPAIRED column:\n%s", text)
	}
	for _, it := range got.Items {
		if it.JudgeRepaired != want[it.Base] {
			t.Errorf("%s: judge_repaired %d, want %d", it.Base, it.JudgeRepaired, want[it.Base])
		}
		for _, line := range strings.Split(text, "\n") {
			if !strings.Contains(line, "  "+it.Base+"  ") {
				continue
			}
			cell := "  —  "
			if n := want[it.Base]; n > 0 {
				cell = "  " + strconv.Itoa(n) + "  "
			}
			if !strings.Contains(line, cell) {
				t.Errorf("%s: line lacks %q:\n%s", it.Base, cell, line)
			}
		}
	}
}
