package benchharness

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/layout"
)

// The study preset runs a study the size of ImpactBench's published one as
// one `run all`: its benchmarks and metrics (names and types from the
// published taxonomy.json, definitions from metric-criteria.json: 17
// benchmarks, 360 metrics in the July 2026 data), ScenariosPerMetric base
// scenarios per metric, each in one variant per age group, pre-generated,
// against Targets targets. What it measures is whether the benchmarks share
// the provider pools without idling them at benchmark boundaries: T_min is
// the busiest pool's bound over the whole study.

// StudyDataDir is where the published data is looked for when Options.Study
// is "auto": shared/compat/published-2026-07 beside any parent directory of
// the working directory (the workspace's layout).
const studyDataRel = "shared/compat/published-2026-07"

// FindStudyData returns the published data directory, looking upwards from
// the working directory for a sibling shared/compat/published-2026-07.
func FindStudyData() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		for _, c := range []string{filepath.Join(dir, studyDataRel), filepath.Join(filepath.Dir(dir), studyDataRel)} {
			if st, err := os.Stat(filepath.Join(c, layout.PublishedTaxonomyFile)); err == nil && !st.IsDir() {
				return c, nil
			}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("benchharness: the study preset needs ImpactBench's published data (taxonomy.json, metric-criteria.json): not found in ../" + studyDataRel + " of this or any parent directory; pass --study DIR")
		}
		dir = parent
	}
}

// metricIDRE is the metric ids of the published study (m01…).
var metricIDRE = regexp.MustCompile(`^m\d{2,3}$`)

// studyMetric is one metric of the published study.
type studyMetric struct {
	ID, Name, Type, Definition string
}

// studyBench is one benchmark of the published study, metrics in id order.
type studyBench struct {
	Slug    string
	Metrics []studyMetric
}

// loadStudy reads the benchmarks and metrics of the published files in dir.
func loadStudy(dir string) ([]studyBench, error) {
	var tax struct {
		Areas []struct {
			Subareas []struct {
				Metrics []struct{ ID, Name, Type string }
			}
		}
	}
	var crit map[string]string
	if err := readJSON(filepath.Join(dir, layout.PublishedTaxonomyFile), &tax); err != nil {
		return nil, err
	}
	if err := readJSON(filepath.Join(dir, "metric-criteria.json"), &crit); err != nil {
		return nil, err
	}
	byBench := map[string]map[string]studyMetric{}
	for _, a := range tax.Areas {
		for _, s := range a.Subareas {
			for _, m := range s.Metrics {
				bench, id, ok := strings.Cut(m.ID, "__")
				if !ok || !metricIDRE.MatchString(id) {
					return nil, fmt.Errorf("benchharness: %s: metric key %q is not <benchmark>__<metric id>", dir, m.ID)
				}
				if byBench[bench] == nil {
					byBench[bench] = map[string]studyMetric{}
				}
				byBench[bench][id] = studyMetric{ID: id, Name: m.Name, Type: m.Type, Definition: crit[m.ID]}
			}
		}
	}
	var out []studyBench
	for slug, ms := range byBench {
		b := studyBench{Slug: slug}
		for _, m := range ms {
			b.Metrics = append(b.Metrics, m)
		}
		sort.Slice(b.Metrics, func(i, j int) bool { return b.Metrics[i].ID < b.Metrics[j].ID })
		out = append(out, b)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Slug < out[j].Slug })
	return out, nil
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("benchharness: %w", err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("benchharness: %s: %w", path, err)
	}
	return nil
}

// studyMetrics counts the study's metrics.
func studyMetrics(bs []studyBench) int {
	n := 0
	for _, b := range bs {
		n += len(b.Metrics)
	}
	return n
}

// writeStudyProject writes config.yaml and one benchmark directory per
// published benchmark, each with its metrics and a pre-generated
// scenarios.json (perMetric base scenarios × the two age groups).
func writeStudyProject(dir string, o Options, pm projectModels, bs []studyBench) error {
	// generation.scenarios_per_metric counts base scenarios (the two ages are variants).
	lay := sizing{scenarios: o.ScenariosPerMetric * studyMetrics(bs), metrics: studyMetrics(bs)}
	if err := os.WriteFile(layout.ConfigPath(dir), []byte(configYAML(o, lay, pm)+studyDemographics), 0o644); err != nil {
		return err
	}
	for _, b := range bs {
		bdir := layout.BenchDir(dir, b.Slug)
		if err := os.MkdirAll(bdir, 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(layout.BenchmarkPath(bdir), []byte(studyBenchYAML(b)), 0o644); err != nil {
			return err
		}
		if err := artifacts.WriteScenarios(layout.Bench{Dir: bdir}.Scenarios(), studyScenarios(b, o.ScenariosPerMetric, o.Turns)); err != nil {
			return err
		}
	}
	return nil
}

// studyDemographics is the age axis of the published study.
const studyDemographics = "demographics:\n  age: [\"Child/Teen (6-17)\", \"Adult (18+)\"]\n"

func studyBenchYAML(b studyBench) string {
	var s strings.Builder
	s.WriteString(strings.Replace(benchmarkHead("a benchmark of the published study, scenarios pre-generated"), "name: Harness benchmark", "name: "+b.Slug, 1))
	s.WriteString("metrics:\n")
	for _, m := range b.Metrics {
		def := m.Definition
		if def == "" {
			def = m.Name
		}
		fmt.Fprintf(&s, "- id: %s\n  name: %q\n  type: %s\n  definition: %q\n", m.ID, m.Name, m.Type, def)
	}
	return s.String()
}

// studyScenarios are a benchmark's scenarios: per metric, n base scenarios
// in a child and an adult variant.
func studyScenarios(b studyBench, n, turns int) []artifacts.Scenario {
	var out []artifacts.Scenario
	for _, m := range b.Metrics {
		for s := range n {
			k := len(out) / 2
			for v, age := range []string{"Child/Teen (6-17)", "Adult (18+)"} {
				out = append(out, artifacts.Scenario{
					ID:                    fmt.Sprintf("%s_s%03d_v%02d", m.ID, s+1, v+1),
					MetricID:              m.ID,
					Persona:               personas[k%len(personas)],
					HasPersona:            true,
					UserGoal:              goals[k%len(goals)],
					LatentAdversarialGoal: latent[k%len(latent)],
					Demographic:           artifacts.Demographic{{Key: "age", Value: age}},
					Landmarks:             []artifacts.Landmark{{Turn: 1, Instruction: "Open casually and describe the situation in a sentence or two."}, {Turn: turns, Instruction: "Push harder: say you just want a straight answer."}},
				})
			}
		}
	}
	return out
}

// loadStudy reads the published study the Study option names and lays out
// its workload: rows per target are every metric's base scenarios × 2 ages.
func (o Options) loadStudy() ([]studyBench, sizing, error) {
	dir := o.Study
	if dir == "auto" {
		var err error
		if dir, err = FindStudyData(); err != nil {
			return nil, sizing{}, err
		}
	}
	bs, err := loadStudy(dir)
	if err != nil {
		return nil, sizing{}, err
	}
	if len(bs) == 0 {
		return nil, sizing{}, fmt.Errorf("benchharness: %s holds no metrics", dir)
	}
	n := studyMetrics(bs)
	return bs, sizing{scenarios: 2 * max(o.ScenariosPerMetric, 1) * n, metrics: n}, nil
}

// benchArg is what the child runs: the harness's benchmark, or all of a study's.
func (o Options) benchArg() string {
	if o.Study != "" {
		return "all"
	}
	return benchName
}
