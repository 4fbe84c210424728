package results

import (
	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/labels"
)

// CalibrationInput is what judge calibration and corrected rates need
// beyond the score rows. Labels must already be checked (labels.Read with
// the benchmark's conversations).
type CalibrationInput struct {
	Labels []labels.Label
	// MainJudge names the verdict of scores.json when it comes from a
	// single judge (config's evaluator label); a panel's majority is
	// "panel". "" means "judge".
	MainJudge string
	// Alternates are other judges' verdicts on the same conversations
	// (evaluate --judge output, runs/<target>/judges/<label>/scores.json).
	Alternates []AlternateScores
	// Repeats are evaluate --repeats outputs (runs/<target>/repeats.json).
	Repeats []TargetRepeats
}

// AlternateScores is one --judge panel's score rows for one target.
type AlternateScores struct {
	Target, Judge string
	Scores        []artifacts.Score
}

// TargetRepeats is one target's re-judged rows.
type TargetRepeats struct {
	Target string
	Rows   []RepeatRow
}

// RepeatRow is one re-judgement of a stored transcript (a repeats.json row):
// the score row as evaluate would write it, plus which repeat it is.
type RepeatRow struct {
	Repeat int `json:"repeat"`
	artifacts.Score
}

// Corrected is a pass rate corrected for the judge's errors (Rogan–Gladen,
// with the judge's sensitivity and specificity from human labels). Estimate,
// Low and High are null, and Warning says why, when the judge is not
// calibrated well enough for a number.
type Corrected struct {
	Estimate *float64 `json:"estimate"`
	Low      *float64 `json:"low"`
	High     *float64 `json:"high"`
	Method   string   `json:"method"`
	// Judge is the judge_calibration entry the correction used.
	Judge string `json:"judge"`
	// Se and Sp are the judge's weighted sensitivity and specificity
	// (per-metric corrections only; a track combines several metrics).
	Se *float64 `json:"se,omitempty"`
	Sp *float64 `json:"sp,omitempty"`
	// NLabels counts the labelled rows (human majority and judge verdict)
	// behind the correction.
	NLabels int    `json:"n_labels"`
	Warning string `json:"warning,omitempty"`
}

// LeaderboardCorrected is the leaderboard score from corrected track rates.
type LeaderboardCorrected struct {
	Score   *float64 `json:"score"`
	CILow   *float64 `json:"ci_low"`
	CIHigh  *float64 `json:"ci_high"`
	Method  string   `json:"method"`
	Judge   string   `json:"judge"`
	Warning string   `json:"warning,omitempty"`
}

// JudgeCalibration is every judge of one target measured against the human
// labels of that target's conversations.
type JudgeCalibration struct {
	Labels LabelSummary `json:"labels"`
	// MinLabelsPerClass is the fewest labelled rows per judge verdict
	// (present, absent) a corrected rate needs.
	MinLabelsPerClass int     `json:"min_labels_per_class"`
	Conf              float64 `json:"conf"`
	// Weighting says how labelled rows are weighted.
	Weighting string `json:"weighting"`
	// Judges: judge name → role and per-metric calibration.
	Judges Keyed[JudgeCalibrationEntry] `json:"judges"`
	// LabelerAgreement: per metric, agreement between labelers on rows
	// labelled by two or more people.
	LabelerAgreement Keyed[LabelerAgreement] `json:"labeler_agreement"`
}

// LabelSummary counts the labels of one target.
type LabelSummary struct {
	NLines    int `json:"n_lines"`
	NRows     int `json:"n_rows"`
	NTies     int `json:"n_ties"`
	NLabelers int `json:"n_labelers"`
	// NUnjudged counts labelled rows without a score row (not judged yet).
	NUnjudged int `json:"n_unjudged"`
}

// JudgeCalibrationEntry is one judge's calibration per metric.
type JudgeCalibrationEntry struct {
	// Role: "main" (scores.json's verdict; corrected rates use it),
	// "panel member" (one judge of the main panel) or "alternate"
	// (evaluate --judge output).
	Role     string                   `json:"role"`
	ByMetric Keyed[MetricCalibration] `json:"by_metric"`
}

// MetricCalibration is one judge on one metric against the humans.
type MetricCalibration struct {
	// N counts labelled rows with a human majority and a verdict of this
	// judge; the others split them by answer.
	N             int       `json:"n"`
	NHumanPresent int       `json:"n_human_present"`
	NHumanAbsent  int       `json:"n_human_absent"`
	NJudgePresent int       `json:"n_judge_present"`
	NJudgeAbsent  int       `json:"n_judge_absent"`
	Sensitivity   Statistic `json:"sensitivity"`
	Specificity   Statistic `json:"specificity"`
	Kappa         Statistic `json:"kappa"`
	// Agreement is the weighted share of rows where judge and humans agree.
	Agreement *float64 `json:"agreement"`
	// Informative: the labels show Se + Sp > 1 — the estimates say so and
	// κ's interval lies above 0 (null without both human answers).
	Informative *bool  `json:"informative"`
	Warning     string `json:"warning,omitempty"`
}

// Statistic is an estimate with its interval, the items behind it and
// how the interval was made.
type Statistic struct {
	Estimate *float64 `json:"estimate"`
	Low      *float64 `json:"low"`
	High     *float64 `json:"high"`
	N        int      `json:"n"`
	Method   string   `json:"method"`
}

// LabelerAgreement is agreement between people on one metric.
type LabelerAgreement struct {
	// NRows counts rows labelled by two or more people; NUnanimous those
	// where they all agree.
	NRows      int `json:"n_rows"`
	NUnanimous int `json:"n_unanimous"`
	// Alpha is Krippendorff's α (nominal) over those rows, NValues labels.
	Alpha   *float64 `json:"alpha"`
	NValues int      `json:"n_values"`
}

// JudgeConsistency is how often re-judging the same transcript changes the
// verdict (evaluate --repeats).
type JudgeConsistency struct {
	// Repeats is the largest repeat number found; each row has up to
	// Repeats + 1 verdicts (scores.json's and the repeats').
	Repeats int `json:"repeats"`
	// Judges: judge name → metric → flip rate.
	Judges Keyed[Keyed[FlipRate]] `json:"judges"`
}

// FlipRate is the share of rows whose verdicts are not unanimous.
type FlipRate struct {
	// NRows counts rows with two or more non-null verdicts.
	NRows    int      `json:"n_rows"`
	NFlipped int      `json:"n_flipped"`
	Rate     *float64 `json:"flip_rate"`
	// Low and High: a Wilson interval (rows as independent).
	Low  *float64 `json:"low"`
	High *float64 `json:"high"`
}
