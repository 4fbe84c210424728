package publish

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"sync"
	"testing"

	"github.com/impactbench/impactbench/internal/study"
	"github.com/impactbench/impactbench/internal/study/studytest"
)

// july is the rebuilt July 2026 study, published once for the tests of
// this file.
type july struct {
	pub *studytest.Published
	dir string // the project
	out string // what publish wrote
	s   *study.Study
	res *study.Result
	rep *Report
}

var (
	julyOnce sync.Once
	julyData *july
	julyErr  error
)

func rebuiltJuly(t *testing.T) *july {
	t.Helper()
	if testing.Short() {
		t.Skip("rebuilds and publishes the 16-model study")
	}
	julyOnce.Do(func() {
		dir, err := os.MkdirTemp("", "impactbench-july-")
		if err != nil {
			julyErr = err
			return
		}
		j := &july{dir: dir, out: filepath.Join(dir, "published")}
		if j.pub, julyErr = studytest.WriteDir(dir); julyErr != nil {
			return
		}
		if j.s, julyErr = study.Load(filepath.Join(dir, "benchmarks")); julyErr != nil {
			return
		}
		j.res = j.s.Compute()
		j.rep, julyErr = Publish(context.Background(), j.s, j.res, Options{Out: j.out})
		julyData = j
	})
	if julyErr != nil {
		t.Fatal(julyErr)
	}
	return julyData
}

func TestMain(m *testing.M) {
	code := m.Run()
	if julyData != nil {
		os.RemoveAll(julyData.dir)
	}
	os.Exit(code)
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// TestJulyBenchmarkData is acceptance 4(a): rebuilt from the published
// verdicts (present-based, pass derived from the taxonomy's types, age
// from the demographic), publish gives back benchmark-data.json for every
// model|age|metric to 4 decimals. The published file also holds two keys
// of gpt-4o, mcab__m02 and mcab__m05, from a benchmark slug ("mcab") that
// neither the taxonomy nor the scenario index has: stale rows an earlier
// publish left behind, which no verdict supports. They are the only
// published numbers not reproduced.
func TestJulyBenchmarkData(t *testing.T) {
	j := rebuiltJuly(t)
	var ours map[string]map[string]float64
	readJSON(t, filepath.Join(j.out, "data", BenchmarkDataFile), &ours)
	stale := map[string]bool{"gpt-4o|adult mcab__m02": true, "gpt-4o|adult mcab__m05": true, "gpt-4o|child mcab__m02": true, "gpt-4o|child mcab__m05": true}
	checked := 0
	for cell, want := range j.pub.BenchmarkData {
		got, ok := ours[cell]
		if !ok {
			t.Errorf("%s: missing", cell)
			continue
		}
		for key, v := range want {
			g, ok := got[key]
			switch {
			case !ok && stale[cell+" "+key]:
				continue
			case !ok:
				t.Errorf("%s %s: missing (published %v)", cell, key, v)
			case g != v:
				t.Errorf("%s %s: %v, published %v", cell, key, g, v)
			}
			checked++
		}
		if len(got) != len(want)-countPrefix(stale, cell) {
			t.Errorf("%s: %d metrics, published %d", cell, len(got), len(want))
		}
	}
	if len(ours) != len(j.pub.BenchmarkData) {
		t.Errorf("%d model|age cells, published %d", len(ours), len(j.pub.BenchmarkData))
	}
	if checked != 14*2*360+2*2*83 {
		t.Errorf("checked %d numbers, want 14 full models × 2 ages × 360 + 2 label models × 2 × 83 = %d", checked, 14*2*360+2*2*83)
	}
}

func countPrefix(m map[string]bool, cell string) int {
	n := 0
	for k := range m {
		if len(k) > len(cell) && k[:len(cell)+1] == cell+" " {
			n++
		}
	}
	return n
}

// TestJulyNutrition is acceptance 4(a): nutrition.json's category scores
// equal nutrition-score.json for every category, model and age. They are
// the mean of the category's metrics' *rounded* published scores, rounded
// again (docs/study.md: "the nutrition label's numbers").
func TestJulyNutrition(t *testing.T) {
	j := rebuiltJuly(t)
	var ours []struct {
		ID      string                        `json:"id"`
		Label   string                        `json:"label"`
		Models  map[string]map[string]float64 `json:"models"`
		Metrics []map[string]string           `json:"metrics"`
	}
	readJSON(t, filepath.Join(j.out, "data", NutritionFile), &ours)
	if len(ours) != len(j.pub.NutritionScore) {
		t.Fatalf("%d categories, published %d", len(ours), len(j.pub.NutritionScore))
	}
	n := 0
	for i, want := range j.pub.NutritionScore {
		got := ours[i]
		if got.ID != want.ID || got.Label != want.Label {
			t.Errorf("category %d: %s %q, published %s %q", i, got.ID, got.Label, want.ID, want.Label)
		}
		for model, ages := range want.Models {
			for age, v := range ages {
				if g := got.Models[model][age]; g != v {
					t.Errorf("%s %s %s: %v, published %v", want.ID, model, age, g, v)
				}
				n++
			}
		}
		if len(got.Models) != len(want.Models) {
			t.Errorf("%s: %d models, published %d", want.ID, len(got.Models), len(want.Models))
		}
		cat := j.pub.NutritionCat[i]
		if len(got.Metrics) != len(cat.Metrics) {
			t.Errorf("%s: %d metrics, published %d", want.ID, len(got.Metrics), len(cat.Metrics))
			continue
		}
		for k, m := range cat.Metrics {
			g := got.Metrics[k]
			if g["id"] != m.ID || g["metric_id"] != m.MetricID || g["benchmark"] != m.Bench || g["name"] != m.Name || g["type"] != m.Type || g["label_metric_id"] == "" {
				t.Errorf("%s metric %d: %v, published %+v", want.ID, k, g, m)
			}
		}
	}
	if n != 9*16*2 {
		t.Errorf("checked %d category scores, want 9 × 16 × 2", n)
	}
}

// TestJulyOtherFiles: the rebuilt study's scenario index, models and
// metric details are the published ones, and the taxonomy is too except
// that each subarea's metrics follow its groups (July's file had them
// sorted by key).
func TestJulyOtherFiles(t *testing.T) {
	j := rebuiltJuly(t)
	var index map[string][]studytest.IndexRow
	readJSON(t, filepath.Join(j.out, "data", ScenarioIndexFile), &index)
	if !reflect.DeepEqual(index, j.pub.ScenarioIndex) {
		t.Error("scenario-index.json differs from the published one")
	}
	var models, pubModels any
	readJSON(t, filepath.Join(j.out, "data", ModelsFile), &models)
	raw, _ := studytest.ReadPublished("models.json")
	_ = json.Unmarshal(raw, &pubModels)
	if !reflect.DeepEqual(models, pubModels) {
		t.Errorf("models.json differs:\n%v\n%v", models, pubModels)
	}
	var details map[string]struct{ Definition, Contributor, MattersBecause string }
	readJSON(t, filepath.Join(j.out, "data", MetricDetailsFile), &details)
	if len(details) != 360 {
		t.Errorf("%d metric details, want 360", len(details))
	}
	for k, d := range details {
		if d.Definition != j.pub.Criteria[k] || d.Contributor != j.pub.Meta[k].Contributor || d.MattersBecause != j.pub.Meta[k].MattersBecause {
			t.Errorf("%s: %+v", k, d)
		}
	}
	var tax, pubTax study.Taxonomy
	readJSON(t, filepath.Join(j.out, "data", TaxonomyFile), &tax)
	pubTax = j.pub.Taxonomy
	for _, x := range []*study.Taxonomy{&tax, &pubTax} {
		for a := range x.Areas {
			for s := range x.Areas[a].Subareas {
				ms := x.Areas[a].Subareas[s].Metrics
				sort.Slice(ms, func(i, j int) bool { return ms[i].ID < ms[j].ID })
			}
		}
	}
	if !reflect.DeepEqual(tax, pubTax) {
		t.Error("taxonomy.json differs from the published one beyond the order of subarea metrics")
	}
	// Every verdict has its transcript file, where the site fetches it.
	files := 0
	for key, rows := range index {
		for _, r := range rows {
			for model := range r.Verdicts {
				files++
				if files%97 != 0 {
					continue // check a sample of the ~34,000 files
				}
				p := filepath.Join(j.out, "scenarios", r.Benchmark, model, r.ScenarioID+".json")
				var f struct {
					Transcript    []map[string]string `json:"transcript"`
					Justification string              `json:"justification"`
					Persona       string              `json:"persona"`
				}
				readJSON(t, p, &f)
				if len(f.Transcript) == 0 || f.Justification == "" || f.Persona == "" {
					t.Errorf("%s (%s): %+v", p, key, f)
				}
			}
		}
	}
	if j.rep.Conversations != files {
		t.Errorf("publish wrote %d scenario files, the index has %d verdicts", j.rep.Conversations, files)
	}
	if !slices.Equal(j.rep.Warnings, []string{}) {
		t.Errorf("warnings: %v", j.rep.Warnings)
	}
}
