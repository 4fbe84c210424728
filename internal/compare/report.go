package compare

import (
	"fmt"
	"strings"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/fault"
)

// Tracks: rows of positive metrics, of negative metrics, and of both.
const (
	TrackPositive = "positive"
	TrackNegative = "negative"
	TrackAll      = "all"
)

// Tracks lists the tracks in report order.
func Tracks() []string { return []string{TrackPositive, TrackNegative, TrackAll} }

// Report is the comparison of run A with run B. Every number that can be
// undefined is a pointer: null in JSON, never NaN. Rates and differences are
// fractions (0.25 = 25 percentage points), rounded to 4 places.
type Report struct {
	A RunSummary `json:"a"`
	B RunSummary `json:"b"`

	Seed uint64  `json:"seed"`
	Reps int     `json:"reps"`
	Conf float64 `json:"conf"`
	// Method describes how every interval was obtained.
	Method string `json:"method"`
	// Warning is stats.ClusterWarning for Clusters: set with fewer than 10
	// base scenarios, when every interval is wide.
	Warning string `json:"warning,omitempty"`
	// Clusters is the number of base scenarios resampled (the union of both
	// runs' base scenario ids that have a verdict for a common model).
	Clusters int `json:"clusters"`

	Comparability Comparability `json:"comparability"`
	// Forced: the runs are not comparable and Options.Force was set.
	Forced bool `json:"forced"`

	// Models are the target models present in both runs (sorted); only
	// they are compared.
	Models  []string `json:"models"`
	OnlyInA []string `json:"only_in_a"`
	OnlyInB []string `json:"only_in_b"`

	// Rates: one entry per model and track (models sorted, tracks in
	// Tracks order).
	Rates []ModelTrack `json:"rates"`
	// RankAgreement: one entry per track.
	RankAgreement []RankAgreement `json:"rank_agreement"`
	// OrderChanges: every pair of models whose order reverses from A to B,
	// per track.
	OrderChanges []OrderChange `json:"order_changes"`
	// MetricDiffs: one entry per model and metric (metrics in A's
	// benchmark.yaml order).
	MetricDiffs []MetricDiff `json:"metric_diffs"`
	// People: per model and track, the conversations people played
	// (the Play page) in each run — beside the rates above, not in them.
	People []PeopleRow `json:"people"`
	// SafetyStops: per compared model whose provider stopped a reply for
	// safety in either run, how many of its conversations hold one in
	// each: those replies are its answers, judged and counted in Rates.
	// Omitted when no compared model has one.
	SafetyStops []SafetyStopRow `json:"safety_stops,omitempty"`

	Notes []string `json:"notes"`
}

// SafetyStopRow is one compared model's provider safety stops in A and B.
type SafetyStopRow struct {
	Model string      `json:"model"`
	A     SafetyStops `json:"a"`
	B     SafetyStops `json:"b"`
}

// SafetyStops counts a model's score rows in one run whose conversation
// had a target reply its provider stopped for safety (the row's refused),
// those replies (each index once), and all its score rows.
type SafetyStops struct {
	Conversations int `json:"n_conversations"`
	Replies       int `json:"n_replies"`
	Rows          int `json:"n_rows"`
}

// RunSummary identifies one side of the comparison.
type RunSummary struct {
	Label string `json:"label"`
	Dir   string `json:"dir"`
	// Models are every target model found in the run (sorted).
	Models []string `json:"models"`
	// Rows counts score rows of the compared models; Verdicts those of them
	// with a non-null passed that entered the comparison.
	Rows     int `json:"rows"`
	Verdicts int `json:"verdicts"`
}

// Rate is a pass rate: Passed of Total rows with a non-null verdict, with
// its stats.ClusterRate interval over Clusters base scenarios (Lo, Hi null
// without verdicts) and that interval's few-clusters warning.
type Rate struct {
	Rate     *float64 `json:"rate"`
	Passed   int      `json:"passed"`
	Total    int      `json:"total"`
	Lo       *float64 `json:"lo"`
	Hi       *float64 `json:"hi"`
	Clusters int      `json:"clusters"`
	Warning  string   `json:"warning,omitempty"`
}

// Estimate is a difference of two rates with its MOVER interval (see
// moverDiff).
type Estimate struct {
	Value *float64 `json:"value"`
	Lo    *float64 `json:"lo"`
	Hi    *float64 `json:"hi"`
	// Significant: the interval lies entirely on one side of 0.
	Significant bool `json:"significant"`
	// Warning: one of the two rates rests on fewer than 10 base scenarios.
	Warning string `json:"warning,omitempty"`
}

// ModelTrack is one model's pass rate on one track in both runs.
type ModelTrack struct {
	Model string `json:"model"`
	Track string `json:"track"`
	A     Rate   `json:"a"`
	B     Rate   `json:"b"`
	// Diff is B − A.
	Diff Estimate `json:"diff"`
}

// Correlation is a rank correlation with its cluster-bootstrap interval.
type Correlation struct {
	Value *float64 `json:"value"`
	Lo    *float64 `json:"lo"`
	Hi    *float64 `json:"hi"`
	// Replicates counts the bootstrap replicates in which the correlation
	// was defined (the others, e.g. all models tied, are skipped).
	Replicates int `json:"replicates"`
}

// RankAgreement says how similarly A and B order the models on one track.
type RankAgreement struct {
	Track string `json:"track"`
	// Models are those with a rate on this track in both runs.
	Models      []string    `json:"models"`
	Spearman    Correlation `json:"spearman"`
	KendallTauB Correlation `json:"kendall_tau_b"`
	// Note explains a null correlation.
	Note string `json:"note,omitempty"`
}

// OrderChange is a pair of models whose order on a track reverses:
// rate(X) − rate(Y) has one sign in A and the opposite sign in B.
type OrderChange struct {
	Track  string `json:"track"`
	ModelX string `json:"model_x"`
	ModelY string `json:"model_y"`
	// GapA and GapB are rate(X) − rate(Y) in A and in B.
	GapA Estimate `json:"gap_a"`
	GapB Estimate `json:"gap_b"`
	// BeyondUncertainty: both gaps' intervals exclude 0, i.e. each run on
	// its own is confident about its order, and the orders disagree.
	BeyondUncertainty bool `json:"beyond_uncertainty"`
}

// MetricDiff is one model's pass rate on one metric in both runs.
type MetricDiff struct {
	Model    string `json:"model"`
	MetricID string `json:"metric_id"`
	Type     string `json:"type"`
	A        Rate   `json:"a"`
	B        Rate   `json:"b"`
	// Diff is B − A, each rate's interval over this metric's base
	// scenarios only.
	Diff Estimate `json:"diff"`
	// Clusters is the number of this metric's base scenarios resampled.
	Clusters int `json:"clusters"`
}

// WriteJSON writes the report to path atomically (Python-style JSON layout
// like the tool's other files; it refuses NaN, which the report never holds).
func WriteJSON(path string, r *Report) error {
	if r == nil {
		return fmt.Errorf("write %s: no report", path)
	}
	return artifacts.WriteJSON(path, r)
}

// NotComparableError is Compare's refusal: the runs measure different
// things. Lines are the differences and notes (see Comparable).
type NotComparableError struct {
	A, B  string
	Lines []string
}

func (e *NotComparableError) Error() string {
	return fmt.Sprintf("%s and %s are not comparable: they measure different things:\n  %s\n(allow a component explicitly if the difference is intended)",
		e.A, e.B, strings.Join(e.Lines, "\n  "))
}

// FaultKind: runs that measure different things are an input problem.
func (e *NotComparableError) FaultKind() fault.Kind { return fault.Input }
