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
// specificity on that target's own labels (chooseCalib); tracks combine
// their metrics; the leaderboard averages the tracks.

// choice is the calibration a metric's correction uses, or why none.
type choice struct {
	c           *calib
	level, note string
	why         string
}

// chooseCalib picks target t's calibration for metric m: its own labels,
// weighted to its own rows — or says why there is none and how many of its
// rows to label. Never another target's or another metric's labels: the
// judge may err differently there, and a pooled number would then be
// wrong with nothing to show it.
func (f *fileCalibration) chooseCalib(t int, m string) choice {
	p := f.pool
	lab := [2]int{p.labelledOf[t].get(m, 0), p.labelledOf[t].get(m, 1)}
	rows := [2]int{p.studyOf[t].get(m, 0), p.studyOf[t].get(m, 1)}
	if lab[0]+lab[1] == 0 {
		return choice{why: fmt.Sprintf("no labels of this target on %s: not corrected (label %s; labels of other targets do not stand in, as the judge may err differently on each)", m, askFor(rows, lab))}
	}
	own := f.ownCalib(t, m)
	switch {
	case !own.enough:
		return choice{why: fmt.Sprintf("thinly labelled: %d of this target's rows the judge called present and %d it called absent are labelled on %s; %d of each (or all of them) are needed for its corrected rate: label %s",
			lab[1], lab[0], m, MinTargetLabelsPerClass, askFor(rows, lab))}
	case !own.usable():
		return choice{why: oneAnswerWhy(m, own.mc, rows, lab)}
	case !*own.mc.Informative:
		return choice{why: fmt.Sprintf("uninformative judge on this target's %d labelled rows of %s: the labels do not show sensitivity + specificity > 1 (Youden's J's one-sided 95 %% lower limit is not above 0); no correction", own.mc.N, m)}
	}
	ch := choice{c: own, level: scopeTarget}
	if test := f.tests[m]; test != nil && test.Differs {
		ch.note = fmt.Sprintf("the judge's error on %s differs by target (%s): this target's own %d labelled rows, which its correction always uses, are what make the number valid", m, describeP(test), own.mc.N)
	}
	return ch
}

// askFor says how many more of a target's rows of each judge verdict its
// correction needs at least (rows and lab indexed absent, present).
func askFor(rows, lab [2]int) string {
	more := func(v int) int { return max(0, min(MinTargetLabelsPerClass, rows[v])-lab[v]) }
	p, a := more(1), more(0)
	switch {
	case p > 0 && a > 0:
		return fmt.Sprintf("%d more of its rows the judge called present and %d more it called absent", p, a)
	case p > 0:
		return fmt.Sprintf("%d more of its rows the judge called present", p)
	case a > 0:
		return fmt.Sprintf("%d more of its rows the judge called absent", a)
	}
	return "more of its rows"
}

// oneAnswerWhy explains a target's calibration with one human answer: what
// to label next, or why labelling cannot help.
func oneAnswerWhy(m string, mc MetricCalibration, rows, lab [2]int) string {
	if mc.NHumanPresent == 0 {
		if lab[1] < rows[1] {
			return fmt.Sprintf("people found the behaviour in none of this target's %d labelled rows of %s, so the judge's sensitivity on it is unknown and there is no correction: label more of its rows the judge called present (%d not labelled yet), where the behaviour should be", mc.N, m, rows[1]-lab[1])
		}
		return fmt.Sprintf("people found the behaviour in none of this target's %d labelled rows of %s, and every row the judge called present is labelled: the behaviour is too rare in this study's rows of the target for a correction (the judge's \"present\" verdicts here are false alarms)", mc.N, m)
	}
	if lab[0] < rows[0] {
		return fmt.Sprintf("people found the behaviour in every one of this target's %d labelled rows of %s, so the judge's specificity on it is unknown and there is no correction: label more of its rows the judge called absent (%d not labelled yet)", mc.N, m, rows[0]-lab[0])
	}
	return fmt.Sprintf("people found the behaviour in every one of this target's %d labelled rows of %s, and every row the judge called absent is labelled: no correction is possible from this study's rows", mc.N, m)
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
		cor.NLabels = f.pool.labelledOf[t].get(m, 0) + f.pool.labelledOf[t].get(m, 1)
		if ch.c == nil {
			cor.Warning = ch.why
			continue
		}
		cor.Level, cor.LevelNote, cor.NLabels = ch.level, ch.note, ch.c.mc.N
		cor.Se, cor.Sp = ch.c.mc.Sensitivity.Estimate, ch.c.mc.Specificity.Estimate
		raw := stats.RoganGladenInterval(o.Estimate, o.Lo, o.Hi, ch.c.raw.Sensitivity, ch.c.raw.Specificity, ch.c.raw.SeSpCorr)
		setCorrected(cor, raw, typ)
		// Each metric's correction rests on labels of its own: independent.
		parts[m] = stats.CorrectedPart{Weight: float64(o.N), Estimate: raw.Estimate, Lo: raw.Lo, Hi: raw.Hi, Group: m}
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
// share itself for a positive metric, 1 − share for a negative one. A
// correction that left 0–1 and was clipped keeps its unclipped value, with
// a note: 1.00 from 1.116 is a bound, not a measurement of 100 %.
func setCorrected(cor *Corrected, c stats.Corrected, typ config.MetricType) {
	est, lo, hi, raw := c.Estimate, c.Lo, c.Hi, c.Unclipped
	if typ == config.Negative {
		est, lo, hi, raw = 1-est, 1-hi, 1-lo, 1-raw
	}
	cor.Estimate, cor.Low, cor.High = finite(est), finite(lo), finite(hi)
	if math.IsNaN(est) {
		cor.Warning = "the observed rate lies outside what this judge could report (sensitivity and specificity): no correction"
		return
	}
	if !math.IsNaN(raw) && (raw < -clipTolerance || raw > 1+clipTolerance) {
		cor.Unclipped = ptr(round4(raw))
		cor.ClipNote = fmt.Sprintf("clipped: the correction gives %.3f, outside 0–1, shown as %.2f — the observed rate is beyond what the judge's estimated sensitivity and specificity allow (their estimates are off, or the rate is at its bound); read it as a bound and label more rows", raw, est)
	}
}

// clipTolerance is how far outside 0–1 a correction may be from rounding
// alone before it counts as clipped.
const clipTolerance = 1e-9

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
