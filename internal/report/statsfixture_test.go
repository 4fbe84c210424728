package report

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/results"
)

// statsBench writes a synthetic benchmark whose results.json is computed by
// results.Aggregate, so it carries every clustered statistic: four
// targets, 8 positive and 4 negative base scenarios (both tracks have fewer
// than 10: their intervals warn), an age axis, two samples per variant and
// a three-judge panel. "lopsided" passes every negative scenario, so the
// file's order (by positive pass rate) differs from the score order.
func statsBench(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	writeSynth(t, dir, synthSpec{
		Targets: []string{"steady", "middling", "wobbly", "lopsided"}, Care: []float64{0.9, 0.55, 0.5, 0.3},
		Metrics: 3, Bases: 4, Samples: 2, Turns: 2, UserLen: 60, AsstLen: 120, Seed: 12,
		Axes: [][2]any{{"age", []string{"Child or teenager (6-17)", "Adult (18+)"}}},
	})
	setMetricVerdicts(t, dir, "lopsided", "m03", true)
	aggregateInto(t, dir)
	return dir
}

// setMetricVerdicts makes every row of a negative metric pass (or fail) for
// one target, with every judge agreeing.
func setMetricVerdicts(t testing.TB, dir, target, metric string, pass bool) {
	t.Helper()
	path := filepath.Join(dir, "runs", target, "scores.json")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var rows []artifacts.Score
	if err := json.Unmarshal(b, &rows); err != nil {
		t.Fatal(err)
	}
	for i := range rows {
		if rows[i].MetricID != metric {
			continue
		}
		present := !pass // negative metric: pass = behaviour absent
		rows[i].Passed, rows[i].Present = ptr(pass), ptr(present)
		for j := range rows[i].Judges {
			rows[i].Judges[j].Present = ptr(present)
		}
	}
	writeJSON(t, path, rows)
}

// aggregateInto replaces dir's results.json with Aggregate's output.
func aggregateInto(t testing.TB, dir string) {
	t.Helper()
	bench, err := config.LoadBenchmark(filepath.Join(dir, "benchmark.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	in, err := results.Load(dir, bench.Metrics)
	if err != nil {
		t.Fatal(err)
	}
	res, err := results.Aggregate(in, results.Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := results.WriteResults(filepath.Join(dir, "results.json"), res); err != nil {
		t.Fatal(err)
	}
}

func TestSummaryStatistics(t *testing.T) {
	in, err := Load(statsBench(t), Settings{})
	if err != nil {
		t.Fatal(err)
	}
	s := buildSummary(&in, fixedTime)
	if got := strings.Join(s.Models, ","); got != "steady,middling,lopsided,wobbly" {
		t.Errorf("models not in score order: %s", got)
	}
	for _, r := range s.Leaderboard.Rows {
		if r.Score.Local || r.Score.Lo == nil || r.Score.Rank == nil || r.Pos.Clusters != 8 || r.Neg.Clusters != 4 || r.Neg.Warn == "" {
			t.Errorf("%s: score %+v pos %+v neg %+v", r.Model, r.Score, r.Pos, r.Neg)
		}
	}
	// Each pair once per comparison: 6 pairs × (leaderboard, 2 tracks, 3 metrics).
	if n := len(s.Pairwise.Rows); n != 6*6 {
		t.Errorf("%d pairwise rows, want 36", n)
	}
	seen := map[string]bool{}
	for _, p := range s.Pairwise.Rows {
		k := p.A + "|" + p.B + "|" + p.Key
		if seen[k] || seen[p.B+"|"+p.A+"|"+p.Key] {
			t.Errorf("pair shown twice: %s", k)
		}
		seen[k] = true
	}
	if strings.Join(s.Pairwise.Comparisons, ",") != "leaderboard,positive,negative,m01,m02,m03" {
		t.Errorf("comparisons %v", s.Pairwise.Comparisons)
	}
	if m := s.Pairwise.Multiplicity; m == nil || m.Correction != "holm" || m.FamilySize != 6 || len(m.Families) != 4*3+6 {
		t.Errorf("multiplicity %+v", m)
	}
	if len(s.Reliability.Panels) != 4 || len(s.Reliability.Panels[0].ByJudge) != 3 || s.Reliability.Panels[0].Pos.Clusters != 8 {
		t.Errorf("panels %+v", s.Reliability.Panels)
	}
	if len(s.Reliability.Agreement) != 12 {
		t.Errorf("%d agreement rows, want 4 models × 3 metrics", len(s.Reliability.Agreement))
	}
	tests := 0
	for _, r := range s.Demographic.Rows {
		for _, g := range r.Tests {
			tests++
			if g.Test == "" || g.NClusters != 4 || g.Lo == nil || g.McNemarP == nil || g.Warn == "" {
				t.Errorf("gap %+v", g)
			}
		}
	}
	if tests != 12 {
		t.Errorf("%d gap tests, want 12", tests)
	}
}
