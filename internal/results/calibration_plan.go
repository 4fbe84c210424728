package results

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/impactbench/impactbench/internal/labels"
	"github.com/impactbench/impactbench/internal/stats"
)

// DefaultPlanHalfWidth is calibrate --plan's default target: a corrected
// rate within ±10 points (the typical target's, at conf).
const DefaultPlanHalfWidth = 0.10

// planPrior is the judge assumed before a verdict has any label: Se = Sp =
// 0.85 (a decent judge; the plan is redrawn as labels arrive).
const planPrior = 0.85

// methodPlan says how a plan is made.
const methodPlan = "per metric (every target's rows pooled), the expected 95 % half-width of the typical (median) target's corrected rate — delta method on Rogan–Gladen with the variance calibrate would give Se and Sp (stats.ExpectedCalibration) and the target's observed interval — minimised label by label over the two judge verdicts; human-present shares from the labels so far ((k + ½)/(n + 1)), else from Se = Sp = 0.85"

// LabelPlan is how many more labels of which metric would give the main
// judge's corrected rates an expected interval half-width of HalfWidth.
type LabelPlan struct {
	Judge     string            `json:"judge"`
	HalfWidth float64           `json:"half_width"`
	Conf      float64           `json:"conf"`
	Metrics   Keyed[MetricPlan] `json:"metrics"`
	// More is the total of more labels the plan asks for.
	More   int    `json:"more_labels"`
	Method string `json:"method"`
}

// MetricPlan is one metric's part of a LabelPlan. Counts are rows of the
// study (every target) by the main judge's verdict.
type MetricPlan struct {
	RowsPresent     int `json:"rows_present"`
	RowsAbsent      int `json:"rows_absent"`
	LabelledPresent int `json:"labelled_present"`
	LabelledAbsent  int `json:"labelled_absent"`
	MorePresent     int `json:"more_present"`
	MoreAbsent      int `json:"more_absent"`
	// HalfWidthNow is the expected half-width with the labels so far (null
	// while the metric has too few for its own correction); Planned after
	// the plan; Floor what the observed rates' own uncertainty leaves
	// however many rows are labelled (divided by Se + Sp − 1).
	HalfWidthNow     *float64 `json:"half_width_now"`
	HalfWidthPlanned *float64 `json:"half_width_planned"`
	Floor            *float64 `json:"floor"`
	// Reachable is false when Floor already exceeds the target: the plan
	// then asks only for what a corrected number needs, and more base
	// scenarios (impactbench plan) would narrow it.
	Reachable bool   `json:"reachable"`
	Note      string `json:"note,omitempty"`
}

// PlanLabels plans the labelling of a benchmark's rows (score rows of
// every target; only ID, MetricID, TargetModel, Sample, ConvID and Present
// are read) given the labels so far. halfWidth ≤ 0 means the default.
func PlanLabels(rows []ScoreRow, ls []labels.Label, judgeName string, halfWidth, conf float64) LabelPlan {
	if halfWidth <= 0 {
		halfWidth = DefaultPlanHalfWidth
	}
	if conf <= 0 || conf >= 1 {
		conf = DefaultConf
	}
	out := LabelPlan{Judge: judgeName, HalfWidth: halfWidth, Conf: conf, Metrics: Keyed[MetricPlan]{}, Method: methodPlan}
	human := map[labels.Key]bool{}
	for _, c := range labels.Consensuses(ls) {
		if c.Present != nil {
			human[c.Key] = *c.Present
		}
	}
	type metricData struct {
		rows, lab, hum [2]int
		obs            map[string]*clusterSet // target → verdicts by base scenario
		pooled         *clusterSet
	}
	data := map[string]*metricData{}
	var ms []string
	for _, r := range rows {
		if r.Present == nil {
			continue
		}
		m := r.metricKey()
		d := data[m]
		if d == nil {
			d = &metricData{obs: map[string]*clusterSet{}, pooled: newClusterSet()}
			data[m] = d
			ms = append(ms, m)
		}
		v := b2i(*r.Present)
		d.rows[v]++
		if h, ok := human[r.convKey()]; ok {
			d.lab[v]++
			if h {
				d.hum[v]++
			}
		}
		if d.obs[r.TargetModel] == nil {
			d.obs[r.TargetModel] = newClusterSet()
		}
		k := keyOf(r)
		d.obs[r.TargetModel].add(k, *r.Present)
		d.pooled.add(clusterKey{metric: k.metric, base: r.TargetModel + "\x00" + k.base}, *r.Present)
	}
	sort.Strings(ms)
	for _, m := range ms {
		d := data[m]
		var targets []targetObs
		for _, cs := range d.obs {
			o := stats.ClusterRate(cs.sums(func(clusterKey) bool { return true }), conf)
			targets = append(targets, targetObs{p: o.Estimate, half: max(o.Estimate-o.Lo, o.Hi-o.Estimate)})
		}
		mp := planMetric(d.rows, d.lab, d.hum, targets, designEffect(d.pooled), halfWidth, conf)
		out.More += mp.MorePresent + mp.MoreAbsent
		out.Metrics = append(out.Metrics, Entry[MetricPlan]{m, mp})
	}
	return out
}

// targetObs is one target's observed "present" share and its interval's
// half-width.
type targetObs struct{ p, half float64 }

// planMetric plans one metric from its rows, labels and human-present
// counts per judge verdict (index 1 present, 0 absent).
func planMetric(rows, lab, hum [2]int, targets []targetObs, deff, goal, conf float64) MetricPlan {
	mp := MetricPlan{RowsPresent: rows[1], RowsAbsent: rows[0], LabelledPresent: lab[1], LabelledAbsent: lab[0]}
	// Expected human-present share per verdict: the labels', shrunk, or
	// the prior judge's.
	p := float64(rows[1]) / float64(rows[0]+rows[1])
	pi := max(0.02, min(0.98, stats.RoganGladen(p, planPrior, planPrior)))
	if math.IsNaN(pi) {
		pi = 0.5
	}
	prior := [2]float64{(1 - planPrior) * pi / ((1-planPrior)*pi + planPrior*(1-pi)), planPrior * pi / (planPrior*pi + (1-planPrior)*(1-pi))}
	var h [2]float64
	var assumed []string
	for v := range 2 {
		if lab[v] > 0 {
			h[v] = (float64(hum[v]) + 0.5) / (float64(lab[v]) + 1)
		} else {
			h[v] = prior[v]
			if rows[v] > 0 {
				assumed = append(assumed, [2]string{"absent", "present"}[v])
			}
		}
	}
	hw := func(n [2]int, noLabels bool) float64 {
		strata := []stats.PlanStratum{{Judge: true, Rows: rows[1], Labelled: n[1], HumanPresent: h[1]},
			{Judge: false, Rows: rows[0], Labelled: n[0], HumanPresent: h[0]}}
		se, sp, vSe, vSp, cov := stats.ExpectedCalibration(strata, deff)
		if noLabels {
			vSe, vSp, cov = 0, 0, 0
		}
		ws := make([]float64, 0, len(targets))
		for _, t := range targets {
			// An interval within 0–100 % is at most ±50 points wide.
			ws = append(ws, min(0.5, stats.RoganGladenHalfWidth(t.p, t.half, se, sp, vSe, vSp, cov, conf)))
		}
		return median(ws)
	}
	need := func(v int) int { return min(MinLabelsPerClass, rows[v]) } // the fewest for a number
	if enoughLabels(func(s int) int { return lab[s] }, func(s int) int { return rows[s] }) {
		mp.HalfWidthNow = finiteOrNil(hw(lab, false))
	}
	floor := hw([2]int{max(1, rows[0]), max(1, rows[1])}, true)
	mp.Floor = finiteOrNil(floor)
	n := [2]int{max(lab[0], need(0)), max(lab[1], need(1))}
	mp.Reachable = floor < goal
	if mp.Reachable {
		for cur := hw(n, false); cur > goal && (n[0] < rows[0] || n[1] < rows[1]); {
			best, bestW := -1, math.Inf(1)
			for v := range 2 {
				if n[v] >= rows[v] {
					continue
				}
				step := max(1, n[v]/20)
				try := n
				try[v] = min(rows[v], n[v]+step)
				if w := hw(try, false); w < bestW {
					best, bestW = v, w
				}
			}
			n[best] = min(rows[best], n[best]+max(1, n[best]/20))
			cur = bestW
		}
	}
	mp.MorePresent, mp.MoreAbsent = n[1]-lab[1], n[0]-lab[0]
	mp.HalfWidthPlanned = finiteOrNil(hw(n, false))
	var notes []string
	if !mp.Reachable {
		notes = append(notes, fmt.Sprintf("±%.0f points is out of reach by labelling: the observed rates alone give ±%.0f after correction; the plan asks for what a corrected number needs (add base scenarios to narrow it: impactbench plan)", 100*goal, 100*floor))
	}
	if len(assumed) > 0 {
		notes = append(notes, fmt.Sprintf("no labels yet of the judge's %s rows: sensitivity and specificity %.2f assumed until there are", joinAnd(assumed), planPrior))
	}
	mp.Note = strings.Join(notes, "; ")
	return mp
}

func finiteOrNil(x float64) *float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return nil
	}
	return ptr(round4(x))
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func joinAnd(xs []string) string {
	switch len(xs) {
	case 0:
		return ""
	case 1:
		return xs[0]
	}
	return fmt.Sprintf("%s and %s", xs[0], xs[1])
}
