package study

import (
	"fmt"
	"math"
	"math/big"
	"slices"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/stats"
)

// Conf is the confidence level of every interval in study.json, and
// Alpha the significance level of every test: written as 0.05, not
// computed as 1 − Conf (which is 0.050000000000000044 in floating point,
// and would let p = 0.05 count as significant).
const (
	Conf  = 0.95
	Alpha = 0.05
)

// Method texts of study.json's "methods".
const (
	methodScore = "mean over the node's metrics (each once; the nutrition label's overall: the mean of its categories) of each metric's pass rate, the share of the model's judged rows of that metric and age group that passed (every sample counts). Metrics are fixed, not sampled. Computed as an exact fraction (ranks and ties are decided on it) and stored unrounded"
	methodPairs = "paired difference A - B over the metrics and base scenarios both models have (" + stats.MethodStratifiedCluster + "); p from the same t, so p < 0.05 exactly when the 95 % interval excludes 0. p_adjusted: Holm over every pair of ranked models at the same level and age group (one family per question 'which models differ here?'); significant (p_adjusted < 0.05) and tied_with (not significant) come from it"
	methodThin  = "thin: fewer than 10 base scenarios in the cell, or a metric on fewer than 3"
	// impactbench-web has two rules for an area: its leaderboard, in an
	// area's context, averages the area's metrics each once (score); its
	// area card, the card's grade word and the sunburst average every
	// placement (by_placement).
	methodByPlacement = "areas only: the mean over every placement of a metric in the area's subareas (a metric listed under two subareas counts twice; the node's placements), as impactbench-web's area card, its grade word and the sunburst compute it; interval as for score, each metric weighted by its placements. score is the site's leaderboard rule (each metric once)"
)

// thinScenarios and thinPerMetric are the thin-cell thresholds.
const (
	thinScenarios = stats.FewClusters
	thinPerMetric = stats.MinCheckedClusters
)

// Compute scores every model at every node and age group (see Result).
func (s *Study) Compute() *Result {
	conf, _ := s.level()
	r := &Result{Version: ResultVersion, Conf: conf, Ages: slices.Clone(s.Ages),
		Methods:    Methods{Score: methodScore, Interval: stats.MethodStratifiedCluster, Pairs: methodPairs, Ranks: stats.MethodTestedRanks, Thin: methodThin, ByPlacement: methodByPlacement},
		JudgeError: s.judgeErrorNote(), Warnings: append(slices.Clone(s.Warnings), s.SiteWarnings()...)}
	if r.Ages == nil {
		r.Ages = []string{}
	}
	for mi, m := range s.Models {
		info := ModelInfo{ID: m.ID, Name: m.Name, Provider: m.Provider, RunDir: m.RunDir, Surfaces: m.Surfaces}
		if mi < len(s.refused) {
			info.Refused = s.refused[mi]
		}
		r.Models = append(r.Models, info)
	}
	r.Nodes = s.Nodes()
	r.Cells, r.Pairs = []Cell{}, []Pair{}
	for _, n := range r.Nodes {
		for _, age := range s.Ages {
			cells, pairs := s.computeNode(n, AgeIndex(age), age)
			r.Cells = append(r.Cells, cells...)
			r.Pairs = append(r.Pairs, pairs...)
		}
	}
	return r
}

// weight is the node's weight of its i-th metric.
func (n *Node) weight(i int) float64 {
	if n.Weights != nil {
		return n.Weights[i]
	}
	return 1
}

// byPlacement is model mi's score at area node n weighing each metric by
// its placements (Node.Placements), with its interval.
func (s *Study) byPlacement(n *Node, mi, ai int) *Estimate {
	strata := make([]stats.Stratum, len(n.idx))
	var m weightedMean
	for j, k := range n.idx {
		strata[j] = stats.Stratum{Weight: float64(n.Placements[j]), Clusters: s.obs[mi][ai][k]}
		if r, ok := exactRate(s.obs[mi][ai][k]); ok {
			m.add(frac{int64(n.Placements[j]), 1}, r)
		}
	}
	conf, _ := s.level()
	iv := stats.StratifiedMean(strata, conf)
	score := float(m.value())
	return &Estimate{Score: score, Lo: min(iv.Lo, score), Hi: max(iv.Hi, score), SE: iv.SE, DF: finiteDF(iv.DF)}
}

// rankedModel is a model ranked at a node and age: its index, its cell's
// and its exact score.
type rankedModel struct {
	model, cell int
	score       *big.Rat
}

// computeNode scores every model with data at one node and age, ranks
// the node's ranked models and lists their paired differences.
func (s *Study) computeNode(n *Node, ai int, age string) ([]Cell, []Pair) {
	var cells []Cell
	var ranked []rankedModel
	conf, _ := s.level()
	for mi, m := range s.Models {
		strata := make([]stats.Stratum, len(n.idx))
		for j, k := range n.idx {
			strata[j] = stats.Stratum{Weight: n.weight(j), Clusters: s.obs[mi][ai][k]}
		}
		iv := stats.StratifiedMean(strata, conf)
		if iv.Strata == 0 {
			continue
		}
		exact := s.exactScore(n, mi, ai)
		c := newCell(n, age, m.ID, float(exact), iv)
		if n.Placements != nil {
			c.ByPlacement = s.byPlacement(n, mi, ai)
		}
		c.Corrected = s.corrected(n, mi, ai)
		if n.Ranked == "all" || m.HasSurface(config.SurfaceFull) {
			ranked = append(ranked, rankedModel{model: mi, cell: len(cells), score: exact})
		}
		cells = append(cells, c)
	}
	if len(ranked) < 2 {
		return cells, nil
	}
	fam := s.family(n, ai, ranked)
	rank, lo, hi := stats.TestedRanks(len(ranked), func(i, j int) int { return ranked[i].score.Cmp(ranked[j].score) }, fam.decided)
	for i, rm := range ranked {
		c := &cells[rm.cell]
		c.Rank, c.RankLo, c.RankHi = ptr(rank[i]), ptr(lo[i]), ptr(hi[i])
	}
	if n.Kind == KindMetric {
		return cells, nil // a metric's pairs are not stored (3 base scenarios each)
	}
	var pairs []Pair
	for _, t := range fam.tests {
		a, b := s.Models[ranked[t.i].model].ID, s.Models[ranked[t.j].model].ID
		pairs = append(pairs, newPair(n, age, a, b, t))
		if !t.significant {
			ci, cj := &cells[ranked[t.i].cell], &cells[ranked[t.j].cell]
			ci.TiedWith = append(ci.TiedWith, b)
			cj.TiedWith = append(cj.TiedWith, a)
		}
	}
	return cells, pairs
}

// pairTest is one paired comparison of a node's family: ranked models i
// and j (i < j), the difference i − j (exact, and its interval and raw
// p-value), Holm's adjusted p-value over the family and the decision.
type pairTest struct {
	i, j        int
	diff        *big.Rat
	iv          stats.StratifiedInterval
	pAdjusted   float64
	significant bool
}

// pairFamily is every comparable pair of a node's ranked models at one
// age: one family of tests, adjusted together.
type pairFamily struct {
	tests []pairTest
	index map[[2]int]int
}

// family compares every pair of ranked models at node n, age ai, and
// adjusts the p-values with Holm over the pairs that could be compared.
func (s *Study) family(n *Node, ai int, ranked []rankedModel) pairFamily {
	f := pairFamily{index: map[[2]int]int{}}
	for i := range ranked {
		for j := i + 1; j < len(ranked); j++ {
			a, b := ranked[i].model, ranked[j].model
			d := s.pairedDiff(n, ai, a, b)
			exact := s.exactDiff(n, ai, a, b)
			if math.IsNaN(d.Estimate) || exact == nil {
				continue // no shared base scenario: not comparable
			}
			f.index[[2]int{i, j}] = len(f.tests)
			f.tests = append(f.tests, pairTest{i: i, j: j, diff: exact, iv: d})
		}
	}
	ps := make([]float64, len(f.tests))
	for k, t := range f.tests {
		ps[k] = t.iv.P
	}
	_, alpha := s.level()
	for k, adj := range stats.Holm(ps) {
		f.tests[k].pAdjusted = adj
		// An exact difference of 0 is never a finding, whatever the
		// variance estimate says.
		f.tests[k].significant = adj < alpha && f.tests[k].diff.Sign() != 0
	}
	return f
}

// decided is the family's decision on ranked models i and j (i < j): +1
// when i is shown better, −1 when j is, 0 when not shown different or not
// compared.
func (f pairFamily) decided(i, j int) int {
	k, ok := f.index[[2]int{i, j}]
	if !ok || !f.tests[k].significant {
		return 0
	}
	return f.tests[k].diff.Sign()
}

// pairedDiff is model a − model b at node n, age ai, on the base scenarios
// both have.
func (s *Study) pairedDiff(n *Node, ai, a, b int) stats.StratifiedInterval {
	strata := make([]stats.PairedStratum, 0, len(n.idx))
	for j, k := range n.idx {
		ca, cb := s.obs[a][ai][k], s.obs[b][ai][k]
		if len(ca) == 0 || len(cb) == 0 {
			continue
		}
		pcs := make([]stats.PairedCluster, 0, len(ca))
		for i := range min(len(ca), len(cb)) {
			pcs = append(pcs, stats.PairedCluster{NA: ca[i].N, NB: cb[i].N, SumA: ca[i].Sum, SumB: cb[i].Sum})
		}
		strata = append(strata, stats.PairedStratum{Weight: n.weight(j), Clusters: pcs})
	}
	conf, _ := s.level()
	return stats.StratifiedPairedDiff(strata, conf)
}

// newCell is a model's cell: score the exact score (as a float64), the
// interval and its standard error unrounded, so a reader rounds once.
func newCell(n *Node, age, model string, score float64, iv stats.StratifiedInterval) Cell {
	c := Cell{Node: n.ID, Age: age, Model: model,
		// An exact score and its floating-point interval can disagree in
		// the last bit when the interval has zero width.
		Score: ptr(score), Lo: ptr(min(iv.Lo, score)), Hi: ptr(max(iv.Hi, score)), SE: ptr(iv.SE), DF: finiteDF(iv.DF),
		Metrics: iv.Strata, MetricsExpected: len(n.idx), Complete: iv.Strata == len(n.idx),
		Scenarios: iv.Clusters, MinScenarios: iv.MinClusters, Conversations: iv.N}
	c.Thin = c.Scenarios < thinScenarios || c.MinScenarios < thinPerMetric
	switch {
	case c.MinScenarios < thinPerMetric:
		c.Warning = fmt.Sprintf("a metric here rests on only %d base scenario(s): too few for a trustworthy interval", c.MinScenarios)
	case c.Scenarios < thinScenarios:
		c.Warning = stats.ClusterWarning(c.Scenarios)
	}
	if !c.Complete {
		miss := fmt.Sprintf("%d of the %d metrics have no judged rows for this model and age; the score averages the others", len(n.idx)-iv.Strata, len(n.idx))
		if c.Warning != "" {
			c.Warning += "; "
		}
		c.Warning += miss
	}
	return c
}

func newPair(n *Node, age, a, b string, t pairTest) Pair {
	d := t.iv
	diff := float(t.diff)
	return Pair{Node: n.ID, Age: age, A: a, B: b, Diff: diff, Lo: min(d.Lo, diff), Hi: max(d.Hi, diff),
		P: d.P, PAdjusted: t.pAdjusted, Significant: t.significant,
		DF: finiteDF(d.DF), Metrics: d.Strata, Scenarios: d.Clusters}
}

func ptr[T any](v T) *T { return &v }

func finiteDF(df float64) *float64 {
	if math.IsInf(df, 0) || math.IsNaN(df) {
		return nil
	}
	return ptr(artifacts.Round(df, 1))
}
