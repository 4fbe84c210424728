package compare

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/stats"
)

// Options tune Compare.
type Options struct {
	// Seed seeds every bootstrap; equal seeds give equal reports.
	Seed uint64
	// Reps is the number of bootstrap replicates (0: DefaultReps).
	Reps int
	// Conf is the confidence level of every interval (0: DefaultConf).
	Conf float64
	// Allow lists blocking components whose difference is accepted (see
	// Comparable).
	Allow []string
	// Force compares runs that are not comparable instead of refusing; the
	// report records that it was forced.
	Force bool
}

// Defaults for Options left zero.
const (
	DefaultReps = 2000
	DefaultConf = 0.95
)

// normalize applies the defaults and rejects impossible values.
func (o Options) normalize() (Options, error) {
	if err := stats.ResamplingDefaults(&o.Reps, &o.Conf, DefaultReps, DefaultConf); err != nil {
		return o, fmt.Errorf("compare: %w", err)
	}
	return o, nil
}

// Method is recorded in Report.Method.
const Method = "rates: " + stats.MethodClusterScore + " interval per run over base scenarios, a track's metrics as fixed strata (stats.StratifiedRate; a base scenario's variants and samples are one unit); " +
	"differences: " + MethodMOVER + " from the two rates' intervals; rank correlations: cluster bootstrap over base scenarios, percentile intervals"

// Compare compares run a with run b. It refuses (*NotComparableError) when
// the runs measure different things, unless opts.Force is set.
//
// The unit of evidence is the base scenario: its demographic variants and
// repeated samples share a persona and a goal, so they pass or fail
// together and are not independent evidence. Every rate (each run, model,
// track and metric) gets the interval results.json uses over its base
// scenarios (stats.StratifiedRate: a track's metrics are fixed strata;
// stats.ClusterRate for a metric), sized for its level in simulation where
// a percentile bootstrap falls to ~83% with 5 scenarios. A
// difference of two rates (B − A, and the gaps between two models within a
// run) gets the MOVER interval built from the two rates' intervals
// (moverDiff). It treats the two rates as independent; runs or models on
// the same scenarios are positively correlated, which only makes it
// conservative (TestMOVERCoverage checks both). Rank correlations are
// still bootstrapped: each replicate draws base scenario ids, with
// replacement, from the union of both runs' ids and recomputes every
// model's rates in both runs on the same draw.
func Compare(a, b Run, opts Options) (*Report, error) {
	opts, err := opts.normalize()
	if err != nil {
		return nil, err
	}

	a, b = distinctLabels(a, b)
	comp := CheckComparable(a, b, opts.Allow)
	if !comp.Comparable && !opts.Force {
		return nil, &NotComparableError{A: a.Label, B: b.Label, Lines: comp.Lines()}
	}

	d, err := prepare(a, b)
	if err != nil {
		return nil, err
	}

	rep := &Report{
		A: d.summary[0], B: d.summary[1],
		Seed: opts.Seed, Reps: opts.Reps, Conf: opts.Conf, Method: Method,
		Clusters:      len(d.clusters),
		Comparability: comp,
		Forced:        !comp.Comparable,
		Models:        d.models,
		OnlyInA:       d.onlyIn[0],
		OnlyInB:       d.onlyIn[1],
		Notes:         d.notes,
	}
	rep.Warning = stats.ClusterWarning(len(d.clusters))
	rep.Rates = d.modelTracks(opts.Conf)
	rep.RankAgreement = d.rankAgreement(d.replicates(opts), opts.Conf)
	rep.OrderChanges = d.orderChanges(opts.Conf)
	rep.MetricDiffs = d.metricDiffs(opts.Conf)
	rep.People = peopleRows(a, b, opts.Conf)
	rep.SafetyStops = d.safetyStops()
	if rep.People == nil {
		rep.People = []PeopleRow{}
	}
	rep.Notes = append(rep.Notes, d.caveats(rep)...)
	return rep, nil
}

// Track indices into per-track arrays; TrackAll is derived from the two.
const (
	tPos = iota
	tNeg
	tAll
	nTracks
)

// tally counts verdicts.
type tally struct{ passed, total int }

func (t *tally) add(o tally) { t.passed += o.passed; t.total += o.total }

// rate is passed/total, NaN when there is no verdict.
func (t tally) rate() float64 {
	if t.total == 0 {
		return math.NaN()
	}
	return float64(t.passed) / float64(t.total)
}

// metricInfo is one metric of A's benchmark.yaml with the base scenarios
// (clusters) in which it has verdicts.
type metricInfo struct {
	id       string
	track    int
	clusters []string
	// cells[(run*M+model)*len(clusters)+c] is the tally of one cluster.
	cells []tally
}

// data is both runs reduced to verdict counts per run, model, base
// scenario and track: everything the statistics need.
type data struct {
	labels  [2]string
	models  []string    // in both runs, sorted
	onlyIn  [2][]string // sorted
	summary [2]RunSummary

	clusters []string // base scenario ids, sorted
	// cells[((run*M+model)*C+cluster)*2+track] for track tPos or tNeg.
	cells   []tally
	metrics []metricInfo
	notes   []string
	// stops[run][model] counts the model's rows with a safety stop.
	stops [2][]SafetyStops
}

func (d *data) cell(run, model, cluster, track int) *tally {
	return &d.cells[((run*len(d.models)+model)*len(d.clusters)+cluster)*2+track]
}

// observation is one score row with a verdict, resolved against the runs.
type observation struct {
	run, model, metric int
	base               string
	passed             bool
}

// prepare validates and reduces the runs. Metric types come from A's
// benchmark.yaml: the runs are comparable only when B agrees, and with a
// forced comparison one side has to define the tracks.
func prepare(a, b Run) (*data, error) {
	d := &data{labels: [2]string{a.Label, b.Label}}
	runs := [2]Run{a, b}
	metricIdx := d.addMetrics(a.Metrics)
	modelIdx, err := d.sharedModels(runs)
	if err != nil {
		return nil, err
	}
	obs, bases := d.observe(runs, modelIdx, metricIdx)
	d.tallyObservations(obs, bases)
	return d, nil
}

// addMetrics records the positive and negative metrics of A's
// benchmark.yaml, each with its track, and returns where each id sits.
func (d *data) addMetrics(metrics []config.Metric) map[string]int {
	metricIdx := map[string]int{}
	for _, m := range metrics {
		var tr int
		switch m.Type {
		case config.Positive:
			tr = tPos
		case config.Negative:
			tr = tNeg
		default:
			continue // LoadBenchmark rejects other types; rows of it count as unknown
		}
		if i, dup := metricIdx[m.ID]; dup {
			d.metrics[i].track = tr // the last definition wins, as in results.Aggregate
			continue
		}
		metricIdx[m.ID] = len(d.metrics)
		d.metrics = append(d.metrics, metricInfo{id: m.ID, track: tr})
	}
	return metricIdx
}

// sharedModels summarises each run's target models, records the ones in
// both (the compared models) and those in one only, and returns where each
// compared model sits. It fails on a score row without a target and when
// no model is in both runs.
func (d *data) sharedModels(runs [2]Run) (map[string]int, error) {
	var present [2]map[string]bool
	for r, run := range runs {
		if run.RunDirs != nil && len(run.RunDirs) != len(run.Scores) {
			return nil, fmt.Errorf("compare: run %s has %d run directory names for %d score rows", run.Label, len(run.RunDirs), len(run.Scores))
		}
		present[r] = map[string]bool{}
		for i := range run.Scores {
			t := run.target(i)
			if t == "" {
				return nil, fmt.Errorf("compare: run %s: score row %d (id %q) has no target_model and no run directory name", run.Label, i, run.Scores[i].ID)
			}
			present[r][t] = true
		}
		d.summary[r] = RunSummary{Label: run.Label, Dir: run.Dir, Models: sortedKeys(present[r])}
	}
	for _, m := range d.summary[0].Models {
		if present[1][m] {
			d.models = append(d.models, m)
		} else {
			d.onlyIn[0] = append(d.onlyIn[0], m)
		}
	}
	for _, m := range d.summary[1].Models {
		if !present[0][m] {
			d.onlyIn[1] = append(d.onlyIn[1], m)
		}
	}
	if len(d.models) == 0 {
		return nil, fmt.Errorf("compare: no target model is in both runs (%s: %s; %s: %s)",
			runs[0].Label, strings.Join(d.summary[0].Models, ", "), runs[1].Label, strings.Join(d.summary[1].Models, ", "))
	}
	modelIdx := make(map[string]int, len(d.models))
	for i, m := range d.models {
		modelIdx[m] = i
	}
	return modelIdx, nil
}

// observe resolves the compared models' score rows with a verdict into
// observations and returns them with their base scenario ids; it counts
// rows and verdicts per run and notes the rows left out (unknown metric,
// no verdict).
func (d *data) observe(runs [2]Run, modelIdx, metricIdx map[string]int) ([]observation, map[string]bool) {
	var obs []observation
	bases := map[string]bool{}
	for r, run := range runs {
		unknown := map[string]int{}
		nulls := 0
		d.stops[r] = make([]SafetyStops, len(d.models))
		for i, s := range run.Scores {
			mi, ok := modelIdx[run.target(i)]
			if !ok {
				continue
			}
			d.summary[r].Rows++
			d.stops[r][mi].add(s.Refused)
			k, ok := metricIdx[s.MetricID]
			if !ok {
				unknown[s.MetricID]++
				continue
			}
			if s.Passed == nil {
				nulls++
				continue
			}
			d.summary[r].Verdicts++
			base := artifacts.BaseIDOf(s.ID)
			bases[base] = true
			obs = append(obs, observation{run: r, model: mi, metric: k, base: base, passed: *s.Passed})
		}
		if len(unknown) > 0 {
			n := 0
			for _, c := range unknown {
				n += c
			}
			d.notes = append(d.notes, fmt.Sprintf("%s: %d rows with metric ids not in %s's benchmark.yaml (%s) were left out",
				run.Label, n, runs[0].Label, strings.Join(sortedKeys(unknown), ", ")))
		}
		if nulls > 0 {
			d.notes = append(d.notes, fmt.Sprintf("%s: %d of %d rows of the compared models have no verdict (passed is null) and were left out",
				run.Label, nulls, d.summary[r].Rows))
		}
	}
	return obs, bases
}

// tallyObservations counts obs into the cells by run, model, cluster (base
// scenario) and track, and into each metric's own cells over its own
// clusters, for the per-metric intervals.
func (d *data) tallyObservations(obs []observation, bases map[string]bool) {
	d.clusters = sortedKeys(bases)
	clusterIdx := make(map[string]int, len(d.clusters))
	for i, c := range d.clusters {
		clusterIdx[c] = i
	}
	d.cells = make([]tally, 2*len(d.models)*len(d.clusters)*2)

	// Each metric's own clusters, for the per-metric intervals.
	metricBases := make([]map[string]bool, len(d.metrics))
	for i := range metricBases {
		metricBases[i] = map[string]bool{}
	}
	for _, o := range obs {
		metricBases[o.metric][o.base] = true
	}
	local := make([]map[string]int, len(d.metrics))
	for k := range d.metrics {
		mi := &d.metrics[k]
		mi.clusters = sortedKeys(metricBases[k])
		local[k] = make(map[string]int, len(mi.clusters))
		for i, c := range mi.clusters {
			local[k][c] = i
		}
		mi.cells = make([]tally, 2*len(d.models)*len(mi.clusters))
	}

	for _, o := range obs {
		v := tally{total: 1}
		if o.passed {
			v.passed = 1
		}
		d.cell(o.run, o.model, clusterIdx[o.base], d.metrics[o.metric].track).add(v)
		mi := &d.metrics[o.metric]
		mi.cells[(o.run*len(d.models)+o.model)*len(mi.clusters)+local[o.metric][o.base]].add(v)
	}
}

// add counts one score row with the transcript indices of its refused
// replies.
func (s *SafetyStops) add(refused []int) {
	s.Rows++
	if n := len(slices.Compact(slices.Sorted(slices.Values(refused)))); n > 0 {
		s.Conversations++
		s.Replies += n
	}
}

// safetyStops lists the compared models with a safety stop in either run,
// in model order; nil when none has one.
func (d *data) safetyStops() []SafetyStopRow {
	var out []SafetyStopRow
	for i, m := range d.models {
		a, b := d.stops[0][i], d.stops[1][i]
		if a.Replies > 0 || b.Replies > 0 {
			out = append(out, SafetyStopRow{Model: m, A: a, B: b})
		}
	}
	return out
}

// point returns the full-data tallies of one run, model and track.
func (d *data) point(run, model, track int) tally {
	var t tally
	for c := range d.clusters {
		switch track {
		case tAll:
			t.add(*d.cell(run, model, c, tPos))
			t.add(*d.cell(run, model, c, tNeg))
		default:
			t.add(*d.cell(run, model, c, track))
		}
	}
	return t
}

// replicates holds every model's rate per bootstrap replicate, run and
// track: v[((rep*2+run)*nTracks+track)*M+model], NaN when the resample has
// no verdict for it.
type replicates struct {
	n, models int
	v         []float64
}

func (r *replicates) at(rep, run, track, model int) float64 {
	return r.v[((rep*2+run)*nTracks+track)*r.models+model]
}

// resample calls fn with reps cluster resamples of n clusters. The draws are
// stats.BootstrapStat's, so a seed means the same thing here as in every
// other interval the tool reports.
func resample(n, reps int, conf float64, seed uint64, fn func(rep int, idx []int)) {
	rep := 0
	stats.BootstrapStat(n, reps, conf, seed, func(idx []int) float64 {
		fn(rep, idx)
		rep++
		return 0 // the interval of this dummy statistic is not used
	})
}

// replicates computes every model's rates on the shared resamples.
func (d *data) replicates(opts Options) *replicates {
	M := len(d.models)
	r := &replicates{n: opts.Reps, models: M, v: make([]float64, opts.Reps*2*nTracks*M)}
	for i := range r.v {
		r.v[i] = math.NaN() // stays NaN when there is no cluster to draw
	}
	acc := make([]tally, 2*M*2)
	resample(len(d.clusters), opts.Reps, opts.Conf, opts.Seed, func(rep int, idx []int) {
		clear(acc)
		for _, c := range idx {
			for run := range 2 {
				for m := range M {
					for tr := range 2 {
						acc[(run*M+m)*2+tr].add(*d.cell(run, m, c, tr))
					}
				}
			}
		}
		for run := range 2 {
			for m := range M {
				pos, neg := acc[(run*M+m)*2+tPos], acc[(run*M+m)*2+tNeg]
				all := pos
				all.add(neg)
				base := ((rep*2 + run) * nTracks) * M
				r.v[base+tPos*M+m] = pos.rate()
				r.v[base+tNeg*M+m] = neg.rate()
				r.v[base+tAll*M+m] = all.rate()
			}
		}
	})
	return r
}

// clusterRate is one run's, model's and track's rate over the base
// scenarios, its metrics fixed strata (stats.StratifiedRate, the interval
// results.json gives a track; one metric: stats.ClusterRate).
func (d *data) clusterRate(run, model, track int, conf float64) stats.RateInterval {
	M := len(d.models)
	var strata []stats.Stratum
	for _, mi := range d.metrics {
		if track != tAll && mi.track != track {
			continue
		}
		C := len(mi.clusters)
		var st stats.Stratum
		for c := range C {
			t := mi.cells[(run*M+model)*C+c]
			st.Clusters = append(st.Clusters, stats.Binary(t.passed, t.total))
			st.Weight += float64(t.total)
		}
		strata = append(strata, st)
	}
	return stats.StratifiedRate(strata, conf)
}

func (d *data) modelTracks(conf float64) []ModelTrack {
	var out []ModelTrack
	for m, name := range d.models {
		for tr, track := range Tracks() {
			ra, rb := d.clusterRate(0, m, tr, conf), d.clusterRate(1, m, tr, conf)
			out = append(out, ModelTrack{
				Model: name, Track: track,
				A: rateOf(ra), B: rateOf(rb),
				Diff: diffOf(rb, ra),
			})
		}
	}
	return out
}

func (d *data) rankAgreement(reps *replicates, conf float64) []RankAgreement {
	var out []RankAgreement
	for tr, track := range Tracks() {
		ra := RankAgreement{Track: track, Models: []string{}}
		var incl []int
		for m, name := range d.models {
			if d.point(0, m, tr).total > 0 && d.point(1, m, tr).total > 0 {
				incl = append(incl, m)
				ra.Models = append(ra.Models, name)
			}
		}
		xa, xb := make([]float64, len(incl)), make([]float64, len(incl))
		for i, m := range incl {
			xa[i], xb[i] = d.point(0, m, tr).rate(), d.point(1, m, tr).rate()
		}
		rho, tau := stats.Spearman(xa, xb), stats.KendallTauB(xa, xb)
		switch {
		case len(incl) < 3:
			// Two models always correlate ±1 (or not at all), which says
			// nothing about agreement; stats would return ±1, so refuse here.
			ra.Note = fmt.Sprintf("%d model(s) with a rate on this track in both runs; a rank correlation needs at least 3", len(incl))
			out = append(out, ra)
			continue
		case math.IsNaN(rho) || math.IsNaN(tau):
			ra.Note = "undefined: every model has the same rate in one of the runs, so there is no order to compare"
			out = append(out, ra)
			continue
		}
		ya, yb := make([]float64, len(incl)), make([]float64, len(incl))
		rhos, taus := make([]float64, reps.n), make([]float64, reps.n)
		for i := range reps.n {
			for j, m := range incl {
				ya[j], yb[j] = reps.at(i, 0, tr, m), reps.at(i, 1, tr, m)
			}
			// NaN (a resample in which a run ties every model, or lacks a
			// model) is skipped by percentile.
			rhos[i], taus[i] = stats.Spearman(ya, yb), stats.KendallTauB(ya, yb)
		}
		ra.Spearman = correlation(rho, rhos, conf)
		ra.KendallTauB = correlation(tau, taus, conf)
		out = append(out, ra)
	}
	return out
}

func (d *data) orderChanges(conf float64) []OrderChange {
	out := []OrderChange{}
	for tr, track := range Tracks() {
		for x := range d.models {
			for y := x + 1; y < len(d.models); y++ {
				ga := d.point(0, x, tr).rate() - d.point(0, y, tr).rate()
				gb := d.point(1, x, tr).rate() - d.point(1, y, tr).rate()
				// A reversal needs a strict order in both runs; a tie
				// becoming an order is left to the rank correlations.
				if math.IsNaN(ga) || math.IsNaN(gb) || sign(ga)*sign(gb) >= 0 {
					continue
				}
				ea := diffOf(d.clusterRate(0, x, tr, conf), d.clusterRate(0, y, tr, conf))
				eb := diffOf(d.clusterRate(1, x, tr, conf), d.clusterRate(1, y, tr, conf))
				out = append(out, OrderChange{
					Track: track, ModelX: d.models[x], ModelY: d.models[y],
					GapA: ea, GapB: eb,
					BeyondUncertainty: ea.Significant && eb.Significant,
				})
			}
		}
	}
	return out
}

// metricDiffs compares each model's rate per metric, each rate's interval
// over that metric's own base scenarios.
func (d *data) metricDiffs(conf float64) []MetricDiff {
	out := []MetricDiff{}
	M := len(d.models)
	for _, mi := range d.metrics {
		C := len(mi.clusters)
		if C == 0 {
			continue
		}
		for m, name := range d.models {
			var rates [2]stats.RateInterval
			for run := range 2 {
				cs := make([]stats.ClusterSum, C)
				for c := range C {
					t := mi.cells[(run*M+m)*C+c]
					cs[c] = stats.Binary(t.passed, t.total)
				}
				rates[run] = stats.ClusterRate(cs, conf)
			}
			if rates[0].N == 0 && rates[1].N == 0 {
				continue
			}
			out = append(out, MetricDiff{
				Model: name, MetricID: mi.id, Type: Tracks()[mi.track],
				A: rateOf(rates[0]), B: rateOf(rates[1]),
				Diff:     diffOf(rates[1], rates[0]),
				Clusters: C,
			})
		}
	}
	return out
}

// caveats are notes on how far the intervals can be trusted.
func (d *data) caveats(r *Report) []string {
	var out []string
	if len(d.clusters) == 0 {
		out = append(out, "no verdicts for the compared models: nothing to compare")
	} else if r.Warning != "" {
		out = append(out, r.Warning+"; the rank correlations' bootstrap intervals are too narrow with fewer than about 10")
	}
	if len(r.MetricDiffs) > 0 {
		few := 0
		for _, m := range d.metrics {
			if len(m.clusters) > 0 && len(m.clusters) < 10 {
				few++
			}
		}
		msg := fmt.Sprintf("per-metric intervals are not adjusted for multiple comparisons: of %d model × metric cells, about %.0f%% would exclude 0 by chance alone",
			len(r.MetricDiffs), 100*(1-r.Conf))
		if few > 0 {
			msg += fmt.Sprintf("; %d of %d metrics have fewer than %d base scenarios, so their intervals are wide", few, len(d.metrics), stats.FewClusters)
		}
		out = append(out, msg)
	}
	return out
}

func correlation(value float64, vals []float64, conf float64) Correlation {
	c := Correlation{Value: r4(value)}
	lo, hi, n := percentile(vals, conf)
	c.Replicates = n
	if n > 0 {
		c.Lo, c.Hi = r4(lo), r4(hi)
	}
	return c
}

// percentile returns the (1−conf)/2 and (1+conf)/2 quantiles of the non-NaN
// values and how many there were; the quantile definition (linear
// interpolation between order statistics, R's type 7) is the one
// stats.BootstrapStat uses, so intervals here read like the tool's others.
func percentile(vals []float64, conf float64) (lo, hi float64, n int) {
	s := make([]float64, 0, len(vals))
	for _, v := range vals {
		if !math.IsNaN(v) {
			s = append(s, v)
		}
	}
	if len(s) == 0 {
		return math.NaN(), math.NaN(), 0
	}
	slices.Sort(s)
	return quantile(s, (1-conf)/2), quantile(s, (1+conf)/2), len(s)
}

func quantile(s []float64, p float64) float64 {
	h := float64(len(s)-1) * p
	i := int(math.Floor(h))
	if i >= len(s)-1 {
		return s[len(s)-1]
	}
	return s[i] + (h-float64(i))*(s[i+1]-s[i])
}

// rateOf is a rate with its cluster interval.
func rateOf(ri stats.RateInterval) Rate {
	r := Rate{Rate: r4(ri.Estimate), Passed: int(math.Round(ri.Sum)), Total: ri.N, Clusters: ri.Clusters, Warning: ri.Warning}
	if ri.N > 0 {
		r.Lo, r.Hi = r4(ri.Lo), r4(ri.Hi)
	}
	return r
}

// diffOf is x − y with its MOVER interval; a warning when either rate
// rests on few base scenarios.
func diffOf(x, y stats.RateInterval) Estimate {
	if x.N == 0 || y.N == 0 {
		return Estimate{}
	}
	est, lo, hi := moverDiff(x, y)
	e := Estimate{Value: r4(est), Lo: r4(lo), Hi: r4(hi), Significant: lo > 0 || hi < 0}
	// The warning of the rate with fewer scenarios.
	e.Warning = y.Warning
	if x.Warning != "" && (y.Warning == "" || x.Clusters <= y.Clusters) {
		e.Warning = x.Warning
	}
	return e
}

// r4 rounds to 4 places like results.json; nil for NaN so JSON gets null.
func r4(x float64) *float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return nil
	}
	v := artifacts.Round(x, 4)
	if v == 0 {
		v = 0 // no "-0.0" in reports
	}
	return &v
}

func sign(x float64) int {
	switch {
	case x > 0:
		return 1
	case x < 0:
		return -1
	}
	return 0
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// IsNotComparable reports whether err is Compare's refusal.
func IsNotComparable(err error) bool {
	var nc *NotComparableError
	return errors.As(err, &nc)
}
