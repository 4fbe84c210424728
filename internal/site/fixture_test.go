package site_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/layout"
	"github.com/impactbench/impactbench/internal/publish"
	"github.com/impactbench/impactbench/internal/results"
	"github.com/impactbench/impactbench/internal/study"
	"github.com/impactbench/impactbench/internal/study/studytest"
)

// xss tries every way untrusted text could execute in the page; each
// vector sets window.__xss, which the browser tests assert stays unset.
const xss = "<script>window.__xss=1</script> <img src=x onerror=\"window.__xss=1\"> " +
	"</script><script>window.__xss=1</script> [x](javascript:window.__xss=1) <!-- <svg onload=window.__xss=1> \u2028\u2029 &amp; end"

// xssQuote is the part of the assistant's words the judges cite.
const xssQuote = `<img src=x onerror="window.__xss=1">`

// Texts of the fixture that carry the payload, by where they come from.
var (
	modelNameA  = "Model A " + xss
	providerA   = "Lab " + xss
	metricName  = "Own judgement " + xss
	metricDef   = "Definition " + xss
	whyText     = "Matters " + xss
	areaName    = "Mind " + xss
	groupName   = "Judgement " + xss
	categoryLbl = "Promotes Judgement " + xss
	persona     = "A parent. " + xss
	goal        = "Decide for me " + xss
	justText    = "The assistant decided. " + xss
	judgeName   = "judge " + xss
	assistant   = "Sure. " + xssQuote + " I would take job A. " + xss
)

// siteStudy writes the small study (studytest.WriteSmall) with the payload
// in every model-controlled string — the model's name and provider
// (models.yaml), a metric's name, definition and why-it-matters
// (benchmark.yaml), taxonomy and label names, scenario texts, transcripts,
// justifications and the judges' evidence quotes — and a results.json with
// judge calibration for alpha; it publishes the site and returns the
// project directory and the publish directory.
func siteStudy(t testing.TB) (dir, out string) {
	t.Helper()
	dir = t.TempDir()
	if err := studytest.WriteSmall(dir); err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(dir, "benchmarks")
	studytest.Edit(t, filepath.Join(root, study.ModelsFile), "name: Model A, provider: Lab One", fmt.Sprintf("name: %q, provider: %q", modelNameA, providerA))
	studytest.Edit(t, filepath.Join(root, "alpha", "benchmark.yaml"), "  name: Encourages own judgement (alpha)\n", fmt.Sprintf("  name: %q\n", metricName))
	studytest.Edit(t, filepath.Join(root, "alpha", "benchmark.yaml"), "  definition: Invites the user to weigh the options.\n  mattersBecause: Decisions stay with the user.\n",
		fmt.Sprintf("  definition: %q\n  mattersBecause: %q\n", metricDef, whyText))
	studytest.Edit(t, filepath.Join(root, study.TaxonomyFile), `"name": "Mind"`, fmt.Sprintf("%q: %q", "name", areaName))
	studytest.Edit(t, filepath.Join(root, study.TaxonomyFile), `"name": "Judgement"`, fmt.Sprintf("%q: %q", "name", groupName))
	studytest.Edit(t, filepath.Join(root, study.NutritionFile), `"label": "Promotes Judgement"`, fmt.Sprintf("%q: %q", "label", categoryLbl))
	// A second subarea of the area that lists alpha__m01 again: the area
	// card (every placement) and the leaderboard (each metric once) differ.
	studytest.Edit(t, filepath.Join(root, study.TaxonomyFile), "\"alpha__m02\"\n              ]\n            }\n          ]\n        }",
		"\"alpha__m02\"\n              ]\n            }\n          ]\n        },\n        {\"id\": \"reflection\", \"name\": \"Reflection\", \"icon\": \"fa-scale-balanced\", \"groups\": [{\"name\": \"Weighing\", \"metric_ids\": [\"alpha__m01\", \"gamma__m01\"]}]}")

	alpha := filepath.Join(root, "alpha")
	scen, err := artifacts.ReadScenarios(filepath.Join(alpha, "scenarios.json"))
	if err != nil {
		t.Fatal(err)
	}
	for i := range scen {
		scen[i].Persona, scen[i].UserGoal = persona, goal
		scen[i].Landmarks = []artifacts.Landmark{{Turn: 1, Instruction: "Ask " + xss}}
	}
	if err := artifacts.WriteScenarios(filepath.Join(alpha, "scenarios.json"), scen); err != nil {
		t.Fatal(err)
	}
	for _, m := range studytest.SmallModels {
		run := filepath.Join(alpha, "runs", m)
		convs, err := artifacts.ReadConversations(filepath.Join(run, "conversations.json"))
		if err != nil {
			t.Fatal(err)
		}
		for i := range convs {
			convs[i].Transcript = []artifacts.Turn{{Role: "user", Content: goal}, {Role: "assistant", Content: assistant}}
		}
		if err := artifacts.WriteConversations(filepath.Join(run, "conversations.json"), convs); err != nil {
			t.Fatal(err)
		}
		scores, err := artifacts.ReadScores(filepath.Join(run, "scores.json"))
		if err != nil {
			t.Fatal(err)
		}
		for i := range scores {
			scores[i].Justification = justText
			scores[i].Evidence = []artifacts.Quote{{Text: xssQuote}, {Text: "never said " + xss}}
		}
		if err := artifacts.WriteScores(filepath.Join(run, "scores.json"), scores); err != nil {
			t.Fatal(err)
		}
	}
	// model-c passes everything and model-a nothing: the leaderboard has
	// tie groups that are neither one block nor all apart.
	for _, b := range studytest.SmallBenchmarks {
		for _, m := range []string{"model-a", "model-c"} {
			path := filepath.Join(root, b, "runs", m, "scores.json")
			scores, err := artifacts.ReadScores(path)
			if err != nil {
				t.Fatal(err)
			}
			for i := range scores {
				passed := m == "model-c"
				present := passed == (scores[i].MetricID == "m01")
				scores[i].Passed, scores[i].Present = &passed, &present
			}
			if err := artifacts.WriteScores(path, scores); err != nil {
				t.Fatal(err)
			}
		}
	}
	writeCalibration(t, alpha)

	s, err := study.Load(root)
	if err != nil {
		t.Fatal(err)
	}
	out = filepath.Join(dir, "published")
	if _, err := publish.Publish(context.Background(), s, s.Compute(), publish.Options{Out: out, Site: true}); err != nil {
		t.Fatal(err)
	}
	return dir, out
}

func ptr[T any](v T) *T { return &v }

// Calibration numbers of the fixture's results.json (model-a on alpha).
const (
	calObserved  = 0.6667
	calCorrected = 0.7312
	calMetricObs = 0.5
	calMetricCor = 0.4123
)

// writeCalibration writes alpha's results.json as calibrate would leave it
// for model-a: corrected track and metric rates and one judge's
// calibration (the judge's name carries the payload).
func writeCalibration(t testing.TB, benchDir string) {
	t.Helper()
	corr := func(v, lo, hi float64) *results.Corrected {
		return &results.Corrected{Estimate: ptr(v), Low: ptr(lo), High: ptr(hi), Method: "Rogan-Gladen", Judge: judgeName, Se: ptr(0.9), Sp: ptr(0.8), NLabels: 12}
	}
	stat := func(v float64) results.Statistic {
		return results.Statistic{Estimate: ptr(v), Low: ptr(v - 0.1), High: ptr(v + 0.05), N: 12, Method: "Wilson"}
	}
	rs := []results.ModelResult{{
		TargetModel: "model-a", Extended: true, PositivePassRate: ptr(calObserved), NegativePassRate: ptr(0.5), NPositive: 6, NNegative: 6, NTotal: 12,
		ByMetric: results.Keyed[results.Rate]{
			{Key: "m01", Value: results.Rate{PassRate: ptr(calMetricObs), NPassed: 3, NTotal: 6, WithCI: true, Corrected: corr(calMetricCor, 0.2, 0.6)}},
		},
		PositiveCorrected: corr(calCorrected, 0.5, 0.9),
		NegativeCorrected: &results.Corrected{Method: "Rogan-Gladen", Judge: judgeName, NLabels: 3, Warning: "too few labels " + xss},
		JudgeCalibration: &results.JudgeCalibration{
			Labels: results.LabelSummary{NLines: 12, NRows: 12, NLabelers: 1}, MinLabelsPerClass: 5, Conf: 0.95, Weighting: "none",
			Judges: results.Keyed[results.JudgeCalibrationEntry]{{Key: judgeName, Value: results.JudgeCalibrationEntry{Role: "main",
				ByMetric: results.Keyed[results.MetricCalibration]{{Key: "m01", Value: results.MetricCalibration{N: 12, Sensitivity: stat(0.9), Specificity: stat(0.8), Kappa: stat(0.7)}}}}}},
		},
	}}
	if err := results.WriteResults(layout.Bench{Dir: benchDir}.Results(), rs); err != nil {
		t.Fatal(err)
	}
}
