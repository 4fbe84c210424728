package results

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/labels"
	"github.com/impactbench/impactbench/internal/stats"
)

// calibFixture is one target's rows on a positive (m01) and a negative
// (m02) metric: 12 base scenarios × 4 variants each, with a known human
// truth per row and a judge verdict that errs on chosen rows.
type calibFixture struct {
	scores []artifacts.Score
	truth  map[string]bool // conv_id → humans' verdict
}

func newCalibFixture(seed uint64, flip func(rng *rand.Rand, truth bool) bool) calibFixture {
	rng := rand.New(rand.NewPCG(seed, 7))
	f := calibFixture{truth: map[string]bool{}}
	for _, metric := range []string{"m01", "m02"} {
		for s := 1; s <= 12; s++ {
			rate := rng.Float64()
			for v := 1; v <= 4; v++ {
				id := fmt.Sprintf("%s_s%03d_v%02d", metric, s, v)
				h := rng.Float64() < rate
				j := h
				if flip(rng, h) {
					j = !j
				}
				passed := j
				if metric == "m02" {
					passed = !j
				}
				conv := artifacts.ConvID(id, "a", 0)
				f.truth[conv] = h
				f.scores = append(f.scores, artifacts.Score{ID: id, MetricID: metric, TargetModel: "a", Present: ptr(j), Passed: ptr(passed), ConvID: conv})
			}
		}
	}
	return f
}

// labelAll labels every row of the metrics in which (or a subset: keep).
func (f calibFixture) labels(keep func(i int, s artifacts.Score) bool) []labels.Label {
	var out []labels.Label
	for i, s := range f.scores {
		if keep(i, s) {
			out = append(out, labels.Label{ConvID: s.ConvID, MetricID: s.MetricID, Present: f.truth[s.ConvID], Labeler: "ana", At: time.Unix(0, 0)})
		}
	}
	return out
}

var calibMetrics = []config.Metric{{ID: "m01", Type: config.Positive}, {ID: "m02", Type: config.Negative}}

func aggregateCalib(t *testing.T, scores []artifacts.Score, cal *CalibrationInput) ModelResult {
	t.Helper()
	res, err := Aggregate(Input{Metrics: calibMetrics, Scores: scores, Calibration: cal}, Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 1 {
		t.Fatalf("%d models", len(res))
	}
	return res[0]
}

func TestCalibrationCensusCorrectsToTheHumanRate(t *testing.T) {
	// A judge wrong on 15% of rows; every row labelled: the corrected rate
	// must be exactly the humans' rate, whatever the judge said.
	f := newCalibFixture(3, func(rng *rand.Rand, _ bool) bool { return rng.Float64() < 0.15 })
	m := aggregateCalib(t, f.scores, &CalibrationInput{MainJudge: "gpt-j", Labels: f.labels(func(int, artifacts.Score) bool { return true })})
	for _, metric := range []string{"m01", "m02"} {
		human, n := 0, 0
		for _, s := range f.scores {
			if s.MetricID == metric {
				n++
				if f.truth[s.ConvID] == (metric == "m01") { // pass: present for m01, absent for m02
					human++
				}
			}
		}
		r, _ := m.ByMetric.Get(metric)
		c := r.Corrected
		if c == nil || c.Estimate == nil {
			t.Fatalf("%s: corrected = %+v", metric, c)
		}
		if want := round4(float64(human) / float64(n)); *c.Estimate != want {
			t.Errorf("%s: corrected %v, want the humans' pass rate %v (observed %v)", metric, *c.Estimate, want, *r.PassRate)
		}
		if !(*c.Low <= *c.Estimate && *c.Estimate <= *c.High) || c.Judge != "gpt-j" || c.NLabels != n || c.Se == nil {
			t.Errorf("%s: corrected = %+v", metric, c)
		}
	}
	if m.PositiveCorrected == nil || m.PositiveCorrected.Estimate == nil || m.NegativeCorrected.Estimate == nil {
		t.Fatalf("track corrections: %+v %+v", m.PositiveCorrected, m.NegativeCorrected)
	}
	lb := m.Leaderboard.Corrected
	if lb == nil || lb.Score == nil || *lb.Score != round4((*m.PositiveCorrected.Estimate+*m.NegativeCorrected.Estimate)/2) {
		t.Errorf("leaderboard corrected = %+v", lb)
	}
	e, ok := m.JudgeCalibration.Judges.Get("gpt-j")
	if !ok || e.Role != roleMain {
		t.Fatalf("judges = %v", m.JudgeCalibration.Judges.Keys())
	}
	mc, _ := e.ByMetric.Get("m01")
	if mc.N != 48 || mc.NHumanPresent+mc.NHumanAbsent != 48 || mc.Sensitivity.Estimate == nil || mc.Kappa.Low == nil {
		t.Errorf("m01 calibration = %+v", mc)
	}
}

func TestCalibrationWarnsInsteadOfNumbers(t *testing.T) {
	tests := []struct {
		name                  string
		flip                  func(*rand.Rand, bool) bool
		keep                  func(i int, s artifacts.Score) bool
		metricWarn, trackWarn string
	}{
		{"thinly labelled", func(rng *rand.Rand, _ bool) bool { return rng.Float64() < 0.1 },
			func(i int, s artifacts.Score) bool { return s.MetricID == "m01" && i%6 == 0 }, "thinly labelled", "m01"},
		{"uninformative judge", func(rng *rand.Rand, _ bool) bool { return rng.Float64() < 0.5 },
			func(int, artifacts.Score) bool { return true }, "", ""},
		{"no labels on a metric", func(rng *rand.Rand, _ bool) bool { return rng.Float64() < 0.1 },
			func(_ int, s artifacts.Score) bool { return s.MetricID == "m01" }, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newCalibFixture(11, tt.flip)
			m := aggregateCalib(t, f.scores, &CalibrationInput{Labels: f.labels(tt.keep)})
			r1, _ := m.ByMetric.Get("m01")
			r2, _ := m.ByMetric.Get("m02")
			switch tt.name {
			case "thinly labelled":
				if r1.Corrected.Estimate != nil || !strings.Contains(r1.Corrected.Warning, tt.metricWarn) {
					t.Errorf("m01 corrected = %+v", r1.Corrected)
				}
				if m.PositiveCorrected.Estimate != nil || !strings.Contains(m.PositiveCorrected.Warning, "m01") {
					t.Errorf("positive corrected = %+v", m.PositiveCorrected)
				}
			case "uninformative judge":
				e, _ := m.JudgeCalibration.Judges.Get("judge")
				mc, _ := e.ByMetric.Get("m01")
				if mc.Informative == nil || *mc.Informative {
					t.Fatalf("a coin-flip judge was found informative: %+v (Se %v Sp %v)", mc, *mc.Sensitivity.Estimate, *mc.Specificity.Estimate)
				}
				if r1.Corrected.Estimate != nil || !strings.Contains(r1.Corrected.Warning, "uninformative") {
					t.Errorf("m01 corrected = %+v", r1.Corrected)
				}
			case "no labels on a metric":
				if r1.Corrected.Estimate == nil || r2.Corrected.Estimate != nil || r2.Corrected.Warning == "" {
					t.Errorf("corrected m01 %+v m02 %+v", r1.Corrected, r2.Corrected)
				}
				if m.Leaderboard.Corrected.Score != nil || !strings.Contains(m.Leaderboard.Corrected.Warning, "negative") {
					t.Errorf("leaderboard corrected = %+v", m.Leaderboard.Corrected)
				}
			}
		})
	}
}

func TestCalibrationWeightsAVerdictStratifiedSample(t *testing.T) {
	// m01's 48 rows: the judge says present on 10 (all truly present) and
	// absent on 38, of which 19 are truly present: the study's sensitivity
	// is 10/29. Labels take 5 rows the judge called present and 10 it
	// called absent (5 truly present). Unweighted, sensitivity would be
	// 5/10; weighted by 10/5 and 38/10 it is the study's 10/29 exactly.
	f := newCalibFixture(5, func(*rand.Rand, bool) bool { return false })
	var absentSeen, present int
	for i := range f.scores {
		s := &f.scores[i]
		if s.MetricID != "m01" {
			continue
		}
		j, h := i < 10, i < 10 || i%2 == 0
		s.Present, s.Passed = ptr(j), ptr(j)
		f.truth[s.ConvID] = h
		if h {
			present++
		}
	}
	if present != 29 {
		t.Fatalf("fixture: %d present rows", present)
	}
	ls := f.labels(func(i int, s artifacts.Score) bool {
		switch {
		case s.MetricID != "m01":
			return false
		case i < 10:
			return i < 5
		default:
			absentSeen++
			return absentSeen <= 10
		}
	})
	m := aggregateCalib(t, f.scores, &CalibrationInput{Labels: ls})
	e, _ := m.JudgeCalibration.Judges.Get("judge")
	mc, _ := e.ByMetric.Get("m01")
	if mc.NJudgePresent != 5 || mc.NJudgeAbsent != 10 || mc.NHumanPresent != 10 {
		t.Fatalf("labelled: %+v", mc)
	}
	if want := round4(10.0 / 29); *mc.Sensitivity.Estimate != want {
		t.Errorf("sensitivity %v, want the study's %v (unweighted: 0.5)", *mc.Sensitivity.Estimate, want)
	}
	if *mc.Specificity.Estimate != 1 {
		t.Errorf("specificity %v, want 1", *mc.Specificity.Estimate)
	}
}

func TestCalibrationPanelMembersAlternatesAndLabelers(t *testing.T) {
	f := newCalibFixture(9, func(rng *rand.Rand, _ bool) bool { return rng.Float64() < 0.1 })
	var alt []artifacts.Score
	for i := range f.scores {
		s := &f.scores[i]
		other := !*s.Present
		if i%3 == 0 {
			other = *s.Present
		}
		s.Judges = []artifacts.JudgeVerdict{{Judge: "j1", Present: s.Present}, {Judge: "j2", Present: ptr(other)}}
		alt = append(alt, artifacts.Score{ID: s.ID, MetricID: s.MetricID, Sample: s.Sample, Present: s.Present})
	}
	ls := f.labels(func(int, artifacts.Score) bool { return true })
	// A second labeler on two rows: agrees on one, disagrees (a tie) on the other.
	ls = append(ls, labels.Label{ConvID: ls[0].ConvID, MetricID: "m01", Present: ls[0].Present, Labeler: "bo"},
		labels.Label{ConvID: ls[1].ConvID, MetricID: "m01", Present: !ls[1].Present, Labeler: "bo"})
	m := aggregateCalib(t, f.scores, &CalibrationInput{Labels: ls, Alternates: []AlternateScores{{Target: "a", Judge: "judge-x", Scores: alt}}})
	jc := m.JudgeCalibration
	if got := strings.Join(jc.Judges.Keys(), ","); got != "panel,j1,j2,judge-x" {
		t.Errorf("judges = %s", got)
	}
	if jc.Labels.NTies != 1 || jc.Labels.NLabelers != 2 || jc.Labels.NRows != 96 || jc.Labels.NLines != 98 {
		t.Errorf("labels = %+v", jc.Labels)
	}
	la, ok := jc.LabelerAgreement.Get("m01")
	if !ok || la.NRows != 2 || la.NUnanimous != 1 {
		t.Errorf("labeler agreement = %+v", la)
	}
	j2, _ := jc.Judges.Get("j2")
	if j2.Role != rolePanel {
		t.Errorf("j2 role %q", j2.Role)
	}
	if c, _ := j2.ByMetric.Get("m01"); c.Kappa.Estimate == nil || *c.Kappa.Estimate > 0 {
		t.Errorf("j2 disagrees with the truth on 2 rows in 3, κ = %v", c.Kappa.Estimate)
	}
}

func TestJudgeConsistencyFlipRate(t *testing.T) {
	f := newCalibFixture(2, func(*rand.Rand, bool) bool { return false })
	var reps []RepeatRow
	for i, s := range f.scores {
		for k := 1; k <= 2; k++ {
			p := *s.Present
			if s.MetricID == "m01" && i%4 == 0 && k == 2 {
				p = !p // every fourth m01 row flips on its second repeat
			}
			reps = append(reps, RepeatRow{Repeat: k, Score: artifacts.Score{ID: s.ID, MetricID: s.MetricID, Sample: s.Sample, Present: ptr(p)}})
		}
	}
	m := aggregateCalib(t, f.scores, &CalibrationInput{Repeats: []TargetRepeats{{Target: "a", Rows: reps}}})
	if m.JudgeCalibration != nil {
		t.Error("judge_calibration without labels")
	}
	jc := m.JudgeConsistency
	if jc == nil || jc.Repeats != 2 {
		t.Fatalf("judge_consistency = %+v", jc)
	}
	byMetric, _ := jc.Judges.Get("judge")
	f1, _ := byMetric.Get("m01")
	f2, _ := byMetric.Get("m02")
	if f1.NRows != 48 || f1.NFlipped != 12 || *f1.Rate != 0.25 || f2.NFlipped != 0 || *f2.Rate != 0 {
		t.Errorf("flip rates m01 %+v m02 %+v", f1, f2)
	}
}

func TestCalibrationFieldsOnlyWithLabelsAndNeverUpstreamOnly(t *testing.T) {
	f := newCalibFixture(3, func(rng *rand.Rand, _ bool) bool { return rng.Float64() < 0.1 })
	cal := &CalibrationInput{Labels: f.labels(func(int, artifacts.Score) bool { return true })}
	plain, err := Aggregate(Input{Metrics: calibMetrics, Scores: f.scores}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	up1, _ := Aggregate(Input{Metrics: calibMetrics, Scores: f.scores}, Options{UpstreamOnly: true})
	up2, _ := Aggregate(Input{Metrics: calibMetrics, Scores: f.scores, Calibration: cal}, Options{UpstreamOnly: true})
	b1, _ := artifacts.MarshalPy(up1)
	b2, _ := artifacts.MarshalPy(up2)
	if string(b1) != string(b2) {
		t.Error("labels changed the --upstream-only file")
	}
	pb, _ := json.Marshal(plain)
	for _, key := range []string{"judge_calibration", "corrected", "judge_consistency"} {
		if strings.Contains(string(pb), key) {
			t.Errorf("%q written without labels or repeats", key)
		}
	}
	with, _ := Aggregate(Input{Metrics: calibMetrics, Scores: f.scores, Calibration: cal}, Options{})
	wb, _ := json.Marshal(with)
	var back []ModelResult
	if err := json.Unmarshal(wb, &back); err != nil {
		t.Fatal(err)
	}
	again, _ := json.Marshal(back)
	if string(again) != string(wb) {
		t.Error("results with calibration do not survive a read and write")
	}
}

// twoTargetScores is m01 (positive) and m02 (negative) for targets a and b:
// 12 base scenarios × 4 variants each; flip[target] decides which rows the
// judge gets wrong.
func twoTargetScores(seed uint64, flip map[string]func(rng *rand.Rand, truth bool) bool) ([]artifacts.Score, map[string]bool) {
	var scores []artifacts.Score
	truth := map[string]bool{}
	for _, target := range []string{"a", "b"} {
		f := newCalibFixture(seed, flip[target])
		for _, s := range f.scores {
			s.TargetModel = target
			s.ConvID = artifacts.ConvID(s.ID, target, 0)
			truth[s.ConvID] = f.truth[artifacts.ConvID(s.ID, "a", 0)]
			scores = append(scores, s)
		}
		seed++
	}
	return scores, truth
}

func labelsOf(scores []artifacts.Score, truth map[string]bool, keep func(s artifacts.Score) bool) []labels.Label {
	var out []labels.Label
	for _, s := range scores {
		if keep(s) {
			out = append(out, labels.Label{ConvID: s.ConvID, MetricID: s.MetricID, Present: truth[s.ConvID], Labeler: "ana", At: time.Unix(0, 0)})
		}
	}
	return out
}

func aggregateAll(t *testing.T, scores []artifacts.Score, cal *CalibrationInput) map[string]ModelResult {
	t.Helper()
	res, err := Aggregate(Input{Metrics: calibMetrics, Scores: scores, Calibration: cal}, Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]ModelResult{}
	for _, m := range res {
		out[m.TargetModel] = m
	}
	return out
}

// TestCalibrationCorrectsEachTargetWithItsOwnLabels: labels on target a
// only, the judge erring alike on both. a is corrected with its own
// labels; b is not corrected from a's — the judge might err differently on
// b, and nothing would show it — and its warning says how many of its rows
// to label. The judge's calibration over every target's labels is still
// reported (by_metric), as a description of the judge.
func TestCalibrationCorrectsEachTargetWithItsOwnLabels(t *testing.T) {
	same := func(rng *rand.Rand, _ bool) bool { return rng.Float64() < 0.1 }
	scores, truth := twoTargetScores(3, map[string]func(*rand.Rand, bool) bool{"a": same, "b": same})
	ls := labelsOf(scores, truth, func(s artifacts.Score) bool { return s.TargetModel == "a" })
	res := aggregateAll(t, scores, &CalibrationInput{Labels: ls})
	ra, _ := res["a"].ByMetric.Get("m01")
	if c := ra.Corrected; c == nil || c.Estimate == nil || c.Level != "target" || c.NLabels != 48 {
		t.Fatalf("a m01 corrected %+v, want a number from a's own labels", c)
	}
	rb, _ := res["b"].ByMetric.Get("m01")
	if c := rb.Corrected; c.Estimate != nil || !strings.Contains(c.Warning, "no labels of this target on m01") || !strings.Contains(c.Warning, "label 5 more of its rows the judge called present and 5 more it called absent") {
		t.Errorf("b m01 corrected %+v, want no number and what to label", c)
	}
	for _, target := range []string{"a", "b"} {
		jc := res[target].JudgeCalibration
		if jc.AllTargets == nil || jc.AllTargets.NRows != 96 || jc.Pooling == "" {
			t.Errorf("%s: labels_all_targets %+v", target, jc.AllTargets)
		}
		mc, _ := jc.Judges[0].Value.ByMetric.Get("m01")
		if mc.Scope != "all targets" || mc.NTargets != 1 || mc.ByTarget == nil || mc.ByTarget.P != nil || mc.ByTarget.Reason == "" {
			t.Errorf("%s m01 calibration scope %q targets %d test %+v", target, mc.Scope, mc.NTargets, mc.ByTarget)
		}
		if !mc.Sensitivity.Weighted || mc.Sensitivity.Hits == nil || *mc.Sensitivity.Hits > mc.Sensitivity.N || mc.NAgree == 0 {
			t.Errorf("%s: the weighted sensitivity lacks its raw count: %+v", target, mc.Sensitivity)
		}
	}
	if res["a"].JudgeCalibration.Labels.NRows != 96 || res["b"].JudgeCalibration.Labels.NRows != 0 {
		t.Errorf("per-target label counts a %+v b %+v", res["a"].JudgeCalibration.Labels, res["b"].JudgeCalibration.Labels)
	}
}

// TestCalibrationPerTargetWhenErrorDiffers: the judge is nearly right on
// a and wrong on half of b's rows; every row labelled. The by-target test
// says so; each target is corrected with its own labels: b's judge is
// uninformative, so b gets a warning, not a number a's accuracy would
// flatter.
func TestCalibrationPerTargetWhenErrorDiffers(t *testing.T) {
	scores, truth := twoTargetScores(5, map[string]func(*rand.Rand, bool) bool{
		"a": func(rng *rand.Rand, _ bool) bool { return rng.Float64() < 0.03 },
		"b": func(rng *rand.Rand, _ bool) bool { return rng.Float64() < 0.5 },
	})
	ls := labelsOf(scores, truth, func(artifacts.Score) bool { return true })
	res := aggregateAll(t, scores, &CalibrationInput{Labels: ls})
	mc, _ := res["a"].JudgeCalibration.Judges[0].Value.ByMetric.Get("m01")
	if mc.ByTarget == nil || mc.ByTarget.P == nil || !mc.ByTarget.Differs || mc.ByTarget.NTargets != 2 {
		t.Fatalf("by-target test %+v, want a difference", mc.ByTarget)
	}
	ra, _ := res["a"].ByMetric.Get("m01")
	rb, _ := res["b"].ByMetric.Get("m01")
	if c := ra.Corrected; c.Estimate == nil || c.Level != "target" {
		t.Errorf("a m01 corrected %+v, want its own calibration", c)
	}
	if c := rb.Corrected; c.Estimate != nil || !strings.Contains(c.Warning, "uninformative") {
		t.Errorf("b m01 corrected %+v, want a warning", c)
	}
	own := res["a"].JudgeCalibration.Judges[0].Value.ThisTarget
	if oc, ok := own.Get("m01"); !ok || oc.Scope != "target" || oc.N != 48 {
		t.Errorf("a's this_target %+v", own)
	}
}

// TestCalibrationNeverBorrowsAnotherMetric: m02 has 4 labels, m01 every
// row. m02 is not corrected with the judge over all metrics (the judge may
// err differently on it): its warning says how many more of its rows to
// label. all_metrics is still reported, describing the judge.
func TestCalibrationNeverBorrowsAnotherMetric(t *testing.T) {
	f := newCalibFixture(7, func(rng *rand.Rand, _ bool) bool { return rng.Float64() < 0.1 })
	n02 := 0
	ls := f.labels(func(_ int, s artifacts.Score) bool {
		if s.MetricID == "m02" {
			n02++
			return n02 <= 4
		}
		return true
	})
	m := aggregateCalib(t, f.scores, &CalibrationInput{Labels: ls})
	r2, _ := m.ByMetric.Get("m02")
	if c := r2.Corrected; c.Estimate != nil || !strings.Contains(c.Warning, "thinly labelled") || !strings.Contains(c.Warning, "more of its rows the judge called") {
		t.Fatalf("m02 corrected %+v, want no number and what to label", c)
	}
	all := m.JudgeCalibration.Judges[0].Value.AllMetrics
	if all == nil || all.Scope != "all metrics" || all.N != 52 {
		t.Errorf("all_metrics %+v", all)
	}
	if m.NegativeCorrected.Estimate != nil || !strings.Contains(m.NegativeCorrected.Warning, "m02") {
		t.Errorf("negative track %+v", m.NegativeCorrected)
	}
}

// TestCalibrationNumbersYouCanCheck: κ is null with its reason when the
// humans gave one answer, and no "thinly labelled" warning appears when
// every row of a verdict is labelled.
func TestCalibrationNumbersYouCanCheck(t *testing.T) {
	f := newCalibFixture(2, func(*rand.Rand, bool) bool { return false })
	// m01: the humans call every row absent.
	for k := range f.truth {
		if strings.HasPrefix(k, "m01") {
			f.truth[k] = false
		}
	}
	m := aggregateCalib(t, f.scores, &CalibrationInput{Labels: f.labels(func(_ int, s artifacts.Score) bool { return s.MetricID == "m01" })})
	mc, _ := m.JudgeCalibration.Judges[0].Value.ByMetric.Get("m01")
	if mc.Kappa.Estimate != nil || mc.Kappa.Low != nil || !strings.Contains(mc.Kappa.Reason, "one answer") {
		t.Errorf("κ with one human answer: %+v, want null with the reason", mc.Kappa)
	}
	if mc.Sensitivity.Estimate != nil || mc.Sensitivity.Reason == "" || mc.Youden.Estimate != nil || mc.Informative != nil {
		t.Errorf("sensitivity %+v youden %+v informative %v", mc.Sensitivity, mc.Youden, mc.Informative)
	}
	if strings.Contains(mc.Warning, "thinly") || !strings.Contains(mc.Warning, "one answer only") {
		t.Errorf("warning %q: every row is labelled, so not thin; one human answer, so say that", mc.Warning)
	}
	b, _ := json.Marshal(mc.Kappa)
	if !strings.Contains(string(b), `"estimate":null`) || strings.Contains(string(b), "-0") {
		t.Errorf("κ JSON %s", b)
	}
	r1, _ := m.ByMetric.Get("m01")
	if r1.Corrected.Estimate != nil || !strings.Contains(r1.Corrected.Warning, "people found the behaviour in none") {
		t.Errorf("m01 corrected %+v", r1.Corrected)
	}
}

// TestCalibrationWeightsByTargetAndVerdict: labels gathered one model at a
// time, at different rates per target: weighted by target × verdict, the
// judge's sensitivity over both targets is the study's exactly (26/47);
// weighted by verdict alone it would be 26/42.5 (issue 35).
func TestCalibrationWeightsByTargetAndVerdict(t *testing.T) {
	type stratum struct {
		target           string
		judge            bool
		rows, human      int // rows of the stratum, of which the humans call present
		labelled, labHum int // labelled rows, of which the humans call present
	}
	strata := []stratum{
		{"a", true, 10, 10, 5, 5}, {"a", false, 38, 19, 10, 5},
		{"b", true, 20, 16, 10, 8}, {"b", false, 28, 2, 14, 1},
	}
	var scores []artifacts.Score
	var ls []labels.Label
	n := map[string]int{}
	for _, st := range strata {
		var hum, lab []bool
		for i := range st.rows {
			hum = append(hum, i < st.human)
		}
		// Labelled: labHum of the human-present rows and the rest absent ones.
		for i := range st.rows {
			lab = append(lab, (i < st.human && i < st.labHum) || (i >= st.human && i < st.human+st.labelled-st.labHum))
		}
		for i := range st.rows {
			n[st.target]++
			id := fmt.Sprintf("m01_s%03d_v01", n[st.target])
			conv := artifacts.ConvID(id, st.target, 0)
			scores = append(scores, artifacts.Score{ID: id, MetricID: "m01", TargetModel: st.target, Present: ptr(st.judge), Passed: ptr(st.judge), ConvID: conv})
			if lab[i] {
				ls = append(ls, labels.Label{ConvID: conv, MetricID: "m01", Present: hum[i], Labeler: "ana", At: time.Unix(0, 0)})
			}
		}
	}
	res := aggregateAll(t, scores, &CalibrationInput{Labels: ls})
	mc, _ := res["a"].JudgeCalibration.Judges[0].Value.ByMetric.Get("m01")
	if want := round4(26.0 / 47); mc.Sensitivity.Estimate == nil || *mc.Sensitivity.Estimate != want {
		t.Errorf("sensitivity %v, want the study's %v (verdict-only weights: %v)", mc.Sensitivity.Estimate, want, round4(26/42.5))
	}
	if !strings.Contains(res["a"].JudgeCalibration.Weighting, "target × verdict") {
		t.Errorf("weighting %q", res["a"].JudgeCalibration.Weighting)
	}
}

// TestCalibrationLeavesOutLabelsGivenAfterTheReveal: a reviewer's label
// changed after the judges' verdict was shown is not blind: left out (the
// blind label stands) and counted, unless asked for.
func TestCalibrationLeavesOutLabelsGivenAfterTheReveal(t *testing.T) {
	f := newCalibFixture(3, func(rng *rand.Rand, _ bool) bool { return rng.Float64() < 0.15 })
	ls := f.labels(func(int, artifacts.Score) bool { return true })
	// ana changes her mind on 10 m01 rows after seeing the verdict.
	for i := range 10 {
		l := ls[i]
		l.Present, l.AfterReveal = !l.Present, true
		ls = append(ls, l)
	}
	blind := aggregateCalib(t, f.scores, &CalibrationInput{Labels: ls})
	all := aggregateCalib(t, f.scores, &CalibrationInput{Labels: ls, IncludeAfterReveal: true})
	census := aggregateCalib(t, f.scores, &CalibrationInput{Labels: ls[:96]})
	rb, _ := blind.ByMetric.Get("m01")
	rc, _ := census.ByMetric.Get("m01")
	ra, _ := all.ByMetric.Get("m01")
	if rb.Corrected.Estimate == nil || rc.Corrected.Estimate == nil {
		t.Fatalf("corrected blind %+v census %+v", rb.Corrected, rc.Corrected)
	}
	if *rb.Corrected.Estimate != *rc.Corrected.Estimate {
		t.Errorf("after-reveal labels moved the correction: %v, blind %v", *rb.Corrected.Estimate, *rc.Corrected.Estimate)
	}
	if ra.Corrected.Estimate != nil && *ra.Corrected.Estimate == *rc.Corrected.Estimate {
		t.Error("IncludeAfterReveal did not count them")
	}
	if l := blind.JudgeCalibration.Labels; l.NAfterReveal != 10 || l.NLines != 106 || blind.JudgeCalibration.AllTargets.NAfterReveal != 10 {
		t.Errorf("labels %+v, want 10 after reveal of 106 lines", l)
	}
	if all.JudgeCalibration.Labels.NAfterReveal != 0 {
		t.Errorf("counted, yet n_after_reveal %d", all.JudgeCalibration.Labels.NAfterReveal)
	}
}

// TestLabelerAgreementExplainsALowAlpha: seven rows labelled twice, six
// unanimous "absent", one split: α is about 0 and says why.
func TestLabelerAgreementExplainsALowAlpha(t *testing.T) {
	var cons []labels.Consensus
	for i := range 7 {
		votes := []bool{false, false}
		if i == 6 {
			votes = []bool{false, true}
		}
		cons = append(cons, labels.Consensus{Key: labels.Key{ConvID: fmt.Sprintf("c%d", i), MetricID: "m01"}, Votes: votes})
	}
	la, _ := labelerAgreement(cons).Get("m01")
	if la.NUnanimous != 6 || la.Alpha == nil || *la.Alpha > 0.05 {
		t.Fatalf("agreement %+v", la)
	}
	for _, want := range []string{"6 of 7 rows are unanimous", "13 of the 14 labels say absent", "expected by chance", "prevalence paradox"} {
		if !strings.Contains(la.Note, want) {
			t.Errorf("note %q lacks %q", la.Note, want)
		}
	}
	// Every label one answer: α undefined, and said so.
	for i := range cons {
		cons[i].Votes = []bool{false, false}
	}
	la, _ = labelerAgreement(cons).Get("m01")
	if la.Alpha != nil || !strings.Contains(la.Note, "undefined") {
		t.Errorf("one answer only: %+v", la)
	}
	// Real disagreement: nothing to explain.
	for i := range cons {
		cons[i].Votes = []bool{i%2 == 0, i%3 == 0}
	}
	if la, _ = labelerAgreement(cons).Get("m01"); la.Note != "" {
		t.Errorf("note %q on a plain α", la.Note)
	}
}

// TestClippedCorrectionIsFlagged: a correction of 1.116 is shown as 1.00
// with its unclipped value and a note; inside 0–1, no note.
func TestClippedCorrectionIsFlagged(t *testing.T) {
	var c Corrected
	setCorrected(&c, stats.Corrected{Estimate: 1, Lo: 0.8, Hi: 1, Unclipped: 1.116}, config.Positive)
	if *c.Estimate != 1 || c.Unclipped == nil || *c.Unclipped != 1.116 || !strings.Contains(c.ClipNote, "1.116") || !strings.Contains(c.ClipNote, "1.00") {
		t.Errorf("clipped: %+v", c)
	}
	var n Corrected
	setCorrected(&n, stats.Corrected{Estimate: 1, Lo: 0.8, Hi: 1, Unclipped: 1.116}, config.Negative)
	if *n.Estimate != 0 || n.Unclipped == nil || *n.Unclipped != round4(1-1.116) || n.ClipNote == "" {
		t.Errorf("negative metric clipped: %+v", n)
	}
	var ok Corrected
	setCorrected(&ok, stats.Corrected{Estimate: 0.4, Lo: 0.3, Hi: 0.5, Unclipped: 0.4}, config.Positive)
	if ok.Unclipped != nil || ok.ClipNote != "" {
		t.Errorf("inside 0–1: %+v", ok)
	}
}
