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
// is 0).
type Rate struct {
	PassRate *float64 `json:"pass_rate"`
	NPassed  int      `json:"n_passed"`
	NTotal   int      `json:"n_total"`
	CILow    *float64 `json:"ci_low"`
	CIHigh   *float64 `json:"ci_high"`
	WithCI   bool     `json:"-"`
}

// PyValue writes upstream's three keys, then the interval when WithCI.
func (r Rate) PyValue() (any, error) {
	o := artifacts.Object{
		{Key: "pass_rate", Value: r.PassRate},
		{Key: "n_passed", Value: r.NPassed},
		{Key: "n_total", Value: r.NTotal},
	}
	if r.WithCI {
		o = append(o, artifacts.Pair{Key: "ci_low", Value: r.CILow}, artifacts.Pair{Key: "ci_high", Value: r.CIHigh})
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

// ClusterCI is positive_ci / negative_ci: a cluster-bootstrap interval over
// base scenarios (all variants and samples of one base scenario resampled
// together). Low/High are null when there is no row of that type with a verdict.
type ClusterCI struct {
	// N and Passed count the rows with a verdict behind the rate.
	N        int      `json:"n"`
	Passed   int      `json:"n_passed"`
	Low      *float64 `json:"low"`
	High     *float64 `json:"high"`
	Method   string   `json:"method"`
	Clusters int      `json:"clusters"`
	Reps     int      `json:"reps"`
	Seed     uint64   `json:"seed"`
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
}

// JudgeMetric is panel agreement on one metric.
type JudgeMetric struct {
	RawAgreement *float64 `json:"raw_agreement"`
	Kappa        *float64 `json:"kappa"`
	N            int      `json:"n"`
}

// Gap is one paired comparison of two values of a demographic axis.
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
}

// ValidityStats counts the landmark-adherence verdicts.
type ValidityStats struct {
	Checked int      `json:"checked"`
	Valid   int      `json:"valid"`
	Share   *float64 `json:"share"`
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
	// Validity is present only when rows carry a landmark-adherence verdict.
	Validity *ValidityStats `json:"validity"`
	// Unverified is present only when rows carry evidence-checked verdicts.
	Unverified *UnverifiedStats `json:"unverified"`
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
	if m.Validity != nil {
		o = append(o, artifacts.Pair{Key: "validity", Value: m.Validity})
	}
	if m.Unverified != nil {
		o = append(o, artifacts.Pair{Key: "unverified", Value: m.Unverified})
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
