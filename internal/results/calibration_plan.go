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
const methodPlan = "per metric × target (each target is corrected with its own labels): the expected 95 % half-width of the target's corrected rate — delta method on Rogan–Gladen with the variance calibrate would give Se and Sp (stats.ExpectedCalibration) and the target's observed interval — minimised label by label over the two judge verdicts of its rows; human-present shares from the labels so far ((k + ½)/(n + 1)), else from Se = Sp = 0.85. Until a target has a corrected rate the plan keeps asking: 5 of each verdict at least, then more rows of the verdict whose human answer is missing, until every such row is labelled"

// LabelPlan is how many more labels of which metric and target would give
// the main judge's corrected rates an expected interval half-width of
// HalfWidth — and, from the start, which cannot get a number and why.
type LabelPlan struct {
	Judge     string            `json:"judge"`
	HalfWidth float64           `json:"half_width"`
	Conf      float64           `json:"conf"`
	Metrics   Keyed[MetricPlan] `json:"metrics"`
	// More is the total of more labels the plan asks for.
	More int `json:"more_labels"`
	// Unreachable lists the metric × target pairs that cannot get a
	// corrected rate by labelling this study's rows, with why.
	Unreachable []PlanProblem `json:"unreachable"`
	// AfterReveal counts label lines left out because they were changed
	// after the judges' verdict was shown (see labels.Label.AfterReveal).
	AfterReveal int `json:"n_after_reveal"`
	// Stale counts label lines left out because their conversation was
	// run again since they were given (see labels.Label.Stale): its rows
	// are asked for again.
	Stale  int    `json:"n_stale"`
	Method string `json:"method"`
}

// PlanProblem is one metric × target the plan cannot bring to a number.
type PlanProblem struct {
	Metric string `json:"metric_id"`
	Target string `json:"target"`
	Why    string `json:"why"`
}

// MetricPlan is one metric's part of a LabelPlan: totals over its targets
// (rows by the main judge's verdict), then each target's plan.
type MetricPlan struct {
	RowsPresent     int `json:"rows_present"`
	RowsAbsent      int `json:"rows_absent"`
	LabelledPresent int `json:"labelled_present"`
	LabelledAbsent  int `json:"labelled_absent"`
	MorePresent     int `json:"more_present"`
	MoreAbsent      int `json:"more_absent"`
	// HalfWidthNow, HalfWidthPlanned and Floor are the median over the
	// targets of theirs (below); Reachable is true when every target's is.
	HalfWidthNow     *float64 `json:"half_width_now"`
	HalfWidthPlanned *float64 `json:"half_width_planned"`
	Floor            *float64 `json:"floor"`
	Reachable        bool     `json:"reachable"`
	// Corrected counts the targets whose rate is corrected now, of Targets.
	Corrected int               `json:"n_corrected"`
	Targets   Keyed[TargetPlan] `json:"targets"`
	Note      string            `json:"note,omitempty"`
}

// TargetPlan is one target's part of a metric's plan: its rows by the
// judge's verdict, how many are labelled, and how many more to label.
type TargetPlan struct {
	RowsPresent     int `json:"rows_present"`
	RowsAbsent      int `json:"rows_absent"`
	LabelledPresent int `json:"labelled_present"`
	LabelledAbsent  int `json:"labelled_absent"`
	MorePresent     int `json:"more_present"`
	MoreAbsent      int `json:"more_absent"`
	// HalfWidthNow is the expected half-width with the labels so far (null
	// while the target has too few for its correction); Planned after the
	// plan; Floor what the observed rate's own uncertainty leaves however
	// many rows are labelled (divided by Se + Sp − 1).
	HalfWidthNow     *float64 `json:"half_width_now"`
	HalfWidthPlanned *float64 `json:"half_width_planned"`
	Floor            *float64 `json:"floor"`
	// Reachable is false when Floor already exceeds the goal: the plan then
	// asks only for what a corrected number needs, and more base scenarios
	// (impactbench plan) would narrow it.
	Reachable bool `json:"reachable"`
	// Status: "corrected" (a corrected rate exists now), "needs labels" or
	// "unreachable" (no number can come from labelling this study's rows;
	// Note says why).
	Status string `json:"status"`
	Note   string `json:"note,omitempty"`
}

// Plan statuses of a target.
const (
	PlanCorrected   = "corrected"
	PlanNeedsLabels = "needs labels"
	PlanUnreachable = "unreachable"
)

// PlanLabels plans the labelling of a benchmark's rows (score rows of
// every target; only ID, MetricID, TargetModel, Sample, ConvID and Present
// are read) given the labels so far (after-reveal and stale lines are left
// out, as calibration leaves them out). halfWidth ≤ 0 means the default.
func PlanLabels(rows []ScoreRow, ls []labels.Label, judgeName string, halfWidth, conf float64) LabelPlan {
	if halfWidth <= 0 {
		halfWidth = DefaultPlanHalfWidth
	}
	if conf <= 0 || conf >= 1 {
		conf = DefaultConf
	}
	ls, stale := CurrentLabels(ls)
	ls, late := BlindLabels(ls)
	out := LabelPlan{Judge: judgeName, HalfWidth: halfWidth, Conf: conf, Metrics: Keyed[MetricPlan]{}, Unreachable: []PlanProblem{},
		AfterReveal: late, Stale: stale, Method: methodPlan}
	byTarget, order := planTargets(rows)
	var trs []targetRows
	for _, t := range order {
		trs = append(trs, targetRows{t, byTarget[t]})
	}
	fc := newFileCalibration(trs, &CalibrationInput{Labels: ls}, Options{Conf: conf})
	human := map[labels.Key]bool{}
	for _, c := range labels.Consensuses(ls) {
		if c.Present != nil {
			human[c.Key] = *c.Present
		}
	}
	for _, m := range planMetrics(rows) {
		mp := MetricPlan{Targets: Keyed[TargetPlan]{}, Reachable: true}
		var now, planned, floor []float64
		for ti, t := range order {
			d := gatherTarget(byTarget[t], m, human)
			if d.rows[0]+d.rows[1] == 0 {
				continue
			}
			tp := planTarget(d, halfWidth, conf)
			fc.settle(&tp, ti, m, d)
			if tp.Status == PlanUnreachable {
				out.Unreachable = append(out.Unreachable, PlanProblem{Metric: m, Target: t, Why: tp.Note})
			}
			mp.add(tp, &now, &planned, &floor)
			mp.Targets = append(mp.Targets, Entry[TargetPlan]{t, tp})
		}
		mp.HalfWidthNow, mp.HalfWidthPlanned, mp.Floor = medianOrNil(now), medianOrNil(planned), medianOrNil(floor)
		if n := len(mp.Targets) - mp.Corrected; n > 0 {
			mp.Note = fmt.Sprintf("%d of %d targets have no corrected rate yet", n, len(mp.Targets))
		}
		out.More += mp.MorePresent + mp.MoreAbsent
		out.Metrics = append(out.Metrics, Entry[MetricPlan]{m, mp})
	}
	return out
}

// add counts a target's plan into its metric's totals.
func (mp *MetricPlan) add(tp TargetPlan, now, planned, floor *[]float64) {
	mp.RowsPresent += tp.RowsPresent
	mp.RowsAbsent += tp.RowsAbsent
	mp.LabelledPresent += tp.LabelledPresent
	mp.LabelledAbsent += tp.LabelledAbsent
	mp.MorePresent += tp.MorePresent
	mp.MoreAbsent += tp.MoreAbsent
	mp.Reachable = mp.Reachable && tp.Reachable
	if tp.Status == PlanCorrected {
		mp.Corrected++
	}
	for _, x := range []struct {
		v  *float64
		to *[]float64
	}{{tp.HalfWidthNow, now}, {tp.HalfWidthPlanned, planned}, {tp.Floor, floor}} {
		if x.v != nil {
			*x.to = append(*x.to, *x.v)
		}
	}
}

func medianOrNil(xs []float64) *float64 {
	if len(xs) == 0 {
		return nil
	}
	return finiteOrNil(median(xs))
}

// planTargets groups judged rows by target, in first-appearance order.
func planTargets(rows []ScoreRow) (map[string][]row, []string) {
	out := map[string][]row{}
	var order []string
	for _, r := range rows {
		if r.Present == nil {
			continue
		}
		if _, ok := out[r.TargetModel]; !ok {
			order = append(order, r.TargetModel)
		}
		out[r.TargetModel] = append(out[r.TargetModel], r)
	}
	return out, order
}

// planMetrics lists the metrics with judged rows, sorted.
func planMetrics(rows []ScoreRow) []string {
	seen := map[string]bool{}
	var out []string
	for _, r := range rows {
		if m := r.metricKey(); r.Present != nil && !seen[m] {
			seen[m] = true
			out = append(out, m)
		}
	}
	sort.Strings(out)
	return out
}

// targetData is one target's judged rows of one metric, by the judge's
// verdict (index 1 present, 0 absent): rows, labelled ones, and those the
// humans call present; obs is the observed share and its half-width.
type targetData struct {
	rows, lab, hum [2]int
	obs            targetObs
	deff           float64
}

func gatherTarget(rows []row, m string, human map[labels.Key]bool) targetData {
	var d targetData
	cs := newClusterSet()
	for _, r := range rows {
		if r.metricKey() != m {
			continue
		}
		v := b2i(*r.Present)
		d.rows[v]++
		if h, ok := human[r.convKey()]; ok {
			d.lab[v]++
			if h {
				d.hum[v]++
			}
		}
		cs.add(keyOf(r), *r.Present)
	}
	if d.rows[0]+d.rows[1] > 0 {
		o := stats.ClusterRate(cs.sums(func(clusterKey) bool { return true }), DefaultConf)
		d.obs = targetObs{p: o.Estimate, half: max(o.Estimate-o.Lo, o.Hi-o.Estimate)}
		d.deff = designEffect(cs)
	}
	return d
}

// planTarget is the half-width plan of one target's rows.
func planTarget(d targetData, goal, conf float64) TargetPlan {
	mp := planMetric(d.rows, d.lab, d.hum, []targetObs{d.obs}, d.deff, goal, conf)
	return TargetPlan{RowsPresent: mp.RowsPresent, RowsAbsent: mp.RowsAbsent, LabelledPresent: mp.LabelledPresent, LabelledAbsent: mp.LabelledAbsent,
		MorePresent: mp.MorePresent, MoreAbsent: mp.MoreAbsent, HalfWidthNow: mp.HalfWidthNow, HalfWidthPlanned: mp.HalfWidthPlanned,
		Floor: mp.Floor, Reachable: mp.Reachable, Status: PlanNeedsLabels, Note: mp.Note}
}

// settle checks the target's correction as calibrate would make it now,
// and where there is none keeps the plan asking for what it lacks — or
// says it cannot be had.
func (f *fileCalibration) settle(tp *TargetPlan, t int, m string, d targetData) {
	if f == nil {
		return
	}
	ch := f.chooseCalib(t, m)
	if ch.c != nil {
		tp.Status = PlanCorrected
		return
	}
	own := f.ownCalib(t, m)
	more := func(v int, why string) {
		left := d.rows[v] - d.lab[v]
		if left <= 0 {
			tp.Status, tp.MorePresent, tp.MoreAbsent, tp.Note = PlanUnreachable, 0, 0, ch.why
			return
		}
		step := min(left, max(MinTargetLabelsPerClass, d.lab[v]/2))
		if v == 1 {
			tp.MorePresent = max(tp.MorePresent, step)
		} else {
			tp.MoreAbsent = max(tp.MoreAbsent, step)
		}
		tp.Note = joinNotes(why, tp.Note)
	}
	switch {
	case !own.enough || d.lab[0]+d.lab[1] == 0:
		// planMetric already asks for the minimum of each verdict.
	case own.mc.NHumanPresent == 0:
		more(1, "no human \"present\" yet on this target: more of its rows the judge called present, where the behaviour should be")
	case own.mc.NHumanAbsent == 0:
		more(0, "no human \"absent\" yet on this target: more of its rows the judge called absent")
	case d.rows[0]-d.lab[0]+d.rows[1]-d.lab[1] == 0:
		tp.Status, tp.MorePresent, tp.MoreAbsent, tp.Note = PlanUnreachable, 0, 0, ch.why
	default: // uninformative so far: more of each verdict that has rows left
		for v := range 2 {
			if d.rows[v] > d.lab[v] {
				more(v, "")
			}
		}
		tp.Note = joinNotes("the judge is not yet shown informative on this target's labels: more of both verdicts", tp.Note)
	}
}

func joinNotes(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "; " + b
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
	need := func(v int) int { return min(MinTargetLabelsPerClass, rows[v]) } // the fewest for a number
	if enoughLabels(MinTargetLabelsPerClass, func(s int) int { return lab[s] }, func(s int) int { return rows[s] }) {
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
