package results

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/labels"
	"github.com/impactbench/impactbench/internal/stats"
)

// MinLabelsPerClass is the fewest labelled rows of each judge verdict
// (present, absent) on a metric before its pass rate is corrected: the
// correction rests on the humans' verdicts within each judge verdict, and
// with fewer than 10 a single label moves it by 10 points or more. A
// verdict with fewer rows in the whole study than this needs every such
// row labelled. TestCorrectPrevalenceCoverage checks coverage from 10 up.
const MinLabelsPerClass = 10

// calibrationReps is the number of bootstrap replicates behind κ.
const calibrationReps = 2000

// Judge roles in judge_calibration.
const (
	roleMain      = "main"
	rolePanel     = "panel member"
	roleAlternate = "alternate"
)

// weighting documents how labelled rows are weighted.
const weighting = "each labelled row stands for the rows of the study with the same main verdict (present, absent, none) on its metric: weight = those rows / labelled ones (post-stratification); exact for random samples within verdicts, as the viewer's calibration queue draws"

// correctedLeaderboardMethod says how the corrected leaderboard is made.
const correctedLeaderboardMethod = "mean of the corrected track rates; interval: mean of their limits (conservative)"

// stratum is a row's main verdict: 0 absent, 1 present, 2 none.
func stratum(p *bool) int {
	switch {
	case p == nil:
		return 2
	case *p:
		return 1
	}
	return 0
}

// convKey is a row's conversation and metric, as labels name them.
func (r row) convKey() labels.Key {
	id := r.ConvID
	if id == "" {
		id = artifacts.ConvID(r.ID, r.TargetModel, r.Sample)
	}
	return labels.Key{ConvID: id, MetricID: r.MetricID}
}

// targetOfConv is the target part of a conv_id (<scenario>__<target>__s<n>).
func targetOfConv(id string) string {
	parts := strings.Split(id, "__")
	if len(parts) < 3 {
		return ""
	}
	return strings.Join(parts[1:len(parts)-1], "__")
}

// verdictKey matches a row across score files (alternate judges, repeats).
type verdictKey struct {
	id, metric string
	sample     int
}

func vkOf(s artifacts.Score) verdictKey { return verdictKey{s.ID, s.MetricID, s.Sample} }

// labelled is one labelled row of a target.
type labelled struct {
	idx   int // into rows
	human bool
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

// calibrateTarget measures every judge of a target against the labels of
// its conversations and corrects its pass rates with the main verdict's
// calibration. It returns nil when no label concerns this target.
func calibrateTarget(target string, rows []row, in *CalibrationInput, opts Options) *calibrationOf {
	rowOf := make(map[labels.Key]int, len(rows))
	for i, r := range rows {
		rowOf[r.convKey()] = i
	}
	var mine []labels.Label
	for _, l := range in.Labels {
		if _, ok := rowOf[l.Key()]; ok || targetOfConv(l.ConvID) == target {
			mine = append(mine, l)
		}
	}
	if len(mine) == 0 {
		return nil
	}
	block := &JudgeCalibration{MinLabelsPerClass: MinLabelsPerClass, Conf: opts.Conf, Weighting: weighting,
		Judges: Keyed[JudgeCalibrationEntry]{}}
	block.Labels.NLines = len(mine)
	people := map[string]bool{}
	for _, l := range mine {
		people[l.Labeler] = true
	}
	block.Labels.NLabelers = len(people)
	cons := labels.Consensuses(mine)
	block.Labels.NRows = len(cons)
	var labs []labelled
	for _, c := range cons {
		i, ok := rowOf[c.Key]
		switch {
		case !ok:
			block.Labels.NUnjudged++
		case c.Present == nil:
			block.Labels.NTies++
		default:
			labs = append(labs, labelled{i, *c.Present})
		}
	}
	block.LabelerAgreement = labelerAgreement(cons)

	w := designWeights(rows, labs)
	judges := judgesOf(target, rows, in)
	out := &calibrationOf{block: block}
	for _, j := range judges {
		e := JudgeCalibrationEntry{Role: j.role, ByMetric: Keyed[MetricCalibration]{}}
		for _, metric := range metricsOf(rows, labs) {
			var items []stats.CalibItem
			for _, lb := range labs {
				r := rows[lb.idx]
				v := j.verdict(lb.idx)
				if r.metricKey() != metric || v == nil {
					continue
				}
				s := stratum(r.Present)
				items = append(items, stats.CalibItem{Human: lb.human, Judge: *v, Weight: w.of(metric, s), Stratum: s})
			}
			if len(items) == 0 {
				continue
			}
			seed := testSeed(opts.Seed, "calibration", target, j.name, metric)
			e.ByMetric = append(e.ByMetric, Entry[MetricCalibration]{metric, metricCalibration(items, opts.Conf, seed)})
		}
		block.Judges = append(block.Judges, Entry[JudgeCalibrationEntry]{j.name, e})
		if j.role == roleMain {
			out.judge = j.name
			out.correct(rows, labs, e, opts.Conf)
		}
	}
	return out
}

// judge is one verdict source on a target's rows.
type judge struct {
	name, role string
	verdict    func(i int) *bool
}

// judgesOf lists the main verdict, the main panel's members and the
// alternate judges of a target.
func judgesOf(target string, rows []row, in *CalibrationInput) []judge {
	prs, names := panelRows(rows)
	main := mainJudgeName(rows, in)
	out := []judge{{main, roleMain, func(i int) *bool { return rows[i].Present }}}
	if len(prs) > 0 {
		// Per row, each member's verdict under its panel name.
		byRow := make(map[int]map[string]*bool, len(prs))
		at := map[verdictKey]int{}
		for i, r := range rows {
			at[r.key()] = i
		}
		for _, pr := range prs {
			i := at[pr.row.key()]
			m := map[string]*bool{}
			for k, n := range pr.names {
				m[n] = pr.votes[k]
			}
			byRow[i] = m
		}
		for _, n := range names {
			out = append(out, judge{n, rolePanel, func(i int) *bool { return byRow[i][n] }})
		}
	}
	for _, a := range in.Alternates {
		if a.Target != target {
			continue
		}
		vs := make(map[verdictKey]*bool, len(a.Scores))
		for _, s := range a.Scores {
			vs[vkOf(s)] = s.Present
		}
		out = append(out, judge{a.Judge, roleAlternate, func(i int) *bool { return vs[rows[i].key()] }})
	}
	return out
}

// metricsOf lists the metrics with labelled rows, sorted.
func metricsOf(rows []row, labs []labelled) []string {
	var ms []string
	for _, lb := range labs {
		if m := rows[lb.idx].metricKey(); !slices.Contains(ms, m) {
			ms = append(ms, m)
		}
	}
	sort.Strings(ms)
	return ms
}

// weights are the design weights per metric and main-verdict stratum:
// study rows / labelled rows.
type weights struct {
	study, labelled map[string]*[3]int
}

func designWeights(rows []row, labs []labelled) weights {
	w := weights{study: map[string]*[3]int{}, labelled: map[string]*[3]int{}}
	count := func(m map[string]*[3]int, r row) {
		k := r.metricKey()
		if m[k] == nil {
			m[k] = &[3]int{}
		}
		m[k][stratum(r.Present)]++
	}
	for _, r := range rows {
		count(w.study, r)
	}
	for _, lb := range labs {
		count(w.labelled, rows[lb.idx])
	}
	return w
}

func (w weights) of(metric string, s int) float64 {
	l := w.labelled[metric]
	if l == nil || l[s] == 0 {
		return 0
	}
	return float64(w.study[metric][s]) / float64(l[s])
}

// metricCalibration turns stats.Calibrate into results.json's entry.
func metricCalibration(items []stats.CalibItem, conf float64, seed uint64) MetricCalibration {
	mc := MetricCalibration{N: len(items)}
	for _, it := range items {
		if it.Human {
			mc.NHumanPresent++
		} else {
			mc.NHumanAbsent++
		}
		if it.Judge {
			mc.NJudgePresent++
		} else {
			mc.NJudgeAbsent++
		}
	}
	c := stats.Calibrate(items, conf, calibrationReps, seed)
	share := func(s stats.Share) Statistic {
		st := Statistic{N: s.N, Method: stats.MethodCalibrationWilson}
		if s.N > 0 {
			st.Estimate, st.Low, st.High = finite(s.Estimate), finite(s.Lo), finite(s.Hi)
		}
		return st
	}
	mc.Sensitivity, mc.Specificity = share(c.Sensitivity), share(c.Specificity)
	mc.Kappa = Statistic{Estimate: finite(c.Kappa), Low: finite(c.KappaLo), High: finite(c.KappaHi), N: c.KappaN, Method: stats.MethodKappaBootstrap}
	mc.Agreement = finite(c.Agreement)
	// Informative needs the data to show Se + Sp > 1, not just the point
	// estimates: a coin-flip judge lands above 1 half the time. κ has the
	// sign of Se + Sp − 1, and its (conservative) interval must exclude 0.
	if mc.NHumanPresent > 0 && mc.NHumanAbsent > 0 && !math.IsNaN(c.KappaLo) {
		mc.Informative = ptr(c.Sensitivity.Estimate+c.Specificity.Estimate > 1 && c.KappaLo > 0)
	}
	var warn []string
	if mc.NHumanPresent < MinLabelsPerClass || mc.NHumanAbsent < MinLabelsPerClass {
		warn = append(warn, fmt.Sprintf("only %d present and %d absent by the humans: %d+ of each recommended", mc.NHumanPresent, mc.NHumanAbsent, MinLabelsPerClass))
	}
	if mc.Informative != nil && !*mc.Informative {
		warn = append(warn, "uninformative: the labels do not show sensitivity + specificity > 1 (κ's interval reaches 0)")
	}
	mc.Warning = strings.Join(warn, "; ")
	return mc
}

// labelerAgreement is, per metric, agreement between people on rows with
// two or more labelers (each person's latest label).
func labelerAgreement(cons []labels.Consensus) Keyed[LabelerAgreement] {
	units := map[string][][]int{}
	for _, c := range cons {
		if len(c.Votes) < 2 {
			continue
		}
		units[c.Key.MetricID] = append(units[c.Key.MetricID], boolsToInts(c.Votes))
	}
	ms := make([]string, 0, len(units))
	for m := range units {
		ms = append(ms, m)
	}
	sort.Strings(ms)
	out := Keyed[LabelerAgreement]{}
	for _, m := range ms {
		la := LabelerAgreement{NRows: len(units[m])}
		for _, u := range units[m] {
			if !slices.Contains(u, 1-u[0]) {
				la.NUnanimous++
			}
		}
		a, n := stats.KrippendorffAlpha(units[m])
		la.Alpha, la.NValues = finite(a), n
		out = append(out, Entry[LabelerAgreement]{m, la})
	}
	return out
}

// ---- corrected pass rates ----

// correct computes the main verdict's corrected rates per metric and per
// track from its calibration entry e.
func (c *calibrationOf) correct(rows []row, labs []labelled, e JudgeCalibrationEntry, conf float64) {
	c.byMetric = map[string]*Corrected{}
	c.tracks = map[config.MetricType]*Corrected{}
	c.trackRaw = map[config.MetricType]*stats.Corrected{}
	parts := map[string]stats.CorrectionPart{}
	nLabels := map[string]int{}
	types := map[string]config.MetricType{}
	for _, r := range rows {
		types[r.metricKey()] = r.typ
	}
	for metric, typ := range types {
		if typ != config.Positive && typ != config.Negative {
			continue
		}
		pt, n, warn := correctionPart(metric, rows, labs, e, conf)
		cor := &Corrected{Method: stats.MethodCorrectedMOVER, Judge: c.judge, NLabels: n, Warning: warn}
		if cal, ok := e.ByMetric.Get(metric); ok {
			cor.Se, cor.Sp = cal.Sensitivity.Estimate, cal.Specificity.Estimate
		}
		if warn == "" {
			parts[metric] = pt
			setCorrected(cor, stats.CorrectPrevalence([]stats.CorrectionPart{pt}), typ)
		}
		nLabels[metric] = n
		c.byMetric[metric] = cor
	}
	for _, tr := range tracks {
		var ms []string
		total := 0
		for m, typ := range types {
			if typ == tr.typ {
				ms = append(ms, m)
				total += parts[m].Observed.N
			}
		}
		if len(ms) == 0 {
			continue
		}
		sort.Strings(ms)
		cor := &Corrected{Method: stats.MethodCorrectedMOVER, Judge: c.judge}
		var missing []string
		var ps []stats.CorrectionPart
		n := 0
		for _, m := range ms {
			n += nLabels[m]
			pt, ok := parts[m]
			if !ok {
				missing = append(missing, m)
				continue
			}
			pt.Weight = float64(pt.Observed.N) / float64(total)
			ps = append(ps, pt)
		}
		cor.NLabels = n
		if len(missing) > 0 {
			cor.Warning = "not corrected: no usable calibration for " + strings.Join(missing, ", ") + " (see by_metric)"
		} else {
			raw := stats.CorrectPrevalence(ps)
			setCorrected(cor, raw, tr.typ)
			c.trackRaw[tr.typ] = &raw
		}
		c.tracks[tr.typ] = cor
	}
}

// setCorrected writes a corrected "present" share as the pass rate: the
// share itself for a positive metric, 1 − share for a negative one.
func setCorrected(cor *Corrected, c stats.Corrected, typ config.MetricType) {
	est, lo, hi := c.Estimate, c.Lo, c.Hi
	if typ == config.Negative {
		est, lo, hi = 1-est, 1-hi, 1-lo
	}
	cor.Estimate, cor.Low, cor.High = finite(est), finite(lo), finite(hi)
}

// correctionPart builds one metric's stats.CorrectionPart from the main
// verdicts (clustered by base scenario) and the labels split by verdict;
// warn is non-empty when the metric cannot be corrected.
func correctionPart(metric string, rows []row, labs []labelled, e JudgeCalibrationEntry, conf float64) (pt stats.CorrectionPart, nLabels int, warn string) {
	obs := newClusterSet()
	var study [2]int
	for _, r := range rows {
		if r.metricKey() == metric && r.Present != nil {
			obs.add(keyOf(r), *r.Present)
			study[b2i(*r.Present)]++
		}
	}
	lab := [2]*clusterSet{newClusterSet(), newClusterSet()}
	var got [2]int
	for _, lb := range labs {
		r := rows[lb.idx]
		if r.metricKey() != metric || r.Present == nil {
			continue
		}
		v := b2i(*r.Present)
		lab[v].add(keyOf(r), lb.human)
		got[v]++
	}
	nLabels = got[0] + got[1]
	cal, ok := e.ByMetric.Get(metric)
	switch {
	case nLabels == 0 || !ok:
		return pt, nLabels, "no labels: not corrected"
	case !enough(got[1], study[1]) || !enough(got[0], study[0]):
		return pt, nLabels, fmt.Sprintf("thinly labelled: %d rows the judge called present and %d it called absent are labelled; %d of each (or all of them) needed", got[1], got[0], MinLabelsPerClass)
	case cal.Informative == nil:
		return pt, nLabels, "the humans' labels hold only one answer: sensitivity or specificity unknown"
	case !*cal.Informative:
		return pt, nLabels, "uninformative judge: the labels do not show sensitivity + specificity > 1 (κ's interval reaches 0); no correction"
	}
	all := func(clusterKey) bool { return true }
	pt = stats.CorrectionPart{
		Weight:   1,
		Observed: stats.ClusterRate(obs.sums(all), conf),
		PPV:      stats.ClusterRate(lab[1].sums(all), conf),
		FOR:      stats.ClusterRate(lab[0].sums(all), conf),
	}
	return pt, nLabels, ""
}

// enough: MinLabelsPerClass labelled rows, or every row of the verdict
// when the study has fewer (but at least one).
func enough(labelled, study int) bool {
	return labelled >= MinLabelsPerClass || (labelled == study && labelled > 0)
}

// leaderboardCorrected is the mean of the corrected tracks the leaderboard
// uses (all of them must be corrected).
func (c *calibrationOf) leaderboardCorrected(lb *Leaderboard) *LeaderboardCorrected {
	if c == nil || c.tracks == nil || lb == nil || len(lb.Tracks) == 0 {
		return nil
	}
	out := &LeaderboardCorrected{Method: correctedLeaderboardMethod, Judge: c.judge}
	var est, lo, hi float64
	var missing []string
	for _, tr := range tracks {
		if !slices.Contains(lb.Tracks, tr.name) {
			continue
		}
		cor := c.tracks[tr.typ]
		if cor == nil || cor.Estimate == nil {
			missing = append(missing, tr.name)
			continue
		}
		raw := c.trackRaw[tr.typ]
		e, l, h := raw.Estimate, raw.Lo, raw.Hi
		if tr.typ == config.Negative {
			e, l, h = 1-e, 1-h, 1-l
		}
		est, lo, hi = est+e, lo+l, hi+h
	}
	if len(missing) > 0 {
		out.Warning = "not corrected: no corrected rate for the " + strings.Join(missing, " and ") + " track"
		if len(missing) > 1 {
			out.Warning += "s"
		}
		return out
	}
	k := float64(len(lb.Tracks))
	out.Score, out.CILow, out.CIHigh = finite(est/k), finite(lo/k), finite(hi/k)
	return out
}
