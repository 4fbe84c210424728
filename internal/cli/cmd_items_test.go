package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/impactbench/impactbench/internal/results"
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
