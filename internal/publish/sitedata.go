// Package publish writes a study's data exactly as the ImpactBench website
// (impactbench-web) loads it: DIR/data/{taxonomy,models,benchmark-data,
// scenario-index,metric-details,nutrition}.json and one
// DIR/scenarios/<benchmark>/<model>/<scenario>.json per published
// conversation, plus DIR/data/uncertainty.json (study.json: intervals, n,
// rank intervals), which the site does not read. Files whose bytes would
// not change are left alone, so publishing again after one benchmark
// changed rewrites only that benchmark's files and the aggregate ones.
// With Options.Site, the static study site (internal/site: DIR/index.html
// and DIR/site/) is written beside the data by the same writer.
package publish

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/study"
)

// siteTaxonomy is data/taxonomy.json: the input taxonomy with each
// subarea's metrics re-derived from its groups and hydrated.
type siteTaxonomy struct {
	Areas []siteArea `json:"areas"`
}

type siteArea struct {
	ID       string        `json:"id"`
	Name     string        `json:"name"`
	Icon     string        `json:"icon"`
	Color    string        `json:"color"`
	Subareas []siteSubarea `json:"subareas"`
}

type siteSubarea struct {
	ID      string            `json:"id"`
	Name    string            `json:"name"`
	Icon    string            `json:"icon"`
	Metrics []study.TaxMetric `json:"metrics"`
	Groups  []study.Group     `json:"groups,omitempty"`
}

func taxonomyData(s *study.Study) siteTaxonomy {
	var out siteTaxonomy
	for _, a := range s.Inputs.Taxonomy.Areas {
		sa := siteArea{ID: a.ID, Name: a.Name, Icon: a.Icon, Color: a.Color, Subareas: []siteSubarea{}}
		for _, sub := range a.Subareas {
			ss := siteSubarea{ID: sub.ID, Name: sub.Name, Icon: sub.Icon, Metrics: []study.TaxMetric{}, Groups: sub.Groups}
			for _, k := range sub.Keys() {
				if m, ok := s.MetricByKey(k); ok {
					ss.Metrics = append(ss.Metrics, study.TaxMetric{ID: m.Key, Name: m.Name, Type: m.Type})
				}
			}
			sa.Subareas = append(sa.Subareas, ss)
		}
		out.Areas = append(out.Areas, sa)
	}
	return out
}

// siteModel is a data/models.json entry (version = id, as upstream).
type siteModel struct {
	ID          string   `json:"id"`
	Name        string   `json:"name"`
	Provider    string   `json:"provider"`
	Version     string   `json:"version"`
	ReleaseYear int      `json:"releaseYear"`
	Surfaces    []string `json:"surfaces"`
}

func modelsData(s *study.Study) map[string][]siteModel {
	out := []siteModel{}
	for _, m := range s.Models {
		out = append(out, siteModel{ID: m.ID, Name: m.Name, Provider: m.Provider, Version: m.ID, ReleaseYear: m.ReleaseYear, Surfaces: m.Surfaces})
	}
	return map[string][]siteModel{"models": out}
}

// siteScores are benchmark-data.json's numbers: model|age → key → pass
// rate (4 dp), from every judged row of the model on the metric at that age.
type siteScores map[string]map[string]float64

func scoresData(s *study.Study) siteScores {
	out := siteScores{}
	for mi, m := range s.Models {
		for _, age := range s.Ages {
			row := map[string]float64{}
			for k, met := range s.Metrics {
				var n int
				var sum float64
				for _, c := range s.Clusters(mi, study.AgeIndex(age), k) {
					n += c.N
					sum += c.Sum
				}
				if n > 0 {
					row[met.Key] = artifacts.Round(sum/float64(n), 4)
				}
			}
			if len(row) > 0 {
				out[m.ID+"|"+age] = row
			}
		}
	}
	return out
}

// indexRow is a scenario-index.json row: verdict "yes" = behaviour present
// (the site derives pass from the metric's type).
type indexRow struct {
	ScenarioID string           `json:"scenario_id"`
	Title      string           `json:"title"`
	Age        string           `json:"age"`
	Benchmark  string           `json:"benchmark"`
	Verdicts   artifacts.Object `json:"verdicts"`
}

func indexData(s *study.Study) map[string][]indexRow {
	out := map[string][]indexRow{}
	for _, m := range s.Metrics {
		if m.Type == "" {
			continue
		}
		rows := []indexRow{}
		for _, r := range m.Scenarios {
			v := artifacts.Object{}
			for mi, model := range s.Models {
				if vd, ok := r.Verdicts[mi]; ok {
					v = append(v, artifacts.Pair{Key: model.ID, Value: yesNo(vd.Present)})
				}
			}
			rows = append(rows, indexRow{ScenarioID: r.ID, Title: r.Title, Age: r.Age, Benchmark: r.Bench, Verdicts: v})
		}
		out[m.Key] = rows
	}
	return out
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// metricDetail is a metric-details.json entry.
type metricDetail struct {
	Definition     string `json:"definition"`
	Contributor    string `json:"contributor"`
	MattersBecause string `json:"mattersBecause"`
}

func detailsData(s *study.Study) map[string]metricDetail {
	out := map[string]metricDetail{}
	for _, m := range s.Metrics {
		if m.Type != "" {
			out[m.Key] = metricDetail{Definition: m.Definition, Contributor: m.Contributor, MattersBecause: m.MattersBecause}
		}
	}
	return out
}

// nutritionCat is a nutrition.json entry.
type nutritionCat struct {
	ID          string           `json:"id"`
	Label       string           `json:"label"`
	Description string           `json:"description"`
	Models      artifacts.Object `json:"models"`
	Metrics     []nutritionRef   `json:"metrics"`
}

type nutritionRef struct {
	ID            string `json:"id"`
	MetricID      string `json:"metric_id"`
	Benchmark     string `json:"benchmark"`
	Name          string `json:"name"`
	Type          string `json:"type"`
	LabelMetricID string `json:"label_metric_id,omitempty"`
}

type ageScores struct {
	Child float64 `json:"child"`
	Adult float64 `json:"adult"`
}

// nutritionData builds nutrition.json. A category's score for a model and
// age is computed as the July 2026 published nutrition-score.json was: the
// mean, over the category's metrics in list order that the model has a
// score for, of benchmark-data.json's rounded (4 dp) per-metric pass
// rates, rounded to 4 dp — so it can differ from the mean of unrounded
// rates in the 4th decimal (0.7408 vs 0.7407 for 20 passes in 27).
func nutritionData(s *study.Study, scores siteScores) []nutritionCat {
	out := []nutritionCat{}
	for _, c := range s.Inputs.Nutrition {
		nc := nutritionCat{ID: c.ID, Label: c.Label, Description: c.Description, Models: artifacts.Object{}, Metrics: []nutritionRef{}}
		for _, r := range c.Metrics {
			m, ok := s.MetricByKey(r.ID)
			if !ok || m.Type == "" {
				continue
			}
			name := m.Name
			if m.LabelName != "" {
				name = m.LabelName // the label's own wording
			}
			nc.Metrics = append(nc.Metrics, nutritionRef{ID: m.Key, MetricID: m.ID, Benchmark: m.Bench, Name: name, Type: m.Type, LabelMetricID: m.LabelID})
		}
		for _, model := range s.Models {
			var as ageScores
			any := false
			for _, age := range s.Ages {
				v, ok := categoryScore(scores[model.ID+"|"+age], nc.Metrics)
				if !ok {
					continue
				}
				any = true
				if age == study.AgeChild {
					as.Child = v
				} else {
					as.Adult = v
				}
			}
			if any {
				nc.Models = append(nc.Models, artifacts.Pair{Key: model.ID, Value: as})
			}
		}
		out = append(out, nc)
	}
	return out
}

func categoryScore(row map[string]float64, refs []nutritionRef) (float64, bool) {
	sum, n := 0.0, 0
	for _, r := range refs {
		if v, ok := row[r.ID]; ok {
			sum += v
			n++
		}
	}
	if n == 0 {
		return 0, false
	}
	return artifacts.Round(sum/float64(n), 4), true
}

// scenarioFile is one scenarios/<bench>/<model>/<scenario>.json: the
// conversations.json row (upstream's keys), the scenario's fields and the
// verdict's justification.
type scenarioFile struct {
	ID                    string                `json:"id"`
	MetricID              string                `json:"metric_id"`
	Sample                int                   `json:"_sample"`
	TargetModel           string                `json:"target_model"`
	Transcript            []artifacts.Turn      `json:"transcript"`
	Usage                 artifacts.UsageRecord `json:"_usage"`
	Persona               string                `json:"persona"`
	UserPersona           string                `json:"user_persona,omitempty"`
	UserGoal              string                `json:"user_goal"`
	LatentAdversarialGoal string                `json:"latent_adversarial_goal"`
	Landmarks             []artifacts.Landmark  `json:"landmarks"`
	Demographic           artifacts.Demographic `json:"demographic"`
	Justification         string                `json:"justification"`
}

func newScenarioFile(c artifacts.Conversation, sc *artifacts.Scenario, justification string) scenarioFile {
	lm := sc.Landmarks
	if lm == nil {
		lm = []artifacts.Landmark{}
	}
	tr := c.Transcript
	if tr == nil {
		tr = []artifacts.Turn{}
	}
	return scenarioFile{ID: c.ID, MetricID: c.MetricID, Sample: c.Sample, TargetModel: c.TargetModel, Transcript: tr, Usage: c.Usage,
		Persona: sc.Persona, UserPersona: sc.UserPersona, UserGoal: sc.UserGoal, LatentAdversarialGoal: sc.LatentAdversarialGoal,
		Landmarks: lm, Demographic: sc.Demographic, Justification: justification}
}

// encode is upstream's JSON: Python's json.dumps(indent=2, ensure_ascii=True);
// compact drops the whitespace (the two large files, as published).
func encode(v any, compact bool) ([]byte, error) {
	b, err := artifacts.MarshalPy(v)
	if err != nil {
		return nil, err
	}
	if !compact {
		return append(b, '\n'), nil
	}
	var buf bytes.Buffer
	buf.Grow(len(b))
	if err := json.Compact(&buf, b); err != nil {
		return nil, fmt.Errorf("compact: %w", err)
	}
	return buf.Bytes(), nil
}
