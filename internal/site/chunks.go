package site

import (
	"github.com/impactbench/impactbench/internal/layout"
	"github.com/impactbench/impactbench/internal/study"
)

// benchChunk is site/data/bench/<slug>.js: a benchmark's metrics with
// their texts, cells and scenario rows (the metric and scenario pages).
type benchChunk struct {
	Slug    string        `json:"slug"`
	Metrics []benchMetric `json:"metrics"`
}

type benchMetric struct {
	Key            string                `json:"key"`
	Definition     string                `json:"def"`
	Contributor    string                `json:"by"`
	MattersBecause string                `json:"why"`
	LabelID        string                `json:"label_id,omitempty"`
	Cells          map[string][]cellData `json:"cells"`
	Rows           []scenarioRow         `json:"rows"`
}

// scenarioRow is a published scenario with each model's verdict: V holds
// one character per model (study.json's order): 'P' passed, 'F' failed,
// '-' no judged row. Pass already accounts for the metric's type.
type scenarioRow struct {
	ID    string `json:"id"`
	Title string `json:"title"`
	Age   string `json:"age"`
	V     string `json:"v"`
}

// benchChunks builds every benchmark's chunk, by chunk name.
func (b *Builder) benchChunks() map[string]benchChunk {
	cells := b.cellsByNode()
	out := map[string]benchChunk{}
	for _, bn := range b.s.Benchmarks {
		ch := benchChunk{Slug: bn.Slug, Metrics: []benchMetric{}}
		for _, m := range b.s.Metrics {
			if m.Bench != bn.Slug || m.Type == "" {
				continue
			}
			bm := benchMetric{Key: m.Key, Definition: m.Definition, Contributor: m.Contributor, MattersBecause: m.MattersBecause, LabelID: m.LabelID, Rows: []scenarioRow{}}
			if ni, ok := b.nodeIx[study.KindMetric+"/"+m.Key]; ok {
				bm.Cells = cells[ni]
			}
			for _, r := range m.Scenarios {
				v := make([]byte, len(b.s.Models))
				for mi := range v {
					v[mi] = '-'
					if vd, ok := r.Verdicts[mi]; ok {
						v[mi] = 'F'
						if vd.Passed {
							v[mi] = 'P'
						}
					}
				}
				bm.Rows = append(bm.Rows, scenarioRow{ID: r.ID, Title: r.Title, Age: r.Age, V: string(v)})
			}
			ch.Metrics = append(ch.Metrics, bm)
		}
		if len(ch.Metrics) > 0 {
			out[layout.SiteBenchChunk(bn.Slug)] = ch
		}
	}
	return out
}

// pairChunk is site/data/pairs/<a>/<b>.js: study.json's paired
// differences A − B of one model pair at every node and age (metric nodes
// have none).
type pairChunk struct {
	A    int        `json:"a"`
	B    int        `json:"b"`
	Rows []pairData `json:"rows"`
}

type pairData struct {
	Node      int      `json:"node"`
	Age       string   `json:"age"`
	Diff      float64  `json:"d"`
	Lo        float64  `json:"lo"`
	Hi        float64  `json:"hi"`
	P         float64  `json:"p"`
	PAdjusted float64  `json:"pa"`  // Holm over the level's pairs
	Sig       int      `json:"sig"` // 1: significant after Holm (not tied)
	DF        *float64 `json:"df"`
	Metrics   int      `json:"k"`
	Scenarios int      `json:"n"`
}

// pairChunks builds one chunk per model pair that study.json compares.
func (b *Builder) pairChunks() ([]File, error) {
	byPair := map[[2]int]*pairChunk{}
	var order [][2]int
	for _, p := range b.res.Pairs {
		ni, ok := b.coreIx[p.Node]
		a, aok := b.model[p.A]
		bb, bok := b.model[p.B]
		if !ok || !aok || !bok {
			continue
		}
		k := [2]int{a, bb}
		ch := byPair[k]
		if ch == nil {
			ch = &pairChunk{A: a, B: bb}
			byPair[k] = ch
			order = append(order, k)
		}
		sig := 0
		if p.Significant {
			sig = 1
		}
		ch.Rows = append(ch.Rows, pairData{Node: ni, Age: p.Age, Diff: p.Diff, Lo: p.Lo, Hi: p.Hi, P: p.P, PAdjusted: p.PAdjusted, Sig: sig, DF: p.DF, Metrics: p.Metrics, Scenarios: p.Scenarios})
	}
	var out []File
	for _, k := range order {
		f, err := b.dataFile(layout.SitePairChunk(b.res.Models[k[0]].ID, b.res.Models[k[1]].ID), byPair[k])
		if err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	return out, nil
}
