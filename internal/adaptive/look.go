package adaptive

import (
	"math/rand/v2"
	"slices"

	"github.com/impactbench/impactbench/internal/stats"
	"github.com/impactbench/impactbench/internal/study"
)

// Clusters gives a model's base-scenario sums on a metric at an age group
// in the order the rounds added them, with the indexes study.Clusters
// takes (its method value is one; nil: no rows).
type Clusters func(model, age, metric int) []stats.ClusterSum

// Target is one metric's place in the design: the base scenarios the look
// used (Have) and the ones it should have after the next round (Want; Want
// == Have: it stops growing).
type Target struct {
	Key    string // "<benchmark>__<metric>"
	Bench  string // its benchmark's slug
	Metric string // its id in that benchmark
	// LabelMetric is its id in the nutritional-label benchmark when the
	// label has a copy of it (label-only models run that copy): it grows
	// with the metric.
	LabelMetric string
	Have, Want  int
}

// Round is one look: what the data so far decide, and what to collect
// next.
type Round struct {
	// Look is the look this is (1: after the first round; 0: the data do
	// not yet hold the first round, which Targets asks for), of at most
	// Looks; a stop takes the remaining looks on the same rows, so a
	// stopped Round has Look == Looks.
	Look, Looks int
	// Alpha is the error rate this look spent, Spent the total so far.
	Alpha, Spent float64
	// Targets lists every metric of the study, in study order.
	Targets []Target
	// Stop: no metric grows; the conclusions are final.
	Stop bool
	// Decided are the conclusions stated at this look or before, in the
	// order decided; Conflicts, conclusions a later look stated against
	// one already decided (kept out of Decided; possible only on the
	// α-probability event the guarantee excludes).
	Decided, Conflicts []Conclusion
	// Ranks are the rank intervals of every ranked model from the
	// different-calls decided so far.
	Ranks []Rank
	// Open counts the conclusions still open (not decided, within reach
	// at Max); Demands lists, per node and age group that asked for more
	// scenarios, the conclusion that asked for the most; Growth says which
	// metrics grow for which demands.
	Open    int
	Demands []Demand
	Growth  []Growth
	// Steps are every look's demands and growth, this one's last.
	Steps []Step
	// Conversations counts the judged rows (Σ N) the last look used.
	Conversations int
	Method        string
}

// Demand is a node and age group's request for more scenarios, made for
// its most demanding open conclusion.
type Demand struct {
	Node, Age, NodeKind, Kind string
	Model, Other              string
}

// Step is one look's demands and the growth they asked for.
type Step struct {
	Look    int
	Demands []Demand
	Growth  []Growth
}

// Growth is one metric growing from From to To base scenarios for the
// demands (indexes in Round.Demands) By.
type Growth struct {
	Key      string
	From, To int
	By       []int
}

// Method describes the design in Round.Method.
const Method = "adaptive study: rounds of base scenarios shared by every model, round-robin over the metrics that open conclusions need; the study's own intervals, Holm-adjusted pairs, grade words and tested ranks at each look, at error rates spent over the looks (power spending function) so that every stated conclusion holds at a data-dependent stop by the union bound"

// Look runs the design over the data: clusters gives the sums observed so
// far (for a study loaded from disk, s.Clusters: each metric's base
// scenarios in the order scenarios.json lists them, which is the order the
// rounds added them). It replays every look the data already cover and
// returns the last: the conclusions decided and, per metric, the base
// scenarios to have after the next round. Bad options are an
// *OptionError.
func Look(s *study.Study, clusters Clusters, o Options) (*Round, error) {
	o, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	return newDesign(s, o).run(clusters), nil
}

// design is a study's structure as the design reads it.
type design struct {
	s      *study.Study
	o      Options
	nodes  []nodeInfo
	kindOf map[string]string // node id → kind
	nodeOf map[string]int    // node id → index in nodes
}

// nodeInfo is one study node: its metrics (indexes in s.Metrics), their
// weights in the score and, for an area, in the by-placement score, and
// its metrics in the seeded order the design grows them in (a random
// order, fixed before any data: which of a node's metrics grow never
// depends on their own scenarios).
type nodeInfo struct {
	n          *study.Node
	metrics    []int
	weights    []float64
	place      []float64
	byPriority []int // positions in metrics
}

func newDesign(s *study.Study, o Options) *design {
	d := &design{s: s, o: o, kindOf: map[string]string{}, nodeOf: map[string]int{}}
	index := map[string]int{}
	for i, m := range s.Metrics {
		index[m.Key] = i
	}
	for _, n := range s.Nodes() {
		d.kindOf[n.ID], d.nodeOf[n.ID] = n.Kind, len(d.nodes)
		ni := nodeInfo{n: n}
		for j, key := range n.Metrics {
			ni.metrics = append(ni.metrics, index[key])
			w := 1.0
			if n.Weights != nil {
				w = n.Weights[j]
			}
			ni.weights = append(ni.weights, w)
			if n.Placements != nil {
				ni.place = append(ni.place, float64(n.Placements[j]))
			}
		}
		d.nodes = append(d.nodes, ni)
	}
	rng := rand.New(rand.NewPCG(o.Seed, o.Seed^0x9e3779b97f4a7c15))
	pos := make([]int, len(s.Metrics))
	for i, m := range rng.Perm(len(s.Metrics)) {
		pos[m] = i
	}
	for i := range d.nodes {
		n := &d.nodes[i]
		n.byPriority = make([]int, len(n.metrics))
		for j := range n.byPriority {
			n.byPriority[j] = j
		}
		slices.SortFunc(n.byPriority, func(a, b int) int { return pos[n.metrics[a]] - pos[n.metrics[b]] })
	}
	return d
}

// have is each metric's base scenarios in the data: the most any model
// has at any age.
func (d *design) have(clusters Clusters) []int {
	out := make([]int, len(d.s.Metrics))
	for k := range d.s.Metrics {
		for mi := range d.s.Models {
			for ai := range d.s.Ages {
				out[k] = max(out[k], len(clusters(mi, study.AgeIndex(d.s.Ages[ai]), k)))
			}
		}
	}
	return out
}

// run walks the looks: look k sees the prefix counts the design asked for
// by then; it returns at the first look whose next round the data do not
// yet hold, or at the stop. A stop before the last look takes the
// remaining looks on the same rows: their rates were set aside for them
// in advance, so the union bound still holds, and the last, at α_K, states
// everything the others would.
func (d *design) run(clusters Clusters) *Round {
	have := d.have(clusters)
	counts := make([]int, len(have))
	for k := range counts {
		counts[k] = d.o.Start
	}
	if !covers(have, counts) {
		return d.firstRound(have, counts)
	}
	var led ledger
	var steps []Step
	for k := 1; ; k++ {
		res, rows := d.compute(clusters, counts, k)
		led.add(d, res, k)
		r := d.allocate(res, counts, rows, k, &led)
		steps = append(steps, Step{Look: k, Demands: r.Demands, Growth: r.Growth})
		r.Steps, r.Conversations = slices.Clone(steps), sum(rows)
		r.Targets = d.targets(have, counts, r.Growth)
		if len(r.Growth) == 0 {
			if K := d.o.Looks(); k < K {
				res, _ = d.compute(clusters, counts, K)
				led.add(d, res, K)
				r.Look, r.Alpha, r.Spent = K, d.o.spend(K), d.o.Alpha
			}
			r.Stop = true
			led.fill(d, r, res)
			return r
		}
		led.fill(d, r, res)
		if !covers(have, wantOf(r.Targets)) {
			return r
		}
		counts = wantOf(r.Targets)
	}
}

// firstRound is the answer before the data hold the first round.
func (d *design) firstRound(have, counts []int) *Round {
	r := &Round{Looks: d.o.Looks(), Method: Method}
	for k, m := range d.s.Metrics {
		r.Targets = append(r.Targets, Target{Key: m.Key, Bench: m.Bench, Metric: m.ID, LabelMetric: m.LabelID, Have: have[k], Want: counts[k]})
	}
	return r
}

// covers: the data hold at least want base scenarios of every metric.
func covers(have, want []int) bool {
	for k := range have {
		if have[k] < want[k] {
			return false
		}
	}
	return true
}

func wantOf(ts []Target) []int {
	out := make([]int, len(ts))
	for i, t := range ts {
		out[i] = t.Want
	}
	return out
}

// compute is the study on the first counts[k] base scenarios of each
// metric at look k's level, and the judged rows it used of each metric.
func (d *design) compute(clusters Clusters, counts []int, look int) (*study.Result, []int) {
	rows := make([]int, len(counts))
	sub := d.s.WithClusters(func(mi, ai, k int) []stats.ClusterSum {
		cs := clusters(mi, ai, k)
		cs = cs[:min(len(cs), counts[k])]
		for _, c := range cs {
			rows[k] += c.N
		}
		return slices.Clone(cs)
	})
	a := d.o.spend(look)
	return sub.AtLevel(1-a, a).Compute(), rows
}

// targets lists the metrics with their counts after the growth.
func (d *design) targets(have, counts []int, growth []Growth) []Target {
	want := slices.Clone(counts)
	index := map[string]int{}
	for k, m := range d.s.Metrics {
		index[m.Key] = k
	}
	for _, g := range growth {
		want[index[g.Key]] = g.To
	}
	out := make([]Target, len(d.s.Metrics))
	for k, m := range d.s.Metrics {
		out[k] = Target{Key: m.Key, Bench: m.Bench, Metric: m.ID, LabelMetric: m.LabelID, Have: counts[k], Want: want[k]}
	}
	return out
}

// ByBench is what the next round collects, as each benchmark's runner
// takes it: benchmark slug → metric id → the base scenarios it should
// have (only the metrics that grow). A metric with a copy in the
// nutritional-label benchmark grows there too, so label-only models see
// the same scenarios.
func (r *Round) ByBench() map[string]map[string]int { return r.byBench(true) }

// Wanted is every metric's base scenarios the round asks for, grown or
// not, in ByBench's shape: what a resumed round tops its sets up to.
func (r *Round) Wanted() map[string]map[string]int { return r.byBench(false) }

func (r *Round) byBench(growingOnly bool) map[string]map[string]int {
	out := map[string]map[string]int{}
	set := func(bench, metric string, n int) {
		if out[bench] == nil {
			out[bench] = map[string]int{}
		}
		out[bench][metric] = n
	}
	for _, t := range r.Targets {
		if growingOnly && t.Want <= t.Have {
			continue
		}
		set(t.Bench, t.Metric, t.Want)
		if t.LabelMetric != "" {
			set(study.LabelBenchmark, t.LabelMetric, t.Want)
		}
	}
	return out
}
