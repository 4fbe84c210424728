package site

import (
	"cmp"
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/study"
)

// coreChunk is site/data/core.js: what the leaderboard, the taxonomy
// pages, the nutrition label and the thin page need, and where every other
// chunk is. Metric cells are in their benchmark's chunk.
type coreChunk struct {
	Version int           `json:"v"`
	Conf    float64       `json:"conf"`
	Methods study.Methods `json:"methods"`
	Ages    []string      `json:"ages"`
	Models  []modelData   `json:"models"`
	Nodes   []nodeData    `json:"nodes"`
	Metrics []metricData  `json:"metrics"`
	Benches []benchData   `json:"benches"`
	Scales  []scale       `json:"scales"`
	Levels  []levelRow    `json:"levels"`
	Thin    thinSummary   `json:"thin"`
	Calib   int           `json:"calib"` // models × benchmarks with calibration in results.json
	// JudgeError is study.json's judge_error: which scores leave judge
	// error out.
	JudgeError string            `json:"judge_error"`
	Files      map[string]string `json:"files"` // chunk name → content hash (site/data/<name>.js?v=<hash>)
	Warnings   []string          `json:"warnings"`
	// CellWarnings are the cells' warnings (study.json's "warning"), once
	// each; a cell names one by index.
	CellWarnings []string `json:"cell_warnings"`
}

type modelData struct {
	ID       string `json:"id"`
	Name     string `json:"name"`
	Provider string `json:"provider"`
	Full     bool   `json:"full"`  // surface full: ranked over the taxonomy
	Label    bool   `json:"label"` // surface nutritional-label
}

// nodeData is a study.json node above the metric level with links to its
// parent and children (indexes in coreChunk.Nodes). Cells are by age.
type nodeData struct {
	ID      string                `json:"id"`
	Kind    string                `json:"kind"`
	Name    string                `json:"name"`
	Parent  int                   `json:"parent"` // -1: none
	Kids    []int                 `json:"kids,omitempty"`
	Ranked  string                `json:"ranked"`
	Metrics []int                 `json:"metrics"` // into coreChunk.Metrics
	Scale   string                `json:"scale"`
	Cells   map[string][]cellData `json:"cells,omitempty"`
}

type metricData struct {
	Key   string `json:"key"`
	Name  string `json:"name"`
	Type  string `json:"type"`
	Bench int    `json:"bench"` // into coreChunk.Benches
	// Ranked: which models are ranked on it ("full", or "all" for a
	// metric of the nutrition label).
	Ranked string `json:"ranked"`
	// In lists the taxonomy groups and nutrition categories it is in.
	In []int `json:"in"`
}

type benchData struct {
	Slug string `json:"slug"`
	Name string `json:"name"`
	Node int    `json:"node"` // its benchmark node, -1 when none
}

// cellData is one study.json cell, with the tie-group letters and the
// grade the site shows. Grade is "" when withheld: the interval spans the
// grades GradeFrom … GradeTo. It is written as an array (MarshalJSON): a
// 16-model study has thousands of cells, and the leaderboard's page loads
// those above the metric level.
type cellData struct {
	Model        int
	Score        float64
	Lo           float64
	Hi           float64
	Scenarios    int
	MinScenarios int
	Metrics      int
	Expected     int
	Thin         bool
	Warning      int // index in coreChunk.CellWarnings, -1: none
	Rank         *int
	RankLo       *int
	RankHi       *int
	TiedWith     []int
	Ties         []string
	scale        scale
	Grade        string
	GradeFrom    string
	GradeTo      string
	// Place (area cells) is the area card's score, every placement of a
	// metric counted (study.json's by_placement): impactbench-web grades
	// an area by it, so Grade is from its interval there.
	Place *study.Estimate
	// Corr is the score corrected for judge error, or why there is none
	// (models with judge calibration only).
	Corr *study.Corrected
}

// MarshalJSON writes [model, score, lo, hi, scenarios, min_scenarios,
// metrics, metrics_expected, thin (0/1), rank, rank_lo, rank_hi (0: not
// ranked), tie letters ("a,b"), grade, grade_from, grade_to (band indexes
// in the node's scale, -1: none), warning (-1: none), area card
// ([score, lo, hi] or 0), judge-error-corrected score ([score, lo, hi],
// the reason it is missing, or 0)]; app.js reads it back in cell().
func (c cellData) MarshalJSON() ([]byte, error) {
	deref := func(p *int) int {
		if p == nil {
			return 0
		}
		return *p
	}
	thin := 0
	if c.Thin {
		thin = 1
	}
	// The page prints 3 decimals: rounded here, once, from study.json's
	// unrounded numbers (grades and the level table use those).
	r3 := func(x float64) float64 { return artifacts.Round(x, 3) }
	var place, corr any = 0, 0
	if c.Place != nil {
		place = []float64{r3(c.Place.Score), r3(c.Place.Lo), r3(c.Place.Hi)}
	}
	switch {
	case c.Corr != nil && c.Corr.Score != nil:
		corr = []float64{r3(*c.Corr.Score), r3(*c.Corr.Lo), r3(*c.Corr.Hi)}
	case c.Corr != nil:
		corr = c.Corr.Warning
	}
	return json.Marshal([]any{c.Model, r3(c.Score), r3(c.Lo), r3(c.Hi), c.Scenarios, c.MinScenarios, c.Metrics, c.Expected, thin,
		deref(c.Rank), deref(c.RankLo), deref(c.RankHi), strings.Join(c.Ties, ","),
		c.scale.index(c.Grade), c.scale.index(c.GradeFrom), c.scale.index(c.GradeTo), c.Warning, place, corr})
}

// levelRow summarises one kind of node over the ranked models' cells.
type levelRow struct {
	Kind        string  `json:"kind"`
	Cells       int     `json:"cells"`
	Thin        int     `json:"thin"`
	HalfMedian  float64 `json:"hw"`
	HalfMin     float64 `json:"hw_min"`
	HalfMax     float64 `json:"hw_max"`
	ScenMedian  float64 `json:"n"`
	ScenMin     int     `json:"n_min"`
	ScenMax     int     `json:"n_max"`
	Graded      int     `json:"graded"`   // cells whose grade is shown
	Incomplete  int     `json:"partial"`  // cells missing some metric
	MetricCells bool    `json:"in_bench"` // its cells are in the benchmark chunks
}

// thinSummary is what the thin page lists beside the level table: every
// thin or incomplete cell above the metric level is in the core's cells.
type thinSummary struct {
	Threshold    string  `json:"rule"`
	MetricCells  int     `json:"metric_cells"`
	MetricThin   int     `json:"metric_thin"`
	MetricNarrow int     `json:"metric_narrow"` // per-metric intervals narrower than ±study.NarrowHalfWidth
	Narrow       float64 `json:"narrow"`
}

// cellsByNode groups the result's cells by node index and age, with
// tie letters and grades (built once).
func (b *Builder) cellsByNode() []map[string][]cellData {
	if b.cells != nil {
		return b.cells
	}
	out := make([]map[string][]cellData, len(b.res.Nodes))
	for _, c := range b.res.Cells {
		ni, ok := b.nodeIx[c.Node]
		mi, mok := b.model[c.Model]
		if !ok || !mok || c.Score == nil || c.Lo == nil || c.Hi == nil {
			continue
		}
		n := b.res.Nodes[ni]
		cd := cellData{Model: mi, Score: *c.Score, Lo: *c.Lo, Hi: *c.Hi, Scenarios: c.Scenarios, MinScenarios: c.MinScenarios,
			Metrics: c.Metrics, Expected: c.MetricsExpected, Thin: c.Thin, Warning: b.warning(c.Warning),
			Rank: c.Rank, RankLo: c.RankLo, RankHi: c.RankHi, scale: scaleFor(n.Kind), Place: c.ByPlacement, Corr: c.Corrected}
		for _, t := range c.TiedWith {
			if j, ok := b.model[t]; ok {
				cd.TiedWith = append(cd.TiedWith, j)
			}
		}
		cd.Grade, cd.GradeFrom, cd.GradeTo = cd.scale.grade(gradedInterval(c))
		if out[ni] == nil {
			out[ni] = map[string][]cellData{}
		}
		out[ni][c.Age] = append(out[ni][c.Age], cd)
	}
	for ni, byAge := range out {
		if b.res.Nodes[ni].Kind == study.KindMetric {
			continue // study.json keeps no ties at metric nodes
		}
		for _, cells := range byAge {
			letterTies(cells)
		}
	}
	b.cells = out
	return out
}

// letterTies sets the tie-group letters of one node and age's ranked
// cells.
func letterTies(cells []cellData) {
	var ranked []int
	for i, c := range cells {
		if c.Rank != nil {
			ranked = append(ranked, i)
		}
	}
	slices.SortStableFunc(ranked, func(a, b int) int {
		return cmp.Or(cmp.Compare(*cells[a].Rank, *cells[b].Rank), cmp.Compare(cells[b].Score, cells[a].Score))
	})
	names := make([]string, len(ranked))
	pos := map[string]int{}
	for k, i := range ranked {
		names[k] = strconv.Itoa(cells[i].Model)
		pos[names[k]] = i
	}
	letters := tieGroups(names, func(a, b string) bool {
		return slices.Contains(cells[pos[a]].TiedWith, cells[pos[b]].Model)
	})
	for k, i := range ranked {
		cells[i].Ties = letters[k]
	}
}

// core builds core.js's content; every other chunk must be built first
// (it lists their URLs).
func (b *Builder) core() coreChunk {
	s, res := b.s, b.res
	c := coreChunk{Version: 1, Conf: res.Conf, Methods: res.Methods, Ages: res.Ages, Files: b.files,
		Scales: []scale{wordScale, letterScale, stepScale}, Calib: len(b.calib), JudgeError: res.JudgeError, Warnings: res.Warnings}
	if c.Warnings == nil {
		c.Warnings = []string{}
	}
	for _, m := range res.Models {
		c.Models = append(c.Models, modelData{ID: m.ID, Name: m.Name, Provider: m.Provider,
			Full: slices.Contains(m.Surfaces, config.SurfaceFull), Label: slices.Contains(m.Surfaces, config.SurfaceNutritionalLabel)})
	}
	benchIx := map[string]int{}
	for _, bn := range s.Benchmarks {
		benchIx[bn.Slug] = len(c.Benches)
		node, ok := b.coreIx[study.KindBenchmark+"/"+bn.Slug]
		if !ok {
			node = -1
		}
		c.Benches = append(c.Benches, benchData{Slug: bn.Slug, Name: bn.Config.Name, Node: node})
	}
	metricIx := map[string]int{}
	for _, n := range res.Nodes {
		if n.Kind != study.KindMetric {
			continue
		}
		key := n.Metrics[0]
		m, _ := s.MetricByKey(key)
		metricIx[key] = len(c.Metrics)
		c.Metrics = append(c.Metrics, metricData{Key: key, Name: n.Name, Type: m.Type, Bench: benchIx[m.Bench], Ranked: n.Ranked, In: []int{}})
	}
	cells := b.cellsByNode()
	for i, n := range res.Nodes {
		if n.Kind == study.KindMetric {
			continue
		}
		nd := nodeData{ID: n.ID, Kind: n.Kind, Name: n.Name, Parent: -1, Ranked: n.Ranked, Scale: scaleFor(n.Kind).ID, Cells: cells[i]}
		if p, ok := b.coreIx[n.Parent]; ok && n.Parent != "" {
			nd.Parent = p
		}
		for _, k := range n.Metrics {
			if mi, ok := metricIx[k]; ok {
				nd.Metrics = append(nd.Metrics, mi)
			}
		}
		if n.Kind == study.KindGroup || n.Kind == study.KindNutrition {
			for _, mi := range nd.Metrics {
				c.Metrics[mi].In = append(c.Metrics[mi].In, len(c.Nodes))
			}
		}
		c.Nodes = append(c.Nodes, nd)
	}
	for i, nd := range c.Nodes {
		if nd.Parent >= 0 {
			c.Nodes[nd.Parent].Kids = append(c.Nodes[nd.Parent].Kids, i)
		}
	}
	c.Levels, c.Thin = b.levels(cells)
	c.CellWarnings = b.warns
	if c.CellWarnings == nil {
		c.CellWarnings = []string{}
	}
	return c
}

// levels summarises every kind of node (over the ranked models' cells, as
// docs/study.md's table of the July study).
func (b *Builder) levels(cells []map[string][]cellData) ([]levelRow, thinSummary) {
	kinds := []string{study.KindOverall, study.KindArea, study.KindSubarea, study.KindGroup, study.KindLabel, study.KindNutrition, study.KindBenchmark, study.KindMetric}
	acc := map[string]*struct {
		row  levelRow
		half []float64
		scen []int
	}{}
	for _, k := range kinds {
		acc[k] = &struct {
			row  levelRow
			half []float64
			scen []int
		}{row: levelRow{Kind: k, MetricCells: k == study.KindMetric}}
	}
	th := thinSummary{Threshold: b.res.Methods.Thin, Narrow: study.NarrowHalfWidth}
	for ni, byAge := range cells {
		kind := b.res.Nodes[ni].Kind
		a := acc[kind]
		if a == nil {
			continue
		}
		for _, cs := range byAge {
			for _, c := range cs {
				if kind == study.KindMetric {
					th.MetricCells++
					if c.Thin {
						th.MetricThin++
					}
					if (c.Hi-c.Lo)/2 < study.NarrowHalfWidth {
						th.MetricNarrow++
					}
				}
				if c.Rank == nil {
					continue
				}
				a.row.Cells++
				if c.Thin {
					a.row.Thin++
				}
				if c.Grade != "" {
					a.row.Graded++
				}
				if c.Metrics < c.Expected {
					a.row.Incomplete++
				}
				a.half = append(a.half, (c.Hi-c.Lo)/2)
				a.scen = append(a.scen, c.Scenarios)
			}
		}
	}
	var rows []levelRow
	for _, k := range kinds {
		a := acc[k]
		if a.row.Cells == 0 {
			continue
		}
		slices.Sort(a.half)
		slices.Sort(a.scen)
		a.row.HalfMedian, a.row.HalfMin, a.row.HalfMax = round3(median(a.half)), round3(a.half[0]), round3(a.half[len(a.half)-1])
		sc := make([]float64, len(a.scen))
		for i, v := range a.scen {
			sc[i] = float64(v)
		}
		a.row.ScenMedian, a.row.ScenMin, a.row.ScenMax = median(sc), a.scen[0], a.scen[len(a.scen)-1]
		rows = append(rows, a.row)
	}
	return rows, th
}

// warning is the index of a cell warning in the core's table, -1 for none.
func (b *Builder) warning(w string) int {
	if w == "" {
		return -1
	}
	if i, ok := b.warnIx[w]; ok {
		return i
	}
	if b.warnIx == nil {
		b.warnIx = map[string]int{}
	}
	b.warnIx[w] = len(b.warns)
	b.warns = append(b.warns, w)
	return len(b.warns) - 1
}

func median(sorted []float64) float64 {
	n := len(sorted)
	if n%2 == 1 {
		return sorted[n/2]
	}
	return (sorted[n/2-1] + sorted[n/2]) / 2
}

func round3(x float64) float64 { return math.Round(x*1000) / 1000 }
