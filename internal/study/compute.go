package study

import (
	"fmt"
	"math"
	"slices"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/stats"
)

// Conf is the confidence level of every interval in study.json.
const Conf = 0.95

// Method texts of study.json's "methods".
const (
	methodScore = "mean over the node's metrics (each once; the nutrition label's overall: the mean of its categories) of each metric's pass rate, the share of the model's judged rows of that metric and age group that passed (every sample counts). Metrics are fixed, not sampled"
	methodPairs = "paired difference A - B over the metrics and base scenarios both models have (" + stats.MethodStratifiedCluster + "); p from the same t, so p < 0.05 exactly when the 95 % interval excludes 0; per comparison, not adjusted across the file"
	methodThin  = "thin: fewer than 10 base scenarios in the cell, or a metric on fewer than 3"
)

// thinScenarios and thinPerMetric are the thin-cell thresholds.
const (
	thinScenarios = stats.FewClusters
	thinPerMetric = stats.MinCheckedClusters
)

// Compute scores every model at every node and age group (see Result).
func (s *Study) Compute() *Result {
	r := &Result{Version: ResultVersion, Conf: Conf, Ages: slices.Clone(s.Ages),
		Methods:  Methods{Score: methodScore, Interval: stats.MethodStratifiedCluster, Pairs: methodPairs, Ranks: stats.MethodPairwiseRanks, Thin: methodThin},
		Warnings: slices.Clone(s.Warnings)}
	if r.Ages == nil {
		r.Ages = []string{}
	}
	for _, m := range s.Models {
		r.Models = append(r.Models, ModelInfo{ID: m.ID, Name: m.Name, Provider: m.Provider, RunDir: m.RunDir, Surfaces: m.Surfaces})
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

// computeNode scores every model with data at one node and age, ranks
// the node's ranked models and lists their paired differences.
func (s *Study) computeNode(n *Node, ai int, age string) ([]Cell, []Pair) {
	var cells []Cell
	var ranked []int     // model indexes
	var rankedCell []int // their cells
	var raw []float64    // their unrounded scores (rounded ones would tie models that differ in the fifth decimal)
	for mi, m := range s.Models {
		strata := make([]stats.Stratum, len(n.idx))
		for j, k := range n.idx {
			strata[j] = stats.Stratum{Weight: n.weight(j), Clusters: s.obs[mi][ai][k]}
		}
		iv := stats.StratifiedMean(strata, Conf)
		if iv.Strata == 0 {
			continue
		}
		c := newCell(n, age, m.ID, iv)
		if n.Ranked == "all" || m.HasSurface(config.SurfaceFull) {
			ranked = append(ranked, mi)
			rankedCell = append(rankedCell, len(cells))
			raw = append(raw, iv.Estimate)
		}
		cells = append(cells, c)
	}
	if len(ranked) < 2 {
		return cells, nil
	}
	diffs := make(map[[2]int]stats.StratifiedInterval)
	for i := range ranked {
		for j := i + 1; j < len(ranked); j++ {
			diffs[[2]int{i, j}] = s.pairedDiff(n, ai, ranked[i], ranked[j])
		}
	}
	rank, lo, hi := stats.PairwiseRankIntervals(raw, Conf, func(i, j int) (stats.StratifiedInterval, bool) {
		d := diffs[[2]int{i, j}]
		return d, !math.IsNaN(d.Estimate)
	})
	var pairs []Pair
	for i := range ranked {
		c := &cells[rankedCell[i]]
		c.Rank, c.RankLo, c.RankHi = ptr(rank[i]), ptr(lo[i]), ptr(hi[i])
		for j := i + 1; j < len(ranked); j++ {
			d := diffs[[2]int{i, j}]
			if math.IsNaN(d.Estimate) {
				continue
			}
			a, b := s.Models[ranked[i]].ID, s.Models[ranked[j]].ID
			if n.Kind != KindMetric {
				pairs = append(pairs, newPair(n, age, a, b, d))
				if d.Lo <= 0 && d.Hi >= 0 {
					c.TiedWith = append(c.TiedWith, b)
					cj := &cells[rankedCell[j]]
					cj.TiedWith = append(cj.TiedWith, a)
				}
			}
		}
	}
	return cells, pairs
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
	return stats.StratifiedPairedDiff(strata, Conf)
}

func newCell(n *Node, age, model string, iv stats.StratifiedInterval) Cell {
	c := Cell{Node: n.ID, Age: age, Model: model,
		Score: ptr(round4(iv.Estimate)), Lo: ptr(round4(iv.Lo)), Hi: ptr(round4(iv.Hi)), SE: ptr(round4(iv.SE)), DF: finiteDF(iv.DF),
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

func newPair(n *Node, age, a, b string, d stats.StratifiedInterval) Pair {
	return Pair{Node: n.ID, Age: age, A: a, B: b, Diff: round4(d.Estimate), Lo: round4(d.Lo), Hi: round4(d.Hi),
		P: roundSig(d.P), DF: finiteDF(d.DF), Metrics: d.Strata, Scenarios: d.Clusters}
}

func ptr[T any](v T) *T { return &v }

func round4(x float64) float64 { return artifacts.Round(x, 4) }

// roundSig keeps 4 significant digits (small p-values stay readable).
func roundSig(p float64) float64 {
	if p == 0 || math.IsNaN(p) {
		return p
	}
	d := 3 - int(math.Floor(math.Log10(math.Abs(p))))
	return artifacts.Round(p, max(d, 4))
}

func finiteDF(df float64) *float64 {
	if math.IsInf(df, 0) || math.IsNaN(df) {
		return nil
	}
	return ptr(artifacts.Round(df, 1))
}
