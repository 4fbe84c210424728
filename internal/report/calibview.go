package report

import (
	"strings"

	"github.com/impactbench/impactbench/internal/results"
)

// This file turns results.json's judge calibration (judge_calibration,
// the corrected rates, judge_consistency) into the "Judge calibration"
// section and the leaderboard's corrected mode. As in statsview.go, every
// number comes from results.json; the page only lays them out. Judge and
// model names are config or model text: app.js writes them as text.

// calibrationView is the "Judge calibration" section.
type calibrationView struct {
	// Models lists the models with a judge_calibration block, in
	// leaderboard order.
	Models []modelCalibration `json:"models"`
	// Consistency lists evaluate --repeats flip rates (independent of
	// labels), per model, judge and metric.
	Consistency []flipRow `json:"consistency"`
}

// modelCalibration is one model's judge_calibration block.
type modelCalibration struct {
	Model  string               `json:"model"`
	Labels results.LabelSummary `json:"labels"`
	// AllTargets counts every target's labels (the calibration pools
	// them); Pooling says how.
	AllTargets  *results.LabelSummary `json:"labels_all,omitempty"`
	Pooling     string                `json:"pooling,omitempty"`
	MinPerClass int                   `json:"min_per_class"`
	Conf        float64               `json:"conf"`
	Weighting   string                `json:"weighting"`
	// Judges has one row per judge and metric, judges in results.json's
	// order (main first, then panel members, then alternates), the main
	// judge's all-metrics row after its metrics.
	Judges []judgeCalRow `json:"judges"`
	// Own lists the main judge on this model's labels alone, for the
	// metrics whose by-target test says its error differs.
	Own      []judgeCalRow `json:"own"`
	Labelers []labelerRow  `json:"labelers"`
	// Corrected lists the corrected rates: the tracks, then each metric.
	Corrected []correctedRow `json:"corrected"`
}

// judgeCalRow is one judge on one metric against the humans.
type judgeCalRow struct {
	Judge        string   `json:"judge"`
	Role         string   `json:"role"`
	Metric       string   `json:"metric"`
	N            int      `json:"n"`
	HumanPresent int      `json:"h_pres"`
	HumanAbsent  int      `json:"h_abs"`
	JudgePresent int      `json:"j_pres"`
	JudgeAbsent  int      `json:"j_abs"`
	Se           statView `json:"se"`
	Sp           statView `json:"sp"`
	Kappa        statView `json:"kappa"`
	Youden       statView `json:"youden"`
	Agreement    *float64 `json:"agree"`
	NAgree       int      `json:"n_agree"`
	Informative  *bool    `json:"informative"`
	Warn         string   `json:"warn,omitempty"`
	// Scope and Targets: whose labels (all targets, target, all metrics);
	// Test is the by-target test, nil when not run.
	Scope   string    `json:"scope"`
	Targets int       `json:"targets"`
	Test    *testView `json:"test,omitempty"`
}

// testView is the by-target test of a judge's error on a metric.
type testView struct {
	P       *float64 `json:"p"`
	PAdj    *float64 `json:"p_adj"`
	Differs bool     `json:"differs"`
	Reason  string   `json:"reason,omitempty"`
	Method  string   `json:"method"`
}

// statView is an estimate with its interval and n; Est is nil when the
// labels cannot say (e.g. no human "present" for a sensitivity).
type statView struct {
	Est    *float64 `json:"est"`
	Lo     *float64 `json:"lo"`
	Hi     *float64 `json:"hi"`
	N      int      `json:"n"`
	Method string   `json:"method,omitempty"`
	// Weighted estimates carry their raw count (Hits of N); a null one
	// its Reason.
	Weighted bool   `json:"weighted,omitempty"`
	Hits     *int   `json:"hits,omitempty"`
	Reason   string `json:"reason,omitempty"`
}

// labelerRow is agreement between people on one metric.
type labelerRow struct {
	Metric    string   `json:"metric"`
	Rows      int      `json:"rows"`
	Unanimous int      `json:"unanimous"`
	Alpha     *float64 `json:"alpha"`
	Values    int      `json:"values"`
	// Note explains a low α beside a high raw agreement.
	Note string `json:"note,omitempty"`
}

// correctedRow is an observed pass rate beside its corrected one.
type correctedRow struct {
	// Key is "positive", "negative" or a metric id.
	Key      string   `json:"key"`
	Track    bool     `json:"track,omitempty"`
	Observed *float64 `json:"obs"`
	Corr     corrRate `json:"corr"`
}

// corrRate is one corrected pass rate; Rate is nil and Warn says why when
// the judge is not calibrated well enough for a number.
type corrRate struct {
	Rate    *float64 `json:"rate"`
	Lo      *float64 `json:"lo"`
	Hi      *float64 `json:"hi"`
	Judge   string   `json:"judge"`
	Method  string   `json:"method,omitempty"`
	Se      *float64 `json:"se,omitempty"`
	Sp      *float64 `json:"sp,omitempty"`
	NLabels int      `json:"n_labels"`
	Warn    string   `json:"warn,omitempty"`
	// Level names whose calibration corrected it; Note why, when it is not
	// the pooled one.
	Level string `json:"level,omitempty"`
	Note  string `json:"note,omitempty"`
}

// flipRow is one judge's self-consistency on one metric of one model.
type flipRow struct {
	Model   string   `json:"model"`
	Judge   string   `json:"judge"`
	Metric  string   `json:"metric"`
	Repeats int      `json:"repeats"`
	Rows    int      `json:"rows"`
	Flipped int      `json:"flipped"`
	Rate    *float64 `json:"rate"`
	Lo      *float64 `json:"lo"`
	Hi      *float64 `json:"hi"`
}

// correctedScore is a leaderboard row's score from judge-error-corrected
// track rates (results.json leaderboard.corrected), with the corrected
// tracks beside it. Score is nil and Warn says why when it could not be
// corrected.
type correctedScore struct {
	Score  *float64  `json:"score"`
	Lo     *float64  `json:"lo"`
	Hi     *float64  `json:"hi"`
	Method string    `json:"method"`
	Judge  string    `json:"judge"`
	Warn   string    `json:"warn,omitempty"`
	Pos    *corrRate `json:"pos,omitempty"`
	Neg    *corrRate `json:"neg,omitempty"`
}

// correctedScoreFor is r's leaderboard.corrected, or nil when results.json
// has none (no labels, or written before calibration existed): the page
// enables its corrected mode only when some row has one.
func correctedScoreFor(r *results.ModelResult) *correctedScore {
	if r == nil || r.Leaderboard == nil || r.Leaderboard.Corrected == nil {
		return nil
	}
	c := r.Leaderboard.Corrected
	return &correctedScore{Score: c.Score, Lo: c.CILow, Hi: c.CIHigh, Method: c.Method, Judge: c.Judge, Warn: c.Warning,
		Pos: corrOf(r.PositiveCorrected), Neg: corrOf(r.NegativeCorrected)}
}

func corrOf(c *results.Corrected) *corrRate {
	if c == nil {
		return nil
	}
	note := c.LevelNote
	if c.ClipNote != "" {
		note = strings.TrimPrefix(note+"; "+c.ClipNote, "; ")
	}
	return &corrRate{Rate: c.Estimate, Lo: c.Low, Hi: c.High, Judge: c.Judge, Method: c.Method, Se: c.Se, Sp: c.Sp, NLabels: c.NLabels, Warn: c.Warning,
		Level: c.Level, Note: note}
}

// buildCalibration collects every model's calibration and flip rates in
// leaderboard order.
func buildCalibration(in *Input, order []string) calibrationView {
	var v calibrationView
	for _, model := range order {
		r := resultFor(in, model)
		if r == nil {
			continue
		}
		if r.JudgeCalibration != nil {
			v.Models = append(v.Models, modelCalibrationOf(r))
		}
		v.Consistency = append(v.Consistency, flipRows(r)...)
	}
	v.Models = nonNil(v.Models)
	v.Consistency = nonNil(v.Consistency)
	return v
}

func modelCalibrationOf(r *results.ModelResult) modelCalibration {
	jc := r.JudgeCalibration
	m := modelCalibration{Model: r.TargetModel, Labels: jc.Labels, AllTargets: jc.AllTargets, Pooling: jc.Pooling,
		MinPerClass: jc.MinLabelsPerClass, Conf: jc.Conf, Weighting: jc.Weighting}
	for _, j := range jc.Judges {
		for _, e := range j.Value.ByMetric {
			m.Judges = append(m.Judges, judgeRow(j.Key, j.Value.Role, e.Key, e.Value))
		}
		if a := j.Value.AllMetrics; a != nil {
			m.Judges = append(m.Judges, judgeRow(j.Key, j.Value.Role, "all metrics", *a))
		}
		for _, e := range j.Value.ThisTarget {
			m.Own = append(m.Own, judgeRow(j.Key, j.Value.Role, e.Key, e.Value))
		}
	}
	for _, e := range jc.LabelerAgreement {
		a := e.Value
		m.Labelers = append(m.Labelers, labelerRow{Metric: e.Key, Rows: a.NRows, Unanimous: a.NUnanimous, Alpha: a.Alpha, Values: a.NValues, Note: a.Note})
	}
	m.Corrected = correctedRows(r)
	m.Judges = nonNil(m.Judges)
	m.Own = nonNil(m.Own)
	m.Labelers = nonNil(m.Labelers)
	return m
}

func judgeRow(judge, role, metric string, c results.MetricCalibration) judgeCalRow {
	row := judgeCalRow{Judge: judge, Role: role, Metric: metric, N: c.N,
		HumanPresent: c.NHumanPresent, HumanAbsent: c.NHumanAbsent, JudgePresent: c.NJudgePresent, JudgeAbsent: c.NJudgeAbsent,
		Se: statOf(c.Sensitivity), Sp: statOf(c.Specificity), Kappa: statOf(c.Kappa), Youden: statOf(c.Youden),
		Agreement: c.Agreement, NAgree: c.NAgree, Informative: c.Informative, Warn: c.Warning, Scope: c.Scope, Targets: c.NTargets}
	if t := c.ByTarget; t != nil {
		row.Test = &testView{P: t.P, PAdj: t.PAdjusted, Differs: t.Differs, Reason: t.Reason, Method: t.Method}
	}
	return row
}

func statOf(s results.Statistic) statView {
	return statView{Est: s.Estimate, Lo: s.Low, Hi: s.High, N: s.N, Method: s.Method, Weighted: s.Weighted, Hits: s.Hits, Reason: s.Reason}
}

// correctedRows lists r's tracks and then its metrics, each observed rate
// beside its corrected one (skipping those results.json did not correct).
func correctedRows(r *results.ModelResult) []correctedRow {
	var out []correctedRow
	track := func(key string, obs *float64, c *results.Corrected) {
		if c != nil {
			out = append(out, correctedRow{Key: key, Track: true, Observed: obs, Corr: *corrOf(c)})
		}
	}
	track("positive", r.PositivePassRate, r.PositiveCorrected)
	track("negative", r.NegativePassRate, r.NegativeCorrected)
	for _, e := range r.ByMetric {
		if e.Value.Corrected != nil {
			out = append(out, correctedRow{Key: e.Key, Observed: e.Value.PassRate, Corr: *corrOf(e.Value.Corrected)})
		}
	}
	return nonNil(out)
}

func flipRows(r *results.ModelResult) []flipRow {
	jc := r.JudgeConsistency
	if jc == nil {
		return nil
	}
	var out []flipRow
	for _, j := range jc.Judges {
		for _, e := range j.Value {
			f := e.Value
			out = append(out, flipRow{Model: r.TargetModel, Judge: j.Key, Metric: e.Key, Repeats: jc.Repeats,
				Rows: f.NRows, Flipped: f.NFlipped, Rate: f.Rate, Lo: f.Low, Hi: f.High})
		}
	}
	return out
}
