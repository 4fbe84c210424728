package results

import (
	"math"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/stats"
)

// significance is the family-wise error level of every test in the file.
const significance = 0.05

// addExtensions fills our additions. rows are the rows used for the
// statistics (after ValidOnly); all are every row of the model (validity is
// reported on all of them). The returned clusters feed the cross-model
// statistics (finishFile).
func addExtensions(m *ModelResult, rows, all []row, demo *demographics, opts Options) *modelClusters {
	m.Extended = true
	withCI(m.ByMetric, opts.Conf)
	withCI(m.ByScenario, opts.Conf)
	mc := newModelClusters(rows)
	m.PositiveCI = mc.trackCI(config.Positive, opts.Conf)
	m.NegativeCI = mc.trackCI(config.Negative, opts.Conf)
	for i := range m.ByMetric {
		e := &m.ByMetric[i]
		e.Value.ClusterCI = mc.metricCI(e.Key, opts.Conf)
	}
	for _, r := range rows {
		if r.Passed == nil {
			m.NNull++
		}
	}
	if demo.present() {
		m.ByDemographic = demo.breakdown(rows, opts.Conf)
		m.DemographicGaps = demo.gaps(m.TargetModel, rows, opts)
	}
	m.Agreement = agreementOfSamples(rows)
	m.Judges = judgeAgreement(rows, opts.Conf)
	m.Validity = validity(all)
	m.BreakTurns = breakTurns(rows)
	m.Unverified = unverified(rows)
	m.Refused = refusedStats(all)
	return mc
}

// wilson is the rounded Wilson interval, nil for no trials.
func wilson(k, n int, conf float64) (lo, hi *float64) {
	if n == 0 {
		return nil, nil
	}
	l, h := stats.Wilson(k, n, conf)
	return ptr(round4(l)), ptr(round4(h))
}

func ptr[T any](v T) *T { return &v }

// finite maps NaN (undefined statistic) to nil (JSON null), rounding to 4.
func finite(x float64) *float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return nil
	}
	return ptr(round4(x))
}

func withCI(rates Keyed[Rate], conf float64) {
	for i := range rates {
		r := &rates[i].Value
		r.WithCI = true
		r.CILow, r.CIHigh = wilson(r.NPassed, r.NTotal, conf)
	}
}

func rateWithCI(t tally, conf float64) Rate {
	r := t.rate()
	r.WithCI = true
	r.CILow, r.CIHigh = wilson(t.passed, t.total, conf)
	return r
}

// ---- cluster-level intervals ----

// clusterKey is one base scenario of one metric: the unit of every
// clustered statistic (its demographic variants and samples are correlated).
type clusterKey struct{ metric, base string }

func keyOf(r row) clusterKey {
	return clusterKey{r.metricKey(), artifacts.BaseIDOf(r.scenarioKey())}
}

// clusterSet tallies pass/fail observations per cluster in first-appearance
// order.
type clusterSet struct {
	idx  map[clusterKey]int
	keys []clusterKey
	tall []tally
}

func newClusterSet() *clusterSet { return &clusterSet{idx: map[clusterKey]int{}} }

func (c *clusterSet) add(k clusterKey, passed bool) {
	i, ok := c.idx[k]
	if !ok {
		i = len(c.keys)
		c.idx[k] = i
		c.keys = append(c.keys, k)
		c.tall = append(c.tall, tally{})
	}
	c.tall[i].total++
	if passed {
		c.tall[i].passed++
	}
}

// get returns the tally of k (zero when absent).
func (c *clusterSet) get(k clusterKey) tally {
	if i, ok := c.idx[k]; ok {
		return c.tall[i]
	}
	return tally{}
}

// sums lists the clusters accepted by keep as stats.ClusterSums.
func (c *clusterSet) sums(keep func(clusterKey) bool) []stats.ClusterSum {
	var out []stats.ClusterSum
	for i, k := range c.keys {
		if keep(k) {
			out = append(out, stats.Binary(c.tall[i].passed, c.tall[i].total))
		}
	}
	return out
}

// strata groups the clusters accepted by keep by metric (in first-appearance
// order), each weighted by its observations.
func (c *clusterSet) strata(keep func(clusterKey) bool) []stats.Stratum {
	var out []stats.Stratum
	at := map[string]int{}
	for i, k := range c.keys {
		if !keep(k) {
			continue
		}
		j, ok := at[k.metric]
		if !ok {
			j = len(out)
			at[k.metric] = j
			out = append(out, stats.Stratum{})
		}
		out[j].Clusters = append(out[j].Clusters, stats.Binary(c.tall[i].passed, c.tall[i].total))
		out[j].Weight += float64(c.tall[i].total)
	}
	return out
}

// modelClusters is one model's verdicts by cluster, with each metric's type.
type modelClusters struct {
	*clusterSet
	types    map[string]config.MetricType
	pos, neg stats.RateInterval // the track intervals (raw, for the leaderboard)
}

func newModelClusters(rows []row) *modelClusters {
	mc := &modelClusters{clusterSet: newClusterSet(), types: map[string]config.MetricType{}}
	for _, r := range rows {
		if r.Passed == nil {
			continue
		}
		mc.types[r.metricKey()] = r.typ
		mc.add(keyOf(r), *r.Passed)
	}
	return mc
}

func (mc *modelClusters) inTrack(typ config.MetricType) func(clusterKey) bool {
	return func(k clusterKey) bool { return mc.types[k.metric] == typ }
}

// trackCI is a track's interval with its metrics as fixed strata (every
// run has all of them; only each metric's base scenarios are sampled),
// each weighted by its observations so the estimate is the track's pooled
// pass rate (stats.StratifiedRate).
func (mc *modelClusters) trackCI(typ config.MetricType, conf float64) *ClusterCI {
	iv := stats.StratifiedRate(mc.strata(mc.inTrack(typ)), conf)
	if typ == config.Positive {
		mc.pos = iv
	} else {
		mc.neg = iv
	}
	return toClusterCI(iv, conf)
}

func (mc *modelClusters) metricCI(metric string, conf float64) *ClusterCI {
	return toClusterCI(stats.ClusterRate(mc.sums(func(k clusterKey) bool { return k.metric == metric }), conf), conf)
}

// clusterCIOf is the interval of a clusterSet's observations (a track's, in
// the judge panel and by_demographic), its metrics fixed strata as in
// trackCI.
func clusterCIOf(c *clusterSet, conf float64) *ClusterCI {
	return toClusterCI(stats.StratifiedRate(c.strata(func(clusterKey) bool { return true }), conf), conf)
}

// toClusterCI rounds a stats.RateInterval for results.json (undefined
// parts null). Observations are pass/fail here, so Sum is a whole count.
func toClusterCI(iv stats.RateInterval, conf float64) *ClusterCI {
	ci := &ClusterCI{
		N: iv.N, Passed: int(math.Round(iv.Sum)), Method: iv.Method, Clusters: iv.Clusters, Conf: conf,
		DF: iv.DF, Warning: iv.Warning,
	}
	if iv.N == 0 {
		return ci
	}
	ci.Estimate, ci.Low, ci.High = finite(iv.Estimate), finite(iv.Lo), finite(iv.Hi)
	ci.ICC, ci.ICCUpper = finite(iv.ICC), finite(iv.ICCUpper)
	ci.DesignEffect, ci.EffectiveN = finite(iv.DesignEffect), finite(iv.EffectiveN)
	ci.TLow, ci.THigh = finite(iv.TLo), finite(iv.THi)
	ci.WilsonLow, ci.WilsonHigh = finite(iv.WilsonLo), finite(iv.WilsonHi)
	ci.BettingLow, ci.BettingHigh = finite(iv.BettingLo), finite(iv.BettingHi)
	ci.Dispersion, ci.QuantileDF = finite(iv.Phi), finite(iv.Nu)
	if iv.Strata > 1 {
		ci.Strata = iv.Strata
	}
	return ci
}

// passRates returns the pooled positive and negative pass rates of rows.
func passRates(rows []row) (pos, neg *float64) {
	var p, n tally
	for _, r := range rows {
		switch r.typ {
		case config.Positive:
			p.add(r)
		case config.Negative:
			n.add(r)
		}
	}
	return ratio(p.passed, p.total), ratio(n.passed, n.total)
}
