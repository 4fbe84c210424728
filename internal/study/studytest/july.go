// Package studytest rebuilds a study from the ImpactBench website's
// published July 2026 data files (taxonomy.json, models.json,
// scenario-index.json, metric-criteria.json, metric-meta.json,
// nutrition-cat.json, kept gzipped in testdata/): one benchmark folder per
// published benchmark with benchmark.yaml, scenarios.json and one run per
// model whose score rows carry the published verdicts, the label-only
// models in a nutritional-label benchmark, and the study's taxonomy.json,
// nutrition-label.json and models.yaml. Publishing the rebuilt study must
// give back the published scores (internal/publish tests it); the static
// site and benchmark presets reuse it as a realistic 16-model × 360-metric
// study.
package studytest

import (
	"bytes"
	"compress/gzip"
	"embed"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/goccy/go-yaml"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/fsx"
	"github.com/impactbench/impactbench/internal/layout"
	"github.com/impactbench/impactbench/internal/study"
)

//go:embed testdata/published-2026-07/*.json.gz
var published embed.FS

// Published is the July 2026 published data, decoded.
type Published struct {
	Taxonomy       study.Taxonomy
	Models         []PublishedModel
	BenchmarkData  map[string]map[string]float64 // "<model>|<age>" → key → pass rate
	ScenarioIndex  map[string][]IndexRow         // key → rows
	Criteria       map[string]string             // key → definition
	Meta           map[string]MetricMeta         // key → contributor, mattersBecause
	NutritionCat   []NutritionCategory
	NutritionScore []NutritionScore
}

// PublishedModel is a models.json entry.
type PublishedModel struct {
	ID          string   `json:"id"`
	Name        string   `json:"name"`
	Provider    string   `json:"provider"`
	Version     string   `json:"version"`
	ReleaseYear int      `json:"releaseYear"`
	Surfaces    []string `json:"surfaces"`
}

// IndexRow is a scenario-index.json row; verdict "yes" = behaviour present.
type IndexRow struct {
	ScenarioID string            `json:"scenario_id"`
	Title      string            `json:"title"`
	Age        string            `json:"age"`
	Benchmark  string            `json:"benchmark"`
	Verdicts   map[string]string `json:"verdicts"`
}

// MetricMeta is a metric-meta.json entry.
type MetricMeta struct {
	Contributor    string `json:"contributor"`
	MattersBecause string `json:"mattersBecause"`
}

// NutritionCategory is a nutrition-cat.json entry.
type NutritionCategory struct {
	ID          string `json:"id"`
	Label       string `json:"label"`
	Description string `json:"description"`
	Metrics     []struct {
		ID       string  `json:"id"`
		MetricID string  `json:"metric_id"`
		Bench    string  `json:"benchmark"`
		Name     string  `json:"name"`
		Type     string  `json:"type"`
		Score    float64 `json:"score"`
	} `json:"metrics"`
}

// NutritionScore is a nutrition-score.json entry: model → age → score.
type NutritionScore struct {
	ID     string                        `json:"id"`
	Label  string                        `json:"label"`
	Models map[string]map[string]float64 `json:"models"`
}

// Load decodes the published files.
func Load() (*Published, error) {
	p := &Published{}
	var models struct {
		Models []PublishedModel `json:"models"`
	}
	for _, f := range []struct {
		name string
		v    any
	}{
		// The website's data files (what publish writes), then upstream's
		// own files beside them.
		{layout.PublishedTaxonomyFile, &p.Taxonomy}, {layout.PublishedModelsFile, &models}, {layout.PublishedBenchmarkDataFile, &p.BenchmarkData},
		{layout.PublishedScenarioIndexFile, &p.ScenarioIndex}, {"metric-criteria.json", &p.Criteria}, {"metric-meta.json", &p.Meta},
		{"nutrition-cat.json", &p.NutritionCat}, {"nutrition-score.json", &p.NutritionScore},
	} {
		data, err := ReadPublished(f.name)
		if err != nil {
			return nil, err
		}
		if err := json.Unmarshal(data, f.v); err != nil {
			return nil, fmt.Errorf("%s: %w", f.name, err)
		}
	}
	p.Models = models.Models
	return p, nil
}

// ReadPublished returns one published file's bytes as published.
func ReadPublished(name string) ([]byte, error) {
	f, err := published.Open("testdata/published-2026-07/" + name + ".gz")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil, err
	}
	return io.ReadAll(zr)
}

// Ages maps the site's age groups to the demographic values of upstream's
// config (the rebuilt scenarios carry these, so the age is read from the
// demographic exactly as for a real run).
var Ages = map[string]string{study.AgeChild: "Child or teenager (6-17)", study.AgeAdult: "Adult (18+)"}

// Write writes the rebuilt study into dir: config.yaml (the offline
// scaffold, so the CLI runs there), benchmarks/<bench>/… for every
// published benchmark, benchmarks/nutritional-label/… for the label-only
// models, and the study inputs.
func (p *Published) Write(dir string) error {
	if _, err := config.Scaffold(dir, true); err != nil {
		return err
	}
	root := layout.BenchmarksDir(dir)
	types, names := p.metricTypes()
	full, label := p.modelSets()
	byBench := map[string][]string{}
	for key := range p.ScenarioIndex {
		b, _, _ := study.SplitKey(key)
		byBench[b] = append(byBench[b], key)
	}
	for b, keys := range byBench {
		sort.Strings(keys)
		if err := p.writeBench(filepath.Join(root, b), b, keys, types, names, full, nil); err != nil {
			return err
		}
	}
	aliases := p.labelAliases()
	if err := p.writeLabelBench(filepath.Join(root, study.LabelBenchmark), aliases, types, names, label); err != nil {
		return err
	}
	return p.writeInputs(root, aliases)
}

// metricTypes reads each key's type and name from the taxonomy.
func (p *Published) metricTypes() (types, names map[string]string) {
	types, names = map[string]string{}, map[string]string{}
	for _, a := range p.Taxonomy.Areas {
		for _, s := range a.Subareas {
			for _, m := range s.Metrics {
				types[m.ID], names[m.ID] = m.Type, m.Name
			}
		}
	}
	return types, names
}

// modelSets splits the models by surface.
func (p *Published) modelSets() (full, label []string) {
	for _, m := range p.Models {
		if len(m.Surfaces) == 1 && m.Surfaces[0] == config.SurfaceNutritionalLabel {
			label = append(label, m.ID)
		} else {
			full = append(full, m.ID)
		}
	}
	return full, label
}

// labelAliases numbers the label's metrics m01… in order of first
// appearance in nutrition-cat.json: key → label metric id.
func (p *Published) labelAliases() (order []string) {
	seen := map[string]bool{}
	for _, c := range p.NutritionCat {
		for _, m := range c.Metrics {
			if !seen[m.ID] {
				seen[m.ID] = true
				order = append(order, m.ID)
			}
		}
	}
	return order
}

func labelID(i int) string { return fmt.Sprintf("m%02d", i+1) }

// rowsFor are the index rows of key with its scenario ids rewritten by
// rename (nil: kept).
type scenarioRow struct {
	id, metric string
	row        IndexRow
}

// writeBench writes one benchmark: benchmark.yaml with the keys' metrics,
// scenarios.json from their index rows, and one run per model in models
// whose verdicts the rows hold. rename, when set, maps a key and its
// published scenario id to this benchmark's metric and scenario id.
func (p *Published) writeBench(dir, slug string, keys []string, types, names map[string]string, models []string, rename func(key, id string) (string, string)) error {
	var metrics []yaml.MapSlice
	var rows []scenarioRow
	name := slug
	for _, key := range keys {
		_, mid, _ := study.SplitKey(key)
		if rename != nil {
			mid, _ = rename(key, "")
		}
		if meta, ok := p.Meta[key]; ok && rename == nil {
			name = meta.Contributor
		}
		m := yaml.MapSlice{{Key: "id", Value: mid}, {Key: "name", Value: names[key]}, {Key: "type", Value: types[key]},
			{Key: "definition", Value: p.Criteria[key]}}
		if mb := p.Meta[key].MattersBecause; mb != "" {
			m = append(m, yaml.MapItem{Key: "mattersBecause", Value: mb})
		}
		metrics = append(metrics, m)
		for _, r := range p.ScenarioIndex[key] {
			id := r.ScenarioID
			if rename != nil {
				_, id = rename(key, id)
			}
			rows = append(rows, scenarioRow{id: id, metric: mid, row: r})
		}
	}
	if rename != nil {
		name = "Nutritional label"
	}
	doc := yaml.MapSlice{{Key: "name", Value: name},
		{Key: "description", Value: "Rebuilt from the ImpactBench website's published July 2026 files (scenario-index.json verdicts)."},
		{Key: "metrics", Value: metrics}}
	y, err := yaml.MarshalWithOptions(doc, yaml.IndentSequence(false))
	if err != nil {
		return err
	}
	if err := fsx.WriteFile(layout.BenchmarkPath(dir), y, fsx.Shared); err != nil {
		return err
	}
	if err := writeScenarios(dir, rows); err != nil {
		return err
	}
	for _, model := range models {
		if err := writeRun(dir, model, rows, types); err != nil {
			return err
		}
	}
	return nil
}

func writeScenarios(dir string, rows []scenarioRow) error {
	out := make([]artifacts.Scenario, len(rows))
	for i, r := range rows {
		out[i] = artifacts.Scenario{ID: r.id, MetricID: r.metric, HasPersona: true,
			Persona:     "A user of a general-purpose assistant (rebuilt from the published index, which does not publish personas).",
			UserGoal:    r.row.Title,
			Demographic: artifacts.Demographic{{Key: study.AgeAxis, Value: Ages[r.row.Age]}}}
	}
	return artifacts.WriteScenarios(layout.Bench{Dir: dir}.Scenarios(), out)
}

// writeRun writes a model's conversations.json and scores.json for the
// rows it has a verdict on; a model without any gets no run directory.
func writeRun(dir, model string, rows []scenarioRow, types map[string]string) error {
	var convs []artifacts.Conversation
	var scores []artifacts.Score
	for _, r := range rows {
		v, ok := r.row.Verdicts[model]
		if !ok {
			continue
		}
		key := study.Key(r.row.Benchmark, strings.SplitN(r.row.ScenarioID, "_", 2)[0])
		present := v == "yes"
		passed := present == (types[key] == string(config.Positive))
		word := "absent"
		if present {
			word = "present"
		}
		conv := artifacts.ConvID(r.id, model, 0)
		convs = append(convs, artifacts.Conversation{ID: r.id, MetricID: r.metric, ConvID: conv, TargetModel: model,
			Transcript: []artifacts.Turn{
				{Role: "user", Content: r.row.Title},
				{Role: "assistant", Content: fmt.Sprintf("(Rebuilt fixture: the published transcript is not in the published index; %s's verdict on %s was: behaviour %s.)", model, r.row.ScenarioID, word)},
			}})
		scores = append(scores, artifacts.Score{ID: r.id, MetricID: r.metric, TargetModel: model, ConvID: conv,
			Present: &present, Passed: &passed, Justification: "Rebuilt from scenario-index.json: behaviour " + word + "."})
	}
	if len(convs) == 0 {
		return nil
	}
	run := layout.Bench{Dir: dir}.Run(model)
	if err := artifacts.WriteConversations(run.Conversations(), convs); err != nil {
		return err
	}
	return artifacts.WriteScores(run.Scores(), scores)
}

// writeLabelBench writes the nutritional-label benchmark: a copy of each
// label metric (ids m01…) and of its scenarios, with the label-only
// models' runs.
func (p *Published) writeLabelBench(dir string, aliases []string, types, names map[string]string, models []string) error {
	index := map[string]int{}
	for i, k := range aliases {
		index[k] = i
	}
	rename := func(key, id string) (string, string) {
		l := labelID(index[key])
		if id == "" {
			return l, ""
		}
		_, rest, _ := strings.Cut(id, "_")
		return l, l + "_" + rest
	}
	// The label words its metrics itself (nutrition-cat.json's names).
	labelNames := map[string]string{}
	for k, v := range names {
		labelNames[k] = v
	}
	for i := len(p.NutritionCat) - 1; i >= 0; i-- {
		for _, m := range p.NutritionCat[i].Metrics {
			labelNames[m.ID] = m.Name
		}
	}
	return p.writeBench(dir, study.LabelBenchmark, aliases, types, labelNames, models, rename)
}

// writeInputs writes taxonomy.json (as published), nutrition-label.json
// (the categories with their aliases) and models.yaml.
func (p *Published) writeInputs(root string, aliases []string) error {
	tax, err := ReadPublished(layout.PublishedTaxonomyFile)
	if err != nil {
		return err
	}
	if err := fsx.WriteFile(filepath.Join(root, study.TaxonomyFile), tax, fsx.Shared); err != nil {
		return err
	}
	index := map[string]int{}
	for i, k := range aliases {
		index[k] = i
	}
	var cats []study.Category
	for _, c := range p.NutritionCat {
		cat := study.Category{ID: c.ID, Label: c.Label, Description: c.Description}
		for _, m := range c.Metrics {
			cat.Metrics = append(cat.Metrics, study.CategoryRef{ID: m.ID, LabelMetricID: labelID(index[m.ID])})
		}
		cats = append(cats, cat)
	}
	nut, err := json.MarshalIndent(cats, "", "  ")
	if err != nil {
		return err
	}
	if err := fsx.WriteFile(filepath.Join(root, study.NutritionFile), append(nut, '\n'), fsx.Shared); err != nil {
		return err
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "# Rebuilt from the published %s: run_dir is the directory under\n# every benchmark's %s/, id the public id.\nmodels:\n",
		layout.PublishedModelsFile, layout.RunsDirName)
	for _, m := range p.Models {
		name, _ := json.Marshal(m.Name)
		prov, _ := json.Marshal(m.Provider)
		fmt.Fprintf(&b, "  - {run_dir: %s, id: %s, name: %s, provider: %s, releaseYear: %d, surfaces: [%s]}\n",
			m.ID, m.ID, name, prov, m.ReleaseYear, strings.Join(m.Surfaces, ", "))
	}
	return fsx.WriteFile(filepath.Join(root, study.ModelsFile), b.Bytes(), fsx.Shared)
}

// WriteLabelRunsInSources adds, to every published benchmark of the study
// written in dir, a run of each label-only model over the rows it has a
// verdict on in the published index (the label metrics' scenarios). The
// website's index holds those verdicts under the source benchmarks, so
// this is the July data as a benchmark sees it: targets that have rows on
// some metrics only. The study itself reads them from the label
// benchmark; this is for commands that read one benchmark (items).
func (p *Published) WriteLabelRunsInSources(dir string) error {
	types, _ := p.metricTypes()
	_, label := p.modelSets()
	byBench := map[string][]scenarioRow{}
	keys := make([]string, 0, len(p.ScenarioIndex))
	for key := range p.ScenarioIndex {
		keys = append(keys, key)
	}
	sort.Strings(keys)
	for _, key := range keys {
		b, mid, _ := study.SplitKey(key)
		for _, r := range p.ScenarioIndex[key] {
			byBench[b] = append(byBench[b], scenarioRow{id: r.ScenarioID, metric: mid, row: r})
		}
	}
	for b, rows := range byBench {
		for _, model := range label {
			if err := writeRun(layout.BenchDir(dir, b), model, rows, types); err != nil {
				return err
			}
		}
	}
	return nil
}

// WriteDir is Load followed by Write: the rebuilt study in dir.
func WriteDir(dir string) (*Published, error) {
	p, err := Load()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	return p, p.Write(dir)
}
