package results

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/stats"
)

// Corrected pass rates: each metric of each target, Rogan–Gladen on the
// target's observed "present" share with the main judge's sensitivity and
// specificity from the level chooseCalib picks; tracks combine their
// metrics; the leaderboard averages the tracks.

// choice is the calibration a metric's correction uses, or why none.
type choice struct {
	c                *calib
	level, note, why string
}

// chooseCalib picks target t's calibration for metric m: the pooled one;
// the target's own when the judge's error differs by target and the target
// has labels enough; the judge's over all metrics when the metric is
// thinly labelled. An uninformative judge is never replaced by a pool
// that looks better.
func (f *fileCalibration) chooseCalib(t int, m string) choice {
	pooled := f.main[m]
	if pooled != nil && pooled.enough && !pooled.usable() {
		return choice{why: fmt.Sprintf("the humans gave one answer only on %s's %d labelled rows (%d present, %d absent): the judge's sensitivity or specificity is unknown, so no correction (label rows the judge called present, where the behaviour should be; a judge whose \"present\" rows people never confirm is not informative)",
			m, pooled.mc.N, pooled.mc.NHumanPresent, pooled.mc.NHumanAbsent)}
	}
	if pooled != nil && pooled.enough {
		if !*pooled.mc.Informative {
			return choice{why: "uninformative judge: the labels do not show sensitivity + specificity > 1 (Youden's J's one-sided 95 % lower limit is not above 0); no correction"}
		}
		test := f.tests[m]
		if test == nil || !test.Differs {
			return choice{c: pooled, level: scopeTargets}
		}
		own := f.ownCalib(t, m)
		switch {
		case own.enough && own.usable() && *own.mc.Informative:
			return choice{c: own, level: scopeTarget, note: fmt.Sprintf("the judge's error on %s differs by target (%s): corrected with this target's own %d labelled rows", m, describeP(test), own.mc.N)}
		case own.enough && own.usable():
			return choice{why: fmt.Sprintf("the judge's error on %s differs by target (%s), and on this target's own labels it is uninformative; no correction", m, describeP(test))}
		}
		return choice{c: pooled, level: scopeTargets, note: fmt.Sprintf("caution: the judge's error on %s may differ by target (%s), but this target has only %d and %d labelled rows the judge called present and absent (%d of each for its own calibration): corrected with every target's labels; label more of this target's rows",
			m, describeP(test), f.pool.labelledOf[t].get(m, 1), f.pool.labelledOf[t].get(m, 0), MinLabelsPerClass)}
	}
	// Thin: the judge over all metrics.
	all := f.all
	lp, la := f.pool.labelled.get(m, 1), f.pool.labelled.get(m, 0)
	if lp+la == 0 {
		return choice{why: fmt.Sprintf("no labels on %s: not corrected (label at least %d rows of each judge verdict; a metric with a few labels borrows the judge's calibration over all metrics)", m, MinLabelsPerClass)}
	}
	if all != nil && all.enough && all.usable() && *all.mc.Informative && f.nMetrics >= 2 {
		return choice{c: all, level: scopeMetrics, note: fmt.Sprintf("%s has %d labelled rows the judge called present and %d it called absent (%d of each, or all, for its own calibration): corrected with the judge's sensitivity and specificity over all %d metrics of the benchmark (assumes the judge errs alike on every metric)",
			m, lp, la, MinLabelsPerClass, f.nMetrics)}
	}
	if all != nil && all.enough && all.usable() && f.nMetrics >= 2 {
		return choice{why: "uninformative judge (over all metrics): the labels do not show sensitivity + specificity > 1; no correction"}
	}
	return choice{why: fmt.Sprintf("thinly labelled: %d rows the judge called present and %d it called absent are labelled on %s, and too few over all metrics; %d of each (or all of them) needed", lp, la, m, MinLabelsPerClass)}
}

// correctTarget builds target t's block and corrected rates.
func (f *fileCalibration) correctTarget(t int) *calibrationOf {
	rows := f.pool.targets[t].rows
	out := &calibrationOf{judge: f.pool.mainJudge, byMetric: map[string]*Corrected{}, tracks: map[config.MetricType]*Corrected{},
		trackRaw: map[config.MetricType]*stats.Corrected{}}
	types := map[string]config.MetricType{}
	obs := map[string]*clusterSet{}
	for _, r := range rows {
		m := r.metricKey()
		types[m] = r.typ
		if r.Present == nil {
			continue
		}
		if obs[m] == nil {
			obs[m] = newClusterSet()
		}
		obs[m].add(keyOf(r), *r.Present)
	}
	parts := map[string]stats.CorrectedPart{}
	for m, typ := range types {
		if typ != config.Positive && typ != config.Negative {
			continue
		}
		cor := &Corrected{Method: stats.MethodRoganGladenFieller, Judge: out.judge}
		out.byMetric[m] = cor
		if obs[m] == nil {
			cor.Warning = "no verdicts on this metric: nothing to correct"
			continue
		}
		o := stats.ClusterRate(obs[m].sums(func(clusterKey) bool { return true }), f.pool.opts.Conf)
		ch := f.chooseCalib(t, m)
		if ch.c == nil {
			cor.Warning = ch.why
			if c := f.main[m]; c != nil {
				cor.NLabels = c.mc.N
			}
			continue
		}
		cor.Level, cor.LevelNote, cor.NLabels = ch.level, ch.note, ch.c.mc.N
		cor.Se, cor.Sp = ch.c.mc.Sensitivity.Estimate, ch.c.mc.Specificity.Estimate
		raw := stats.RoganGladenInterval(o.Estimate, o.Lo, o.Hi, ch.c.raw.Sensitivity, ch.c.raw.Specificity, ch.c.raw.SeSpCorr)
		setCorrected(cor, raw, typ)
		group := m
		switch ch.level {
		case scopeMetrics:
			group = "\x00all"
		case scopeTarget:
			group = m + "\x00target"
		}
		parts[m] = stats.CorrectedPart{Weight: float64(o.N), Estimate: raw.Estimate, Lo: raw.Lo, Hi: raw.Hi, Group: group}
	}
	for _, tr := range tracks {
		out.correctTrack(tr.typ, types, parts)
	}
	out.block = f.block(t)
	return out
}

// correctTrack combines a track's corrected metrics; every metric of the
// track must have a number.
func (c *calibrationOf) correctTrack(typ config.MetricType, types map[string]config.MetricType, parts map[string]stats.CorrectedPart) {
	var ms []string
	for m, mt := range types {
		if mt == typ {
			ms = append(ms, m)
		}
	}
	if len(ms) == 0 {
		return
	}
	sort.Strings(ms)
	cor := &Corrected{Method: "", Judge: c.judge}
	var missing, levels []string
	var ps []stats.CorrectedPart
	var total float64
	for _, m := range ms {
		if mc := c.byMetric[m]; mc != nil {
			cor.NLabels += mc.NLabels
			if mc.Level != "" && !slices.Contains(levels, mc.Level) {
				levels = append(levels, mc.Level)
			}
		}
		pt, ok := parts[m]
		if !ok {
			missing = append(missing, m)
			continue
		}
		ps = append(ps, pt)
		total += pt.Weight
	}
	for i := range ps {
		ps[i].Weight /= total
	}
	raw := stats.CombineCorrected(ps)
	cor.Method = raw.Method + " of " + stats.MethodRoganGladenFieller
	cor.Level = strings.Join(levels, ", ")
	if len(missing) > 0 {
		cor.Warning = "not corrected: no usable calibration for " + strings.Join(missing, ", ") + " (see by_metric)"
	} else {
		setCorrected(cor, raw, typ)
		c.trackRaw[typ] = &raw
	}
	c.tracks[typ] = cor
}

// setCorrected writes a corrected "present" share as the pass rate: the
// share itself for a positive metric, 1 − share for a negative one.
func setCorrected(cor *Corrected, c stats.Corrected, typ config.MetricType) {
	est, lo, hi := c.Estimate, c.Lo, c.Hi
	if typ == config.Negative {
		est, lo, hi = 1-est, 1-hi, 1-lo
	}
	cor.Estimate, cor.Low, cor.High = finite(est), finite(lo), finite(hi)
	if math.IsNaN(est) {
		cor.Warning = "the observed rate lies outside what this judge could report (sensitivity and specificity): no correction"
	}
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
