package study

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"strings"

	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/layout"
	"github.com/impactbench/impactbench/internal/results"
	"github.com/impactbench/impactbench/internal/stats"
)

// Judge error. A study score is the share of the judge's verdicts that
// pass; when the judge errs, that share is biased and its interval (base
// scenarios only) too narrow. Where people labelled a benchmark's
// conversations, `impactbench calibrate` measured the judge against them
// (results.json's judge_calibration) and chose, per model and metric, the
// sensitivity and specificity a correction uses (by_metric's corrected:
// its level and judge). The study applies that correction to each age
// group's observed rate and combines the metrics of a node, so a cell
// carries the corrected score and its wider interval beside the raw one.

// methodCorrected says how a cell's corrected score is made.
const methodCorrected = "judge-error-corrected score: per metric, Rogan-Gladen on the age group's observed 'present' share with the sensitivity and specificity results.json's calibration chose for that model and metric (its level: all targets, this target or all metrics); the interval is Fieller's with the share's cluster interval and the sensitivity's and specificity's intervals, their errors added linearly (results.json does not store their correlation: the conservative bound); the node's metrics combined as its score (weights renormalised), distances added linearly within a shared calibration and in quadrature across. Assumes the judge errs alike at both ages"

// metricCal is the judge calibration one model's rows of one metric are
// corrected with.
type metricCal struct {
	se, sp stats.Share
	group  string // metrics sharing it err together (stats.CorrectedPart.Group)
}

// calibState is what the study read from the benchmarks' results.json:
// cal[model][metric] (nil: no usable correction), labelled[model] (the
// model has judge calibration in some benchmark) and any benchmark had.
type calibState struct {
	cal      [][]*metricCal
	labelled []bool
	any      bool
}

// loadResults reads every study benchmark's results.json (when there is
// one) for the judge calibration of the study's models and their provider
// safety stops (refused.go).
func (s *Study) loadResults() error {
	s.calib = calibState{cal: make([][]*metricCal, len(s.Models)), labelled: make([]bool, len(s.Models))}
	s.refused = make([][]BenchRefused, len(s.Models))
	for mi := range s.Models {
		s.calib.cal[mi] = make([]*metricCal, len(s.Metrics))
	}
	for _, b := range s.Benchmarks {
		if len(b.Runs) == 0 {
			continue
		}
		path := layout.Bench{Dir: b.Dir}.Results()
		rs, err := results.ReadResults(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		byRun := map[string]*results.ModelResult{}
		for i := range rs {
			byRun[rs[i].TargetModel] = &rs[i]
		}
		for _, r := range b.Runs {
			mr := byRun[r.RunDir]
			if mr == nil {
				continue
			}
			if mr.JudgeCalibration != nil {
				s.addCalibration(b, r.Model, mr)
			}
			if mr.Refused != nil {
				s.addRefused(b, r.Model, mr.Refused)
			}
		}
	}
	return nil
}

// addCalibration records the corrections results.json chose for one
// model's metrics of benchmark b.
func (s *Study) addCalibration(b *Bench, mi int, mr *results.ModelResult) {
	s.calib.any, s.calib.labelled[mi] = true, true
	for _, e := range mr.ByMetric {
		k, _, ok := s.metricOf(b, e.Key, "")
		cor := e.Value.Corrected
		if !ok || cor == nil || cor.Estimate == nil {
			continue
		}
		se, sp, group, ok := calibAt(mr.JudgeCalibration, cor, e.Key)
		if ok {
			s.calib.cal[mi][k] = &metricCal{se: se, sp: sp, group: b.Slug + "\x00" + group}
		}
	}
}

// calibAt finds the sensitivity and specificity (with their intervals) of
// the calibration a correction used, and the group of metrics sharing it.
func calibAt(jc *results.JudgeCalibration, cor *results.Corrected, metric string) (se, sp stats.Share, group string, ok bool) {
	var entry *results.JudgeCalibrationEntry
	for i := range jc.Judges {
		if jc.Judges[i].Key == cor.Judge {
			entry = &jc.Judges[i].Value
		}
	}
	if entry == nil {
		return se, sp, "", false
	}
	var mc *results.MetricCalibration
	switch cor.Level {
	case "all metrics":
		mc, group = entry.AllMetrics, "\x00all"
	case "target":
		mc, group = lookup(entry.ThisTarget, metric), metric+"\x00target"
	default:
		mc, group = lookup(entry.ByMetric, metric), metric
	}
	if mc == nil {
		return se, sp, "", false
	}
	se, okSe := share(mc.Sensitivity)
	sp, okSp := share(mc.Specificity)
	return se, sp, group, okSe && okSp
}

func lookup(k results.Keyed[results.MetricCalibration], key string) *results.MetricCalibration {
	for i := range k {
		if k[i].Key == key {
			return &k[i].Value
		}
	}
	return nil
}

func share(st results.Statistic) (stats.Share, bool) {
	if st.Estimate == nil || st.Low == nil || st.High == nil {
		return stats.Share{}, false
	}
	return stats.Share{Estimate: *st.Estimate, Lo: *st.Low, Hi: *st.High, N: st.N}, true
}

// Corrected is a cell's score corrected for judge error, with its
// interval; Score is null and Warning says why when a metric of the cell
// has no usable correction.
type Corrected struct {
	Score   *float64 `json:"score"`
	Lo      *float64 `json:"lo"`
	Hi      *float64 `json:"hi"`
	Metrics int      `json:"metrics"` // metrics corrected, of the cell's metrics with rows
	Warning string   `json:"warning,omitempty"`
}

// corrected is model mi's corrected score at node n and age ai (nil when
// the model has no judge calibration).
func (s *Study) corrected(n *Node, mi, ai int) *Corrected {
	if !s.calib.labelled[mi] {
		return nil
	}
	out := &Corrected{}
	var parts []stats.CorrectedPart
	var wsum float64
	rows := 0
	for j, k := range n.idx {
		cs := s.obs[mi][ai][k]
		if _, ok := exactRate(cs); !ok {
			continue
		}
		rows++
		c := s.calib.cal[mi][k]
		if c == nil {
			continue
		}
		parts = append(parts, s.correctMetric(cs, c, k, n.weight(j)))
		wsum += n.weight(j)
	}
	out.Metrics = len(parts)
	if len(parts) < rows {
		out.Warning = fmt.Sprintf("not corrected: %d of the %d metrics with rows have no usable judge calibration for this model (results.json's by_metric corrected)", rows-len(parts), rows)
		return out
	}
	for i := range parts {
		parts[i].Weight /= wsum
	}
	c := stats.CombineCorrected(parts)
	if math.IsNaN(c.Estimate) {
		out.Warning = "not corrected: a metric's observed rate lies outside what its judge could report"
		return out
	}
	out.Score, out.Lo, out.Hi = ptr(c.Estimate), ptr(c.Lo), ptr(c.Hi)
	return out
}

// correctMetric is one metric's corrected pass rate at one age: its
// observed "present" share (the pass rate of a positive metric, 1 − it of
// a negative one) with the interval the study gives the metric's own cell
// (the stratified interval of one stratum), corrected with c: so the
// corrected interval is never narrower than the raw one beside it.
func (s *Study) correctMetric(cs []stats.ClusterSum, c *metricCal, k int, w float64) stats.CorrectedPart {
	r := stats.StratifiedMean([]stats.Stratum{{Weight: 1, Clusters: cs}}, Conf)
	p, lo, hi := r.Estimate, r.Lo, r.Hi
	negative := s.Metrics[k].Type == string(config.Negative)
	if negative {
		p, lo, hi = 1-p, 1-hi, 1-lo
	}
	cor := stats.RoganGladenInterval(p, lo, hi, c.se, c.sp, -1)
	if negative {
		cor.Estimate, cor.Lo, cor.Hi = 1-cor.Estimate, 1-cor.Hi, 1-cor.Lo
	}
	return stats.CorrectedPart{Weight: w, Estimate: cor.Estimate, Lo: cor.Lo, Hi: cor.Hi, Group: c.group}
}

// judgeErrorNote is study.json's judge_error: what the scores' intervals
// leave out.
func (s *Study) judgeErrorNote() string {
	if !s.calib.any {
		return "no human labels: every score is the judges' verdicts, uncorrected, and its interval counts only the base scenarios drawn, not judge error (label conversations and run `impactbench calibrate` to measure it)"
	}
	var without []string
	for mi, m := range s.Models {
		if !s.calib.labelled[mi] {
			without = append(without, m.ID)
		}
	}
	note := "cells of models with judge calibration carry corrected (" + methodCorrected + "); score and its interval remain the uncorrected verdicts"
	if len(without) > 0 {
		note += fmt.Sprintf("; %d model(s) have no human labels in any benchmark (%s): their scores leave judge error out", len(without), strings.Join(without, ", "))
	}
	return note
}
