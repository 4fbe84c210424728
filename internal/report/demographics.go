package report

import (
	"math"
	"sort"

	"github.com/impactbench/impactbench/internal/results"
)

// Descriptive gap flag: a spread this large between two values of an axis,
// each with at least gapMinN scored conversations, is marked "large" so a
// reader looks at it — but labelled descriptive, because only
// demographic_gaps (paired tests over base scenarios with a file-wide
// multiplicity adjustment) support a claim of a real difference.
const (
	gapThreshold = 0.20
	gapMinN      = 5
)

type demographics struct {
	Source    string     `json:"source"` // "results", "scores", mixed → "results", "" = none
	Axes      []axisView `json:"axes"`
	Rows      []demoRow  `json:"rows"`
	Threshold float64    `json:"threshold"`
	MinN      int        `json:"min_n"`
}

type axisView struct {
	Name   string   `json:"name"`
	Values []string `json:"values"`
}

type demoRow struct {
	Model       string     `json:"model"`
	Metric      string     `json:"metric"` // "" = all metrics of the model
	Axis        string     `json:"axis"`
	Cells       []rateView `json:"cells"` // aligned with the axis' Values
	Spread      *float64   `json:"spread,omitempty"`
	Flag        string     `json:"flag,omitempty"` // "significant" | "large" | ""
	Tests       []gapView  `json:"tests,omitempty"`
	Provisional bool       `json:"prov,omitempty"`
}

type gapView struct {
	A           string   `json:"a"`
	B           string   `json:"b"`
	RateA       *float64 `json:"rate_a"`
	RateB       *float64 `json:"rate_b"`
	Diff        *float64 `json:"diff"`
	NPairs      int      `json:"n_pairs"`
	P           *float64 `json:"p"`
	PAdj        *float64 `json:"p_adj"`
	Significant bool     `json:"significant"`
	// The clustered test (gaps.go in results): mean per-scenario
	// difference with its interval over NClusters base scenarios. Test is
	// "" in files written before it, whose P is McNemar's.
	ClusterDiff *float64 `json:"cdiff,omitempty"`
	Lo          *float64 `json:"lo,omitempty"`
	Hi          *float64 `json:"hi,omitempty"`
	NClusters   int      `json:"g,omitempty"`
	Test        string   `json:"test,omitempty"`
	McNemarP    *float64 `json:"mcnemar_p,omitempty"`
	Warn        string   `json:"warn,omitempty"`
	// Family, FamilySize and Q (Benjamini–Hochberg) are absent from files
	// written before families by question.
	Family     string   `json:"family,omitempty"`
	FamilySize int      `json:"family_size,omitempty"`
	Q          *float64 `json:"q,omitempty"`
}

func buildDemographics(in *Input, models []string, metrics []metricView, t *tally) demographics {
	d := demographics{Threshold: gapThreshold, MinN: gapMinN}
	d.Axes = demoAxes(in)
	if len(d.Axes) == 0 {
		return d
	}
	for _, model := range models {
		r := resultFor(in, model)
		fromResults := r != nil && len(r.ByDemographic) > 0
		if !fromResults && t.demo[model] == nil {
			continue
		}
		if fromResults {
			d.Source = "results"
		} else if d.Source == "" {
			d.Source = "scores"
		}
		for _, ax := range d.Axes {
			for _, mid := range append([]string{""}, metricIDs(metrics)...) {
				row := demoRow{Model: model, Metric: mid, Axis: ax.Name, Provisional: !fromResults}
				hasData := false
				for _, val := range ax.Values {
					var cell rateView
					if fromResults {
						if dr, ok := demoValue(r, ax.Name, val); ok {
							if mid == "" {
								cell = fromRate(results.Rate{PassRate: dr.PassRate, NPassed: dr.NPassed,
									NTotal: dr.NTotal, CILow: dr.CILow, CIHigh: dr.CIHigh})
							} else if mr, ok := dr.ByMetric.Get(mid); ok {
								cell = fromRate(mr)
							}
						}
					} else if c := t.demo[model][ax.Name][val][mid]; c != nil {
						cell = wilsonView(c.K, c.N)
					}
					hasData = hasData || cell.N > 0
					row.Cells = append(row.Cells, cell)
				}
				if !hasData {
					continue
				}
				if r != nil {
					row.Tests = gapsFor(r.DemographicGaps, mid, ax.Name)
				}
				flagRow(&row)
				d.Rows = append(d.Rows, row)
			}
		}
	}
	return d
}

// demoValue is r.by_demographic[axis][val].
func demoValue(r *results.ModelResult, axis, val string) (results.DemographicValue, bool) {
	vals, ok := r.ByDemographic.Get(axis)
	if !ok {
		return results.DemographicValue{}, false
	}
	return vals.Get(val)
}

func metricIDs(ms []metricView) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.ID
	}
	return out
}

// flagRow sets Spread and Flag: significant when a paired test says so,
// otherwise "large" for a descriptive spread ≥ gapThreshold between cells
// that both have at least gapMinN conversations.
func flagRow(row *demoRow) {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, c := range row.Cells {
		if c.Rate == nil || c.N < gapMinN {
			continue
		}
		lo, hi = math.Min(lo, *c.Rate), math.Max(hi, *c.Rate)
	}
	if hi >= lo {
		s := hi - lo
		row.Spread = &s
		if s >= gapThreshold-1e-12 {
			row.Flag = "large"
		}
	}
	for _, g := range row.Tests {
		if g.Significant {
			row.Flag = "significant"
		}
	}
}

func gapsFor(gaps []results.Gap, metric, axis string) []gapView {
	var out []gapView
	for _, g := range gaps {
		gm := g.MetricID
		if gm == "all" || gm == "*" {
			gm = ""
		}
		if gm != metric || g.Axis != axis {
			continue
		}
		p, pAdj := g.PValue, g.PAdjusted
		out = append(out, gapView{A: g.ValueA, B: g.ValueB, RateA: g.RateA, RateB: g.RateB, Diff: g.Diff,
			NPairs: g.NPairs, P: &p, PAdj: &pAdj, Significant: g.Significant,
			ClusterDiff: g.ClusterDiff, Lo: g.CILow, Hi: g.CIHigh, NClusters: g.NClusters, Test: g.Test,
			McNemarP: g.McNemarP, Warn: g.Warning, Family: g.Family, FamilySize: g.FamilySize, Q: g.QValue})
	}
	return out
}

// demoAxes lists axes and values in scenarios.json order (variant order),
// then any axis/value only results.json knows, sorted.
func demoAxes(in *Input) []axisView {
	var axes []axisView
	idx := map[string]int{}
	seen := map[[2]string]bool{}
	add := func(axis, val string) {
		i, ok := idx[axis]
		if !ok {
			i = len(axes)
			idx[axis] = i
			axes = append(axes, axisView{Name: axis})
		}
		if !seen[[2]string{axis, val}] {
			seen[[2]string{axis, val}] = true
			axes[i].Values = append(axes[i].Values, val)
		}
	}
	for _, sc := range in.Scenarios {
		for _, av := range sc.Demographic {
			add(av.Axis, av.Value)
		}
	}
	var extra [][2]string
	for _, r := range in.Results {
		for _, ax := range r.ByDemographic {
			for _, v := range ax.Value {
				if !seen[[2]string{ax.Key, v.Key}] {
					extra = append(extra, [2]string{ax.Key, v.Key})
				}
			}
		}
	}
	sort.Slice(extra, func(i, j int) bool {
		if extra[i][0] != extra[j][0] {
			return extra[i][0] < extra[j][0]
		}
		return extra[i][1] < extra[j][1]
	})
	for _, e := range extra {
		add(e[0], e[1])
	}
	return axes
}
