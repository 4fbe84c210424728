package studytest

import (
	"os"
	"testing"

	"github.com/impactbench/impactbench/internal/racemode"
	"github.com/impactbench/impactbench/internal/study"
)

// TestWriteRebuiltStudy rebuilds the July 2026 study and loads it back. Set
// STUDYTEST_OUT=DIR to keep it in DIR (for publishing it by hand, e.g. to
// point the real website at it).
func TestWriteRebuiltStudy(t *testing.T) {
	racemode.SkipHeavy(t)
	dir := os.Getenv("STUDYTEST_OUT")
	if dir == "" {
		dir = t.TempDir()
		if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() { // ~1,000 fsynced files
			d, err := os.MkdirTemp("/dev/shm", "studytest-")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(d) })
			dir = d
		}
	}
	p, err := WriteDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	s, err := study.Load(dir + "/benchmarks")
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Models) != len(p.Models) || len(s.Metrics) != len(p.ScenarioIndex) || len(s.Ages) != 2 {
		t.Fatalf("rebuilt study: %d models, %d metrics, ages %v; want %d, %d, 2", len(s.Models), len(s.Metrics), s.Ages, len(p.Models), len(p.ScenarioIndex))
	}
	rows := 0
	for _, m := range s.Metrics {
		rows += len(m.Scenarios)
	}
	if rows != 2160 {
		t.Errorf("%d scenario rows, want the published 2,160", rows)
	}
	for _, w := range s.Warnings {
		t.Log(w)
	}
}
