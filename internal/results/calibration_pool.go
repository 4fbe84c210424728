package results

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/stats"
)

// fileCalibration is the benchmark's judge calibration, pooled over
// targets, and what each target's corrections need.
type fileCalibration struct {
	pool    *labelPool
	entries Keyed[JudgeCalibrationEntry] // every judge, pooled
	// The main judge: per metric (pooled over targets), over all metrics,
	// the by-target tests, and each target's own calibrations (made when
	// a test says the error differs).
	main     map[string]*calib
	all      *calib
	tests    map[string]*TargetTest
	own      map[int]map[string]*calib
	nMetrics int
}

// calibrationOf is one target's calibration: the judge_calibration block,
// the corrected rates (by metric and track) and what the leaderboard needs.
type calibrationOf struct {
	block    *JudgeCalibration
	byMetric map[string]*Corrected
	tracks   map[config.MetricType]*Corrected
	// raw track corrections for the leaderboard (nil without a number).
	trackRaw map[config.MetricType]*stats.Corrected
	judge    string
}

// calibrateFile measures every judge against the labels of every target
// and corrects each target's pass rates with the main verdict's
// calibration. The result is aligned with targets; nil without labels.
func calibrateFile(targets []targetRows, in *CalibrationInput, opts Options) []*calibrationOf {
	f := newFileCalibration(targets, in, opts)
	if f == nil {
		return nil
	}
	for _, j := range f.pool.judges() {
		f.entries = append(f.entries, Entry[JudgeCalibrationEntry]{j.name, f.judgeEntry(j)})
	}
	out := make([]*calibrationOf, len(targets))
	for t := range targets {
		out[t] = f.correctTarget(t)
	}
	return out
}

// newFileCalibration matches the labels to the rows (nil without labels);
// calibrations are made as they are asked for.
func newFileCalibration(targets []targetRows, in *CalibrationInput, opts Options) *fileCalibration {
	p := newLabelPool(targets, in, opts)
	if p == nil {
		return nil
	}
	return &fileCalibration{pool: p, main: map[string]*calib{}, tests: map[string]*TargetTest{}, own: map[int]map[string]*calib{}}
}

// judgeEntry calibrates one judge on every metric (every target's labels
// pooled), tests each metric for a difference between targets, and, for
// the main judge, calibrates it over all metrics.
func (f *fileCalibration) judgeEntry(j judge) JudgeCalibrationEntry {
	p := f.pool
	main := j.role == roleMain
	e := JudgeCalibrationEntry{Role: j.role, ByMetric: Keyed[MetricCalibration]{}}
	var tests []*TargetTest
	for _, m := range p.metrics {
		set := p.itemsOf(j, func(lb labRow) bool { return p.row(lb).metricKey() == m }, func(t int, _ string, s int) int { return 3*t + s })
		if len(set.items) == 0 {
			continue
		}
		set.deff = p.deff[m]
		enough := enoughLabels(MinLabelsPerClass, func(s int) int { return p.labelled.get(m, s) }, func(s int) int { return p.study.get(m, s) })
		c := p.calibrate(set, scopeTargets, j.name, m, enough)
		c.mc.warn(enough, MinLabelsPerClass, c.mc.NJudgePresent, c.mc.NJudgeAbsent)
		if main {
			if w := p.drawWarning(m); w != "" {
				c.mc.Warning = strings.TrimPrefix(c.mc.Warning+"; "+w, "; ")
			}
		}
		c.mc.ByTarget = p.targetTest(set, j.name, m)
		tests = append(tests, c.mc.ByTarget)
		e.ByMetric = append(e.ByMetric, Entry[MetricCalibration]{m, c.mc})
		if main {
			f.main[m] = &c
		}
	}
	holmTargetTests(tests) // through the shared pointers, in e and f.main alike
	if main {
		for _, en := range e.ByMetric {
			f.tests[en.Key] = en.Value.ByTarget
		}
		f.all = f.allMetrics(j)
		if f.all != nil {
			e.AllMetrics = &f.all.mc
		}
	}
	return e
}

// targetTest is stats.JudgeHeterogeneity on a metric's labels grouped by
// target (PAdjusted and Differs are set by holmTargetTests).
func (p *labelPool) targetTest(set calibSet, judgeName, metric string) *TargetTest {
	human := make([]bool, len(set.items))
	verdict := make([]bool, len(set.items))
	for i, it := range set.items {
		human[i], verdict[i] = it.Human, it.Judge
	}
	h := stats.JudgeHeterogeneity(set.targets, human, verdict, repsOr(p.opts.calibReps, heterogeneityReps), testSeed(p.opts.Seed, "heterogeneity", judgeName, metric))
	out := &TargetTest{Statistic: finite(h.Stat), DF: h.DF, P: finiteSig(h.P), NTargets: h.Groups, Method: h.Method}
	switch {
	case h.Groups < 2:
		out.Statistic, out.Reason = nil, "labels from one target only"
	case h.DF == 0:
		out.Statistic, out.Reason = nil, "within each human answer the judge gave one answer only: nothing to compare"
	}
	return out
}

// finiteSig is finite for p-values: 4 significant digits, not places.
func finiteSig(x float64) *float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return nil
	}
	return ptr(roundSig(x))
}

// holmTargetTests adjusts a judge's by-target tests over its metrics.
func holmTargetTests(ts []*TargetTest) {
	ps := make([]float64, len(ts))
	for i, t := range ts {
		ps[i] = math.NaN()
		if t.P != nil {
			ps[i] = *t.P
		}
	}
	for i, q := range stats.Holm(ps) {
		if !math.IsNaN(q) {
			ts[i].PAdjusted = finiteSig(q)
			ts[i].Differs = q < 0.05
		}
	}
}

// allMetrics calibrates the main judge over every metric of the benchmark
// (strata: metric × main verdict); nil without labels.
func (f *fileCalibration) allMetrics(j judge) *calib {
	p := f.pool
	at := map[string]int{}
	for i, m := range p.metrics {
		at[m] = i
	}
	nt := len(p.targets)
	set := p.itemsOf(j, func(labRow) bool { return true }, func(t int, m string, s int) int { return 3*(nt*at[m]+t) + s })
	if len(set.items) == 0 {
		return nil
	}
	for _, m := range p.metrics {
		set.deff = max(set.deff, p.deff[m])
	}
	sum := func(c strataCounts) func(s int) int {
		return func(s int) int {
			n := 0
			for _, m := range p.metrics {
				n += c.get(m, s)
			}
			return n
		}
	}
	f.nMetrics = len(p.metrics)
	enough := enoughLabels(MinLabelsPerClass, sum(p.labelled), sum(p.study))
	c := p.calibrate(set, scopeMetrics, j.name, "", enough)
	c.mc.warn(enough, MinLabelsPerClass, sum(p.labelled)(1), sum(p.labelled)(0))
	return &c
}

// ownCalib is the main judge on one target's labels of a metric, weighted
// to that target's rows: what the target's corrected rate uses.
func (f *fileCalibration) ownCalib(t int, m string) *calib {
	if c := f.own[t][m]; c != nil {
		return c
	}
	p := f.pool
	mainJ := judge{p.mainJudge, roleMain, func(t, i int) *bool { return p.targets[t].rows[i].Present }}
	set := p.itemsOf(mainJ, func(lb labRow) bool { return lb.t == t && p.row(lb).metricKey() == m }, func(_ int, _ string, s int) int { return s })
	set.deff = p.deffOf[t][m]
	enough := enoughLabels(MinTargetLabelsPerClass, func(s int) int { return p.labelledOf[t].get(m, s) }, func(s int) int { return p.studyOf[t].get(m, s) })
	c := p.calibrate(set, scopeTarget, p.targets[t].name, m, enough)
	c.mc.warn(enough, MinTargetLabelsPerClass, p.labelledOf[t].get(m, 1), p.labelledOf[t].get(m, 0))
	if f.own[t] == nil {
		f.own[t] = map[string]*calib{}
	}
	f.own[t][m] = &c
	return &c
}

// block is target t's judge_calibration: the pooled entries, with this
// target's label counts and (main judge) its own calibrations.
func (f *fileCalibration) block(t int) *JudgeCalibration {
	p := f.pool
	b := &JudgeCalibration{Labels: p.summaries[t], AllTargets: &p.all, MinLabelsPerClass: MinLabelsPerClass, Conf: p.opts.Conf,
		Weighting: weighting, Pooling: pooling, Judges: slices.Clone(f.entries), LabelerAgreement: p.agreement}
	var own Keyed[MetricCalibration]
	for _, m := range p.metrics {
		if c := f.own[t][m]; c != nil {
			own = append(own, Entry[MetricCalibration]{m, c.mc})
		}
	}
	if len(own) > 0 && len(b.Judges) > 0 {
		b.Judges[0].Value.ThisTarget = own
	}
	return b
}

// usable: a calibration with both human answers and a defined Youden's J.
func (c *calib) usable() bool {
	return c != nil && c.mc.Informative != nil
}

// describeP formats a Holm-adjusted p-value for a note.
func describeP(t *TargetTest) string {
	if t == nil || t.PAdjusted == nil {
		return ""
	}
	return fmt.Sprintf("Holm p = %.3g", *t.PAdjusted)
}
