package study

import (
	"math/big"
	"strconv"

	"github.com/impactbench/impactbench/internal/config"
)

// Node kinds: the levels a score is given at.
const (
	KindOverall   = "overall"   // every taxonomy metric (the site's leaderboard overview)
	KindArea      = "area"      // an area's metrics, de-duplicated
	KindSubarea   = "subarea"   // a subarea's metrics
	KindGroup     = "group"     // a named group of a subarea
	KindLabel     = "label"     // the nutrition label's overall: the mean of its categories
	KindNutrition = "nutrition" // one nutrition category
	KindBenchmark = "benchmark" // one benchmark's published metrics
	KindMetric    = "metric"    // one metric
)

// Node is one level a score is given at: the metrics it averages (fixed,
// not sampled) and their weights.
type Node struct {
	ID     string `json:"id"` // kind-prefixed: "overall", "area/physical", "group/learning/2", "metric/humanebench__m01"
	Kind   string `json:"kind"`
	Name   string `json:"name"`
	Parent string `json:"parent,omitempty"` // the enclosing node's id (areas, subareas, groups)
	// Ranked names the models ranked at this node: "full" (the models with
	// surface full, as the site's Explore leaderboard) or "all" (the
	// nutrition label's, every model).
	Ranked string `json:"ranked"`
	// Metrics are the metric keys averaged, each once.
	Metrics []string `json:"metrics"`
	// Weights, when set, are each metric's weight (the label's overall
	// weighs a metric by the categories it is in); nil: equal weights.
	Weights []float64 `json:"weights,omitempty"`
	// Placements (areas only) counts each metric's placements in the
	// area: the subareas it is listed under. impactbench-web's area card,
	// its grade word and the sunburst average an area over every
	// placement (a metric in two subareas counts twice), so each area
	// cell also has that score (by_placement).
	Placements []int `json:"placements,omitempty"`

	idx []int  // metric indexes in Study.Metrics
	rw  []frac // the exact weights (nil: equal)
}

// Nodes lists every level of the study: overall, then each area with its
// subareas and their groups, the label's overall and its categories, each
// benchmark, each metric.
func (s *Study) Nodes() []*Node {
	var out []*Node
	add := func(n *Node, keys []string) {
		if s.fill(n, keys) {
			out = append(out, n)
		}
	}
	tax := s.Inputs.Taxonomy
	var all []string
	for _, a := range tax.Areas {
		for _, sub := range a.Subareas {
			all = append(all, sub.Keys()...)
		}
	}
	add(&Node{ID: KindOverall, Kind: KindOverall, Name: "Overall", Ranked: config.SurfaceFull}, all)
	for _, a := range tax.Areas {
		aid := KindArea + "/" + a.ID
		var keys []string
		for _, sub := range a.Subareas {
			keys = append(keys, sub.Keys()...)
		}
		area := &Node{ID: aid, Kind: KindArea, Name: a.Name, Parent: KindOverall, Ranked: config.SurfaceFull}
		if s.fill(area, keys) {
			area.Placements = placements(area.Metrics, keys)
			out = append(out, area)
		}
		for _, sub := range a.Subareas {
			sid := KindSubarea + "/" + sub.ID
			add(&Node{ID: sid, Kind: KindSubarea, Name: sub.Name, Parent: aid, Ranked: config.SurfaceFull}, sub.Keys())
			for gi, g := range sub.Groups {
				add(&Node{ID: KindGroup + "/" + sub.ID + "/" + strconv.Itoa(gi), Kind: KindGroup, Name: g.Name, Parent: sid, Ranked: config.SurfaceFull}, g.MetricIDs)
			}
		}
	}
	out = append(out, s.labelNodes()...)
	for _, b := range s.Benchmarks {
		var keys []string
		for _, m := range s.Metrics {
			if m.Bench == b.Slug {
				keys = append(keys, m.Key)
			}
		}
		add(&Node{ID: KindBenchmark + "/" + b.Slug, Kind: KindBenchmark, Name: b.Config.Name, Ranked: config.SurfaceFull}, keys)
	}
	for _, m := range s.Metrics {
		if m.Type != "" {
			add(&Node{ID: KindMetric + "/" + m.Key, Kind: KindMetric, Name: m.Name, Ranked: s.metricRanked(m.Key)}, []string{m.Key})
		}
	}
	return out
}

// placements counts how often each of metrics occurs in keys (an area's
// subareas' metric lists, one after the other).
func placements(metrics, keys []string) []int {
	count := map[string]int{}
	for _, k := range keys {
		count[k]++
	}
	out := make([]int, len(metrics))
	for i, m := range metrics {
		out[i] = count[m]
	}
	return out
}

// fill sets n's metrics from keys (published ones, each once); false when
// none is published.
func (s *Study) fill(n *Node, keys []string) bool {
	seen := map[int]bool{}
	for _, k := range keys {
		if i, ok := s.byKey[k]; ok && !seen[i] && s.Metrics[i].Type != "" {
			seen[i] = true
			n.idx = append(n.idx, i)
			n.Metrics = append(n.Metrics, k)
		}
	}
	return len(n.idx) > 0
}

// labelNodes are the label's overall — the mean of the category scores,
// so a metric weighs the sum over its categories of 1/(categories × the
// category's metrics) — followed by the categories.
func (s *Study) labelNodes() []*Node {
	var cats []*Node
	for _, c := range s.Inputs.Nutrition {
		keys := make([]string, len(c.Metrics))
		for i, r := range c.Metrics {
			keys[i] = r.ID
		}
		n := &Node{ID: KindNutrition + "/" + c.ID, Kind: KindNutrition, Name: c.Label, Parent: KindLabel, Ranked: "all"}
		if s.fill(n, keys) {
			cats = append(cats, n)
		}
	}
	if len(cats) == 0 {
		return nil
	}
	label := &Node{ID: KindLabel, Kind: KindLabel, Name: "Nutrition label", Ranked: "all"}
	weight := map[int]*big.Rat{}
	for _, n := range cats {
		for _, i := range n.idx {
			if _, ok := weight[i]; !ok {
				label.idx = append(label.idx, i)
				label.Metrics = append(label.Metrics, s.Metrics[i].Key)
				weight[i] = new(big.Rat)
			}
			weight[i].Add(weight[i], big.NewRat(1, int64(len(cats)*len(n.idx))))
		}
	}
	for _, i := range label.idx {
		label.rw = append(label.rw, reduce(weight[i].Num().Int64(), weight[i].Denom().Int64()))
		label.Weights = append(label.Weights, float(weight[i]))
	}
	return append([]*Node{label}, cats...)
}

// metricRanked is "all" for a metric of the nutrition label, else "full".
func (s *Study) metricRanked(key string) string {
	for _, c := range s.Inputs.Nutrition {
		for _, r := range c.Metrics {
			if r.ID == key {
				return "all"
			}
		}
	}
	return config.SurfaceFull
}
