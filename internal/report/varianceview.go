package report

import "github.com/impactbench/impactbench/internal/results"

// varianceView is the "Where the variance comes from" section: results.json's
// variance_components per model, for each track and each metric. The page
// only reads it.
type varianceView struct {
	Rows []varianceRow `json:"rows"`
}

// varianceRow is one rate's split. Components are nil where results.json
// has null (the design cannot separate them).
type varianceRow struct {
	Model     string        `json:"model"`
	Scope     string        `json:"scope"` // "positive", "negative" or a metric id
	Rate      *float64      `json:"rate"`
	N         int           `json:"n"`
	Scenarios int           `json:"scenarios"`
	Scenario  *varianceCell `json:"scenario"`
	Variant   *varianceCell `json:"variant"`
	Sample    *varianceCell `json:"sample"`
	Judge     *varianceCell `json:"judge"`
	Residual  *varianceCell `json:"residual"`
	Source    string        `json:"judge_source,omitempty"`
	Rejudged  int           `json:"rejudged,omitempty"`
	Method    string        `json:"method"`
	Warn      string        `json:"warn,omitempty"`
}

type varianceCell struct {
	Variance float64  `json:"v"`
	Share    *float64 `json:"share"`
	Lo       *float64 `json:"lo"`
	Hi       *float64 `json:"hi"`
}

func cellOf(c results.VarianceComponent) *varianceCell {
	if c.Variance == nil {
		return nil
	}
	return &varianceCell{Variance: *c.Variance, Share: c.Share, Lo: c.Low, Hi: c.High}
}

// buildVariance lists each model's splits in score order: positive and
// negative track, then each metric in benchmark order.
func buildVariance(in *Input, order []string, metrics []metricView) varianceView {
	var v varianceView
	add := func(model, scope string, s *results.VarianceSplit) {
		if s == nil {
			return
		}
		v.Rows = append(v.Rows, varianceRow{Model: model, Scope: scope, Rate: s.Rate, N: s.N, Scenarios: s.Scenarios,
			Scenario: cellOf(s.Scenario), Variant: cellOf(s.Variant), Sample: cellOf(s.Sample), Judge: cellOf(s.Judge),
			Residual: cellOf(s.Residual), Source: s.JudgeSource, Rejudged: s.RejudgedRows, Method: s.Method, Warn: s.Warning})
	}
	for _, model := range order {
		r := resultFor(in, model)
		if r == nil || r.VarianceComponents == nil {
			continue
		}
		vc := r.VarianceComponents
		add(model, "positive", vc.Positive)
		add(model, "negative", vc.Negative)
		for _, m := range metrics {
			if s, ok := vc.ByMetric.Get(m.ID); ok {
				add(model, m.ID, &s)
			}
		}
	}
	v.Rows = nonNil(v.Rows)
	return v
}
