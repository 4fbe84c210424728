package publish

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/impactbench/impactbench/internal/layout"
	"github.com/impactbench/impactbench/internal/racemode"
	"github.com/impactbench/impactbench/internal/study"
	"github.com/impactbench/impactbench/internal/study/studytest"
)

// july is the rebuilt July 2026 study, published once (with the static
// site) for the tests of this file.
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
	// Rebuilding the study is single-threaded (study.Compute and Publish
	// start no goroutine; Serve, the one that does, has its own tests under
	// -race): under -race it cost about 50 s of a quiet 2-core CI machine
	// and could find nothing. Every test of the rebuilt study therefore runs
	// in .ci/run's step without -race.
	racemode.SkipHeavy(t)
	julyOnce.Do(func() {
		// A memory file system when there is one: the rebuilt study is
		// ~31,000 files, and the test is about their content, not the disk.
		base := ""
		if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
			base = "/dev/shm"
		}
		dir, err := os.MkdirTemp(base, "impactbench-july-")
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
		t0 := time.Now()
		j.res = j.s.Compute()
		t1 := time.Now()
		j.rep, julyErr = Publish(context.Background(), j.s, j.res, Options{Out: j.out, Site: true})
		t.Logf("rebuilt July study: compute %v, publish %v", t1.Sub(t0), time.Since(t1))
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
	if code == 0 {
		code = leaked()
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
	readJSON(t, filepath.Join(j.out, "data", layout.PublishedBenchmarkDataFile), &ours)
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
	readJSON(t, filepath.Join(j.out, "data", layout.PublishedNutritionFile), &ours)
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
	readJSON(t, filepath.Join(j.out, "data", layout.PublishedScenarioIndexFile), &index)
	if !reflect.DeepEqual(index, j.pub.ScenarioIndex) {
		t.Error("scenario-index.json differs from the published one")
	}
	var models, pubModels any
	readJSON(t, filepath.Join(j.out, "data", layout.PublishedModelsFile), &models)
	raw, _ := studytest.ReadPublished("models.json")
	_ = json.Unmarshal(raw, &pubModels)
	if !reflect.DeepEqual(models, pubModels) {
		t.Errorf("models.json differs:\n%v\n%v", models, pubModels)
	}
	var details map[string]struct{ Definition, Contributor, MattersBecause string }
	readJSON(t, filepath.Join(j.out, "data", layout.PublishedMetricDetailsFile), &details)
	if len(details) != 360 {
		t.Errorf("%d metric details, want 360", len(details))
	}
	for k, d := range details {
		if d.Definition != j.pub.Criteria[k] || d.Contributor != j.pub.Meta[k].Contributor || d.MattersBecause != j.pub.Meta[k].MattersBecause {
			t.Errorf("%s: %+v", k, d)
		}
	}
	var tax, pubTax study.Taxonomy
	readJSON(t, filepath.Join(j.out, "data", layout.PublishedTaxonomyFile), &tax)
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
	siteFiles := 0
	for _, f := range j.rep.Written {
		if f == layout.SiteIndex || strings.HasPrefix(f, layout.SiteDir+"/") {
			siteFiles++
		}
	}
	if j.rep.Files-siteFiles != 7+31236 {
		t.Errorf("publish wrote %d files besides the site, want 7 data files and 31,236 scenario files (docs/study.md)", j.rep.Files-siteFiles)
	}
	// The page, its script and style, the core and calibration chunks, 17
	// benchmark chunks, 16·15/2 model pairs (the label ranks all 16) and
	// one transcript chunk per model and benchmark it has verdicts on:
	// 406 (docs/study.md).
	chunks := map[[2]string]bool{}
	for _, m := range j.s.Metrics {
		for _, r := range m.Scenarios {
			for mi := range r.Verdicts {
				chunks[[2]string{r.Bench, j.s.Models[mi].ID}] = true
			}
		}
	}
	if want := 3 + 2 + 17 + 16*15/2 + len(chunks); siteFiles != want || siteFiles != 406 {
		t.Errorf("the site has %d files, want %d (406 in docs/study.md)", siteFiles, want)
	}
	if j.rep.Conversations != files {
		t.Errorf("publish wrote %d scenario files, the index has %d verdicts", j.rep.Conversations, files)
	}
	if !slices.Equal(j.rep.Warnings, []string{}) {
		t.Errorf("warnings: %v", j.rep.Warnings)
	}
}

// docBlock returns the text of docs/study.md between <!-- name:begin -->
// and <!-- name:end -->.
func docBlock(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "study.md"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	begin, end := "<!-- "+name+":begin -->\n", "<!-- "+name+":end -->"
	i, j := strings.Index(s, begin), strings.Index(s, end)
	if i < 0 || j < i {
		t.Fatalf("docs/study.md has no %s block", name)
	}
	return s[i+len(begin) : j]
}

// TestJulyStudyNumbersInDocs is acceptance 4(b): docs/study.md states the
// rebuilt study's overall rank intervals for the 14 full-surface models,
// how many per-metric scores have intervals narrower than ±0.25, and what
// each level's intervals are like; this computes them and compares.
func TestJulyStudyNumbersInDocs(t *testing.T) {
	j := rebuiltJuly(t)
	kind := map[string]string{}
	rankAll := map[string]bool{} // nodes every model is ranked at: the label's, as the site's level table counts them
	for _, n := range j.res.Nodes {
		kind[n.ID] = n.Kind
		if n.Ranked == "all" {
			rankAll[n.ID] = true
		}
	}
	type row struct{ child, adult study.Cell }
	rows := map[string]*row{}
	narrow := map[string]int{}
	perModel := map[string]int{}
	type level struct {
		cells, thin int
		hw          []float64
		sc          []int
	}
	levels := map[string]*level{}
	for _, c := range j.res.Cells {
		k := kind[c.Node]
		if k == study.KindMetric {
			perModel[c.Model]++
			if (*c.Hi-*c.Lo)/2 < study.NarrowHalfWidth {
				narrow[c.Model]++
			}
		}
		if c.Node == study.KindOverall && c.Rank != nil {
			r := rows[c.Model]
			if r == nil {
				r = &row{}
				rows[c.Model] = r
			}
			if c.Age == study.AgeChild {
				r.child = c
			} else {
				r.adult = c
			}
		}
		full := c.Model != "apertus-8b" && c.Model != "apertus-70b"
		if full || rankAll[c.Node] {
			l := levels[k]
			if l == nil {
				l = &level{}
				levels[k] = l
			}
			l.cells++
			if c.Thin {
				l.thin++
			}
			l.hw = append(l.hw, (*c.Hi-*c.Lo)/2)
			l.sc = append(l.sc, c.Scenarios)
		}
	}
	var b strings.Builder
	b.WriteString("| model | child: score [95 %] | child: rank (interval) | adult: score [95 %] | adult: rank (interval) |\n|---|---|---|---|---|\n")
	cell := func(c study.Cell) (string, string) {
		return fmt.Sprintf("%.3f [%.3f, %.3f]", *c.Score, *c.Lo, *c.Hi), fmt.Sprintf("%d (%d–%d)", *c.Rank, *c.RankLo, *c.RankHi)
	}
	n := 0
	for _, m := range j.pub.Models {
		r, ok := rows[m.ID]
		if !ok {
			continue
		}
		n++
		cs, cr := cell(r.child)
		as, ar := cell(r.adult)
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", m.ID, cs, cr, as, ar)
	}
	if n != 14 {
		t.Errorf("%d ranked models at the overall level, want the 14 full-surface ones", n)
	}
	if len(j.res.Nodes) != 460 || len(j.res.Cells) != 13508 || len(j.res.Pairs) != 18780 {
		t.Errorf("%d nodes, %d cells, %d pairs; docs/study.md says 460, 13,508 and 18,780", len(j.res.Nodes), len(j.res.Cells), len(j.res.Pairs))
	}
	if got := docBlock(t, "july-ranks"); got != b.String() {
		t.Errorf("docs/study.md july-ranks block is out of date; it should read:\n%s", b.String())
	}

	var nb strings.Builder
	total, narrowAll := 0, 0
	for _, m := range j.pub.Models {
		total += perModel[m.ID]
		narrowAll += narrow[m.ID]
	}
	fmt.Fprintf(&nb, "Per-metric scores with a 95 %% interval narrower than ±0.25: **%d of %d** (%d of 360 for each of the 14 full models at each age; %d of 83 for each label-only model).\n",
		narrowAll, total, narrow["claude-haiku-4-5"], narrow["apertus-8b"])
	if got := docBlock(t, "july-narrow"); got != nb.String() {
		t.Errorf("docs/study.md july-narrow block is out of date; it should read:\n%s", nb.String())
	}

	var lb strings.Builder
	lb.WriteString("| level | cells | thin | half-width: median (range) | base scenarios: median (range) |\n|---|---|---|---|---|\n")
	for _, k := range []string{study.KindOverall, study.KindArea, study.KindSubarea, study.KindGroup, study.KindLabel, study.KindNutrition, study.KindBenchmark, study.KindMetric} {
		l := levels[k]
		sort.Float64s(l.hw)
		sort.Ints(l.sc)
		// The median of an even count is the mean of the middle two, as
		// the static site's level table has it (the upper one printed the
		// groups' 19.5 base scenarios as 21).
		sc := make([]float64, len(l.sc))
		for i, v := range l.sc {
			sc[i] = float64(v)
		}
		fmt.Fprintf(&lb, "| %s | %d | %d | ±%.3f (%.3f–%.3f) | %s (%d–%d) |\n", k, l.cells, l.thin, medianOf(l.hw), l.hw[0], l.hw[len(l.hw)-1],
			strconv.FormatFloat(medianOf(sc), 'f', -1, 64), l.sc[0], l.sc[len(l.sc)-1])
	}
	if got := docBlock(t, "july-levels"); got != lb.String() {
		t.Errorf("docs/study.md july-levels block is out of date; it should read:\n%s", lb.String())
	}

	// Letter grades: how many intervals fit inside one of the site's grades.
	within := map[string][2]int{}
	for _, c := range j.res.Cells {
		k := kind[c.Node]
		if (k != study.KindOverall && k != study.KindNutrition) || c.Rank == nil {
			continue // overall: the 14 ranked full models
		}
		w := within[k]
		w[1]++
		if letterGrade(*c.Lo) == letterGrade(*c.Hi) {
			w[0]++
		}
		within[k] = w
	}
	claim := fmt.Sprintf("%d of the %d overall intervals (±0.026) fits inside one grade, and only %d of the %d category intervals do",
		within[study.KindOverall][0], within[study.KindOverall][1], within[study.KindNutrition][0], within[study.KindNutrition][1])
	if b, _ := os.ReadFile(filepath.Join("..", "..", "docs", "study.md")); !strings.Contains(strings.Join(strings.Fields(string(b)), " "), claim) {
		t.Errorf("docs/study.md should say: %s", claim)
	}
}

// letterGrade is the site's letter grade band (A+ from 0.95 down to F
// below 0.40, 0.05 wide).
func letterGrade(x float64) int {
	for i, t := range []float64{0.95, 0.9, 0.85, 0.8, 0.75, 0.7, 0.65, 0.6, 0.55, 0.5, 0.45, 0.4} {
		if x >= t {
			return i
		}
	}
	return 12
}

// medianOf is the median of sorted values: the middle one, or the mean of
// the middle two.
func medianOf(sorted []float64) float64 {
	n := len(sorted)
	if n%2 == 1 {
		return sorted[n/2]
	}
	return (sorted[n/2-1] + sorted[n/2]) / 2
}
