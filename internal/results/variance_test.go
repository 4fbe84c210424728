package results

import (
	"math"
	"testing"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/stats"
)

// TestAggregate_VarianceComponents: the by-hand case of
// stats.TestVarianceComponentsByHand as score rows — base scenarios s001
// and s002 of m01, variants v01/v02, samples 0/1, s001_v01 sample 0
// re-judged twice by evaluate --repeats ({pass, fail, pass} on present).
func TestAggregate_VarianceComponents(t *testing.T) {
	verdicts := map[string][2]bool{"m01_s001_v01": {true, true}, "m01_s001_v02": {true, false}, "m01_s002_v01": {false, false}, "m01_s002_v02": {false, true}}
	var rows []artifacts.Score
	for _, id := range []string{"m01_s001_v01", "m01_s001_v02", "m01_s002_v01", "m01_s002_v02"} {
		for s, p := range verdicts[id] {
			rows = append(rows, artifacts.Score{ID: id, MetricID: "m01", TargetModel: "t", Sample: s, Passed: ptr(p), Present: ptr(p)})
		}
	}
	rep := func(n int, present bool) RepeatRow {
		return RepeatRow{Repeat: n, Score: artifacts.Score{ID: "m01_s001_v01", MetricID: "m01", TargetModel: "t", Sample: 0, Present: ptr(present)}}
	}
	cal := &CalibrationInput{Repeats: []TargetRepeats{{Target: "t", Rows: []RepeatRow{rep(1, false), rep(2, true)}}}}
	res, err := Aggregate(Input{Metrics: metrics, Scores: rows, Calibration: cal}, Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	v := res[0].VarianceComponents
	if v == nil || v.Negative != nil || v.Positive == nil {
		t.Fatalf("variance_components %s", compact(t, v))
	}
	m, ok := v.ByMetric.Get("m01")
	if !ok || compact(t, m) != compact(t, *v.Positive) {
		t.Fatalf("by_metric m01 %s vs positive %s", compact(t, m), compact(t, v.Positive))
	}
	// By hand (see the stats test): scenario 0.0625, variant 0, residual
	// 0.25, judge 1/3 from the re-judged transcript, sample 0.
	if *m.Scenario.Variance != 0.0625 || *m.Variant.Variance != 0 || *m.Residual.Variance != 0.25 ||
		*m.Judge.Variance != 0.3333 || *m.Sample.Variance != 0 || m.JudgeSource != "repeats" || m.RejudgedRows != 1 ||
		m.Scenarios != 2 || m.Variants != 4 || m.N != 8 || m.Method != stats.MethodVarianceSplit || m.Warning == "" {
		t.Errorf("split %s", compact(t, m))
	}
	// Without repeats: no judge term; the residual stands for sample and
	// judge together.
	res, _ = Aggregate(Input{Metrics: metrics, Scores: rows}, Options{Seed: 1})
	m, _ = res[0].VarianceComponents.ByMetric.Get("m01")
	if m.Judge.Variance != nil || m.Sample.Variance != nil || *m.Residual.Variance != 0.25 || m.JudgeSource != "" {
		t.Errorf("no repeats: %s", compact(t, m))
	}
}

// TestAggregate_VarianceFromPanel: a three-judge panel that splits on one
// row gives a judge term from the members' disagreement.
func TestAggregate_VarianceFromPanel(t *testing.T) {
	var rows []artifacts.Score
	for i, id := range []string{"m01_s001_v01", "m01_s001_v02", "m01_s002_v01", "m01_s002_v02"} {
		s := panelScore("m01", T, T, T)
		if i == 0 {
			s = panelScore("m01", T, T, F)
		}
		s.ID = id
		rows = append(rows, s)
	}
	res, err := Aggregate(Input{Metrics: metrics, Scores: rows}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	m, _ := res[0].VarianceComponents.ByMetric.Get("m01")
	// Judge: rows {1,1,0} (variance 1/3) and three unanimous ones, pooled
	// over 2 df each: (2/3)/8.
	if m.JudgeSource != "panel" || m.RejudgedRows != 4 || math.Abs(*m.Judge.Variance-(2.0/3)/8) > 1e-4 {
		t.Errorf("panel split %s", compact(t, m))
	}
}

func TestPilotComponents(t *testing.T) {
	f := func(x float64) *float64 { return &x }
	split := func(a, b, e float64) *VarianceSplit {
		return &VarianceSplit{Scenarios: 10, Scenario: VarianceComponent{Variance: f(a)}, Variant: VarianceComponent{Variance: f(b)}, Residual: VarianceComponent{Variance: f(e)}}
	}
	res := []ModelResult{
		{VarianceComponents: &Variance{Positive: split(0.05, 0.01, 0.2), Negative: split(0.01, 0.03, 0.1)}},
		{VarianceComponents: &Variance{Positive: split(0.02, 0.02, 0.22)}},
		{},
	}
	v, ok := PilotComponents(res, "positive")
	if !ok || v.Scenario.Variance != 0.05 || v.Variant.Variance != 0.02 || v.Residual.Variance != 0.22 || !math.IsNaN(v.Judge.Variance) {
		t.Errorf("positive pilot %+v", v)
	}
	if v, _ := PilotComponents(res, ""); v.Variant.Variance != 0.03 {
		t.Errorf("both tracks: variant %v, want 0.03", v.Variant.Variance)
	}
	if _, ok := PilotComponents(res[2:], "negative"); ok {
		t.Error("no components: ok")
	}
	// The pilot plans a design: its effective ICC for 2 variants × 2
	// samples feeds stats.ExpectedHalfWidth.
	if icc := v.EffectiveICC(2, 2); !(icc > 0 && icc < 1) {
		t.Errorf("effective ICC %v", icc)
	}
}
