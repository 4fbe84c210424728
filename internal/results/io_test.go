package results

import (
	"os"
	"path/filepath"
	"testing"
)

func TestReadCountsMatchesReadResults(t *testing.T) {
	for _, path := range []string{"testdata/humanebench_extended.golden.json", "testdata/results_before_issue12.json"} {
		full, err := ReadResults(path)
		if err != nil {
			t.Fatal(err)
		}
		counts, err := ReadCounts(path)
		if err != nil {
			t.Fatal(err)
		}
		if len(counts) != len(full) || len(full) == 0 {
			t.Fatalf("%s: %d counts for %d models", path, len(counts), len(full))
		}
		for i, m := range full {
			if counts[i] != (ModelCount{m.TargetModel, m.NTotal}) {
				t.Errorf("%s model %d: %+v, want %s n_total %d", path, i, counts[i], m.TargetModel, m.NTotal)
			}
		}
	}
}

func TestReadCountsRefusesWhatIsNotAResultsFile(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{
		"object":    `{"target_model":"a"}`,
		"truncated": `[{"target_model":"a","n_total":3,"by_scenario":{"x":{"n_total":1`,
		"bad count": `[{"target_model":"a","n_total":"three"}]`,
	} {
		path := filepath.Join(dir, "results.json")
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		if got, err := ReadCounts(path); err == nil {
			t.Errorf("%s: read %+v, want an error", name, got)
		}
	}
}
