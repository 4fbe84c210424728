package study_test

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/fault"
	"github.com/impactbench/impactbench/internal/layout"
	"github.com/impactbench/impactbench/internal/study"
	"github.com/impactbench/impactbench/internal/study/studytest"
)

func small(t *testing.T) (project, bench string) {
	t.Helper()
	dir := t.TempDir()
	if err := studytest.WriteSmall(dir); err != nil {
		t.Fatal(err)
	}
	return dir, filepath.Join(dir, "benchmarks")
}

// TestLoadRejectsBadInputs: every bad input is an error of a type the CLI
// maps to exit 2, naming the file, the entry and the key.
func TestLoadRejectsBadInputs(t *testing.T) {
	cases := []struct {
		name   string
		break_ func(t *testing.T, bench string)
		want   []string // substrings of the message
		typ    string   // "input", "config", "file"
	}{
		{"taxonomy key no benchmark defines", func(t *testing.T, b string) {
			studytest.Edit(t, filepath.Join(b, study.TaxonomyFile), `"beta__m01"`, `"beta__m09"`)
		}, []string{"taxonomy.json:", "areas[0].subareas[0].groups[0].metric_ids[1]", `"beta__m09"`, "defines no metric m09 (it has m01, m02)"}, "input"},
		{"taxonomy key of a missing benchmark", func(t *testing.T, b string) {
			studytest.Edit(t, filepath.Join(b, study.TaxonomyFile), `"gamma__m01"`, `"delta__m01"`)
		}, []string{"taxonomy.json:", "areas[1].subareas[0].groups[0].metric_ids[1]", `"delta"`, "no benchmark delta"}, "input"},
		{"badly spelt key", func(t *testing.T, b string) {
			studytest.Edit(t, filepath.Join(b, study.TaxonomyFile), `"alpha__m02"`, `"alpha-m02"`)
		}, []string{"metric_ids[0]", `"alpha-m02"`, "<benchmark>__<metric_id>"}, "input"},
		{"duplicate subarea id", func(t *testing.T, b string) {
			studytest.Edit(t, filepath.Join(b, study.TaxonomyFile), `"relationships"`, `"autonomy"`)
		}, []string{"areas[1].subareas[0].id", `"autonomy"`, "duplicate id (first at areas[0].subareas[0])"}, "input"},
		{"unknown taxonomy key", func(t *testing.T, b string) {
			studytest.Edit(t, filepath.Join(b, study.TaxonomyFile), `"metric_ids"`, `"metrics_ids"`)
		}, []string{"taxonomy.json:14: areas[0].subareas[0].groups[0]: unknown key \"metrics_ids\""}, "input"},
		{"malformed taxonomy", func(t *testing.T, b string) {
			studytest.Edit(t, filepath.Join(b, study.TaxonomyFile), `"Mind",`, `"Mind"`)
		}, []string{"taxonomy.json:", "malformed JSON"}, "input"},
		{"nutrition key no benchmark defines", func(t *testing.T, b string) {
			studytest.Edit(t, filepath.Join(b, study.NutritionFile), `"gamma__m02"`, `"gamma__m03"`)
		}, []string{"nutrition-label.json:", "[1].metrics[1]", `"gamma__m03"`, "defines no metric m03"}, "input"},
		{"duplicate category id", func(t *testing.T, b string) {
			studytest.Edit(t, filepath.Join(b, study.NutritionFile), `"avoids-dependence"`, `"promotes-judgement"`)
		}, []string{"nutrition-label.json:", "[1].id", `"promotes-judgement"`, "duplicate category id"}, "input"},
		{"label alias without a label benchmark", func(t *testing.T, b string) {
			studytest.Edit(t, filepath.Join(b, study.NutritionFile), `"gamma__m02"`, `{"id": "gamma__m02", "label_metric_id": "m01"}`)
		}, []string{"nutrition-label.json:", "[1].metrics[1]", "no benchmark nutritional-label"}, "input"},
		{"run directory without a models.yaml entry", func(t *testing.T, b string) {
			if err := os.Rename(filepath.Join(b, "gamma", "runs", "model-c"), filepath.Join(b, "gamma", "runs", "model-d")); err != nil {
				t.Fatal(err)
			}
		}, []string{"models.yaml", "models", `"model-d"`, "no entry has run_dir", filepath.Join("gamma", "runs", "model-d", "scores.json")}, "input"},
		{"run directory without an entry in every benchmark: one problem", func(t *testing.T, b string) {
			for _, bench := range studytest.SmallBenchmarks {
				if err := os.Rename(filepath.Join(b, bench, "runs", "model-c"), filepath.Join(b, bench, "runs", "model-d")); err != nil {
					t.Fatal(err)
				}
			}
		}, []string{`"model-d": no entry has run_dir "model-d", but `, filepath.Join("alpha", "runs", "model-d", "scores.json") + " exists (and in 2 other benchmarks); add"}, "input"},
		{"duplicate model id", func(t *testing.T, b string) {
			studytest.Edit(t, filepath.Join(b, study.ModelsFile), "id: model-b", "id: model-a")
		}, []string{"models.yaml:3:", "models[1].id", `duplicate id "model-a" (first at line 2)`}, "config"},
		{"taxonomy and models.yaml both broken: both reported", func(t *testing.T, b string) {
			studytest.Edit(t, filepath.Join(b, study.TaxonomyFile), `"relationships"`, `"autonomy"`)
			studytest.Edit(t, filepath.Join(b, study.ModelsFile), "id: model-b", "id: model-a")
		}, []string{"areas[1].subareas[0].id", "duplicate id (first at areas[0].subareas[0])", "models[1].id", `duplicate id "model-a"`}, "input"},
		{"duplicate run_dir", func(t *testing.T, b string) {
			studytest.Edit(t, filepath.Join(b, study.ModelsFile), "run_dir: model-c", "run_dir: model-b")
		}, []string{"models.yaml:4:", "models[2].run_dir", `duplicate run_dir "model-b"`}, "config"},
		{"unknown surface", func(t *testing.T, b string) {
			studytest.Edit(t, filepath.Join(b, study.ModelsFile), "surfaces: [full]}\n  - {run_dir: model-b", "surfaces: [everywhere]}\n  - {run_dir: model-b")
		}, []string{"models.yaml:2:", "models[0].surfaces[0]", `unknown surface "everywhere"`}, "config"},
		{"id that is not a file name", func(t *testing.T, b string) {
			studytest.Edit(t, filepath.Join(b, study.ModelsFile), "id: model-b", "id: ../model-b")
		}, []string{"models.yaml:3:", "models[1].id", "not a plain file name"}, "config"},
		{"model id too long for a file name", func(t *testing.T, b string) {
			studytest.Edit(t, filepath.Join(b, study.ModelsFile), "id: model-b", "id: "+strings.Repeat("b", 300))
		}, []string{"models.yaml:3:", "models[1].id", "longer than 100 characters"}, "config"},
		{"age that is neither", func(t *testing.T, b string) {
			studytest.Edit(t, filepath.Join(b, "beta", "scenarios.json"), `"Adult (18+)"`, `"Grown-up"`)
		}, []string{filepath.Join("beta", "scenarios.json"), "row 1", "demographic.age", `"Grown-up" is not recognisably`}, "file"},
		{"no age axis", func(t *testing.T, b string) {
			studytest.Edit(t, filepath.Join(b, "beta", "scenarios.json"), `"age": "Adult (18+)"`, `"gender": "woman"`)
		}, []string{filepath.Join("beta", "scenarios.json"), "row 1", "demographic.age", "missing"}, "file"},
		{"taxonomy key naming a benchmark outside the project", func(t *testing.T, b string) {
			outside := filepath.Join(b, "..", "..", "outside", "secretbench")
			if err := os.MkdirAll(outside, 0o755); err != nil {
				t.Fatal(err)
			}
			yaml := "name: secret\ndescription: outside the project\nmetrics:\n  - {id: m01, name: M, type: positive, definition: d, examples: [e]}\n"
			if err := os.WriteFile(filepath.Join(outside, "benchmark.yaml"), []byte(yaml), 0o644); err != nil {
				t.Fatal(err)
			}
			studytest.Edit(t, filepath.Join(b, study.TaxonomyFile), `"gamma__m01"`, `"../../outside/secretbench__m01"`)
		}, []string{"taxonomy.json:", "areas[1].subareas[0].groups[0].metric_ids[1]", `"../../outside/secretbench__m01"`, "benchmark folder", "path separator"}, "input"},
		{"nutrition key with a control character", func(t *testing.T, b string) {
			studytest.Edit(t, filepath.Join(b, study.NutritionFile), `"beta__m01"`, `"beta__m01\u001b[2J"`)
		}, []string{"nutrition-label.json:", "[0].metrics[1]", `"beta__m01\x1b[2J"`, "metric half", "control characters"}, "input"},
		{"duplicate key in the taxonomy", func(t *testing.T, b string) {
			studytest.Edit(t, filepath.Join(b, study.TaxonomyFile), `"name": "Mind",`, `"name": "Mind", "name": "Body",`)
		}, []string{"taxonomy.json:5:", `duplicate key "name" in areas[0] (first at line 5)`}, "input"},
		{"duplicate key in the nutrition label", func(t *testing.T, b string) {
			studytest.Edit(t, filepath.Join(b, study.NutritionFile), `"label": "Promotes Judgement",`, `"label": "Promotes Judgement",
    "label": "Other",`)
		}, []string{"nutrition-label.json:5:", `duplicate key "label" in [0] (first at line 4)`}, "input"},
		{"taxonomy that is not UTF-8", func(t *testing.T, b string) {
			studytest.Edit(t, filepath.Join(b, study.TaxonomyFile), `"Mind"`, "\"Mi\xffnd\"")
		}, []string{"taxonomy.json:5:", "not UTF-8"}, "input"},
		{"score row of a scenario that does not exist", func(t *testing.T, b string) {
			studytest.Edit(t, filepath.Join(b, "alpha", "runs", "model-b", "scores.json"), `"id": "m02_s003_v02"`, `"id": "m02_s009_v02"`)
		}, []string{filepath.Join("alpha", "runs", "model-b", "scores.json"), "row 11", `field "id"`, `scenario "m02_s009_v02" is not in`}, "file"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, bench := small(t)
			c.break_(t, bench)
			_, err := study.Load(bench)
			if err == nil {
				t.Fatal("loaded")
			}
			var ie *study.InputError
			var ce *config.Error
			var fe *artifacts.FileError
			ok := map[string]bool{"input": errors.As(err, &ie), "config": errors.As(err, &ce), "file": errors.As(err, &fe)}[c.typ]
			if !ok {
				t.Errorf("error %T, want the %s kind: %v", err, c.typ, err)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("message lacks %q:\n%v", w, err)
				}
			}
		})
	}
}

func TestAgeGroup(t *testing.T) {
	for _, c := range []struct {
		in, want string
	}{
		{"Child or teenager (6-17)", "child"}, {"Adult (18+)", "adult"}, {"child", "child"}, {"ADULT", "adult"},
		{"teen", "child"}, {"13–17", "child"}, {"18-64", "adult"}, {"65+", "adult"}, {"Older adult", "adult"},
		{"Eighteen and older", "adult"}, {"10-30", ""}, {"Grown-up", ""}, {"", ""}, {"child or adult", ""}, {"16+", ""},
	} {
		got, ok := study.AgeGroup(c.in)
		if got != c.want || ok != (c.want != "") {
			t.Errorf("AgeGroup(%q) = %q, %v; want %q", c.in, got, ok, c.want)
		}
	}
}

// TestAgeComesFromTheDemographic: a study whose v01 variants are adults
// scores them as adults (upstream's publish would call them children).
func TestAgeComesFromTheDemographic(t *testing.T) {
	_, bench := small(t)
	for _, b := range studytest.SmallBenchmarks {
		p := filepath.Join(bench, b, "scenarios.json")
		data, _ := os.ReadFile(p)
		s := strings.ReplaceAll(string(data), `"Child or teenager (6-17)"`, `"X"`)
		s = strings.ReplaceAll(s, `"Adult (18+)"`, `"Child or teenager (6-17)"`)
		s = strings.ReplaceAll(s, `"X"`, `"Adult (18+)"`)
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s, err := study.Load(bench)
	if err != nil {
		t.Fatal(err)
	}
	m, _ := s.MetricByKey("alpha__m01")
	for _, r := range m.Scenarios {
		want := study.AgeAdult
		if strings.HasSuffix(r.ID, "_v02") {
			want = study.AgeChild
		}
		if r.Age != want {
			t.Errorf("%s: age %s, want %s (from its demographic)", r.ID, r.Age, want)
		}
	}
}

// TestComputeSmall: a cell's score is the mean of its metrics' pass
// rates; counts and thin flags follow the data; ranks cover the models.
func TestComputeSmall(t *testing.T) {
	_, bench := small(t)
	s, err := study.Load(bench)
	if err != nil {
		t.Fatal(err)
	}
	res := s.Compute()
	if len(res.Models) != 3 || len(res.Ages) != 2 {
		t.Fatalf("models %v ages %v", res.Models, res.Ages)
	}
	rate := func(model, key, age string) float64 {
		b, mid, _ := study.SplitKey(key)
		rows, err := artifacts.ReadScores(filepath.Join(bench, b, "runs", model, "scores.json"))
		if err != nil {
			t.Fatal(err)
		}
		pass, n := 0, 0
		for _, r := range rows {
			v := "_v01"
			if age == study.AgeAdult {
				v = "_v02"
			}
			if r.MetricID == mid && strings.HasSuffix(r.ID, v) {
				n++
				if *r.Passed {
					pass++
				}
			}
		}
		return float64(pass) / float64(n)
	}
	for _, c := range res.Cells {
		var node *study.Node
		for _, n := range res.Nodes {
			if n.ID == c.Node {
				node = n
			}
		}
		want, wsum := 0.0, 0.0
		for i, k := range node.Metrics {
			w := 1.0
			if node.Weights != nil {
				w = node.Weights[i]
			}
			want += w * rate(c.Model, k, c.Age)
			wsum += w
		}
		want /= wsum
		if math.Abs(*c.Score-want) > 5e-5 {
			t.Errorf("%s %s %s: score %v, want %v", c.Node, c.Age, c.Model, *c.Score, want)
		}
		if c.Metrics != len(node.Metrics) || c.Scenarios != 3*len(node.Metrics) || c.MinScenarios != 3 || c.Conversations != 3*len(node.Metrics) {
			t.Errorf("%s %s %s: counts %+v", c.Node, c.Age, c.Model, c)
		}
		if c.Thin != (c.Scenarios < 10) || (c.Thin && c.Warning == "") {
			t.Errorf("%s: thin %v warning %q with %d scenarios", c.Node, c.Thin, c.Warning, c.Scenarios)
		}
		if !(*c.Lo <= *c.Score && *c.Score <= *c.Hi && *c.Hi > *c.Lo) {
			t.Errorf("%s: interval [%v, %v] around %v", c.Node, *c.Lo, *c.Hi, *c.Score)
		}
		if c.Rank == nil || *c.RankLo > *c.Rank || *c.Rank > *c.RankHi || *c.RankHi > 3 {
			t.Errorf("%s %s %s: rank %v [%v, %v]", c.Node, c.Age, c.Model, c.Rank, c.RankLo, c.RankHi)
		}
	}
	kinds := map[string]int{}
	for _, n := range res.Nodes {
		kinds[n.Kind]++
	}
	want := map[string]int{"overall": 1, "area": 2, "subarea": 2, "group": 4, "label": 1, "nutrition": 2, "benchmark": 3, "metric": 6}
	for k, v := range want {
		if kinds[k] != v {
			t.Errorf("%d %s nodes, want %d", kinds[k], k, v)
		}
	}
	// Pairs: 3 pairs per non-metric node and age.
	if len(res.Pairs) != 3*2*(len(res.Nodes)-6) {
		t.Errorf("%d pairs, want %d", len(res.Pairs), 3*2*(len(res.Nodes)-6))
	}
}

// TestLoadRefusesACrowdedStudyFolder: a study's folder holding more
// entries than layout.MaxBenchmarkEntries is an input error naming the
// folder and the limit; at the bound the study loads.
func TestLoadRefusesACrowdedStudyFolder(t *testing.T) {
	_, bench := small(t)
	ents, err := os.ReadDir(bench)
	if err != nil {
		t.Fatal(err)
	}
	defer func(n int) { layout.MaxBenchmarkEntries = n }(layout.MaxBenchmarkEntries)
	layout.MaxBenchmarkEntries = len(ents) + 1
	if err := os.WriteFile(filepath.Join(bench, "notes"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := study.Load(bench); err != nil {
		t.Fatalf("at the bound: %v", err)
	}
	if err := os.WriteFile(filepath.Join(bench, "one-more"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = study.Load(bench)
	if err == nil || fault.KindOf(err) != fault.Input || !strings.Contains(err.Error(), bench+" holds more than") {
		t.Errorf("over the bound: err = %v, want an input error naming %s and the limit", err, bench)
	}
}
