package report

// ModelResult is one results.json entry. Upstream's keys are always there;
// every addition is optional (pointer or nil map) because results.json may
// come from upstream's Python pipeline or an older version of ours.
type ModelResult struct {
	TargetModel      string          `json:"target_model"`
	PositivePassRate *float64        `json:"positive_pass_rate"`
	NegativePassRate *float64        `json:"negative_pass_rate"`
	NPositive        int             `json:"n_positive"`
	NNegative        int             `json:"n_negative"`
	NTotal           int             `json:"n_total"`
	ByMetric         map[string]Rate `json:"by_metric"`
	ByScenario       map[string]Rate `json:"by_scenario"`

	NNull         int                            `json:"n_null"`
	PositiveCI    *CI                            `json:"positive_ci"`
	NegativeCI    *CI                            `json:"negative_ci"`
	ByDemographic map[string]map[string]DemoRate `json:"by_demographic"`
	Gaps          []Gap                          `json:"demographic_gaps"`
	Validity      *ValidityShare                 `json:"validity"`
	Fingerprint   string                         `json:"fingerprint"`
	Agreement     map[string]any                 `json:"agreement"`
	Judges        map[string]any                 `json:"judges"`
}

// Rate is a pass rate with its counts and optional interval.
type Rate struct {
	PassRate *float64 `json:"pass_rate"`
	NPassed  int      `json:"n_passed"`
	NTotal   int      `json:"n_total"`
	CILow    *float64 `json:"ci_low"`
	CIHigh   *float64 `json:"ci_high"`
}

// DemoRate is a by_demographic cell: overall rate plus per-type and per-metric rates.
type DemoRate struct {
	Rate
	PositivePassRate *float64        `json:"positive_pass_rate"`
	NegativePassRate *float64        `json:"negative_pass_rate"`
	ByMetric         map[string]Rate `json:"by_metric"`
}

// CI is positive_ci / negative_ci.
type CI struct {
	Low      *float64 `json:"low"`
	High     *float64 `json:"high"`
	Method   string   `json:"method"`
	Clusters int      `json:"clusters"`
	Reps     int      `json:"reps"`
	Seed     uint64   `json:"seed"`
}

// Gap is one demographic_gaps entry (paired test between two values of an axis).
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
	PValue      *float64 `json:"p_value"`
	PAdjusted   *float64 `json:"p_adjusted"`
	Significant bool     `json:"significant"`
}

// ValidityShare is results.json's validity block.
type ValidityShare struct {
	Checked int      `json:"checked"`
	Valid   int      `json:"valid"`
	Share   *float64 `json:"share"`
}
