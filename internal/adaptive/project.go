package adaptive

import (
	"math"
	"slices"

	"github.com/impactbench/impactbench/internal/site"
	"github.com/impactbench/impactbench/internal/stats"
	"github.com/impactbench/impactbench/internal/study"
	"gonum.org/v1/gonum/stat/distuv"
)

// Projection. At look k the design asks, of every conclusion not yet
// stated, whether the last look (at α_K) could state it if every metric of
// its node had Max base scenarios, taking the current estimate as the
// truth: the variance of a metric's rate is taken to fall as 1/n (on July,
// the aggregate nodes' standard errors at 1 and 2 base scenarios per
// metric were 1.72× and 1.34× those at 3, against √3 = 1.73 and √1.5 =
// 1.22), the degrees of freedom to grow with the strata's (max(n − 1, 1)).
// A conclusion out of reach stops asking; one within reach asks for the
// share of its node's metrics, in the node's seeded order, that brings
// the projected variance down to what it needs (Hope times the evidence
// scales the projection). A node grows what its most demanding conclusion
// asks for. The projection only steers the spending: what is stated comes
// from the looks' tests.

// family is one node and age group's look: its pairs and cells.
type family struct {
	node  int
	age   string
	pairs []study.Pair
	cells []study.Cell
}

// need is an open conclusion's request: the variance, relative to now,
// that its node must reach (ratio < 1), and with which weights.
type need struct {
	ratio  float64
	place  bool
	demand Demand
}

// allocate is look k's growth: the open conclusions that need more
// scenarios ask for a share of their node's metrics (selectMetrics), and
// the asked metrics grow to Start + k base scenarios (at most Max); none
// at the last look. Without a budget every request is granted (a node's
// requests are prefixes of one order, so its most demanding one covers
// the others); with one, the cheapest requests first, while the base
// scenarios fit.
func (d *design) allocate(res *study.Result, counts, rows []int, k int, led *ledger) *Round {
	r := &Round{Look: k, Looks: d.o.Looks(), Alpha: d.o.spend(k), Spent: d.o.spent(k), Method: Method}
	var reqs []request
	for _, f := range d.families(res) {
		open, needs := d.open(f, counts, led)
		r.Open += open
		if k >= d.o.Looks() || len(needs) == 0 {
			continue
		}
		if d.o.Budget >= 1 {
			needs = needs[:1]
		}
		var fam []request
		for _, nd := range needs {
			if sel := d.selectMetrics(f.node, counts, nd); len(sel) > 0 {
				fam = append(fam, request{nd: nd, sel: sel})
			}
		}
		reqs = append(reqs, served(fam)...)
	}
	to := min(d.o.Max, d.o.Start+k)
	grow := map[int][]int{}
	for _, q := range d.grant(reqs, counts, rows, to) {
		for _, m := range q.sel {
			if counts[m] < to {
				grow[m] = append(grow[m], len(r.Demands))
			}
		}
		r.Demands = append(r.Demands, q.nd.demand)
	}
	for m := range d.s.Metrics {
		if by := grow[m]; len(by) > 0 {
			r.Growth = append(r.Growth, Growth{Key: d.s.Metrics[m].Key, From: counts[m], To: to, By: by})
		}
	}
	return r
}

// request is an open conclusion's need and the metrics it asks to grow;
// serves counts the family's open conclusions it would serve (its own and
// those whose metrics are a prefix of its).
type request struct {
	nd     need
	sel    []int
	serves int
}

// served sets each of a family's requests' serves: its requests ask for
// prefixes of one order, so a request serves every one asking for as
// many metrics or fewer.
func served(fam []request) []request {
	for i := range fam {
		for _, o := range fam {
			if len(o.sel) <= len(fam[i].sel) {
				fam[i].serves++
			}
		}
	}
	return fam
}

// grant is the requests granted: all of them without a budget; with one,
// those serving the most open conclusions per conversation first (a
// group's lone grade asks for few metrics, an aggregate node's dozens of
// close pairs for many: cheapest-first spent a half budget on the
// groups), each if the conversations its new metrics add (to `to` base
// scenarios) fit in what the budget leaves. A metric's base scenario
// costs the conversations its first ones did (rows over counts: every
// model's variants and samples).
func (d *design) grant(reqs []request, counts, rows []int, to int) []request {
	if d.o.Budget >= 1 {
		return reqs
	}
	per := make([]float64, len(counts))
	worst := 0.0
	for m := range counts {
		if counts[m] > 0 {
			per[m] = float64(rows[m]) / float64(counts[m])
		}
		worst += per[m] * float64(d.o.Max)
	}
	left := d.o.Budget*worst - float64(sum(rows)) + 1e-9
	costOf := func(q request) float64 {
		c := 0.0
		for _, m := range q.sel {
			c += per[m] * float64(max(to-counts[m], 0))
		}
		return max(c, 1e-9)
	}
	slices.SortStableFunc(reqs, func(a, b request) int {
		return cmpFloat(float64(b.serves)/costOf(b), float64(a.serves)/costOf(a))
	})
	granted := map[int]bool{}
	var out []request
	for _, q := range reqs {
		cost := 0.0
		for _, m := range q.sel {
			if !granted[m] {
				cost += per[m] * float64(max(to-counts[m], 0))
			}
		}
		if cost > left {
			continue
		}
		left -= cost
		for _, m := range q.sel {
			granted[m] = true
		}
		out = append(out, q)
	}
	return out
}

func sum(xs []int) int {
	s := 0
	for _, x := range xs {
		s += x
	}
	return s
}

// spent is the error rate looks 1..k spent.
func (o Options) spent(k int) float64 {
	return o.Alpha * math.Pow(float64(k)/float64(o.Looks()), o.Rho)
}

// families groups a look's pairs and cells by node and age group.
func (d *design) families(res *study.Result) []*family {
	byKey := map[[2]string]*family{}
	var out []*family
	get := func(node, age string) *family {
		k := [2]string{node, age}
		if f, ok := byKey[k]; ok {
			return f
		}
		f := &family{node: d.nodeOf[node], age: age}
		byKey[k] = f
		out = append(out, f)
		return f
	}
	for _, p := range res.Pairs {
		f := get(p.Node, p.Age)
		f.pairs = append(f.pairs, p)
	}
	for _, c := range res.Cells {
		f := get(c.Node, c.Age)
		f.cells = append(f.cells, c)
	}
	return out
}

// open counts a family's open conclusions and returns the needs of those
// that need more scenarios, the most demanding (smallest ratio) first.
func (d *design) open(f *family, counts []int, led *ledger) (int, []need) {
	n := &d.nodes[f.node]
	op, pairs := d.openPairs(f, n, counts, led)
	og, grades := d.openGrades(f, n, counts, led)
	needs := append(pairs, grades...)
	slices.SortStableFunc(needs, func(a, b need) int { return cmpFloat(a.ratio, b.ratio) })
	return op + og, needs
}

// projection is a node's variance at Max over its variance now (1/n per
// metric; weights w²) and the degrees-of-freedom factor.
func (d *design) projection(n *nodeInfo, counts []int, place bool) (ratio, dfScale float64) {
	w := n.weights
	if place {
		w = n.place
	}
	var now, end float64
	fewest := d.o.Max
	for j, m := range n.metrics {
		if counts[m] == 0 {
			continue
		}
		now += w[j] * w[j] / float64(counts[m])
		end += w[j] * w[j] / float64(d.o.Max)
		fewest = min(fewest, counts[m])
	}
	if now == 0 {
		return 1, 1
	}
	return end / now, float64(max(d.o.Max-1, 1)) / float64(max(fewest-1, 1))
}

// openPairs projects a family's undecided pairs to the last look.
func (d *design) openPairs(f *family, n *nodeInfo, counts []int, led *ledger) (int, []need) {
	if len(f.pairs) == 0 {
		return 0, nil
	}
	ratio, dfScale := d.projection(n, counts, false)
	aK := d.o.spend(d.o.Looks())
	type proj struct {
		i        int
		t, df, p float64
	}
	ps := make([]proj, len(f.pairs))
	pv := make([]float64, len(f.pairs))
	for i, p := range f.pairs {
		ps[i] = proj{i: i, p: 1}
		if led.decidedPair(p.Node, p.Age, p.A, p.B) != 0 || (p.Diff != 0 && p.P == 0) {
			ps[i].p = 0
		} else if se, df := pairSE(p); se > 0 {
			ps[i].t, ps[i].df = math.Abs(p.Diff)/se, df*dfScale
			ps[i].p = tTwoSided(d.o.Hope*ps[i].t/math.Sqrt(ratio), ps[i].df)
		}
		pv[i] = ps[i].p
	}
	adj := stats.Holm(pv)
	order := slices.Clone(ps)
	slices.SortStableFunc(order, func(a, b proj) int { return cmpFloat(a.p, b.p) })
	open := 0
	var needs []need
	for rank, q := range order {
		if q.p == 0 || !(adj[q.i] < aK) {
			continue
		}
		open++
		crit := tQuantile(1-aK/float64(2*(len(order)-rank)), q.df)
		if ratio := math.Pow(d.o.Hope*q.t/crit, 2); ratio < 1 {
			p := f.pairs[q.i]
			needs = append(needs, need{ratio: ratio, demand: Demand{Node: p.Node, Age: p.Age, NodeKind: n.n.Kind, Kind: KindDifferent, Model: p.A, Other: p.B}})
		}
	}
	return open, needs
}

// pairSE is a pair's standard error and degrees of freedom, from its
// p-value, which the study computes from the same t (its interval at an
// early look's tiny α is clipped at ±1 and would understate it); 0 when
// the difference is 0 (nothing to project) or p underflows (decided at
// any look).
func pairSE(p study.Pair) (se, df float64) {
	df = math.Inf(1)
	if p.DF != nil {
		df = *p.DF
	}
	if p.Diff == 0 || !(p.P > 0) {
		return 0, df
	}
	t := tQuantile(1-p.P/2, df)
	if math.IsInf(t, 1) || !(t > 0) {
		return 0, df
	}
	return math.Abs(p.Diff) / t, df
}

// openGrades projects a family's cells without a grade to the last look.
func (d *design) openGrades(f *family, n *nodeInfo, counts []int, led *ledger) (int, []need) {
	aK := d.o.spend(d.o.Looks())
	open := 0
	var needs []need
	for _, c := range f.cells {
		if _, ok := led.grade[[3]string{c.Node, c.Age, c.Model}]; ok {
			continue
		}
		score, se, df, place := gradedEstimate(c)
		if !(se > 0) {
			continue
		}
		ratio, dfScale := d.projection(n, counts, place)
		q := tQuantile(1-aK/2, df*dfScale)
		room := bandRoom(n.n.Kind, score)
		if q*se*math.Sqrt(ratio)/d.o.Hope > room {
			continue // out of reach at Max
		}
		open++
		if ratio := math.Pow(room*d.o.Hope/(q*se), 2); ratio < 1 {
			needs = append(needs, need{ratio: ratio, place: place, demand: Demand{Node: c.Node, Age: c.Age, NodeKind: n.n.Kind, Kind: KindGrade, Model: c.Model}})
		}
	}
	return open, needs
}

// gradedEstimate is the estimate the site grades a cell on (site.CellGrade:
// an area's by-placement one when it has one), with its standard error and
// degrees of freedom.
func gradedEstimate(c study.Cell) (score, se, df float64, place bool) {
	df = math.Inf(1)
	if e := c.ByPlacement; e != nil {
		if e.DF != nil {
			df = *e.DF
		}
		return e.Score, e.SE, df, true
	}
	if c.Score == nil || c.SE == nil {
		return math.NaN(), math.NaN(), df, false
	}
	if c.DF != nil {
		df = *c.DF
	}
	return *c.Score, *c.SE, df, false
}

// bandRoom is the largest half-width an interval around score can have
// and still get a grade at a node of that kind (site.CellGrade's rule),
// to 1e-6.
func bandRoom(kind string, score float64) float64 {
	graded := func(h float64) bool {
		lo, hi := score-h, score+h
		return site.CellGrade(kind, study.Cell{Lo: &lo, Hi: &hi}).Grade != ""
	}
	lo, hi := 0.0, 1.0
	if !graded(lo) {
		return 0
	}
	for hi-lo > 1e-6 {
		mid := (lo + hi) / 2
		if graded(mid) {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo
}

// selectMetrics is the node's metrics, in its seeded order, whose growth
// to Max brings its projected variance down to nd.ratio of what it is now
// (all it can grow when that is not enough).
func (d *design) selectMetrics(node int, counts []int, nd need) []int {
	n := &d.nodes[node]
	w := n.weights
	if nd.place {
		w = n.place
	}
	now := 0.0
	for j, m := range n.metrics {
		if counts[m] > 0 {
			now += w[j] * w[j] / float64(counts[m])
		}
	}
	v, target := now, nd.ratio*now
	var sel []int
	for _, j := range n.byPriority {
		if v <= target {
			break
		}
		m := n.metrics[j]
		if counts[m] == 0 || counts[m] >= d.o.Max {
			continue
		}
		v -= w[j] * w[j] * (1/float64(counts[m]) - 1/float64(d.o.Max))
		sel = append(sel, m)
	}
	return sel
}

// tQuantile is the t quantile at ⌊df⌋ degrees of freedom (the study's
// intervals round them down), the normal's for infinite df.
func tQuantile(p, df float64) float64 {
	if math.IsInf(df, 1) || math.IsNaN(df) {
		return stats.ZQuantile(p)
	}
	return stats.TQuantile(p, max(1, math.Floor(df)))
}

// tTwoSided is the two-sided p-value of t under t(⌊df⌋).
func tTwoSided(t, df float64) float64 {
	if math.IsInf(df, 1) || math.IsNaN(df) {
		return 2 * distuv.UnitNormal.Survival(t)
	}
	return 2 * distuv.StudentsT{Mu: 0, Sigma: 1, Nu: max(1, math.Floor(df))}.Survival(t)
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
