// Package results computes results.json from score rows: upstream
// ImpactBench's aggregate (pooled positive/negative pass rates, per-metric
// and per-scenario rates), byte-compatible with upstream's file, plus our
// additions (confidence intervals, per-demographic breakdowns, sample and
// judge agreement, paired demographic tests, validity), which are appended
// after upstream's keys so upstream readers keep working. FIELDS.md explains
// every added field.
package results

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/impactbench/impactbench/internal/artifacts"
)

// Keyed is a JSON object with ordered keys whose values share one type
// (by_metric, by_scenario, …). Encoded in slice order.
type Keyed[T any] []Entry[T]

// Entry is one key of a Keyed object.
type Entry[T any] struct {
	Key   string
	Value T
}

// Get returns the value under key.
func (k Keyed[T]) Get(key string) (T, bool) {
	for _, e := range k {
		if e.Key == key {
			return e.Value, true
		}
	}
	var zero T
	return zero, false
}

// Keys lists the keys in order.
func (k Keyed[T]) Keys() []string {
	out := make([]string, len(k))
	for i, e := range k {
		out[i] = e.Key
	}
	return out
}

// PyValue encodes the entries in order ({} when empty).
func (k Keyed[T]) PyValue() (any, error) {
	o := make(artifacts.Object, len(k))
	for i, e := range k {
		o[i] = artifacts.Pair{Key: e.Key, Value: e.Value}
	}
	return o, nil
}

// MarshalJSON keeps key order for encoding/json users.
func (k Keyed[T]) MarshalJSON() ([]byte, error) { return artifacts.MarshalPy(k) }

// UnmarshalJSON reads an object keeping its key order.
func (k *Keyed[T]) UnmarshalJSON(data []byte) error {
	if isNull(data) {
		return nil // JSON null: nothing here, as encoding/json treats it
	}
	var o artifacts.Object
	if err := o.UnmarshalJSON(data); err != nil {
		return err
	}
	out := make(Keyed[T], 0, len(o))
	for _, p := range o {
		var v T
		if err := json.Unmarshal(p.Value.(json.RawMessage), &v); err != nil {
			return fmt.Errorf("key %q: %w", p.Key, err)
		}
		out = append(out, Entry[T]{p.Key, v})
	}
	*k = out
	return nil
}

// Rate is a pass rate over the rows with a verdict: upstream's
// {pass_rate, n_passed, n_total}, where n_total counts only rows whose
// passed is non-null (unlike the model-level n_total). With WithCI (our
// output) a Wilson interval follows as ci_low, ci_high (null when n_total
// is 0), then, where the rate spans several base scenarios (the model's
// by_metric, by_demographic's positive/negative), ClusterCI as cluster_ci.
type Rate struct {
	PassRate  *float64   `json:"pass_rate"`
	NPassed   int        `json:"n_passed"`
	NTotal    int        `json:"n_total"`
	CILow     *float64   `json:"ci_low"`
	CIHigh    *float64   `json:"ci_high"`
	ClusterCI *ClusterCI `json:"cluster_ci"`
	// Corrected is the rate corrected for the judge's errors (by_metric,
	// with human labels only).
	Corrected *Corrected `json:"corrected,omitempty"`
	WithCI    bool       `json:"-"`
}

// PyValue writes upstream's three keys, then the intervals when WithCI.
func (r Rate) PyValue() (any, error) {
	o := artifacts.Object{
		{Key: "pass_rate", Value: r.PassRate},
		{Key: "n_passed", Value: r.NPassed},
		{Key: "n_total", Value: r.NTotal},
	}
	if r.WithCI {
		o = append(o, artifacts.Pair{Key: "ci_low", Value: r.CILow}, artifacts.Pair{Key: "ci_high", Value: r.CIHigh})
		if r.ClusterCI != nil {
			o = append(o, artifacts.Pair{Key: "cluster_ci", Value: r.ClusterCI})
		}
		if r.Corrected != nil {
			o = append(o, artifacts.Pair{Key: "corrected", Value: r.Corrected})
		}
	}
	return o, nil
}

// MarshalJSON keeps key order for encoding/json users.
func (r Rate) MarshalJSON() ([]byte, error) { return artifacts.MarshalPy(r) }

// UnmarshalJSON sets WithCI when the file carries the interval keys.
func (r *Rate) UnmarshalJSON(data []byte) error {
	if isNull(data) {
		return nil // JSON null: nothing here, as encoding/json treats it
	}
	type plain Rate
	var p plain
	if err := json.Unmarshal(data, &p); err != nil {
		return err
	}
	var o artifacts.Object
	if err := o.UnmarshalJSON(data); err != nil {
		return err
	}
	_, p.WithCI = o.Get("ci_low")
	*r = Rate(p)
	return nil
}

// ClusterCI is an interval for a rate over base scenarios (positive_ci,
// negative_ci, by_metric's cluster_ci, panel and per-judge rates): the
// base scenario is the unit, so a scenario's demographic variants and
// samples count as one piece of evidence (stats.ClusterRate). Estimate, Low
// and High are null when there is no observation. Warning is set (and
// written) only when there are fewer than stats.FewClusters clusters.
type ClusterCI struct {
	// N and Passed count the observations (rows with a verdict, or judge
	// verdicts for panel rates) behind the rate.
	N        int      `json:"n"`
	Passed   int      `json:"n_passed"`
	Estimate *float64 `json:"estimate"`
	Low      *float64 `json:"low"`
	High     *float64 `json:"high"`
	Method   string   `json:"method"`
	Clusters int      `json:"clusters"`
	Conf     float64  `json:"conf,omitempty"`
	// DF is the t interval's degrees of freedom (clusters − 1).
	DF int `json:"df"`
	// ICC is the ANOVA intra-class correlation of the observations;
	// ICCUpper its one-sided 90% upper bound, which sets DesignEffect and
	// EffectiveN (observations ÷ design effect) behind the Wilson part.
	ICC          *float64 `json:"icc"`
	ICCUpper     *float64 `json:"icc_upper"`
	DesignEffect *float64 `json:"design_effect"`
	EffectiveN   *float64 `json:"effective_n"`
	// Reference intervals beside [Low, High]: the t interval on the pooled
	// rate, Wilson on EffectiveN, and the betting interval — the any-mix
	// bound, valid whatever the mix of scenario rates (absent from files
	// written before it). Files written before the cluster-score interval
	// (method cluster-betting+t+wilson-eff) have [Low, High] = their hull.
	TLow        *float64 `json:"t_low"`
	THigh       *float64 `json:"t_high"`
	WilsonLow   *float64 `json:"wilson_low"`
	WilsonHigh  *float64 `json:"wilson_high"`
	BettingLow  *float64 `json:"betting_low,omitempty"`
	BettingHigh *float64 `json:"betting_high,omitempty"`
	// Dispersion is the design effect [Low, High] rests on (cluster-score:
	// the cluster-robust variance over the binomial one, at least 1; above
	// 1.5 a single metric's [Low, High] also holds the 60 % betting
	// interval) and
	// QuantileDF the degrees of freedom of its t quantile (absent: normal
	// quantile); both absent from files written before the cluster-score
	// interval.
	Dispersion *float64 `json:"dispersion,omitempty"`
	QuantileDF *float64 `json:"quantile_df,omitempty"`
	// Strata is the number of metrics a track's interval treats as fixed
	// strata (absent for a single metric).
	Strata  int    `json:"strata,omitempty"`
	Warning string `json:"warning,omitempty"`
	// Reps and Seed belong to the cluster bootstrap of older files; they
	// are read, never written.
	Reps int    `json:"reps,omitempty"`
	Seed uint64 `json:"seed,omitempty"`
}

// DemographicValue is one value of one axis in by_demographic.
type DemographicValue struct {
	PassRate         *float64 `json:"pass_rate"`
	NPassed          int      `json:"n_passed"`
	NTotal           int      `json:"n_total"`
	CILow            *float64 `json:"ci_low"`
	CIHigh           *float64 `json:"ci_high"`
	PositivePassRate *float64 `json:"positive_pass_rate"`
	NegativePassRate *float64 `json:"negative_pass_rate"`
	// Positive and Negative give those two rates with n and a Wilson interval.
	Positive Rate        `json:"positive"`
	Negative Rate        `json:"negative"`
	ByMetric Keyed[Rate] `json:"by_metric"`
}

// Agreement summarises repeated samples of the same scenario.
type Agreement struct {
	NGroups        int                      `json:"n_groups"`
	UnanimousShare *float64                 `json:"unanimous_share"`
	FleissKappa    *float64                 `json:"fleiss_kappa"`
	ByScenario     Keyed[ScenarioAgreement] `json:"by_scenario"`
	PassK          PassK                    `json:"pass_k"`
	// ByMetric is agreement between samples on present, per metric.
	ByMetric Keyed[PresentAgreement] `json:"by_metric"`
	// Identical, when some scenario's samples are byte-identical
	// conversations, names them; every figure above leaves them out.
	Identical *IdenticalSamples `json:"identical_samples,omitempty"`
}

// PresentAgreement is agreement on present for one metric: Krippendorff's
// α over every unit with two or more non-null verdicts (nulls left out),
// and Fleiss' κ over the units with the usual number of verdicts.
type PresentAgreement struct {
	NUnits      int      `json:"n_units"`
	NValues     int      `json:"n_values"`
	Alpha       *float64 `json:"alpha"`
	FleissKappa *float64 `json:"fleiss_kappa"`
	NKappaUnits int      `json:"n_kappa_units"`
}

// ScenarioAgreement is one scenario's samples.
type ScenarioAgreement struct {
	NSamples  int   `json:"n_samples"`
	NPassed   int   `json:"n_passed"`
	Unanimous *bool `json:"unanimous"` // null with fewer than 2 verdicts
}

// PassK is τ-bench's pass^k with k = the number of samples per scenario.
type PassK struct {
	K        int             `json:"k"`
	Overall  *float64        `json:"overall"`
	ByMetric Keyed[*float64] `json:"by_metric"`
}

// JudgeAgreement is agreement within a judge panel.
type JudgeAgreement struct {
	Judges       []string           `json:"judges"`
	RawAgreement *float64           `json:"raw_agreement"`
	Kappa        *float64           `json:"kappa"`
	KappaMethod  string             `json:"kappa_method"`
	N            int                `json:"n"`
	ByMetric     Keyed[JudgeMetric] `json:"by_metric"`
	// Alpha is Krippendorff's α on present over every panel row with two
	// or more non-null verdicts (pooled over metrics; read ByMetric).
	Alpha  *float64 `json:"alpha"`
	NAlpha int      `json:"n_alpha"`
	// Panel holds the rates that use every verdict.
	Panel *Panel `json:"panel,omitempty"`
}

// JudgeMetric is panel agreement on one metric.
type JudgeMetric struct {
	RawAgreement *float64 `json:"raw_agreement"`
	Kappa        *float64 `json:"kappa"`
	N            int      `json:"n"`
	Alpha        *float64 `json:"alpha"`
	NAlpha       int      `json:"n_alpha"`
}

// Gap is one paired comparison of two values of a demographic axis.
// RateA..C describe the matched conversation pairs; the test is at the
// base-scenario level (stats.ClusterDiff): p_value is the procedure's
// p-value (the sign-flip test combined with the binomial floor; Test names
// it) and [ci_low, ci_high] its inversion, so the interval excludes 0
// exactly when p_value < 0.05. p_adjusted is Holm within the gap's family
// (Family: this model's gaps on this metric), q_value Benjamini–Hochberg
// within it, and Significant means p_adjusted < 0.05. Files written before
// the clustered test have no Test and hold the McNemar p-value in p_value;
// files written before families have one family per file and no
// family/q_value.
type Gap struct {
	MetricID    string   `json:"metric_id"`
	Axis        string   `json:"axis"`
	ValueA      string   `json:"value_a"`
	ValueB      string   `json:"value_b"`
	RateA       *float64 `json:"rate_a"`
	RateB       *float64 `json:"rate_b"`
	Diff        *float64 `json:"diff"`
	NPairs      int      `json:"n_pairs"`
	B           int      `json:"b"`
	C           int      `json:"c"`
	PValue      float64  `json:"p_value"`
	PAdjusted   float64  `json:"p_adjusted"`
	Significant bool     `json:"significant"`
	// Clustered analysis: the mean over base scenarios of (rate of A −
	// rate of B) within the scenario, its t interval, and the test used.
	NClusters   int      `json:"n_clusters"`
	ClusterDiff *float64 `json:"cluster_diff"`
	CILow       *float64 `json:"ci_low"`
	CIHigh      *float64 `json:"ci_high"`
	Test        string   `json:"test,omitempty"`
	// McNemarP is the exact McNemar p-value over conversation pairs, kept
	// for reference: it treats every pair as independent and overstates.
	McNemarP *float64 `json:"mcnemar_p,omitempty"`
	Warning  string   `json:"warning,omitempty"`
	Tested
}

// Tested is what every test of the file adds after its upstream-shaped
// fields: the two parts of the procedure and the multiplicity family.
type Tested struct {
	// PSignFlip and PFloor are the sign-flip test's and the binomial
	// floor's p-values; p_value is the larger.
	PSignFlip *float64 `json:"p_sign_flip,omitempty"`
	PFloor    *float64 `json:"p_floor,omitempty"`
	// Family names the question the test belongs to (see Multiplicity);
	// FamilySize counts its tests; QValue is the Benjamini–Hochberg
	// adjusted p-value within it.
	Family     string   `json:"family,omitempty"`
	FamilySize int      `json:"family_size,omitempty"`
	QValue     *float64 `json:"q_value,omitempty"`
}

// Multiplicity says how the file's p-values were adjusted: Holm within
// each family of tests that answer one question (Families: family → number
// of tests), Benjamini–Hochberg q-values beside it. Family describes the
// rule; FamilySize is the largest family's size (files written before
// families had one family per file, and FamilySize was the file's number
// of tests).
type Multiplicity struct {
	Correction string     `json:"correction"`
	Family     string     `json:"family"`
	FamilySize int        `json:"family_size"`
	Alpha      float64    `json:"alpha"`
	FDR        string     `json:"fdr,omitempty"`
	Families   Keyed[int] `json:"families,omitempty"`
}

// Pairwise is this model minus Other on the same base scenarios, on one
// track (positive, negative, or leaderboard: their mean) and optionally one
// metric.
type Pairwise struct {
	Other       string   `json:"other"`
	Track       string   `json:"track"`
	MetricID    *string  `json:"metric_id"`
	Diff        *float64 `json:"diff"`
	CILow       *float64 `json:"ci_low"`
	CIHigh      *float64 `json:"ci_high"`
	PValue      float64  `json:"p_value"`
	PAdjusted   float64  `json:"p_adjusted"`
	Significant bool     `json:"significant"`
	NClusters   int      `json:"n_clusters"`
	Test        string   `json:"test"`
	Warning     string   `json:"warning,omitempty"`
	Tested
}

// Leaderboard is the model's place in the file: Score is the mean of its
// positive and negative pass rates (the tracks it has), with an interval,
// its rank and a bootstrap interval for the rank, and the models it is
// statistically tied with.
type Leaderboard struct {
	Score      *float64 `json:"score"`
	CILow      *float64 `json:"ci_low"`
	CIHigh     *float64 `json:"ci_high"`
	Tracks     []string `json:"tracks"`
	Method     string   `json:"method"`
	Rank       *int     `json:"rank"`
	RankCILow  *int     `json:"rank_ci_low"`
	RankCIHigh *int     `json:"rank_ci_high"`
	TiedWith   []string `json:"tied_with"`
	Warning    string   `json:"warning,omitempty"`
	// Corrected is the score from judge-error-corrected track rates
	// (present only with human labels).
	Corrected *LeaderboardCorrected `json:"corrected,omitempty"`
}

// Panel is a judge panel's rates from every verdict: per judge, and pooled
// over all judges (the share of verdicts that mean "pass"), so a split
// verdict counts half instead of dropping the row.
type Panel struct {
	NRows int `json:"n_rows"`
	// NSplit counts rows whose judges disagreed; NNoMajority those whose
	// majority is a tie (passed null, left out of upstream's rates).
	NSplit      int                   `json:"n_split"`
	NNoMajority int                   `json:"n_no_majority"`
	Positive    *ClusterCI            `json:"positive"`
	Negative    *ClusterCI            `json:"negative"`
	ByJudge     Keyed[JudgeTrackRate] `json:"by_judge"`
}

// JudgeTrackRate is one judge's pass rates on the panel's rows.
type JudgeTrackRate struct {
	Positive *ClusterCI `json:"positive"`
	Negative *ClusterCI `json:"negative"`
}

// ValidityStats is the valid-rollout rate: how many conversations the
// checks of the simulated user examined and found valid. The first three
// keys are the landmark check's (older files have only those).
type ValidityStats struct {
	Checked int      `json:"checked"`
	Valid   int      `json:"valid"`
	Share   *float64 `json:"share"` // valid / checked: the valid-rollout rate
	// N is every row; Invalid the checked ones found invalid (left out of
	// every rate: they have no verdict); Unchecked the rest.
	N         int `json:"n,omitempty"`
	Invalid   int `json:"invalid,omitempty"`
	Unchecked int `json:"unchecked,omitempty"`
	// Kinds counts the invalid conversations by failure kind (one may
	// have several), in artifacts.FailureKinds order.
	Kinds Keyed[int] `json:"kinds,omitempty"`
	// ByMetric and ByUserModel are the same counts per metric and per
	// simulated user's model.
	ByMetric    Keyed[ValidityCount] `json:"by_metric,omitempty"`
	ByUserModel Keyed[ValidityCount] `json:"by_user_model,omitempty"`
	// Warning: invalid conversations that still carry a verdict (judged
	// before invalid conversations were left unjudged) count in the rates.
	Warning string `json:"warning,omitempty"`
	// Estimated is the valid-rollout rate when the audit read a sample
	// (validity.audit_share below 1): Share then counts the unsampled rows
	// valid on the turn checks alone, and this estimates what the audit
	// would have found. nil when every conversation was audited.
	Estimated *SampledValidity `json:"estimated,omitempty"`
}

// SampledValidity is the valid-rollout rate estimated from a sampled
// audit (stats.SampledValidRate): every flagged and every suspect
// conversation audited, a random share of the others.
type SampledValidity struct {
	Share float64 `json:"share"`
	Lo    float64 `json:"lo"`
	Hi    float64 `json:"hi"`
	Conf  float64 `json:"conf"`
	// N is the rows with an audit stratum; Flagged, Suspect (meta-talk
	// found by the suspect check), Sampled and Unsampled split them; SampledPass is the sampled rows whose first attempt
	// passed the audit; AuditShare is Sampled / (Sampled + Unsampled).
	N           int     `json:"n"`
	Flagged     int     `json:"flagged"`
	Suspect     int     `json:"suspect,omitempty"`
	Sampled     int     `json:"sampled"`
	SampledPass int     `json:"sampled_pass"`
	Unsampled   int     `json:"unsampled"`
	AuditShare  float64 `json:"audit_share"`
	Method      string  `json:"method"`
	Warning     string  `json:"warning,omitempty"`
}

// ValidityCount is a valid-rollout rate within one group of conversations.
type ValidityCount struct {
	N       int      `json:"n"`
	Checked int      `json:"checked"`
	Valid   int      `json:"valid"`
	Invalid int      `json:"invalid"`
	Share   *float64 `json:"share"`
}

// BreakTurns says when failures appear: for each failed row whose failure
// is a behaviour the judge saw (a negative metric's "present"), the first
// assistant turn its cited evidence was found in.
type BreakTurns struct {
	// N is the rows with a verdict on negative metrics; NFailed how many
	// failed; NLocated how many of those have their evidence's turn.
	N        int `json:"n"`
	NFailed  int `json:"n_failed"`
	NLocated int `json:"n_located"`
	// ByTurn[k-1] counts the failures first seen at assistant turn k;
	// ShareByTurn[k-1] is the share of the N rows failed by turn k
	// (cumulative), the curve the report draws.
	ByTurn      []int     `json:"by_turn"`
	ShareByTurn []float64 `json:"share_failed_by_turn"`
	// ByMetric is the same per negative metric.
	ByMetric Keyed[BreakTurns] `json:"by_metric,omitempty"`
}

// IdenticalSamples names scenarios whose samples are byte-identical
// conversations: a provider ignored the seed, so they were left out of the
// agreement figures beside it.
type IdenticalSamples struct {
	NGroups   int      `json:"n_groups"`
	Scenarios []string `json:"scenarios"`
	Warning   string   `json:"warning"`
}

// Headline is one model's pass rates, with the intervals and leaderboard
// block our aggregate adds (nil in an --upstream-only file): what a
// command's --json summary shows of a ModelResult.
type Headline struct {
	TargetModel      string       `json:"target_model"`
	PositivePassRate *float64     `json:"positive_pass_rate"`
	NegativePassRate *float64     `json:"negative_pass_rate"`
	NPositive        int          `json:"n_positive"`
	NNegative        int          `json:"n_negative"`
	NTotal           int          `json:"n_total"`
	NNull            int          `json:"n_null"`
	PositiveCI       *ClusterCI   `json:"positive_ci"`
	NegativeCI       *ClusterCI   `json:"negative_ci"`
	Leaderboard      *Leaderboard `json:"leaderboard"`
	// ValidShare is the valid-rollout rate (validity.share) and NInvalid
	// the conversations left out of the rates as invalid; absent when no
	// conversation was checked.
	ValidShare *float64 `json:"valid_share,omitempty"`
	NInvalid   int      `json:"n_invalid,omitempty"`
	// Refused counts the conversations (score rows) with a target reply
	// its provider stopped for safety, and those replies: the model's
	// answers, counted in the rates above. Absent when none was.
	Refused *RefusedCount `json:"refused,omitempty"`
}

// Headline is m's Headline.
func (m ModelResult) Headline() Headline {
	h := Headline{
		TargetModel: m.TargetModel, PositivePassRate: m.PositivePassRate, NegativePassRate: m.NegativePassRate,
		NPositive: m.NPositive, NNegative: m.NNegative, NTotal: m.NTotal, NNull: m.NNull,
		PositiveCI: m.PositiveCI, NegativeCI: m.NegativeCI, Leaderboard: m.Leaderboard,
	}
	if m.Validity != nil {
		h.ValidShare, h.NInvalid = m.Validity.Share, m.Validity.Invalid
	}
	if r := m.Refused; r != nil && r.Replies > 0 {
		h.Refused = &RefusedCount{Conversations: r.Conversations, Replies: r.Replies}
	}
	return h
}

// ModelResult is one results.json entry. The first eight fields are
// upstream's, written in upstream's key order; Extended marks our output,
// which appends the additions after them.
type ModelResult struct {
	TargetModel      string      `json:"target_model"`
	PositivePassRate *float64    `json:"positive_pass_rate"`
	NegativePassRate *float64    `json:"negative_pass_rate"`
	NPositive        int         `json:"n_positive"`
	NNegative        int         `json:"n_negative"`
	NTotal           int         `json:"n_total"`
	ByMetric         Keyed[Rate] `json:"by_metric"`
	ByScenario       Keyed[Rate] `json:"by_scenario"`

	// Additions; written only when Extended.
	Extended   bool       `json:"-"`
	PositiveCI *ClusterCI `json:"positive_ci"`
	NegativeCI *ClusterCI `json:"negative_ci"`
	NNull      int        `json:"n_null"`
	// ByDemographic is axis → value → breakdown (nil: no demographics, omitted).
	ByDemographic Keyed[Keyed[DemographicValue]] `json:"by_demographic"`
	// Agreement is present only when some scenario has several samples.
	Agreement *Agreement `json:"agreement"`
	// Judges is present only when rows carry a panel of ≥2 judges.
	Judges *JudgeAgreement `json:"judges"`
	// DemographicGaps is written whenever ByDemographic is (possibly []).
	DemographicGaps []Gap `json:"demographic_gaps"`
	// Multiplicity is written whenever the file holds a test.
	Multiplicity *Multiplicity `json:"multiplicity"`
	// Leaderboard is written whenever the model has a track rate.
	Leaderboard *Leaderboard `json:"leaderboard"`
	// Pairwise is written when the file has two or more models.
	Pairwise []Pairwise `json:"pairwise"`
	// Validity is present only when rows carry a landmark-adherence verdict.
	Validity *ValidityStats `json:"validity"`
	// Unverified is present only when rows carry evidence-checked verdicts.
	Unverified *UnverifiedStats `json:"unverified"`
	// BreakTurns is present when a failed row's evidence names its turn.
	BreakTurns *BreakTurns `json:"break_turns"`
	// Refused is present only when a row's conversation had a target
	// reply its provider stopped for safety.
	Refused *RefusedStats `json:"refused"`
	// PositiveCorrected and NegativeCorrected are the track pass rates
	// corrected for the judge's errors; JudgeCalibration measures every
	// judge against the human labels. All three are present only when
	// labels.jsonl labels some of the model's conversations.
	PositiveCorrected *Corrected        `json:"positive_corrected"`
	NegativeCorrected *Corrected        `json:"negative_corrected"`
	JudgeCalibration  *JudgeCalibration `json:"judge_calibration"`
	// JudgeConsistency is present only after evaluate --repeats.
	JudgeConsistency *JudgeConsistency `json:"judge_consistency"`
	// VarianceComponents splits the pass rates' variance by source
	// (present whenever a row has a verdict).
	VarianceComponents *Variance `json:"variance_components"`
	// HumanComparison is the target's simulated vs human-played pass
	// rates, paired by base scenario (present when people played against
	// it in the viewer).
	HumanComparison *HumanComparison `json:"human_comparison"`
	// Fingerprint is "sha256:…" over what the results were measured with
	// (Options.Fingerprint); "" omits it.
	Fingerprint string `json:"fingerprint"`
}

// PyValue writes upstream's keys in upstream's order, then the additions.
func (m ModelResult) PyValue() (any, error) {
	o := artifacts.Object{
		{Key: "target_model", Value: m.TargetModel},
		{Key: "positive_pass_rate", Value: m.PositivePassRate},
		{Key: "negative_pass_rate", Value: m.NegativePassRate},
		{Key: "n_positive", Value: m.NPositive},
		{Key: "n_negative", Value: m.NNegative},
		{Key: "n_total", Value: m.NTotal},
		{Key: "by_metric", Value: m.ByMetric},
		{Key: "by_scenario", Value: m.ByScenario},
	}
	if !m.Extended {
		return o, nil
	}
	o = append(o,
		artifacts.Pair{Key: "positive_ci", Value: m.PositiveCI},
		artifacts.Pair{Key: "negative_ci", Value: m.NegativeCI},
		artifacts.Pair{Key: "n_null", Value: m.NNull},
	)
	if m.ByDemographic != nil {
		o = append(o, artifacts.Pair{Key: "by_demographic", Value: m.ByDemographic})
	}
	if m.Agreement != nil {
		o = append(o, artifacts.Pair{Key: "agreement", Value: m.Agreement})
	}
	if m.Judges != nil {
		o = append(o, artifacts.Pair{Key: "judges", Value: m.Judges})
	}
	if m.ByDemographic != nil {
		gaps := m.DemographicGaps
		if gaps == nil {
			gaps = []Gap{}
		}
		o = append(o, artifacts.Pair{Key: "demographic_gaps", Value: gaps})
	}
	if m.Multiplicity != nil {
		o = append(o, artifacts.Pair{Key: "multiplicity", Value: m.Multiplicity})
	}
	if m.Leaderboard != nil {
		o = append(o, artifacts.Pair{Key: "leaderboard", Value: m.Leaderboard})
	}
	if m.Pairwise != nil {
		o = append(o, artifacts.Pair{Key: "pairwise", Value: m.Pairwise})
	}
	if m.Validity != nil {
		o = append(o, artifacts.Pair{Key: "validity", Value: m.Validity})
	}
	if m.Unverified != nil {
		o = append(o, artifacts.Pair{Key: "unverified", Value: m.Unverified})
	}
	if m.BreakTurns != nil {
		o = append(o, artifacts.Pair{Key: "break_turns", Value: m.BreakTurns})
	}
	if m.Refused != nil {
		o = append(o, artifacts.Pair{Key: "refused", Value: m.Refused})
	}
	if m.JudgeCalibration != nil {
		o = append(o,
			artifacts.Pair{Key: "positive_corrected", Value: m.PositiveCorrected},
			artifacts.Pair{Key: "negative_corrected", Value: m.NegativeCorrected},
			artifacts.Pair{Key: "judge_calibration", Value: m.JudgeCalibration},
		)
	}
	if m.JudgeConsistency != nil {
		o = append(o, artifacts.Pair{Key: "judge_consistency", Value: m.JudgeConsistency})
	}
	if m.VarianceComponents != nil {
		o = append(o, artifacts.Pair{Key: "variance_components", Value: m.VarianceComponents})
	}
	if m.HumanComparison != nil {
		o = append(o, artifacts.Pair{Key: "human_comparison", Value: m.HumanComparison})
	}
	if m.Fingerprint != "" {
		o = append(o, artifacts.Pair{Key: "fingerprint", Value: m.Fingerprint})
	}
	return o, nil
}

// MarshalJSON keeps key order for encoding/json users.
func (m ModelResult) MarshalJSON() ([]byte, error) { return artifacts.MarshalPy(m) }

// UnmarshalJSON reads upstream and extended entries; Extended is set when
// the entry carries our additions.
func (m *ModelResult) UnmarshalJSON(data []byte) error {
	if isNull(data) {
		return nil // JSON null: nothing here, as encoding/json treats it
	}
	type plain ModelResult
	var p plain
	if err := json.Unmarshal(data, &p); err != nil {
		return err
	}
	var o artifacts.Object
	if err := o.UnmarshalJSON(data); err != nil {
		return err
	}
	_, p.Extended = o.Get("n_null")
	*m = ModelResult(p)
	return nil
}

func isNull(data []byte) bool { return strings.TrimSpace(string(data)) == "null" }
