package results

import (
	"math"
	"sort"

	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/stats"
)

// Variance is variance_components: where the model's pass-rate variance
// comes from, per metric and per track (stats.VarianceComponents).
type Variance struct {
	Positive *VarianceSplit       `json:"positive"`
	Negative *VarianceSplit       `json:"negative"`
	ByMetric Keyed[VarianceSplit] `json:"by_metric"`
}

// VarianceSplit is one rate's split. Components the design cannot
// separate are null (one variant per scenario: variant; no re-judged
// transcripts: judge and sample, with residual standing for both).
type VarianceSplit struct {
	N         int               `json:"n"`
	Scenarios int               `json:"scenarios"`
	Variants  int               `json:"variants"`
	Rate      *float64          `json:"rate"`
	Scenario  VarianceComponent `json:"scenario"`
	Variant   VarianceComponent `json:"variant"`
	Sample    VarianceComponent `json:"sample"`
	Judge     VarianceComponent `json:"judge"`
	Residual  VarianceComponent `json:"residual"`
	// JudgeSource says where the judge term comes from: "repeats"
	// (evaluate --repeats: the recorded verdict re-judged), "panel" (the
	// members of a judge panel disagreeing on one transcript: one judge's
	// variance, more than the majority verdict carries, so sample is then
	// a lower bound), or "" (none).
	JudgeSource  string  `json:"judge_source"`
	RejudgedRows int     `json:"rejudged_rows"`
	Method       string  `json:"method"`
	Conf         float64 `json:"conf"`
	Reps         int     `json:"reps"`
	Warning      string  `json:"warning,omitempty"`
}

// VarianceComponent is one component: its variance (per verdict), its
// share of the components' sum, and a bootstrap interval.
type VarianceComponent struct {
	Variance *float64 `json:"variance"`
	Share    *float64 `json:"share"`
	Low      *float64 `json:"low"`
	High     *float64 `json:"high"`
}

// Judge sources.
const (
	judgeFromRepeats = "repeats"
	judgeFromPanel   = "panel"
)

// varianceComponents builds variance_components for one model's rows; nil
// when no row has a verdict.
func varianceComponents(target string, rows []row, cal *CalibrationInput, opts Options) *Variance {
	repeats := map[verdictKey][]*bool{}
	if cal != nil {
		for _, tr := range cal.Repeats {
			if tr.Target != target {
				continue
			}
			for _, rr := range tr.Rows {
				k := vkOf(rr.Score)
				repeats[k] = append(repeats[k], rr.Present)
			}
		}
	}
	source := ""
	switch {
	case len(repeats) > 0:
		source = judgeFromRepeats
	case anyPanel(rows):
		source = judgeFromPanel
	}
	// Pointers, not copies: at 100,000 rows two copies of each were the
	// largest allocation of the whole aggregate.
	byMetric := map[string][]*row{}
	byTrack := map[config.MetricType][]*row{}
	for i := range rows {
		r := &rows[i]
		if r.Passed == nil {
			continue
		}
		byMetric[r.metricKey()] = append(byMetric[r.metricKey()], r)
		if r.typ == config.Positive || r.typ == config.Negative {
			byTrack[r.typ] = append(byTrack[r.typ], r)
		}
	}
	if len(byMetric) == 0 {
		return nil
	}
	split := func(name string, rs []*row) *VarianceSplit {
		if len(rs) == 0 {
			return nil
		}
		// A track of one metric is that metric: the same bootstrap draws, so
		// the same intervals (they depend on the draws' spread).
		if m := rs[0].metricKey(); allRows(rs, func(r *row) bool { return r.metricKey() == m }) {
			name = m
		}
		return splitOf(rs, repeats, source, opts, testSeed(opts.Seed, "variance", target, name))
	}
	v := &Variance{Positive: split(trackPositive, byTrack[config.Positive]), Negative: split(trackNegative, byTrack[config.Negative]), ByMetric: Keyed[VarianceSplit]{}}
	metrics := make([]string, 0, len(byMetric))
	for m := range byMetric {
		metrics = append(metrics, m)
	}
	sort.Strings(metrics)
	for _, m := range metrics {
		v.ByMetric = append(v.ByMetric, Entry[VarianceSplit]{m, *split(m, byMetric[m])})
	}
	return v
}

// allRows reports whether keep holds for every row.
func allRows(rs []*row, keep func(*row) bool) bool {
	for _, r := range rs {
		if !keep(r) {
			return false
		}
	}
	return true
}

func anyPanel(rows []row) bool {
	for _, r := range rows {
		if len(r.Judges) >= 2 {
			return true
		}
	}
	return false
}

// splitOf groups rows by base scenario (of their metric) and variant, in
// first-appearance order, and runs stats.VarianceComponents.
func splitOf(rs []*row, repeats map[verdictKey][]*bool, source string, opts Options, seed uint64) *VarianceSplit {
	type scen struct {
		variants map[string]int
		sv       stats.ScenarioVerdicts
	}
	idx := map[clusterKey]int{}
	var scens []*scen
	for _, r := range rs {
		k := keyOf(*r)
		i, ok := idx[k]
		if !ok {
			i = len(scens)
			idx[k] = i
			scens = append(scens, &scen{variants: map[string]int{}})
		}
		s := scens[i]
		j, ok := s.variants[r.scenarioKey()]
		if !ok {
			j = len(s.sv.Variants)
			s.variants[r.scenarioKey()] = j
			s.sv.Variants = append(s.sv.Variants, nil)
		}
		s.sv.Variants[j] = append(s.sv.Variants[j], b2f(*r.Passed))
		if t := rejudged(*r, repeats, source); len(t) >= 2 {
			s.sv.Rejudged = append(s.sv.Rejudged, t)
		}
	}
	in := make([]stats.ScenarioVerdicts, len(scens))
	for i, s := range scens {
		in[i] = s.sv
	}
	v := stats.VarianceComponents(in, opts.Conf, opts.BootstrapReps, seed)
	out := &VarianceSplit{N: v.N, Scenarios: v.Scenarios, Variants: v.Cells, Rate: finite(v.Rate),
		Scenario: componentOf(v.Scenario), Variant: componentOf(v.Variant), Sample: componentOf(v.Sample),
		Judge: componentOf(v.Judge), Residual: componentOf(v.Residual),
		RejudgedRows: v.RejudgedRows, Method: v.Method, Conf: opts.Conf, Reps: v.Reps, Warning: v.Warning}
	if v.RejudgedRows > 0 {
		out.JudgeSource = source
	}
	return out
}

// rejudged is a row's verdicts on present (as 0/1; the variance is the
// same on passed) from every judging of its transcript: scores.json's and
// each repeat's, or each panel member's.
func rejudged(r row, repeats map[verdictKey][]*bool, source string) []float64 {
	var out []float64
	add := func(p *bool) {
		if p != nil {
			out = append(out, b2f(*p))
		}
	}
	switch source {
	case judgeFromRepeats:
		reps, ok := repeats[r.key()]
		if !ok {
			return nil
		}
		add(r.Present)
		for _, p := range reps {
			add(p)
		}
	case judgeFromPanel:
		for _, j := range r.Judges {
			add(j.Present)
		}
	}
	return out
}

func componentOf(c stats.Component) VarianceComponent {
	return VarianceComponent{Variance: finite(c.Variance), Share: finite(c.Share), Low: finite(c.Lo), High: finite(c.Hi)}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// PilotComponents reads a previous run's variance_components for planning
// (plan --pilot): for track "positive" or "negative" (or "" for both
// tracks together), the largest estimate of each component over the
// file's models — the cautious pilot, as plan takes the largest ICC. ok is
// false when no model has the track's split. Use the result's
// EffectiveICC(variants, samples) as the ICC of a design with that many
// variants and samples per base scenario, or RateVariance to compare
// designs directly.
func PilotComponents(res []ModelResult, track string) (v stats.VarianceSplit, ok bool) {
	nan := math.NaN()
	v.Scenario.Variance, v.Variant.Variance, v.Residual.Variance = nan, nan, nan
	v.Sample.Variance, v.Judge.Variance = nan, nan
	take := func(dst *stats.Component, c VarianceComponent) {
		if c.Variance != nil && (math.IsNaN(dst.Variance) || *c.Variance > dst.Variance) {
			dst.Variance = *c.Variance
		}
	}
	for _, m := range res {
		if m.VarianceComponents == nil {
			continue
		}
		for _, s := range []*VarianceSplit{m.VarianceComponents.Positive, m.VarianceComponents.Negative} {
			if s == nil || (track != "" && s != trackSplit(m.VarianceComponents, track)) {
				continue
			}
			ok = true
			take(&v.Scenario, s.Scenario)
			take(&v.Variant, s.Variant)
			take(&v.Sample, s.Sample)
			take(&v.Judge, s.Judge)
			take(&v.Residual, s.Residual)
			v.Scenarios = max(v.Scenarios, s.Scenarios)
		}
	}
	return v, ok
}

func trackSplit(v *Variance, track string) *VarianceSplit {
	if track == trackPositive {
		return v.Positive
	}
	return v.Negative
}
