package results

import (
	"bufio"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/impactbench/impactbench/internal/artifacts"
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

// ReadCounts reads a row no further than the row limit, as ReadResults
// does: a results.json (a shared benchmark folder's) whose one model is
// padded past MaxRowBytes is refused, naming the file, instead of a value
// of it being read into memory whole however large it is.
func TestReadCountsIsBounded(t *testing.T) {
	path := filepath.Join(t.TempDir(), "results.json")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	w.WriteString(`[{"target_model": "a", "n_total": 3, "padding": "`)
	chunk := strings.Repeat("x", 1<<20)
	for range artifacts.MaxRowBytes>>20 + 1 {
		w.WriteString(chunk)
	}
	w.WriteString(`"}]`)
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	got, err := ReadCounts(path)
	var fe *artifacts.FileError
	if !errors.As(err, &fe) || fe.Path != path {
		t.Errorf("ReadCounts = %+v, %v; want a *FileError naming %s", got, err, path)
	}
}

// TestCalibrationLine: with labels, aggregate prints under each model its
// score corrected for judge error, or why there is none and which
// commands say more, and the stale label lines left out; without labels,
// nothing (an offline run's output is unchanged).
func TestCalibrationLine(t *testing.T) {
	s, lo, hi := 0.61, 0.4, 0.8
	jc := &JudgeCalibration{Labels: LabelSummary{NRows: 12}}
	for _, c := range []struct {
		name string
		m    ModelResult
		want string
	}{
		{"no labels", ModelResult{Leaderboard: &Leaderboard{}}, ""},
		{"corrected", ModelResult{JudgeCalibration: jc, Leaderboard: &Leaderboard{Corrected: &LeaderboardCorrected{Score: &s, CILow: &lo, CIHigh: &hi}}},
			"    corrected for judge error: score 61.0% [40.0%, 80.0%] (12 labelled rows of its own)"},
		{"none", ModelResult{JudgeCalibration: jc, Leaderboard: &Leaderboard{Corrected: &LeaderboardCorrected{Warning: "not corrected: no corrected rate for the negative track"}}},
			"    corrected for judge error: none (12 labelled rows of its own): no corrected rate for the negative track; `impactbench calibrate` says why per metric, and `calibrate --plan` which labels would give one"},
		{"stale", ModelResult{JudgeCalibration: &JudgeCalibration{Labels: LabelSummary{NRows: 2, NStale: 3}}, Leaderboard: &Leaderboard{Corrected: &LeaderboardCorrected{Warning: "not corrected: x"}}},
			"    corrected for judge error: none (2 labelled rows of its own): x; `impactbench calibrate` says why per metric, and `calibrate --plan` which labels would give one\n    ! 3 of its label lines were given on a conversation run again since: left out; label those rows again"},
	} {
		if got := CalibrationLine(c.m); got != c.want {
			t.Errorf("%s:\n got %q\nwant %q", c.name, got, c.want)
		}
	}
}
