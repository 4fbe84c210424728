package report

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/labels"
	"github.com/impactbench/impactbench/internal/results"
)

// altJudge names an evaluate --judge panel; like any configured name it
// reaches the page, so it carries markup that must stay text.
const altJudge = `alt<img src=x onerror="window.__xss=1">`

// calibBench writes a synthetic benchmark with human labels and a
// results.json computed by results.Aggregate with calibration: three
// targets × 3 metrics (m01, m02 positive, m03 negative) × 6 base scenarios
// × 2 age variants × 2 samples, a three-judge panel.
//   - "careful" and "sloppy": every row labelled; the humans disagree with
//     the panel on every 7th row, so the panel is informative but not
//     perfect and every rate gets a corrected number. careful's judge-3
//     contradicts the panel on every 3rd row (careful's only, so its error
//     differs by target), a second labeler re-labels
//     six m01 rows (disagreeing on one: a tie), careful has an alternate judge and
//     one evaluate --repeats pass that flips every 5th verdict.
//   - "opaque": every row labelled, and the humans disagree with the panel
//     on every other one: the judge cannot read this target. The labels of
//     every target are pooled per metric, the by-target test says the
//     error differs, so each target is corrected with its own labels:
//     careful's and sloppy's give numbers, opaque's show an uninformative
//     judge — every corrected rate of opaque and its leaderboard score are
//     a warning, not a number.
func calibBench(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	writeSynth(t, dir, synthSpec{
		Targets: []string{"careful", "sloppy", "opaque"}, Care: []float64{0.8, 0.5, 0.6},
		Metrics: 3, Bases: 12, Samples: 2, Turns: 2, UserLen: 60, AsstLen: 120, Seed: 13,
		Axes: [][2]any{{"age", []string{"Child or teenager (6-17)", "Adult (18+)"}}},
	})
	scores := map[string][]artifacts.Score{}
	for _, target := range []string{"careful", "sloppy", "opaque"} {
		scores[target] = readScores(t, dir, target)
	}
	// careful's judge-3 dissents on every 3rd row; the majority stands.
	for i := range scores["careful"] {
		if i%3 == 0 {
			j := &scores["careful"][i].Judges[2]
			j.Present = ptr(!*j.Present)
		}
	}
	writeJSON(t, filepath.Join(dir, "runs", "careful", "scores.json"), scores["careful"])

	var ls []labels.Label
	at := time.Date(2025, 5, 1, 12, 0, 0, 0, time.UTC)
	label := func(s artifacts.Score, present bool, who string) {
		ls = append(ls, labels.Label{ConvID: s.ConvID, MetricID: s.MetricID, Present: present, Labeler: who, At: at})
	}
	for _, target := range []string{"careful", "sloppy"} {
		for i, s := range scores[target] {
			label(s, *s.Present != (i%7 == 0), "ana")
		}
	}
	m01 := 0
	for _, s := range scores["careful"] {
		if s.MetricID == "m01" && m01 < 6 {
			label(s, *s.Present, "bo")
			m01++
		}
	}
	for i, s := range scores["opaque"] {
		label(s, *s.Present != (i%2 == 0), "ana")
	}
	alt := slices.Clone(scores["careful"])
	for i := range alt {
		alt[i].Judges = nil
		if i%4 == 0 {
			alt[i].Present = ptr(!*alt[i].Present)
		}
	}
	var reps []results.RepeatRow
	for i, s := range scores["careful"] {
		s.Judges = slices.Clone(s.Judges)
		if i%5 == 0 {
			s.Present = ptr(!*s.Present)
			for j := range s.Judges {
				s.Judges[j].Present = s.Present
			}
		}
		reps = append(reps, results.RepeatRow{Repeat: 1, Score: s})
	}
	aggregateCalibInto(t, dir, &results.CalibrationInput{Labels: ls,
		Alternates: []results.AlternateScores{{Target: "careful", Judge: altJudge, Scores: alt}},
		Repeats:    []results.TargetRepeats{{Target: "careful", Rows: reps}}})
	return dir
}

func readScores(t testing.TB, dir, target string) []artifacts.Score {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "runs", target, "scores.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rows []artifacts.Score
	if err := json.Unmarshal(b, &rows); err != nil {
		t.Fatal(err)
	}
	return rows
}

// aggregateCalibInto replaces dir's results.json with Aggregate's output
// calibrated against cal (as `impactbench calibrate` does).
func aggregateCalibInto(t testing.TB, dir string, cal *results.CalibrationInput) {
	t.Helper()
	bench, err := config.LoadBenchmark(filepath.Join(dir, "benchmark.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	in, err := results.Load(dir, bench.Metrics)
	if err != nil {
		t.Fatal(err)
	}
	in.Calibration = cal
	res, err := results.Aggregate(in, results.Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := results.WriteResults(filepath.Join(dir, "results.json"), res); err != nil {
		t.Fatal(err)
	}
}

// TestCalibrationFixture pins what the fixture is for, so the page tests
// below cannot pass on a fixture that lost its point.
func TestCalibrationFixture(t *testing.T) {
	res, err := results.ReadResults(filepath.Join(calibBench(t), "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{"careful", "sloppy"} {
		lb := resultOf(t, res, m).Leaderboard.Corrected
		if lb == nil || lb.Score == nil || lb.Judge != "panel" {
			t.Errorf("%s: leaderboard.corrected %+v, want a number", m, lb)
		}
	}
	opaque := resultOf(t, res, "opaque")
	if lb := opaque.Leaderboard.Corrected; lb == nil || lb.Score != nil || !strings.HasPrefix(lb.Warning, "not corrected") {
		t.Errorf("opaque: leaderboard.corrected %+v, want a warning", lb)
	}
	if c := opaque.PositiveCorrected; c == nil || c.Estimate != nil {
		t.Errorf("opaque positive_corrected %+v", c)
	}
	for _, m := range []string{"careful", "sloppy"} {
		if c := resultOf(t, res, m).PositiveCorrected; c == nil || c.Level != "target" {
			t.Errorf("%s positive_corrected %+v, want its own calibration (the error differs by target)", m, c)
		}
	}
	jc := resultOf(t, res, "careful").JudgeCalibration
	if got := fmt.Sprint(jc.Judges.Keys()); got != "[panel judge-1 judge-2 judge-3 "+altJudge+"]" {
		t.Errorf("careful judges %s", got)
	}
	if la, _ := jc.LabelerAgreement.Get("m01"); la.NRows != 6 || la.NUnanimous != 5 || jc.Labels.NTies != 1 || resultOf(t, res, "careful").JudgeConsistency == nil {
		t.Errorf("careful labeler agreement %+v / consistency missing", jc.LabelerAgreement)
	}
}

// TestSummaryCalibration checks the data the page's calibration section
// and corrected leaderboard read, against the results.json it came from.
func TestSummaryCalibration(t *testing.T) {
	dir := calibBench(t)
	res, err := results.ReadResults(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	in, err := Load(dir, Settings{})
	if err != nil {
		t.Fatal(err)
	}
	s := buildSummary(&in, fixedTime)
	for _, r := range s.Leaderboard.Rows {
		want := resultOf(t, res, r.Model)
		c, lb := r.Corr, want.Leaderboard.Corrected
		if c == nil || c.Judge != "panel" || c.Warn != lb.Warning || !samePtr(c.Score, lb.Score) || !samePtr(c.Lo, lb.CILow) || !samePtr(c.Hi, lb.CIHigh) {
			t.Errorf("%s: corr %+v, want %+v", r.Model, c, lb)
			continue
		}
		if c.Pos == nil || !samePtr(c.Pos.Rate, want.PositiveCorrected.Estimate) || c.Neg == nil || !samePtr(c.Neg.Lo, want.NegativeCorrected.Low) ||
			c.Pos.Warn != want.PositiveCorrected.Warning || c.Pos.NLabels != want.PositiveCorrected.NLabels {
			t.Errorf("%s: corrected tracks %+v %+v", r.Model, c.Pos, c.Neg)
		}
	}
	if opaque := rowOf(t, s.Leaderboard.Rows, "opaque").Corr; opaque.Score != nil || opaque.Warn == "" || opaque.Pos.Rate != nil || opaque.Pos.Warn == "" {
		t.Errorf("opaque: a number where a warning belongs: %+v %+v", opaque, opaque.Pos)
	}

	cal := s.Calibration
	var models []string
	for _, m := range cal.Models {
		models = append(models, m.Model)
	}
	// Leaderboard (observed score) order: careful, opaque, sloppy.
	if got := strings.Join(models, ","); got != strings.Join(s.Models, ",") || len(models) != 3 {
		t.Fatalf("calibration models %s, want all three in leaderboard order %v", got, s.Models)
	}
	careful := cal.Models[0]
	jc := resultOf(t, res, "careful").JudgeCalibration
	if careful.Labels != jc.Labels || careful.AllTargets == nil || *careful.AllTargets != *jc.AllTargets || careful.MinPerClass != 10 || careful.Conf != 0.95 || careful.Weighting != jc.Weighting {
		t.Errorf("careful header %+v", careful)
	}
	if len(careful.Judges) != 5*3+1 {
		t.Fatalf("%d judge rows, want 5 judges × 3 metrics and the main judge over all metrics", len(careful.Judges))
	}
	for _, row := range careful.Judges {
		e, _ := jc.Judges.Get(row.Judge)
		mc, ok := e.ByMetric.Get(row.Metric)
		if row.Metric == "all metrics" {
			mc, ok = *e.AllMetrics, e.AllMetrics != nil
		}
		if !ok {
			t.Fatalf("row %s %s not in results.json", row.Judge, row.Metric)
		}
		if row.Role != e.Role || row.N != mc.N || row.HumanPresent != mc.NHumanPresent || row.JudgeAbsent != mc.NJudgeAbsent ||
			!samePtr(row.Se.Est, mc.Sensitivity.Estimate) || !samePtr(row.Sp.Lo, mc.Specificity.Low) || !samePtr(row.Kappa.Hi, mc.Kappa.High) ||
			row.Se.N != mc.Sensitivity.N || row.Warn != mc.Warning || !samePtr(row.Agreement, mc.Agreement) ||
			!row.Se.Weighted || row.Se.Hits == nil || mc.Sensitivity.Hits == nil || *row.Se.Hits != *mc.Sensitivity.Hits || row.Scope != mc.Scope || row.NAgree != mc.NAgree {
			t.Errorf("careful %s %s: %+v, want %+v", row.Judge, row.Metric, row, mc)
		}
	}
	if r := careful.Judges[0]; r.Judge != "panel" || r.Role != "main" || careful.Judges[len(careful.Judges)-1].Judge != altJudge {
		t.Errorf("judge order: first %s (%s), last %s", r.Judge, r.Role, careful.Judges[len(careful.Judges)-1].Judge)
	}
	if len(careful.Own) != 3 || careful.Own[0].Scope != "target" {
		t.Errorf("careful's own calibration rows %+v", careful.Own)
	}
	if len(careful.Labelers) != 1 || careful.Labelers[0] != (labelerRow{Metric: "m01", Rows: 6, Unanimous: 5, Alpha: careful.Labelers[0].Alpha, Values: 12}) {
		t.Errorf("labelers %+v", careful.Labelers)
	}
	var keys []string
	for _, c := range careful.Corrected {
		keys = append(keys, c.Key)
	}
	if strings.Join(keys, ",") != "positive,negative,m01,m02,m03" || !careful.Corrected[0].Track || careful.Corrected[2].Track {
		t.Errorf("corrected rows %v", keys)
	}
	if m02 := careful.Corrected[3]; !samePtr(m02.Observed, mustMetric(t, resultOf(t, res, "careful"), "m02").PassRate) ||
		!samePtr(m02.Corr.Rate, mustMetric(t, resultOf(t, res, "careful"), "m02").Corrected.Estimate) || m02.Corr.Se == nil || m02.Corr.Level != "target" || m02.Corr.Note == "" {
		t.Errorf("careful m02 corrected row %+v", m02)
	}
	// Flip rates: careful only (the panel and its three members × 3 metrics).
	if len(cal.Consistency) != 4*3 || cal.Consistency[0].Model != "careful" || cal.Consistency[0].Judge != "panel" || cal.Consistency[0].Repeats != 1 {
		t.Fatalf("consistency %+v", cal.Consistency)
	}
	f, _ := resultOf(t, res, "careful").JudgeConsistency.Judges[0].Value.Get("m01")
	if c := cal.Consistency[0]; c.Metric != "m01" || c.Rows != f.NRows || c.Flipped != f.NFlipped || !samePtr(c.Rate, f.Rate) || !samePtr(c.Hi, f.High) {
		t.Errorf("flip row %+v, want %+v", c, f)
	}

	// Without calibration: no corr, empty (not null) lists for app.js.
	in2, err := Load(statsBench(t), Settings{})
	if err != nil {
		t.Fatal(err)
	}
	s2 := buildSummary(&in2, fixedTime)
	if s2.Calibration.Models == nil || s2.Calibration.Consistency == nil || len(s2.Calibration.Models) != 0 {
		t.Errorf("uncalibrated: %+v", s2.Calibration)
	}
	for _, r := range s2.Leaderboard.Rows {
		if r.Corr != nil {
			t.Errorf("%s has a corrected score without labels", r.Model)
		}
	}
}

func samePtr(a, b *float64) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

func rowOf(t *testing.T, rows []leaderboardRow, model string) leaderboardRow {
	t.Helper()
	for _, r := range rows {
		if r.Model == model {
			return r
		}
	}
	t.Fatalf("no leaderboard row %s", model)
	return leaderboardRow{}
}

func mustMetric(t *testing.T, r results.ModelResult, metric string) results.Rate {
	t.Helper()
	v, ok := r.ByMetric.Get(metric)
	if !ok {
		t.Fatalf("%s has no %s", r.TargetModel, metric)
	}
	return v
}
