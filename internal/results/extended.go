package results

import (
	"cmp"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/stats"
)

// significance is the family-wise error level of demographic_gaps.
const significance = 0.05

// addExtensions fills our additions. rows are the rows used for the
// statistics (after ValidOnly); all are every row of the model (validity is
// reported on all of them).
func addExtensions(m *ModelResult, rows, all []row, demo *demographics, opts Options) {
	m.Extended = true
	withCI(m.ByMetric, opts.Conf)
	withCI(m.ByScenario, opts.Conf)
	m.PositiveCI = clusterCI(rows, config.Positive, opts)
	m.NegativeCI = clusterCI(rows, config.Negative, opts)
	for _, r := range rows {
		if r.Passed == nil {
			m.NNull++
		}
	}
	if demo.present() {
		m.ByDemographic = demo.breakdown(rows, opts.Conf)
		m.DemographicGaps = demo.gaps(rows)
	}
	m.Agreement = sampleAgreement(rows)
	m.Judges = judgeAgreement(rows)
	m.Validity = validity(all)
	m.Unverified = unverified(rows)
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

// clusterCI resamples base scenarios: every variant and sample of one base
// scenario is one cluster, so correlated conversations move together.
func clusterCI(rows []row, typ config.MetricType, opts Options) *ClusterCI {
	idx := map[string]int{}
	var clusters []stats.Cluster
	for _, r := range rows {
		if r.typ != typ || r.Passed == nil {
			continue
		}
		base := artifacts.BaseIDOf(r.scenarioKey())
		i, ok := idx[base]
		if !ok {
			i = len(clusters)
			idx[base] = i
			clusters = append(clusters, stats.Cluster{})
		}
		clusters[i].Total++
		if *r.Passed {
			clusters[i].Passed++
		}
	}
	ci := &ClusterCI{Method: stats.MethodClusterBootstrap, Clusters: len(clusters), Reps: opts.BootstrapReps, Seed: opts.Seed}
	for _, c := range clusters {
		ci.N += c.Total
		ci.Passed += c.Passed
	}
	if len(clusters) == 0 {
		return ci
	}
	iv := stats.ClusterBootstrap(clusters, opts.BootstrapReps, opts.Conf, opts.Seed)
	ci.Low, ci.High, ci.Clusters = finite(iv.Lo), finite(iv.Hi), iv.Clusters
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

func validity(rows []row) *ValidityStats {
	var v ValidityStats
	for _, r := range rows {
		if r.Valid == nil {
			continue
		}
		v.Checked++
		if *r.Valid {
			v.Valid++
		}
	}
	if v.Checked == 0 {
		return nil
	}
	v.Share = ratio(v.Valid, v.Checked)
	return &v
}

// ---- demographics ----

// demographics indexes scenarios by id, with axes and values in the order
// they first appear in scenarios.json.
type demographics struct {
	byID   map[string]artifacts.Demographic
	axes   []string
	values map[string][]string
}

func newDemographics(scenarios []ScenarioDemographic) *demographics {
	d := &demographics{byID: map[string]artifacts.Demographic{}, values: map[string][]string{}}
	for _, s := range scenarios {
		if _, dup := d.byID[s.ID]; dup {
			continue // first row wins, like a lookup by id would
		}
		d.byID[s.ID] = s.Demographic
		for _, p := range s.Demographic {
			if _, ok := d.values[p.Key]; !ok {
				d.axes = append(d.axes, p.Key)
				d.values[p.Key] = nil
			}
			v := artifacts.ValueString(p.Value)
			if !slices.Contains(d.values[p.Key], v) {
				d.values[p.Key] = append(d.values[p.Key], v)
			}
		}
	}
	return d
}

func (d *demographics) present() bool { return d != nil && len(d.axes) > 0 }

// value returns the row's value on axis (ok false: no scenario or no such axis).
func (d *demographics) value(r row, axis string) (string, bool) {
	dem, ok := d.byID[r.ID]
	if !ok {
		return "", false
	}
	v, ok := dem.Get(axis)
	if !ok {
		return "", false
	}
	return artifacts.ValueString(v), true
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
			vals = append(vals, Entry[DemographicValue]{val, DemographicValue{
				PassRate: all.PassRate, NPassed: all.NPassed, NTotal: all.NTotal,
				CILow: all.CILow, CIHigh: all.CIHigh,
				PositivePassRate: pos, NegativePassRate: neg,
				Positive: rateWithCI(pt, conf), Negative: rateWithCI(nt, conf), ByMetric: byMetric,
			}})
		}
		if len(vals) > 0 {
			out = append(out, Entry[Keyed[DemographicValue]]{axis, vals})
		}
	}
	return out
}

// gaps runs paired tests between the values of each axis: a pair is the
// same base scenario and sample with every other axis equal, differing only
// on this axis. Holm adjusts across all tests of the model.
func (d *demographics) gaps(rows []row) []Gap {
	type cell struct {
		base   string
		sample int
		others string
	}
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
			// verdict[cell][value] = passed (first verdict wins on duplicates).
			verdict := map[cell]map[string]bool{}
			for _, r := range byMetric[mid] {
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
				c := cell{artifacts.BaseIDOf(r.scenarioKey()), r.Sample, others.String()}
				if verdict[c] == nil {
					verdict[c] = map[string]bool{}
				}
				if _, seen := verdict[c][v]; !seen {
					verdict[c][v] = *r.Passed
				}
			}
			vals := d.values[axis]
			for i := 0; i < len(vals); i++ {
				for j := i + 1; j < len(vals); j++ {
					a, bv := vals[i], vals[j]
					var n, passA, passB, b, c int
					for _, byVal := range verdict {
						pa, okA := byVal[a]
						pb, okB := byVal[bv]
						if !okA || !okB {
							continue
						}
						n++
						if pa {
							passA++
						}
						if pb {
							passB++
						}
						switch {
						case pa && !pb:
							b++
						case !pa && pb:
							c++
						}
					}
					if n == 0 {
						continue
					}
					ra, rb := float64(passA)/float64(n), float64(passB)/float64(n)
					out = append(out, Gap{
						MetricID: mid, Axis: axis, ValueA: a, ValueB: bv,
						RateA: ptr(round4(ra)), RateB: ptr(round4(rb)), Diff: ptr(round4(ra - rb)),
						NPairs: n, B: b, C: c, PValue: stats.McNemarExact(b, c),
					})
				}
			}
		}
	}
	if len(out) > 0 {
		ps := make([]float64, len(out))
		for i, g := range out {
			ps[i] = g.PValue
		}
		adj := stats.Holm(ps)
		for i := range out {
			out[i].Significant = adj[i] < significance
			out[i].PValue = roundSig(out[i].PValue)
			out[i].PAdjusted = roundSig(adj[i])
		}
	}
	return out
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

// ---- repeated samples ----

type groupKey struct{ id, metric string }

// sampleAgreement is present only when some scenario was sampled more than
// once. A group is one scenario id (and metric, for legacy multi-metric
// rows) across its samples' non-null verdicts.
func sampleAgreement(rows []row) *Agreement {
	// One small record per group (not a map of samples per group): at
	// 100,000 rows the maps were most of aggregate's memory.
	if len(rows) == 0 || !slices.ContainsFunc(rows, func(r row) bool { return r.Sample != rows[0].Sample }) {
		return nil // one sample per scenario: nothing to agree on
	}
	type group struct {
		sample   int
		verdicts []bool
	}
	groupsOf := map[groupKey]*group{}
	var keys []groupKey
	multi := false
	metricOfID := map[string]string{}
	multiMetric := map[string]bool{}
	for _, r := range rows {
		k := groupKey{r.scenarioKey(), r.metricKey()}
		g := groupsOf[k]
		if g == nil {
			g = &group{sample: r.Sample}
			groupsOf[k] = g
			keys = append(keys, k)
		} else if r.Sample != g.sample {
			multi = true
		}
		if m, ok := metricOfID[k.id]; !ok {
			metricOfID[k.id] = k.metric
		} else if m != k.metric {
			multiMetric[k.id] = true
		}
		if r.Passed != nil {
			g.verdicts = append(g.verdicts, *r.Passed)
		}
	}
	if !multi {
		return nil
	}
	label := func(k groupKey) string {
		if multiMetric[k.id] {
			return k.id + "/" + k.metric
		}
		return k.id
	}
	slices.SortFunc(keys, func(a, b groupKey) int { return cmp.Compare(label(a), label(b)) })

	ag := &Agreement{ByScenario: Keyed[ScenarioAgreement]{}}
	var groups [][]bool
	sizeCount := map[int]int{}
	for _, k := range keys {
		v := groupsOf[k].verdicts
		if len(v) == 0 {
			continue
		}
		passed := 0
		for _, p := range v {
			if p {
				passed++
			}
		}
		sa := ScenarioAgreement{NSamples: len(v), NPassed: passed}
		if len(v) >= 2 {
			sa.Unanimous = ptr(passed == 0 || passed == len(v))
			sizeCount[len(v)]++
		}
		ag.ByScenario = append(ag.ByScenario, Entry[ScenarioAgreement]{label(k), sa})
		groups = append(groups, v)
	}
	share, _, total := stats.Unanimity(groups)
	ag.NGroups = total
	ag.UnanimousShare = finite(share)

	// k = the usual number of samples per scenario (ties → the larger).
	k := 0
	for size, cnt := range sizeCount {
		if cnt > sizeCount[k] || (cnt == sizeCount[k] && size > k) {
			k = size
		}
	}
	ag.PassK = PassK{K: k, ByMetric: Keyed[*float64]{}}
	if k == 0 {
		return ag
	}
	// Fleiss κ needs the same number of ratings per subject: groups of size k.
	var counts [][]int
	type acc struct {
		sum float64
		n   int
	}
	overall := acc{}
	perMetric := map[string]*acc{}
	for _, key := range keys {
		v := groupsOf[key].verdicts
		if len(v) < k {
			continue
		}
		c := 0
		for _, p := range v {
			if p {
				c++
			}
		}
		if len(v) == k {
			counts = append(counts, []int{c, k - c})
		}
		pk := stats.PassAtKAll(c, len(v), k)
		overall.sum += pk
		overall.n++
		if perMetric[key.metric] == nil {
			perMetric[key.metric] = &acc{}
		}
		perMetric[key.metric].sum += pk
		perMetric[key.metric].n++
	}
	if len(counts) > 0 {
		if kappa, err := stats.FleissKappa(counts); err == nil {
			ag.FleissKappa = finite(kappa)
		}
	}
	if overall.n > 0 {
		ag.PassK.Overall = ptr(round4(overall.sum / float64(overall.n)))
	}
	mids := make([]string, 0, len(perMetric))
	for m := range perMetric {
		mids = append(mids, m)
	}
	sort.Strings(mids)
	for _, m := range mids {
		a := perMetric[m]
		ag.PassK.ByMetric = append(ag.PassK.ByMetric, Entry[*float64]{m, ptr(round4(a.sum / float64(a.n)))})
	}
	return ag
}

// ---- judge panels ----

// judgeAgreement is present only when rows carry a panel of ≥2 judges. It
// uses the rows on which every panel member returned a verdict.
func judgeAgreement(rows []row) *JudgeAgreement {
	var names []string
	type judged struct {
		metric string
		votes  map[string]bool
	}
	var items []judged
	panel := false
	for _, r := range rows {
		if len(r.Judges) < 2 {
			continue
		}
		panel = true
		votes := map[string]bool{}
		complete := true
		seen := map[string]int{}
		for _, j := range r.Judges {
			name := j.Judge
			// The same judge twice in a panel (repeated passes) is two raters.
			if seen[j.Judge]++; seen[j.Judge] > 1 {
				name = j.Judge + "#" + strconv.Itoa(seen[j.Judge])
			}
			if !slices.Contains(names, name) {
				names = append(names, name)
			}
			if j.Present == nil {
				complete = false
				continue
			}
			votes[name] = *j.Present
		}
		if complete {
			items = append(items, judged{r.metricKey(), votes})
		}
	}
	if !panel {
		return nil
	}
	// Keep rows where every judge of the whole panel voted.
	items = slices.DeleteFunc(items, func(it judged) bool { return len(it.votes) != len(names) })
	method := "fleiss"
	if len(names) == 2 {
		method = "cohen"
	}
	ja := &JudgeAgreement{Judges: names, KappaMethod: method, N: len(items), ByMetric: Keyed[JudgeMetric]{}}
	measure := func(its []judged) (raw, kappa *float64) {
		if len(its) == 0 {
			return nil, nil
		}
		if len(names) == 2 {
			a := make([]int, len(its))
			b := make([]int, len(its))
			for i, it := range its {
				a[i], b[i] = b2i(it.votes[names[0]]), b2i(it.votes[names[1]])
			}
			if x, err := stats.RawAgreement(a, b); err == nil {
				raw = finite(x)
			}
			if x, err := stats.CohenKappa(a, b); err == nil {
				kappa = finite(x)
			}
			return raw, kappa
		}
		counts := make([][]int, len(its))
		agree := 0
		for i, it := range its {
			yes := 0
			for _, v := range it.votes {
				yes += b2i(v)
			}
			counts[i] = []int{yes, len(names) - yes}
			if yes == 0 || yes == len(names) {
				agree++
			}
		}
		raw = ptr(round4(float64(agree) / float64(len(its))))
		if x, err := stats.FleissKappa(counts); err == nil {
			kappa = finite(x)
		}
		return raw, kappa
	}
	ja.RawAgreement, ja.Kappa = measure(items)
	byMetric := map[string][]judged{}
	for _, it := range items {
		byMetric[it.metric] = append(byMetric[it.metric], it)
	}
	mids := make([]string, 0, len(byMetric))
	for m := range byMetric {
		mids = append(mids, m)
	}
	sort.Strings(mids)
	for _, m := range mids {
		raw, kappa := measure(byMetric[m])
		ja.ByMetric = append(ja.ByMetric, Entry[JudgeMetric]{m, JudgeMetric{RawAgreement: raw, Kappa: kappa, N: len(byMetric[m])}})
	}
	return ja
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
