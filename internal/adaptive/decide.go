package adaptive

import (
	"slices"

	"github.com/impactbench/impactbench/internal/site"
	"github.com/impactbench/impactbench/internal/stats"
	"github.com/impactbench/impactbench/internal/study"
)

// Conclusion kinds.
const (
	KindDifferent = "different" // a pair shown different (not tied)
	KindGrade     = "grade"     // a grade word, letter or step label shown
)

// Conclusion is one conclusion the design states.
type Conclusion struct {
	Kind      string
	Node, Age string
	// Model is the graded cell's model, or the model shown better; Worse
	// the model shown worse.
	Model, Worse string
	Grade        string
	Band         int // the grade's position on its scale (0: the highest)
	Look         int // the look that first stated it
}

// Rank is a ranked model's rank at a node and age group (the last look's)
// and its rank interval.
type Rank struct {
	Node, Age, Model string
	Rank, Lo, Hi     int
}

// ledger accumulates what the looks state: a conclusion stated once stays
// stated.
type ledger struct {
	decided, conflicts []Conclusion
	// diff: node, age and the two models in id order → +1 when the first
	// is shown better, −1 when the second is.
	diff  map[[4]string]int
	grade map[[3]string]string
	// ranks: a metric node's rank intervals intersected over the looks
	// (the study stores no pairs at metric nodes).
	ranks map[[3]string][2]int
}

// add records look's conclusions.
func (l *ledger) add(d *design, res *study.Result, look int) {
	if l.diff == nil {
		l.diff, l.grade, l.ranks = map[[4]string]int{}, map[[3]string]string{}, map[[3]string][2]int{}
	}
	for _, p := range res.Pairs {
		if p.Significant {
			c := Conclusion{Kind: KindDifferent, Node: p.Node, Age: p.Age, Model: p.A, Worse: p.B, Look: look}
			if p.Diff < 0 {
				c.Model, c.Worse = p.B, p.A
			}
			l.addDiff(c)
		}
	}
	kinds := d.kinds()
	for _, c := range res.Cells {
		if g := site.CellGrade(kinds[c.Node], c); g.Grade != "" {
			l.addGrade(Conclusion{Kind: KindGrade, Node: c.Node, Age: c.Age, Model: c.Model, Grade: g.Grade, Band: g.Top, Look: look})
		}
		if kinds[c.Node] == study.KindMetric && c.RankLo != nil {
			l.addMetricRank(c)
		}
	}
}

func pairKey(c Conclusion) ([4]string, int) {
	if c.Model < c.Worse {
		return [4]string{c.Node, c.Age, c.Model, c.Worse}, 1
	}
	return [4]string{c.Node, c.Age, c.Worse, c.Model}, -1
}

func (l *ledger) addDiff(c Conclusion) {
	k, sign := pairKey(c)
	switch l.diff[k] {
	case 0:
		l.diff[k] = sign
		l.decided = append(l.decided, c)
	case -sign:
		l.conflicts = append(l.conflicts, c)
	}
}

func (l *ledger) addGrade(c Conclusion) {
	k := [3]string{c.Node, c.Age, c.Model}
	switch g, ok := l.grade[k]; {
	case !ok:
		l.grade[k] = c.Grade
		l.decided = append(l.decided, c)
	case g != c.Grade:
		l.conflicts = append(l.conflicts, c)
	}
}

func (l *ledger) addMetricRank(c study.Cell) {
	k := [3]string{c.Node, c.Age, c.Model}
	r, ok := l.ranks[k]
	if !ok {
		r = [2]int{*c.RankLo, *c.RankHi}
	}
	l.ranks[k] = [2]int{max(r[0], *c.RankLo), min(r[1], *c.RankHi)}
}

// decidedPair is the ledger's call on models a and b at a node and age:
// +1 a shown better, −1 b shown better, 0 not shown different.
func (l *ledger) decidedPair(node, age, a, b string) int {
	if a < b {
		return l.diff[[4]string{node, age, a, b}]
	}
	return -l.diff[[4]string{node, age, b, a}]
}

// fill sets r's conclusions and ranks from the ledger, ranks ordered as
// res (the last look) ranks the models.
func (l *ledger) fill(d *design, r *Round, res *study.Result) {
	r.Decided, r.Conflicts = slices.Clone(l.decided), slices.Clone(l.conflicts)
	r.Ranks = l.rankIntervals(d, res)
}

// rankIntervals are every ranked cell's rank interval: from the decided
// different-calls (stats.TestedRanks, as study.json's), or at a metric
// node the looks' intervals intersected.
func (l *ledger) rankIntervals(d *design, res *study.Result) []Rank {
	kinds := d.kinds()
	groups := map[[2]string][]study.Cell{}
	var order [][2]string
	for _, c := range res.Cells {
		if c.Rank == nil {
			continue
		}
		k := [2]string{c.Node, c.Age}
		if groups[k] == nil {
			order = append(order, k)
		}
		groups[k] = append(groups[k], c)
	}
	var out []Rank
	for _, k := range order {
		cs := groups[k]
		if kinds[k[0]] == study.KindMetric {
			for _, c := range cs {
				iv := l.ranks[[3]string{c.Node, c.Age, c.Model}]
				out = append(out, Rank{c.Node, c.Age, c.Model, *c.Rank, iv[0], iv[1]})
			}
			continue
		}
		_, lo, hi := stats.TestedRanks(len(cs), func(i, j int) int { return *cs[j].Rank - *cs[i].Rank },
			func(i, j int) int { return l.decidedPair(k[0], k[1], cs[i].Model, cs[j].Model) })
		for i, c := range cs {
			out = append(out, Rank{c.Node, c.Age, c.Model, *c.Rank, lo[i], hi[i]})
		}
	}
	return out
}

// kinds maps node ids to their kinds.
func (d *design) kinds() map[string]string { return d.kindOf }
