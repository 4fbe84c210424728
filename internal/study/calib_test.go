package study_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/labels"
	"github.com/impactbench/impactbench/internal/results"
	"github.com/impactbench/impactbench/internal/study"
	"github.com/impactbench/impactbench/internal/study/studytest"
)

// calibrateAlpha writes benchmark alpha's results.json with judge
// calibration: each model's own labels (calibration is per target), 40
// labelled conversations per model and metric, the people disagreeing
// with the judge on every fifth. The study reads the judge's sensitivity
// and specificity from results.json and applies them to its own rows.
func calibrateAlpha(t *testing.T, bench string) {
	t.Helper()
	dir := filepath.Join(bench, "alpha")
	var rows []artifacts.Score
	var ls []labels.Label
	for _, model := range studytest.SmallModels {
		for _, metric := range []string{"m01", "m02"} {
			for i := range 40 {
				id := fmt.Sprintf("%s_s%03d_v01", metric, 100+i)
				present := i%3 != 0
				passed := present == (metric == "m01")
				sc := artifacts.Score{ID: id, MetricID: metric, TargetModel: model, ConvID: artifacts.ConvID(id, model, 0), Present: &present, Passed: &passed}
				rows = append(rows, sc)
				ls = append(ls, labels.Label{ConvID: sc.ConvID, MetricID: metric, Present: present != (i%5 == 4), Labeler: "ana", At: time.Unix(0, 0)})
			}
		}
	}
	ms := []config.Metric{{ID: "m01", Type: config.Positive}, {ID: "m02", Type: config.Negative}}
	res, err := results.Aggregate(results.Input{Metrics: ms, Scores: rows, Calibration: &results.CalibrationInput{Labels: ls}}, results.Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := results.WriteResults(filepath.Join(dir, "results.json"), res); err != nil {
		t.Fatal(err)
	}
}

// TestJudgeErrorInStudyScores: where a benchmark's results.json has judge
// calibration, the cells of its metrics carry the corrected score with an
// interval no narrower than the raw one (here both are [0, 1]: 3 base
// scenarios); a cell that also holds uncalibrated
// metrics says it is not corrected; judge_error says which scores leave
// judge error out. Without labels, judge_error says every score does.
func TestJudgeErrorInStudyScores(t *testing.T) {
	_, bench := small(t)
	s, err := study.Load(bench)
	if err != nil {
		t.Fatal(err)
	}
	res := s.Compute()
	if !strings.HasPrefix(res.JudgeError, "no human labels") {
		t.Errorf("judge_error without labels: %q", res.JudgeError)
	}
	for _, c := range res.Cells {
		if c.Corrected != nil {
			t.Fatalf("a cell without labels has corrected: %+v", c)
		}
	}
	var plain strings.Builder
	if sum := study.Summarize(res, "study.json"); sum.LabelledModels != 0 || sum.WriteText(&plain) != nil || strings.Contains(plain.String(), "Judge error") {
		t.Errorf("without labels the summary speaks of judge error:\n%s", plain.String())
	}

	calibrateAlpha(t, bench)
	if s, err = study.Load(bench); err != nil {
		t.Fatal(err)
	}
	res = s.Compute()
	if !strings.Contains(res.JudgeError, "corrected") || strings.HasPrefix(res.JudgeError, "no human labels") {
		t.Errorf("judge_error with labels: %q", res.JudgeError)
	}
	n, moved := 0, 0
	for _, c := range res.Cells {
		switch c.Node {
		case "metric/alpha__m01", "metric/alpha__m02", "group/autonomy/1":
			if c.Corrected == nil || c.Corrected.Score == nil {
				t.Errorf("%s %s %s: no corrected score: %+v", c.Node, c.Age, c.Model, c.Corrected)
				continue
			}
			cor := c.Corrected
			if !(*cor.Lo <= *cor.Score && *cor.Score <= *cor.Hi) || *cor.Hi-*cor.Lo < *c.Hi-*c.Lo {
				t.Errorf("%s %s %s: corrected %v [%v, %v] narrower than raw %v [%v, %v]", c.Node, c.Age, c.Model, *cor.Score, *cor.Lo, *cor.Hi, *c.Score, *c.Lo, *c.Hi)
			}
			if *cor.Score != *c.Score {
				moved++
			}
			n++
		case study.KindOverall:
			if c.Corrected == nil || c.Corrected.Score != nil || !strings.Contains(c.Corrected.Warning, "not corrected") {
				t.Errorf("overall %s %s: %+v, want not corrected (beta and gamma have no labels)", c.Age, c.Model, c.Corrected)
			}
		}
	}
	if n != 3*3*2 || moved == 0 {
		t.Errorf("checked %d corrected cells (want 3 nodes × 3 models × 2 ages), %d moved by the correction", n, moved)
	}
	// What study prints says so: labelled models, none corrected overall,
	// and what to run for the rest (before, it said nothing of labels).
	sum := study.Summarize(res, "study.json")
	var text strings.Builder
	if err := sum.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if sum.LabelledModels != 3 || sum.CorrectedModels != 0 ||
		!strings.Contains(text.String(), "Judge error: 0 of the 3 models with human labels have an overall score corrected for it") ||
		!strings.Contains(text.String(), "`impactbench calibrate all --plan` says which labels the others need") {
		t.Errorf("summary %d labelled, %d corrected:\n%s", sum.LabelledModels, sum.CorrectedModels, text.String())
	}
}
