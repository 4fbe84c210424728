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
	// IncludeAfterReveal counts labels given after the judges' verdict was
	// shown (labels.Label.AfterReveal); by default they are left out and
	// only counted (n_after_reveal).
	IncludeAfterReveal bool
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
	// Level says whose labels the sensitivity and specificity come from:
	// always "target" (this target's own labels of the metric, weighted to
	// its own rows), so that a judge erring differently on another target
	// cannot move this one. LevelNote is free for a note on the level.
	Level     string `json:"level,omitempty"`
	LevelNote string `json:"level_note,omitempty"`
	// Unclipped is the estimate before it was clipped to 0–1 (set only when
	// it was), ClipNote says so in words.
	Unclipped *float64 `json:"unclipped_estimate,omitempty"`
	ClipNote  string   `json:"clip_note,omitempty"`
	// Se and Sp are the judge's weighted sensitivity and specificity used
	// (per-metric corrections only; a track combines several metrics).
	Se *float64 `json:"se,omitempty"`
	Sp *float64 `json:"sp,omitempty"`
	// NLabels counts the labelled rows (human majority and judge verdict)
	// behind the correction: of the level's pool.
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

// JudgeCalibration is every judge measured against the human labels. A
// judge's error is a property of the judge on a metric, so its calibration
// pools the labels of every target (the same block in every model's entry,
// but for Labels and ThisTarget).
type JudgeCalibration struct {
	// Labels counts this target's labels; AllTargets every target's.
	Labels     LabelSummary  `json:"labels"`
	AllTargets *LabelSummary `json:"labels_all_targets,omitempty"`
	// MinLabelsPerClass is the fewest labelled rows per judge verdict
	// (present, absent) a metric's own corrected rate needs.
	MinLabelsPerClass int     `json:"min_labels_per_class"`
	Conf              float64 `json:"conf"`
	// Weighting says how labelled rows are weighted; Pooling how labels of
	// several targets and metrics are combined.
	Weighting string `json:"weighting"`
	Pooling   string `json:"pooling,omitempty"`
	// Judges: judge name → role and per-metric calibration.
	Judges Keyed[JudgeCalibrationEntry] `json:"judges"`
	// LabelerAgreement: per metric, agreement between labelers on rows
	// labelled by two or more people (every target).
	LabelerAgreement Keyed[LabelerAgreement] `json:"labeler_agreement"`
}

// LabelSummary counts labels.
type LabelSummary struct {
	NLines    int `json:"n_lines"`
	NRows     int `json:"n_rows"`
	NTies     int `json:"n_ties"`
	NLabelers int `json:"n_labelers"`
	// NUnjudged counts labelled rows without a score row (not judged yet).
	NUnjudged int `json:"n_unjudged"`
	// NAfterReveal counts label lines left out because they were given
	// after the judges' verdict was shown (0 when they were counted).
	NAfterReveal int `json:"n_after_reveal"`
	// NStale counts label lines left out because they were given on a
	// transcript the conversation no longer has (it was run again since
	// the person read it; labels.Label.Stale), with the same person's
	// earlier lines on the row.
	NStale int `json:"n_stale"`
}

// JudgeCalibrationEntry is one judge's calibration per metric.
type JudgeCalibrationEntry struct {
	// Role: "main" (scores.json's verdict; corrected rates use it),
	// "panel member" (one judge of the main panel) or "alternate"
	// (evaluate --judge output).
	Role string `json:"role"`
	// ByMetric pools every target's labels of the metric (scope "all
	// targets").
	ByMetric Keyed[MetricCalibration] `json:"by_metric"`
	// AllMetrics (main judge) pools every metric's labels: what a thinly
	// labelled metric is corrected with.
	AllMetrics *MetricCalibration `json:"all_metrics,omitempty"`
	// ThisTarget (main judge) is the judge on this target's labels alone,
	// for the metrics whose by_target test says the error differs.
	ThisTarget Keyed[MetricCalibration] `json:"this_target,omitempty"`
}

// MetricCalibration is one judge on one metric against the humans.
// Sensitivity, specificity, κ and agreement are weighted back to the
// study's mix of verdicts ("weighted": true); the raw counts behind them
// are beside each (hits of n).
type MetricCalibration struct {
	// Scope is whose labels these are: "all targets", "target" or "all
	// metrics"; NTargets counts the targets with labelled rows in it.
	Scope    string `json:"scope"`
	NTargets int    `json:"n_targets"`
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
	// Youden is sensitivity + specificity − 1: a corrected rate needs its
	// interval above 0.
	Youden Statistic `json:"youden_j"`
	// Agreement is the weighted share of rows where judge and humans
	// agree; NAgree the raw number of such rows (of N).
	Agreement *float64 `json:"agreement"`
	NAgree    int      `json:"n_agree"`
	// Informative: the labels show Se + Sp > 1 (Youden's J's one-sided
	// lower confidence limit above 0: a one-sided test at 1 − conf); null
	// without both human answers. YoudenLower is that limit.
	Informative *bool    `json:"informative"`
	YoudenLower *float64 `json:"youden_j_lower,omitempty"`
	// ByTarget tests whether the judge's error differs by target.
	ByTarget *TargetTest `json:"by_target,omitempty"`
	Warning  string      `json:"warning,omitempty"`
}

// Statistic is an estimate with its interval, the items behind it and
// how the interval was made. Weighted estimates say so, with the raw
// count: Hits of N. An undefined estimate is null with Reason.
type Statistic struct {
	Estimate *float64 `json:"estimate"`
	Low      *float64 `json:"low"`
	High     *float64 `json:"high"`
	N        int      `json:"n"`
	Hits     *int     `json:"hits,omitempty"`
	Weighted bool     `json:"weighted,omitempty"`
	Method   string   `json:"method"`
	Reason   string   `json:"reason,omitempty"`
}

// TargetTest is the test of whether a judge's error on a metric differs by
// target (stats.JudgeHeterogeneity): P is its permutation p-value, PAdjusted
// Holm's over the judge's metrics; Differs when PAdjusted < 0.05. Null P
// with Reason when there is nothing to compare.
type TargetTest struct {
	Statistic *float64 `json:"statistic"`
	DF        int      `json:"df"`
	P         *float64 `json:"p_value"`
	PAdjusted *float64 `json:"p_adjusted"`
	Differs   bool     `json:"differs"`
	NTargets  int      `json:"n_targets"`
	Method    string   `json:"method"`
	Reason    string   `json:"reason,omitempty"`
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
	// Note explains an α near 0 (or undefined) beside a high raw
	// agreement: nearly every label gives one answer (the prevalence
	// paradox). Omitted when there is nothing to explain.
	Note string `json:"note,omitempty"`
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
