package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/goccy/go-yaml/ast"
	"github.com/impactbench/impactbench/internal/ids"
	"github.com/impactbench/impactbench/internal/layout"
)

func benchTopKeys() []string { return []string{"name", "description", "scenario", "metrics"} }
func benchScenarioKeys() []string {
	return []string{"user_context", "implicit_context", "target_system_prompt"}
}
func metricKeys() []string { return []string{"id", "name", "type", "definition", "examples"} }

// LoadBenchmark reads a benchmark.yaml; path may be the file or its
// directory. name and description are required; metrics may be absent
// (before gen_metrics). Unknown top-level keys are kept in Extra with a
// warning (benchmarks are user documents), but a near miss of a known key
// (descripton) is an error. Unknown metric keys go to Metric.Extra.
func LoadBenchmark(path string) (*Benchmark, error) {
	file, err := benchmarkFile(path)
	if err != nil {
		return nil, err
	}
	src, err := readCapped(file, MaxBenchmarkBytes)
	if err != nil {
		var ce *Error
		if errors.As(err, &ce) {
			return nil, err
		}
		if errors.Is(err, fs.ErrNotExist) {
			return nil, &Error{File: file, Problems: []Problem{{
				Msg: "benchmark.yaml not found; create it with name:, description: and (optionally) metrics: — `impactbench init` writes an example in benchmarks/example/",
				Err: err,
			}}}
		}
		return nil, fmt.Errorf("benchmark: %w", err)
	}
	abs, err := filepath.Abs(file)
	if err != nil {
		return nil, fmt.Errorf("benchmark: %w", err)
	}
	b, ps := decodeBenchmark(file, src)
	if err := ps.err(); err != nil {
		return nil, err
	}
	b.Path = abs
	b.Dir = filepath.Dir(abs)
	b.Slug = filepath.Base(b.Dir)
	return b, nil
}

// BenchmarkName is the name: of the benchmark.yaml at path (the file or
// its directory), read with every bound LoadBenchmark applies, or "" when
// the file is missing, refused or has no name. It is for displays that show
// what they can of a half-finished benchmark (status): a problem elsewhere
// in the file does not lose the name.
func BenchmarkName(path string) string {
	file, err := benchmarkFile(path)
	if err != nil {
		return ""
	}
	src, err := readCapped(file, MaxBenchmarkBytes)
	if err != nil {
		return ""
	}
	b, _ := decodeBenchmark(file, src)
	return b.Name
}

// benchmarkFile turns a benchmark directory into its benchmark.yaml.
func benchmarkFile(path string) (string, error) {
	st, err := os.Stat(path)
	if err == nil && st.IsDir() {
		return layout.BenchmarkPath(path), nil
	}
	return path, nil
}

type benchDecoder struct {
	*tree
	ps       *problems
	b        *Benchmark
	warnings []string
}

// decodeBenchmark decodes and validates; the problems are returned rather
// than an error so SaveMetrics can re-check its own output.
func decodeBenchmark(file string, src []byte) (*Benchmark, *problems) {
	ps := &problems{file: file}
	b := &Benchmark{}
	body, t, ok := parseYAML(src, ps)
	if !ok {
		return b, ps
	}
	d := &benchDecoder{tree: t, ps: ps, b: b}
	d.decode(body)
	t.checkFileUTF8(src)
	b.Warnings = d.warnings
	return b, ps
}

func (d *benchDecoder) warnf(line, col int, format string, args ...any) {
	loc := Problem{Line: line, Col: col}.location(d.ps.file)
	d.warnings = append(d.warnings, loc+": "+fmt.Sprintf(format, args...))
}

func (d *benchDecoder) decode(body ast.Node) {
	var entries []entry
	if body != nil {
		if _, isMap := d.deref(body).(*ast.MappingNode); !isMap {
			line, col := nodePos(body)
			d.ps.add(line, col, "", "benchmark.yaml must be a mapping with name:, description:, scenario: and metrics:, got %s", describe(d.deref(body)))
			return
		}
		entries, _ = d.mapping(body, "")
		if d.foreign(entries, benchTopKeys(), layout.BenchmarkFile) {
			return
		}
	}
	seen := map[string]bool{}
	misspelt := map[string]bool{}
	for _, e := range entries {
		if !slices.Contains(benchTopKeys(), e.key) {
			if s := suggest(e.key, benchTopKeys()); s != "" {
				d.ps.add(e.line(), e.col(), e.key, "unknown key; did you mean %s?", s)
				misspelt[s] = true
				continue
			}
			v, _ := d.value(e.value, e.key, 0)
			d.b.Extra = append(d.b.Extra, KV{Key: e.key, Value: v})
			d.warnf(e.line(), e.col(), "unknown key %s is kept but not used", e.key)
			continue
		}
		seen[e.key] = true
		switch e.key {
		case "name":
			d.b.Name = d.required(e, "a short display name")
		case "description":
			d.b.Description = d.required(e, "what the benchmark measures; it is given to the metric and scenario generators")
		case "scenario":
			d.scenario(e.value)
		case "metrics":
			d.metrics(e.value)
		}
	}
	for _, k := range []string{"name", "description"} {
		if !seen[k] && !misspelt[k] {
			d.ps.add(0, 0, k, "required")
		}
	}
}

func (d *benchDecoder) required(e entry, what string) string {
	s, ok := d.scalarText(e.value, e.key)
	if ok && strings.TrimSpace(s) == "" {
		line, col := nodePos(e.value)
		if isNull(d.deref(e.value)) {
			line, col = e.line(), e.col()
		}
		d.ps.add(line, col, e.key, "must not be empty (%s)", what)
	}
	return s
}

func (d *benchDecoder) scenario(raw ast.Node) {
	entries, ok := d.mapping(raw, "scenario")
	if !ok {
		return
	}
	sc := &d.b.Scenario
	for _, e := range entries {
		f := joinField("scenario", e.key)
		if !slices.Contains(benchScenarioKeys(), e.key) {
			if s := suggest(e.key, benchScenarioKeys()); s != "" {
				d.ps.add(e.line(), e.col(), f, "unknown key; did you mean %s?", s)
			} else {
				d.warnf(e.line(), e.col(), "unknown key %s is kept in the file but not used", f)
			}
			continue
		}
		s, _ := d.scalarText(e.value, f)
		switch e.key {
		case "user_context":
			sc.UserContext = s
		case "implicit_context":
			sc.ImplicitContext = s
		case "target_system_prompt":
			sc.TargetSystemPrompt = s
		}
	}
}

// metricPos remembers where each field of a metric was, for validation
// messages after the whole metric is read.
type metricPos struct {
	start  [2]int
	fields map[string][2]int
}

func (p metricPos) at(field string) (int, int) {
	if xy, ok := p.fields[field]; ok {
		return xy[0], xy[1]
	}
	return p.start[0], p.start[1]
}

func (d *benchDecoder) metrics(raw ast.Node) {
	items, ok := d.sequence(raw, "metrics")
	if !ok {
		d.typeProblem(raw, "metrics", "a list of metrics (- id: …)")
		return
	}
	if len(items) > MaxMetrics {
		line, col := nodePos(raw)
		d.ps.add(line, col, "metrics", "%d metrics, over the limit of %d", len(items), MaxMetrics)
		return
	}
	firstID := map[string]int{}
	for i, it := range items {
		m, pos, ok := d.metric(it, indexField("metrics", i))
		if !ok {
			continue
		}
		report := func(field, msg string) {
			line, col := pos.at(field)
			d.ps.add(line, col, metricField(i, field), "%s", msg)
		}
		checkMetric(m, report)
		if m.ID != "" {
			line, _ := pos.at("id")
			if first, dup := firstID[m.ID]; dup {
				report("id", fmt.Sprintf("duplicate metric id %q (first at line %d); ids must be unique", m.ID, first))
			} else {
				firstID[m.ID] = line
			}
		}
		d.b.Metrics = append(d.b.Metrics, m)
	}
}

func metricField(i int, field string) string {
	return joinField(indexField("metrics", i), field)
}

func (d *benchDecoder) metric(raw ast.Node, field string) (Metric, metricPos, bool) {
	var m Metric
	entries, ok := d.mapping(raw, field)
	if !ok {
		return m, metricPos{}, false
	}
	line, col := nodePos(d.deref(raw))
	pos := metricPos{start: [2]int{line, col}, fields: map[string][2]int{}}
	for _, e := range entries {
		f := joinField(field, e.key)
		if !slices.Contains(metricKeys(), e.key) {
			// Near misses would silently become Extra and leave the real
			// field empty.
			if s := suggest(e.key, metricKeys()); s != "" {
				d.ps.add(e.line(), e.col(), f, "unknown key; did you mean %s?", s)
				continue
			}
			v, ok := d.value(e.value, f, 0)
			if ok {
				m.Extra = append(m.Extra, KV{Key: e.key, Value: v})
			}
			continue
		}
		vl, vc := nodePos(e.value)
		if isNull(d.deref(e.value)) {
			vl, vc = e.line(), e.col()
		}
		pos.fields[e.key] = [2]int{vl, vc}
		switch e.key {
		case "id":
			m.ID, _ = d.scalarText(e.value, f)
		case "name":
			m.Name, _ = d.scalarText(e.value, f)
		case "type":
			s, _ := d.scalarText(e.value, f)
			m.Type = MetricType(s)
		case "definition":
			m.Definition, _ = d.scalarText(e.value, f)
		case "examples":
			m.Examples = d.examples(e.value, f)
		}
	}
	return m, pos, true
}

// examples accepts a list of strings or one string (one example).
func (d *benchDecoder) examples(raw ast.Node, field string) []string {
	n := d.deref(raw)
	if _, isSeq := n.(*ast.SequenceNode); !isSeq {
		s, ok := d.scalarText(raw, field)
		if !ok || s == "" {
			return nil
		}
		return []string{s}
	}
	items, _ := d.sequence(raw, field)
	out := make([]string, 0, len(items))
	for i, it := range items {
		if isNull(d.deref(it)) {
			continue
		}
		if s, ok := d.scalarText(it, indexField(field, i)); ok {
			out = append(out, s)
		}
	}
	return out
}

// checkMetric applies the rules shared by LoadBenchmark and SaveMetrics.
func checkMetric(m Metric, report func(field, msg string)) {
	label := "metric"
	if m.ID != "" {
		label = fmt.Sprintf("metric %q", m.ID)
	}
	if strings.TrimSpace(m.ID) == "" {
		report("id", "required (e.g. m01); it prefixes scenario ids and names cache files")
	} else if why := ids.Problem(m.ID, ids.MaxName); why != "" {
		report("id", fmt.Sprintf("%q is not safe as a file name (%s); use letters, digits, '-', '_' and '.'", m.ID, why))
	}
	if strings.TrimSpace(m.Name) == "" {
		report("name", label+": name is required")
	}
	switch m.Type {
	case Positive, Negative:
	case "":
		report("type", label+": type is required; allowed values: positive (behaviour should be present), negative (behaviour should be absent)")
	default:
		report("type", fmt.Sprintf("%s: unknown type %q; allowed values: positive, negative", label, string(m.Type)))
	}
	if strings.TrimSpace(m.Definition) == "" {
		report("definition", label+": definition is required (it is the only text the judge sees)")
	}
}

// ValidateMetrics checks metrics before they are written (gen_metrics
// output): the same rules LoadBenchmark applies. The error is an *Error
// with fields like metrics[2].type and no file positions.
func ValidateMetrics(metrics []Metric) error {
	ps := &problems{}
	first := map[string]int{}
	for i, m := range metrics {
		report := func(field, msg string) { ps.add(0, 0, metricField(i, field), "%s", msg) }
		checkMetric(m, report)
		seen := map[string]bool{}
		for _, kv := range m.Extra {
			switch {
			case slices.Contains(metricKeys(), kv.Key) || kv.Key == "":
				report(kv.Key, fmt.Sprintf("extra key %q collides with a metric field or is empty", kv.Key))
			case seen[kv.Key]:
				report(kv.Key, "extra key appears twice")
			}
			seen[kv.Key] = true
			if _, err := normalizeValue(kv.Value); err != nil {
				report(kv.Key, err.Error())
			}
		}
		if m.ID == "" {
			continue
		}
		if j, dup := first[m.ID]; dup {
			report("id", fmt.Sprintf("duplicate metric id %q (first at metrics[%d])", m.ID, j))
		} else {
			first[m.ID] = i
		}
	}
	return ps.err()
}
