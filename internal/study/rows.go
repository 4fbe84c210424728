package study

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/layout"
	"github.com/impactbench/impactbench/internal/stats"
)

// AgeIndex is an age group's index in Ages (Study.Clusters takes it).
func AgeIndex(age string) int {
	if age == AgeChild {
		return 0
	}
	return 1
}

// scenarioAge is a scenario's age group from its demographic's age axis.
func scenarioAge(sc *artifacts.Scenario) (string, error) {
	v, ok := sc.Demographic.Get(AgeAxis)
	if !ok {
		return "", artifacts.FieldErrorf("demographic.age", "missing: a study splits every score by age group (child/adult), so every scenario needs an age axis (config.yaml demographics: age: [\"Child or teenager (6-17)\", \"Adult (18+)\"])")
	}
	text, isString := v.(string)
	if !isString {
		return "", artifacts.FieldErrorf("demographic.age", "expected a string such as \"Adult (18+)\", got %s", artifacts.ValueString(v))
	}
	g, ok := AgeGroup(text)
	if !ok {
		return "", artifacts.FieldErrorf("demographic.age", "%q is not recognisably a child's or an adult's age (say child/teen or adult, or give a range such as 6-17 or 18+)", text)
	}
	return g, nil
}

// loadScenarios reads scenarios.json of every benchmark of the study and
// lists each published metric's scenario rows and base scenarios.
func (s *Study) loadScenarios() error {
	for _, b := range s.Benchmarks {
		path := layout.Bench{Dir: b.Dir}.Scenarios()
		b.Scenarios = map[string]*artifacts.Scenario{}
		err := artifacts.EachScenario(path, func(_ int, sc artifacts.Scenario) error {
			if _, err := scenarioAge(&sc); err != nil {
				return err
			}
			b.Scenarios[sc.ID] = &sc
			b.Order = append(b.Order, sc.ID)
			return nil
		})
		if errors.Is(err, fs.ErrNotExist) {
			if len(b.Runs) > 0 {
				return &InputError{Problems: []Problem{{File: path, Msg: "not found, but " + layout.RunsDirName + "/ holds scores: the study needs each scenario's age (run gen-scenarios, or restore the file)"}}}
			}
			s.Warnings = append(s.Warnings, fmt.Sprintf("%s: not found; the benchmark's metrics have no scenarios", path))
			continue
		}
		if err != nil {
			return err
		}
	}
	for _, m := range s.Metrics {
		b := s.Bench(m.Bench)
		if b == nil {
			continue
		}
		for _, id := range b.Order {
			if sc := b.Scenarios[id]; sc.MetricID == m.ID {
				s.addScenario(m, id, b.Slug, sc)
			}
		}
	}
	return s.addLabelScenarios()
}

// addScenario appends a published scenario row to m (and its base).
func (s *Study) addScenario(m *Metric, id, bench string, sc *artifacts.Scenario) {
	age, _ := scenarioAge(sc)
	title := sc.UserGoal
	if title == "" {
		title = sc.Persona
	}
	if title == "" {
		title = id
	}
	m.base(artifacts.BaseIDOf(id))
	m.Scenarios = append(m.Scenarios, ScenarioRow{ID: id, Bench: bench, Title: title, Age: age, Scenario: sc, Verdicts: map[int]Verdict{}})
}

// base returns the index of base scenario id in m.Bases, adding it.
func (m *Metric) base(id string) int {
	for i, b := range m.Bases {
		if b == id {
			return i
		}
	}
	m.Bases = append(m.Bases, id)
	return len(m.Bases) - 1
}

// row returns the index of scenario row id in m.Scenarios, or -1.
func (m *Metric) row(id string) int {
	for i := range m.Scenarios {
		if m.Scenarios[i].ID == id {
			return i
		}
	}
	return -1
}

// aliasID is a label-benchmark scenario id rewritten into its source
// metric: "m07_s002_v01" of label metric m07 aliasing humanebench m03 is
// "m03_s002_v01". The label benchmark copies its source scenarios, so
// this is the same scenario; ids that do not start with the label metric
// id are kept.
func aliasID(id, labelMetric, sourceMetric string) string {
	if rest, ok := strings.CutPrefix(id, labelMetric+"_"); ok {
		return sourceMetric + "_" + rest
	}
	return id
}

// addLabelScenarios adds the label benchmark's scenarios of aliased
// metrics that are not already rows of their source metric.
func (s *Study) addLabelScenarios() error {
	lb := s.Bench(LabelBenchmark)
	if lb == nil {
		return nil
	}
	for _, m := range s.Metrics {
		if m.LabelID == "" {
			continue
		}
		for _, id := range lb.Order {
			sc := lb.Scenarios[id]
			if sc.MetricID != m.LabelID {
				continue
			}
			pub := aliasID(id, m.LabelID, m.ID)
			if i := m.row(pub); i >= 0 {
				age, _ := scenarioAge(sc)
				if m.Scenarios[i].Age != age {
					return &InputError{Problems: []Problem{{File: layout.Bench{Dir: lb.Dir}.Scenarios(), Entry: "id", Key: id,
						Msg: fmt.Sprintf("is the copy of %s scenario %s (label_metric_id %s), but its age group is %s there and %s here", m.Bench, pub, m.LabelID, m.Scenarios[i].Age, age)}}}
				}
				continue
			}
			s.addScenario(m, pub, m.Bench, sc)
		}
	}
	return nil
}

// metricOf is the published metric a score row of benchmark b counts for,
// and the published scenario id of the row; ok false when the row's metric
// is not published.
func (s *Study) metricOf(b *Bench, metricID, scenarioID string) (int, string, bool) {
	if b.Slug == LabelBenchmark {
		for i, m := range s.Metrics {
			if m.LabelID == metricID {
				return i, aliasID(scenarioID, metricID, m.ID), true
			}
		}
	}
	i, ok := s.byKey[Key(b.Slug, metricID)]
	return i, scenarioID, ok
}

// loadScores tallies every judged score row of every run.
func (s *Study) loadScores() error {
	s.obs = make([][][][]stats.ClusterSum, len(s.Models))
	for mi := range s.obs {
		s.obs[mi] = make([][][]stats.ClusterSum, len(Ages))
		for ai := range s.obs[mi] {
			s.obs[mi][ai] = make([][]stats.ClusterSum, len(s.Metrics))
		}
	}
	for _, b := range s.Benchmarks {
		for _, r := range b.Runs {
			if err := s.loadRun(b, r); err != nil {
				return err
			}
		}
	}
	return nil
}

func (s *Study) loadRun(b *Bench, r Run) error {
	path := layout.Run{Dir: r.Path}.Scores()
	var nulls, unpublished int
	err := artifacts.EachScore(path, func(_ int, sc artifacts.Score) error {
		if sc.Passed == nil {
			nulls++
			return nil
		}
		scen, ok := b.Scenarios[sc.ID]
		if !ok {
			return artifacts.FieldErrorf("id", "scenario %q is not in %s", sc.ID, layout.Bench{Dir: b.Dir}.Scenarios())
		}
		k, pub, ok := s.metricOf(b, sc.MetricID, sc.ID)
		if !ok {
			unpublished++
			return nil
		}
		m := s.Metrics[k]
		age, _ := scenarioAge(scen)
		ai := AgeIndex(age)
		base := m.base(artifacts.BaseIDOf(pub))
		cs := s.obs[r.Model][ai][k]
		for len(cs) <= base {
			cs = append(cs, stats.ClusterSum{})
		}
		if *sc.Passed {
			cs[base].Sum++
			cs[base].SumSq++
		}
		cs[base].N++
		s.obs[r.Model][ai][k] = cs
		s.recordVerdict(m, pub, r, b, sc)
		return nil
	})
	if err != nil {
		return err
	}
	if nulls > 0 {
		s.Warnings = append(s.Warnings, fmt.Sprintf("%s: %d row(s) without a verdict are not counted", path, nulls))
	}
	if unpublished > 0 {
		s.Warnings = append(s.Warnings, fmt.Sprintf("%s: %d row(s) of metrics that are not in %s or %s are not published", path, unpublished, TaxonomyFile, NutritionFile))
	}
	return nil
}

// recordVerdict keeps, per model and published scenario, the judged row
// with the lowest sample (the first one met on a tie).
func (s *Study) recordVerdict(m *Metric, pub string, r Run, b *Bench, sc artifacts.Score) {
	i := m.row(pub)
	if i < 0 {
		return
	}
	row := &m.Scenarios[i]
	if v, ok := row.Verdicts[r.Model]; ok && v.Sample <= sc.Sample {
		return
	}
	present := false
	if sc.Present != nil {
		present = *sc.Present
	} else {
		present = *sc.Passed == (m.Type == string(config.Positive))
	}
	row.Verdicts[r.Model] = Verdict{Present: present, Passed: *sc.Passed, Sample: sc.Sample, Bench: b.Slug, RunDir: r.RunDir, RowID: sc.ID, Justification: sc.Justification, Evidence: artifacts.EvidenceQuotes(sc)}
}
