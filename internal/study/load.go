package study

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/fsx"
	"github.com/impactbench/impactbench/internal/layout"
	"github.com/impactbench/impactbench/internal/stats"
)

// Study is a study's inputs resolved against its benchmarks, with every
// model's judged rows tallied by metric, age group and base scenario:
// what Compute and publish read.
type Study struct {
	Dir    string // the benchmarks directory
	Inputs *Inputs
	// Benchmarks are the benchmarks the taxonomy or the label uses, by slug.
	Benchmarks []*Bench
	// Metrics are the published metrics: the taxonomy's in its order, then
	// the label's that the taxonomy lacks.
	Metrics []*Metric
	// Models are the models.yaml entries with score rows, in file order.
	Models []config.StudyModel
	// Ages are the age groups that occur, in Ages order.
	Ages     []string
	Warnings []string

	byKey map[string]int
	// obs[model][age][metric] has one ClusterSum per Metric.Bases entry
	// (N = 0 where the model has no judged row of that base scenario).
	obs [][][][]stats.ClusterSum
	// calib is the judge calibration of each model's metrics (calib.go).
	calib calibState
	// refused[model] is the model's provider safety stops per benchmark
	// (refused.go).
	refused [][]BenchRefused
	// conf and alpha are set by AtLevel (0: Conf and Alpha).
	conf, alpha float64
}

// Bench is one benchmark of the study.
type Bench struct {
	Slug   string
	Dir    string
	Config *config.Benchmark
	// Runs are its run directories that hold a scores.json.
	Runs []Run
	// Scenarios by id (nil when scenarios.json is missing).
	Scenarios map[string]*artifacts.Scenario
	// Order is the scenario ids in file order.
	Order []string
}

// Run is one runs/<run_dir> of a benchmark and the model it belongs to.
type Run struct {
	RunDir string
	Path   string // the run directory
	Model  int    // index in Study.Models
}

// Metric is one published metric ("<benchmark>__<metric_id>").
type Metric struct {
	Key            string
	Bench          string // its benchmark's slug
	ID             string // its id in that benchmark
	Name           string
	Type           string // positive or negative
	Definition     string
	Contributor    string
	MattersBecause string
	// LabelID is its id in the nutritional-label benchmark, when it has a
	// copy there, and LabelName the copy's name (the label shows it).
	LabelID, LabelName string
	// Bases are its base scenarios (the clusters), in first-seen order.
	Bases []string
	// Scenarios are its rows in scenario-index.json.
	Scenarios []ScenarioRow
}

// ScenarioRow is one published scenario of a metric (one demographic
// variant of a base scenario), with the verdict each model got on it.
type ScenarioRow struct {
	ID    string // the published scenario id
	Bench string // the benchmark whose files hold it (the index's "benchmark")
	Title string
	Age   string
	// Scenario is the scenarios.json row it was published from.
	Scenario *artifacts.Scenario
	// Verdicts by model index: the judged row the site shows.
	Verdicts map[int]Verdict
}

// Verdict is the judged row a model's scenario file and pill show: the
// lowest judged sample of that scenario (num_samples > 1: the scores use
// every sample, the site shows one).
type Verdict struct {
	Present       bool
	Passed        bool
	Sample        int
	Bench         string // the benchmark the row is in (the label benchmark for an alias)
	RunDir        string
	RowID         string // the scenario id in that benchmark
	Justification string
	// Evidence is the quotes the verdict's judges cited
	// (artifacts.EvidenceQuotes): the study site marks them in the
	// transcript.
	Evidence []string
}

// MetricByKey returns a published metric.
func (s *Study) MetricByKey(key string) (*Metric, bool) {
	i, ok := s.byKey[key]
	if !ok {
		return nil, false
	}
	return s.Metrics[i], true
}

// Clusters is a model's clusters on a metric at an age group (indexes in
// Models, Ages — see AgeIndex — and Metrics): one per base scenario of
// Metric.Bases, N = 0 where it has no judged row; nil when it has none.
func (s *Study) Clusters(model, age, metric int) []stats.ClusterSum {
	return s.obs[model][age][metric]
}

// Bench returns the benchmark with that slug.
func (s *Study) Bench(slug string) *Bench {
	for _, b := range s.Benchmarks {
		if b.Slug == slug {
			return b
		}
	}
	return nil
}

// ref is one place a metric key is named: file and entry.
type ref struct {
	file, entry string
	line        int
	label       string // label_metric_id given there
}

// Load reads the study in the benchmarks directory dir: the three input
// files, every benchmark they name (benchmark.yaml, scenarios.json) and the
// scores.json of every run directory (and each benchmark's results.json,
// for judge calibration and provider safety stops). Every bad input is reported with its
// file, entry and key (an *InputError, a *config.Error or an
// *artifacts.FileError; all exit 2): a metric key no benchmark.yaml
// defines, a run directory without a models.yaml entry, duplicate ids, an
// age that is not a child's or an adult's, a score row of a scenario that
// does not exist.
func Load(dir string) (*Study, error) {
	in, err := LoadInputs(dir)
	if err != nil {
		return nil, err
	}
	s := &Study{Dir: dir, Inputs: in, byKey: map[string]int{}}
	s.Warnings = append(s.Warnings, in.Warnings...)
	refs := s.collectRefs()
	var ps problems
	if err := s.loadBenchmarks(refs, &ps); err != nil {
		return nil, err
	}
	s.resolveMetrics(refs, &ps)
	s.resolveRuns(&ps)
	if err := ps.err(); err != nil {
		return nil, err
	}
	if err := s.loadScenarios(); err != nil {
		return nil, err
	}
	if err := s.loadScores(); err != nil {
		return nil, err
	}
	if err := s.loadResults(); err != nil {
		return nil, err
	}
	s.finish()
	return s, nil
}

// collectRefs lists every metric key the taxonomy and the label name, in
// publish order, with each place it is named.
func (s *Study) collectRefs() (refs map[string][]ref) {
	refs = map[string][]ref{}
	in := s.Inputs
	var order []string
	add := func(key string, r ref) {
		if _, seen := refs[key]; !seen {
			order = append(order, key)
		}
		refs[key] = append(refs[key], r)
	}
	for i, a := range in.Taxonomy.Areas {
		for j, sub := range a.Subareas {
			se := indexPath(joinPath(indexPath("areas", i), "subareas"), j)
			if len(sub.Groups) == 0 {
				for k, m := range sub.Metrics {
					e := joinPath(indexPath(joinPath(se, "metrics"), k), "id")
					add(m.ID, ref{file: in.TaxonomyPath(), entry: e, line: in.taxLines.line(e)})
				}
			}
			for g, grp := range sub.Groups {
				for k, key := range grp.MetricIDs {
					e := indexPath(joinPath(indexPath(joinPath(se, "groups"), g), "metric_ids"), k)
					add(key, ref{file: in.TaxonomyPath(), entry: e, line: in.taxLines.line(e)})
				}
			}
		}
	}
	for i, c := range in.Nutrition {
		for k, r := range c.Metrics {
			e := indexPath(joinPath(indexPath("", i), "metrics"), k)
			add(r.ID, ref{file: in.NutritionPath(), entry: e, line: in.nutLines.line(e), label: r.LabelMetricID})
		}
	}
	for _, k := range order {
		if _, _, ok := SplitKey(k); ok {
			s.byKey[k] = len(s.Metrics)
			s.Metrics = append(s.Metrics, &Metric{Key: k})
		}
	}
	return refs
}

// loadBenchmarks loads the benchmark.yaml of every benchmark a key names
// (and the label benchmark when an alias needs it). A damaged
// benchmark.yaml is returned as is (its own *config.Error).
func (s *Study) loadBenchmarks(refs map[string][]ref, ps *problems) error {
	need := map[string][]ref{}
	for _, m := range s.Metrics {
		b, _, _ := SplitKey(m.Key)
		need[b] = append(need[b], refs[m.Key][0])
		for _, r := range refs[m.Key] {
			if r.label != "" {
				need[LabelBenchmark] = append(need[LabelBenchmark], r)
			}
		}
	}
	slugs := make([]string, 0, len(need))
	for b := range need {
		slugs = append(slugs, b)
	}
	sort.Strings(slugs)
	for _, slug := range slugs {
		bdir := filepath.Join(s.Dir, slug)
		if _, err := os.Stat(layout.BenchmarkPath(bdir)); errors.Is(err, fs.ErrNotExist) {
			r := need[slug][0]
			ps.add(r.file, r.line, r.entry, slug, "no benchmark %s (%s has no %s)%s", slug, bdir, layout.BenchmarkFile, didYouMean(slug, benchmarkDirs(s.Dir)))
			continue
		}
		cfg, err := config.LoadBenchmark(bdir)
		if err != nil {
			return err
		}
		s.Benchmarks = append(s.Benchmarks, &Bench{Slug: slug, Dir: bdir, Config: cfg})
	}
	return s.warnUnused(need)
}

// warnUnused notes benchmarks with results that the study does not use.
// Its error is the study folder's over layout.MaxBenchmarkEntries; an
// unreadable folder has nothing to warn about.
func (s *Study) warnUnused(used map[string][]ref) error {
	entries, err := fsx.ReadDir(s.Dir, layout.MaxBenchmarkEntries, fs.DirEntry.IsDir)
	var many *fsx.TooManyEntriesError
	if errors.As(err, &many) {
		return err
	}
	for _, e := range entries {
		if !e.IsDir() || used[e.Name()] != nil {
			continue
		}
		if dirs, _ := layout.ListRunDirs(filepath.Join(s.Dir, e.Name())); len(dirs) > 0 {
			s.Warnings = append(s.Warnings, fmt.Sprintf("benchmarks/%s has results but no metric of it is in %s or %s: not part of the study", e.Name(), TaxonomyFile, NutritionFile))
		}
	}
	return nil
}

// resolveMetrics checks every key against its benchmark.yaml and fills in
// the metric's name, type and texts; and checks the label aliases.
func (s *Study) resolveMetrics(refs map[string][]ref, ps *problems) {
	for _, m := range s.Metrics {
		slug, id, _ := SplitKey(m.Key)
		b := s.Bench(slug)
		if b == nil {
			continue // reported by loadBenchmarks
		}
		bm, ok := b.Config.MetricByID(id)
		if !ok {
			for _, r := range refs[m.Key] {
				ps.add(r.file, r.line, r.entry, m.Key, "%s defines no metric %s (it has %s)%s", b.Config.Path, id, metricIDs(b.Config), didYouMean(id, benchMetricIDs(b.Config)))
			}
			continue
		}
		m.Bench, m.ID, m.Name, m.Type, m.Definition = slug, id, bm.Name, string(bm.Type), bm.Definition
		m.Contributor = extraString(bm.Extra, "contributor")
		if m.Contributor == "" {
			m.Contributor = b.Config.Name
		}
		m.MattersBecause = extraString(bm.Extra, "mattersBecause", "matters_because")
		s.resolveAlias(m, refs[m.Key], ps)
	}
}

// resolveAlias checks a key's label_metric_id: defined in the label
// benchmark, of the same type, one alias per key and one key per alias.
func (s *Study) resolveAlias(m *Metric, rs []ref, ps *problems) {
	lb := s.Bench(LabelBenchmark)
	for _, r := range rs {
		if r.label == "" {
			continue
		}
		if lb == nil {
			continue // reported: no label benchmark
		}
		lm, ok := lb.Config.MetricByID(r.label)
		switch {
		case !ok:
			ps.add(r.file, r.line, r.entry+".label_metric_id", r.label, "%s defines no metric %s (it has %s)", lb.Config.Path, r.label, metricIDs(lb.Config))
		case string(lm.Type) != m.Type:
			ps.add(r.file, r.line, r.entry+".label_metric_id", r.label, "%s %s is %s but %s is %s: an alias must measure the same thing", LabelBenchmark, r.label, lm.Type, m.Key, m.Type)
		case m.LabelID != "" && m.LabelID != r.label:
			ps.add(r.file, r.line, r.entry+".label_metric_id", r.label, "%s is already aliased to %s %s", m.Key, LabelBenchmark, m.LabelID)
		default:
			for _, o := range s.Metrics {
				if o != m && o.LabelID == r.label {
					ps.add(r.file, r.line, r.entry+".label_metric_id", r.label, "%s %s is already the alias of %s", LabelBenchmark, r.label, o.Key)
				}
			}
			m.LabelID, m.LabelName = r.label, lm.Name
		}
	}
}

func metricIDs(b *config.Benchmark) string {
	if len(b.Metrics) == 0 {
		return "no metrics"
	}
	ids := make([]string, len(b.Metrics))
	for i, m := range b.Metrics {
		ids[i] = m.ID
	}
	if len(ids) > 12 {
		return strings.Join(ids[:5], ", ") + ", …, " + ids[len(ids)-1]
	}
	return strings.Join(ids, ", ")
}

func extraString(kv []config.KV, keys ...string) string {
	for _, k := range keys {
		for _, p := range kv {
			if p.Key == k {
				if v, ok := p.Value.(string); ok {
					return v
				}
			}
		}
	}
	return ""
}

// resolveRuns maps every run directory of the study's benchmarks to its
// models.yaml entry; one without an entry is an error.
func (s *Study) resolveRuns(ps *problems) {
	models := s.Inputs.Models
	byRun := map[string]int{}
	for i, m := range models.Models {
		byRun[m.RunDir] = i
	}
	used := map[int]bool{}
	// A run directory without an entry is one problem however many
	// benchmarks hold it (17 lines for one missing model buried the rest).
	var missing []string
	missingIn := map[string][]string{}
	for _, b := range s.Benchmarks {
		dirs, err := layout.ListRunDirs(b.Dir)
		if err != nil {
			ps.add(b.Dir, 0, layout.RunsDirName, "", "%v", err)
			continue
		}
		for _, d := range dirs {
			name := filepath.Base(d)
			i, ok := byRun[name]
			if !ok {
				if missingIn[name] == nil {
					missing = append(missing, name)
				}
				missingIn[name] = append(missingIn[name], layout.Run{Dir: d}.Scores())
				continue
			}
			used[i] = true
			b.Runs = append(b.Runs, Run{RunDir: name, Path: d, Model: i})
		}
	}
	for _, name := range missing {
		where := missingIn[name]
		also := ""
		if n := len(where) - 1; n == 1 {
			also = " (and in 1 other benchmark)"
		} else if n > 1 {
			also = fmt.Sprintf(" (and in %d other benchmarks)", n)
		}
		ps.add(models.Path, 0, "models", name, "no entry has run_dir %q, but %s exists%s; add {run_dir: %s, id: …, name: …, provider: …, releaseYear: …, surfaces: [full]} (or move the run directory out of %s/)",
			name, where[0], also, name, layout.RunsDirName)
	}
	// Study.Models keeps models.yaml order, only models with runs.
	index := map[int]int{}
	for i, m := range models.Models {
		if used[i] {
			index[i] = len(s.Models)
			s.Models = append(s.Models, m)
		} else {
			s.Warnings = append(s.Warnings, fmt.Sprintf("%s:%d: model %s has no run directory %q in the study's benchmarks: left out", models.Path, m.Line, m.ID, m.RunDir))
		}
	}
	for _, b := range s.Benchmarks {
		for j := range b.Runs {
			b.Runs[j].Model = index[b.Runs[j].Model]
		}
	}
}

// finish pads the tallies and sets the age groups that occur.
func (s *Study) finish() {
	seen := map[int]bool{}
	for mi := range s.obs {
		for ai := range s.obs[mi] {
			for k := range s.obs[mi][ai] {
				cs := s.obs[mi][ai][k]
				if len(cs) > 0 {
					seen[ai] = true
				}
				if n := len(s.Metrics[k].Bases); len(cs) < n && len(cs) > 0 {
					s.obs[mi][ai][k] = append(cs, make([]stats.ClusterSum, n-len(cs))...)
				}
			}
		}
	}
	for ai, a := range Ages {
		if seen[ai] {
			s.Ages = append(s.Ages, a)
		}
	}
	if !slices.Equal(s.Ages, Ages) && len(s.Models) > 0 {
		s.Warnings = append(s.Warnings, fmt.Sprintf("only the age groups %v have judged rows", s.Ages))
	}
}
