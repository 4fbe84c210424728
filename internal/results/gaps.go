package results

import (
	"hash/fnv"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/stats"
)

// ---- demographics ----

// demographics indexes scenarios by id, with axes and values in the order
// they first appear in scenarios.json. A study has a handful of distinct
// demographics and up to 100,000 scenarios, so each id points into a table
// of the distinct ones, with their values already written as strings.
type demographics struct {
	byID   map[string]int32
	table  []map[string]string // axis → value
	axes   []string
	values map[string][]string
}

func newDemographics(scenarios []ScenarioDemographic) *demographics {
	d := &demographics{byID: make(map[string]int32, len(scenarios)), values: map[string][]string{}}
	seen := map[string]int32{} // canonical form → index in table
	var key strings.Builder
	for _, s := range scenarios {
		if _, dup := d.byID[s.ID]; dup {
			continue // first row wins, like a lookup by id would
		}
		key.Reset()
		vals := make(map[string]string, len(s.Demographic))
		for _, p := range s.Demographic {
			v := artifacts.ValueString(p.Value)
			if _, first := vals[p.Key]; !first {
				vals[p.Key] = v // Get's rule: the first pair of an axis
			}
			key.WriteString(strconv.Quote(p.Key))
			key.WriteByte('=')
			key.WriteString(strconv.Quote(v))
			key.WriteByte(';')
			if _, ok := d.values[p.Key]; !ok {
				d.axes = append(d.axes, p.Key)
				d.values[p.Key] = nil
			}
			if !slices.Contains(d.values[p.Key], v) {
				d.values[p.Key] = append(d.values[p.Key], v)
			}
		}
		idx, ok := seen[key.String()]
		if !ok {
			idx = int32(len(d.table))
			seen[key.String()] = idx
			d.table = append(d.table, vals)
		}
		d.byID[s.ID] = idx
	}
	return d
}

func (d *demographics) present() bool { return d != nil && len(d.axes) > 0 }

// value returns the row's value on axis (ok false: no scenario or no such axis).
func (d *demographics) value(r row, axis string) (string, bool) {
	idx, ok := d.byID[r.ID]
	if !ok {
		return "", false
	}
	v, ok := d.table[idx][axis]
	return v, ok
}

// breakdown is by_demographic: per axis, per value (values with no row of
// this model are left out), the pooled rate, typed rates and per-metric rates.
func (d *demographics) breakdown(rows []row, conf float64) Keyed[Keyed[DemographicValue]] {
	out := Keyed[Keyed[DemographicValue]]{}
	for _, axis := range d.axes {
		vals := Keyed[DemographicValue]{}
		for _, val := range d.values[axis] {
			var sub []row
			for _, r := range rows {
				if v, ok := d.value(r, axis); ok && v == val {
					sub = append(sub, r)
				}
			}
			if len(sub) == 0 {
				continue
			}
			var t tally
			for _, r := range sub {
				t.add(r)
			}
			all := rateWithCI(t, conf)
			pos, neg := passRates(sub)
			var pt, nt tally
			for _, r := range sub {
				switch r.typ {
				case config.Positive:
					pt.add(r)
				case config.Negative:
					nt.add(r)
				}
			}
			byMetric := rateBy(sub, row.metricKey)
			withCI(byMetric, conf)
			posRate, negRate := rateWithCI(pt, conf), rateWithCI(nt, conf)
			posRate.ClusterCI, negRate.ClusterCI = typedClusterCI(sub, config.Positive, conf), typedClusterCI(sub, config.Negative, conf)
			vals = append(vals, Entry[DemographicValue]{val, DemographicValue{
				PassRate: all.PassRate, NPassed: all.NPassed, NTotal: all.NTotal,
				CILow: all.CILow, CIHigh: all.CIHigh,
				PositivePassRate: pos, NegativePassRate: neg,
				Positive: posRate, Negative: negRate, ByMetric: byMetric,
			}})
		}
		if len(vals) > 0 {
			out = append(out, Entry[Keyed[DemographicValue]]{axis, vals})
		}
	}
	return out
}

// typedClusterCI is the cluster interval of rows of one metric type.
func typedClusterCI(rows []row, typ config.MetricType, conf float64) *ClusterCI {
	c := newClusterSet()
	for _, r := range rows {
		if r.typ == typ && r.Passed != nil {
			c.add(keyOf(r), *r.Passed)
		}
	}
	return clusterCIOf(c, conf)
}

// matchCell is one matched set of conversations: the same base scenario
// and sample with every other axis equal, so only the tested axis differs.
type matchCell struct {
	base   string
	sample int
	others string
}

// gaps compares the values of each axis, per metric. The matched
// conversation pairs give upstream-style rates and McNemar's counts; the
// test is at the base-scenario level (stats.ClusterDiff: per-scenario
// differences, one procedure for the test and its interval). p_adjusted is
// filled in later (finishFile), within the gap's family.
func (d *demographics) gaps(target string, rows []row, opts Options) []Gap {
	byMetric := map[string][]row{}
	for _, r := range rows {
		if r.Passed == nil {
			continue
		}
		if _, ok := d.byID[r.ID]; !ok {
			continue
		}
		byMetric[r.metricKey()] = append(byMetric[r.metricKey()], r)
	}
	metrics := make([]string, 0, len(byMetric))
	for k := range byMetric {
		metrics = append(metrics, k)
	}
	sort.Strings(metrics)

	out := []Gap{}
	for _, mid := range metrics {
		for _, axis := range d.axes {
			verdict := d.matchVerdicts(byMetric[mid], axis)
			vals := d.values[axis]
			for i := 0; i < len(vals); i++ {
				for j := i + 1; j < len(vals); j++ {
					if g, ok := gapOf(verdict, vals[i], vals[j], opts, target, mid, axis); ok {
						out = append(out, g)
					}
				}
			}
		}
	}
	return out
}

// matchVerdicts maps each matched cell to its verdict per value of axis
// (first verdict wins on duplicates).
func (d *demographics) matchVerdicts(rows []row, axis string) map[matchCell]map[string]bool {
	verdict := map[matchCell]map[string]bool{}
	for _, r := range rows {
		v, ok := d.value(r, axis)
		if !ok {
			continue
		}
		var others strings.Builder
		for _, ax := range d.axes {
			if ax == axis {
				continue
			}
			ov, _ := d.value(r, ax)
			others.WriteString(strconv.Quote(ax) + "=" + strconv.Quote(ov) + ";")
		}
		c := matchCell{artifacts.BaseIDOf(r.scenarioKey()), r.Sample, others.String()}
		if verdict[c] == nil {
			verdict[c] = map[string]bool{}
		}
		if _, seen := verdict[c][v]; !seen {
			verdict[c][v] = *r.Passed
		}
	}
	return verdict
}

// gapOf is one value pair's comparison (ok false: no matched pair). Its
// p-values are raw; finishFile adjusts and rounds them.
func gapOf(verdict map[matchCell]map[string]bool, a, bv string, opts Options, target, mid, axis string) (Gap, bool) {
	var n, passA, passB, b, c int
	perBase := map[string]*stats.PairedCluster{}
	for cell, byVal := range verdict {
		pa, okA := byVal[a]
		pb, okB := byVal[bv]
		if !okA || !okB {
			continue
		}
		n++
		passA += b2i(pa)
		passB += b2i(pb)
		switch {
		case pa && !pb:
			b++
		case !pa && pb:
			c++
		}
		pc := perBase[cell.base]
		if pc == nil {
			pc = &stats.PairedCluster{}
			perBase[cell.base] = pc
		}
		pc.NA++
		pc.NB++
		pc.SumA += float64(b2i(pa))
		pc.SumB += float64(b2i(pb))
	}
	if n == 0 {
		return Gap{}, false
	}
	// Sorted bases: the Monte Carlo sign flip and float sums must not
	// depend on map order.
	bases := make([]string, 0, len(perBase))
	for base := range perBase {
		bases = append(bases, base)
	}
	sort.Strings(bases)
	paired := make([]stats.PairedCluster, len(bases))
	for i, base := range bases {
		paired[i] = *perBase[base]
	}
	diff := stats.ClusterDiff(paired, opts.Conf, stats.DefaultSignFlipReps, testSeed(opts.Seed, "gap", target, mid, axis, a, bv))
	ra, rb := float64(passA)/float64(n), float64(passB)/float64(n)
	return Gap{
		MetricID: mid, Axis: axis, ValueA: a, ValueB: bv,
		RateA: ptr(round4(ra)), RateB: ptr(round4(rb)), Diff: ptr(round4(ra - rb)),
		NPairs: n, B: b, C: c, PValue: diff.P,
		NClusters: diff.Clusters, ClusterDiff: finite(diff.Mean), CILow: limit(diff.Lo), CIHigh: limit(diff.Hi),
		Test: diff.Method, McNemarP: ptr(roundSig(stats.McNemarExact(b, c))), Warning: stats.ClusterWarning(diff.Clusters),
		Tested: testParts(diff),
	}, true
}

// testSeed derives a test's Monte Carlo seed from the run seed and what the
// test compares, so a result does not depend on which other tests ran.
func testSeed(seed uint64, parts ...string) uint64 {
	h := fnv.New64a()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return h.Sum64() ^ seed
}

// roundSig keeps 4 significant digits: p-values span many orders of
// magnitude (4 decimal places would print 3e-05 as 0.0), and the binomial
// sums carry float noise in the last digits.
func roundSig(p float64) float64 {
	v, err := strconv.ParseFloat(strconv.FormatFloat(p, 'g', 4, 64), 64)
	if err != nil {
		return p
	}
	return v
}
