package study

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/ids"
	"github.com/impactbench/impactbench/internal/layout"
)

// The study's input files, in the benchmarks directory beside the
// benchmark folders (where upstream's publish script reads them): layout's
// names, under the names the study's callers know them by.
const (
	TaxonomyFile  = layout.StudyTaxonomyFile
	NutritionFile = layout.StudyNutritionFile
	ModelsFile    = layout.StudyModelsFile
	// ResultFile is what `impactbench study` writes, beside them.
	ResultFile = layout.StudyResultFile
	// LabelBenchmark is the benchmark whose metrics are copies of other
	// benchmarks' metrics, run for models that only get a nutrition label
	// (upstream's benchmarks/nutritional-label); nutrition-label.json maps
	// each of its metric ids to a source metric with label_metric_id.
	LabelBenchmark = "nutritional-label"
)

// maxInputBytes bounds taxonomy.json and nutrition-label.json.
const maxInputBytes = 16 << 20

// Taxonomy is taxonomy.json: areas → subareas → named groups of metric keys
// ("<benchmark>__<metric_id>"). A metric may sit in several subareas.
type Taxonomy struct {
	Areas []Area `json:"areas"`
}

// Area is one top-level area (physical, psychological, societal).
type Area struct {
	ID       string    `json:"id"`
	Name     string    `json:"name"`
	Icon     string    `json:"icon"`
	Color    string    `json:"color"`
	Subareas []Subarea `json:"subareas"`
}

// Subarea holds named groups of metric keys. Metrics, when given in the
// input, is only used when there are no groups (then its ids are the
// subarea's metrics); publish re-derives it from the groups.
type Subarea struct {
	ID      string      `json:"id"`
	Name    string      `json:"name"`
	Icon    string      `json:"icon"`
	Metrics []TaxMetric `json:"metrics,omitempty"`
	Groups  []Group     `json:"groups,omitempty"`
}

// Group is a named list of metric keys within a subarea.
type Group struct {
	Name      string   `json:"name"`
	MetricIDs []string `json:"metric_ids"`
}

// TaxMetric is a hydrated metric of a subarea: key, name and type from its
// benchmark.yaml.
type TaxMetric struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	Type string `json:"type"`
}

// Keys is the subarea's metric keys: the groups' ids de-duplicated in order,
// or, without groups, the ids of Metrics.
func (s Subarea) Keys() []string {
	var out []string
	seen := map[string]bool{}
	add := func(k string) {
		if !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	if len(s.Groups) == 0 {
		for _, m := range s.Metrics {
			add(m.ID)
		}
		return out
	}
	for _, g := range s.Groups {
		for _, k := range g.MetricIDs {
			add(k)
		}
	}
	return out
}

// Category is one nutrition-label.json entry: a label category ("Avoids
// Sycophancy") and its metrics.
type Category struct {
	ID          string        `json:"id"`
	Label       string        `json:"label"`
	Description string        `json:"description"`
	Metrics     []CategoryRef `json:"metrics"`
}

// CategoryRef is one metric of a category: its key and, for a metric the
// nutritional-label benchmark copies, that copy's metric id there
// (label_metric_id). In the file it is the key as a string, or
// {"id": key, "label_metric_id": "m07"}.
type CategoryRef struct {
	ID            string `json:"id"`
	LabelMetricID string `json:"label_metric_id,omitempty"`
}

// UnmarshalJSON accepts both spellings.
func (r *CategoryRef) UnmarshalJSON(b []byte) error {
	if s := bytes.TrimSpace(b); len(s) > 0 && s[0] == '"' {
		return json.Unmarshal(s, &r.ID)
	}
	type plain CategoryRef
	var p plain
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return err
	}
	*r = CategoryRef(p)
	return nil
}

// MarshalJSON writes the short form when there is no alias.
func (r CategoryRef) MarshalJSON() ([]byte, error) {
	if r.LabelMetricID == "" {
		return json.Marshal(r.ID)
	}
	type plain CategoryRef
	return json.Marshal(plain(r))
}

// Inputs are the study's three input files, decoded and checked for shape
// (not yet against the benchmarks: see Load).
type Inputs struct {
	Dir       string // the benchmarks directory
	Taxonomy  Taxonomy
	Nutrition []Category
	Models    *config.StudyModels

	taxLines, nutLines jsonLines
	Warnings           []string
}

// TaxonomyPath, NutritionPath and ModelsPath are the input files.
func (in *Inputs) TaxonomyPath() string  { return filepath.Join(in.Dir, TaxonomyFile) }
func (in *Inputs) NutritionPath() string { return filepath.Join(in.Dir, NutritionFile) }
func (in *Inputs) ModelsPath() string    { return filepath.Join(in.Dir, ModelsFile) }

// LoadInputs reads taxonomy.json, nutrition-label.json and models.yaml from
// the benchmarks directory dir. Every problem is reported at once: an
// *InputError (JSON files) or a *config.Error (models.yaml), both exit 2.
// A missing taxonomy.json or models.yaml is an error that says how to
// create them; nutrition-label.json is optional.
func LoadInputs(dir string) (*Inputs, error) {
	in := &Inputs{Dir: dir}
	var ps problems
	if err := readJSONInput(in.TaxonomyPath(), &in.Taxonomy, &in.taxLines, &ps); errors.Is(err, fs.ErrNotExist) {
		ps.add(in.TaxonomyPath(), 0, "", "", "not found; `impactbench init --study` writes an example (areas → subareas → groups of \"<benchmark>__<metric_id>\" keys)")
	} else if err == nil {
		in.checkTaxonomy(&ps)
	}
	if err := readJSONInput(in.NutritionPath(), &in.Nutrition, &in.nutLines, &ps); err == nil {
		in.checkNutrition(&ps)
	} else if errors.Is(err, fs.ErrNotExist) {
		in.Warnings = append(in.Warnings, in.NutritionPath()+": not found; the study has no nutrition label")
	}
	models, merr := config.LoadStudyModels(in.ModelsPath())
	if err := ps.err(); err != nil {
		if merr != nil {
			return nil, errors.Join(err, merr) // every problem at once
		}
		return nil, err
	}
	if merr != nil {
		return nil, merr
	}
	in.Models = models
	return in, nil
}

// readJSONInput decodes a JSON input file into v, recording its value
// lines; problems go to ps. The returned error is fs.ErrNotExist for a
// missing file, errBadInput after a recorded problem.
func readJSONInput(path string, v any, lines *jsonLines, ps *problems) error {
	data, err := artifacts.LimitedReadFile(path, maxInputBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if err != nil {
		var fe *artifacts.FileError
		if errors.As(err, &fe) {
			err = fe.Err // the problem names the file already
		}
		ps.add(path, 0, "", "", "%v", err)
		return errBadInput
	}
	idx, err := indexJSON(data)
	var le *lineError
	if errors.As(err, &le) {
		ps.add(path, le.line, "", "", "%s", le.msg)
		return errBadInput
	}
	*lines = idx
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var te *json.UnmarshalTypeError
		msg := err.Error()
		entry := ""
		if errors.As(err, &te) {
			entry = jsonFieldPath(data, te.Field, te.Offset)
			msg = fmt.Sprintf("expected %s, got JSON %s", goTypeName(te.Type.String()), te.Value)
		} else if f, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
			entry = unknownKeyPath(data, f)
			msg = "unknown key " + f + didYouMean(strings.Trim(f, `"`), jsonKeys)
		}
		ps.add(path, idx.line(entry), entry, "", "%s", msg)
		return errBadInput
	}
	return nil
}

var errBadInput = errors.New("bad input")

// unknownKeyPath is the path of the first object that holds key (quoted,
// as encoding/json's message has it), which encoding/json does not say.
func unknownKeyPath(data []byte, quoted string) string {
	re, err := regexp.Compile(regexp.QuoteMeta(quoted) + `\s*:`)
	if err != nil {
		return ""
	}
	loc := re.FindIndex(data)
	if loc == nil {
		return ""
	}
	p, _ := indexJSONUpTo(data, int64(loc[0]), true)
	return p
}

// jsonFieldPath names the path holding byte offset off (encoding/json's
// Field omits array indexes, so the path is recomputed from the offset).
func jsonFieldPath(data []byte, field string, off int64) string {
	idx, err := indexJSONUpTo(data, off, false)
	if err != nil || idx == "" {
		return field
	}
	return idx
}

// indexJSONUpTo returns the path of the last value (with objects, the
// last object) that starts before off.
func indexJSONUpTo(data []byte, off int64, objects bool) (string, error) {
	// Walk with offsets: cheap, error path only.
	best, bestOff := "", int64(-1)
	dec := json.NewDecoder(bytes.NewReader(data))
	var walk func(path string) error
	walk = func(path string) error {
		start := dec.InputOffset()
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		if start <= off && start > bestOff && (!objects || tok == json.Delim('{')) {
			best, bestOff = path, start
		}
		switch tok {
		case json.Delim('{'):
			for dec.More() {
				k, err := dec.Token()
				if err != nil {
					return err
				}
				key, _ := k.(string)
				if err := walk(joinPath(path, key)); err != nil {
					return err
				}
			}
			_, err = dec.Token()
		case json.Delim('['):
			for i := 0; dec.More(); i++ {
				if err := walk(indexPath(path, i)); err != nil {
					return err
				}
			}
			_, err = dec.Token()
		}
		return err
	}
	if err := walk(""); err != nil {
		return "", err
	}
	return best, nil
}

func goTypeName(t string) string {
	switch {
	case t == "string":
		return "a string"
	case strings.HasPrefix(t, "[]"):
		return "a list"
	case strings.HasPrefix(t, "study."), strings.HasPrefix(t, "map"):
		return "an object"
	}
	return t
}

// checkTaxonomy checks the taxonomy's own shape: required names, unique
// area and subarea ids, metric keys spelled <benchmark>__<metric_id>.
func (in *Inputs) checkTaxonomy(ps *problems) {
	file := in.TaxonomyPath()
	at := func(entry, key, format string, args ...any) {
		ps.add(file, in.taxLines.line(entry), entry, key, format, args...)
	}
	if len(in.Taxonomy.Areas) == 0 {
		at("areas", "", "no areas: the taxonomy needs at least one area with a subarea")
	}
	areaIDs, subIDs := map[string]string{}, map[string]string{}
	for i, a := range in.Taxonomy.Areas {
		ae := indexPath("areas", i)
		in.requireID(ps, file, in.taxLines, ae, a.ID, a.Name, areaIDs)
		if len(a.Subareas) == 0 {
			at(joinPath(ae, "subareas"), "", "no subareas")
		}
		for j, s := range a.Subareas {
			se := indexPath(joinPath(ae, "subareas"), j)
			in.requireID(ps, file, in.taxLines, se, s.ID, s.Name, subIDs)
			for gi, g := range s.Groups {
				ge := indexPath(joinPath(se, "groups"), gi)
				if strings.TrimSpace(g.Name) == "" {
					at(joinPath(ge, "name"), "", "required: the group's name")
				}
				if len(g.MetricIDs) == 0 {
					at(joinPath(ge, "metric_ids"), "", "empty group: list its metric keys")
				}
				for k, key := range g.MetricIDs {
					checkKeySpelling(ps, file, in.taxLines, indexPath(joinPath(ge, "metric_ids"), k), key)
				}
			}
			if len(s.Groups) == 0 {
				if len(s.Metrics) == 0 {
					at(se, s.ID, "subarea without metrics: give it groups of metric keys")
				}
				for k, m := range s.Metrics {
					checkKeySpelling(ps, file, in.taxLines, joinPath(indexPath(joinPath(se, "metrics"), k), "id"), m.ID)
				}
			}
		}
	}
}

// requireID checks an entry's id (non-empty, unique within seen) and name.
func (in *Inputs) requireID(ps *problems, file string, lines jsonLines, entry, id, name string, seen map[string]string) {
	switch {
	case strings.TrimSpace(id) == "":
		ps.add(file, lines.line(entry), joinPath(entry, "id"), "", "required")
	case seen[id] != "":
		ps.add(file, lines.line(joinPath(entry, "id")), joinPath(entry, "id"), id, "duplicate id (first at %s)", seen[id])
	default:
		seen[id] = entry
	}
	if strings.TrimSpace(name) == "" {
		ps.add(file, lines.line(entry), joinPath(entry, "name"), "", "required")
	}
}

// checkKeySpelling checks that key looks like <benchmark>__<metric_id>
// and that both halves are ids (internal/ids): the benchmark half becomes
// a directory name under benchmarks/, so "../../outside/x__m01" must never
// reach a path.
func checkKeySpelling(ps *problems, file string, lines jsonLines, entry, key string) {
	bench, metric, ok := SplitKey(key)
	if !ok {
		ps.add(file, lines.line(entry), entry, key, "a metric key is <benchmark>__<metric_id>, e.g. humanebench__m01")
		return
	}
	if p := idsProblem(bench); p != "" {
		ps.add(file, lines.line(entry), entry, key, "the benchmark half of a metric key is a benchmark folder's name in benchmarks/, but %s", p)
	}
	if p := ids.Problem(metric, ids.MaxName); p != "" {
		ps.add(file, lines.line(entry), entry, key, "the metric half of a metric key is a metric id, but %s", p)
	}
}

// idsProblem is what keeps name from being a benchmark folder's name in
// a metric key ("" when it is one). Folder names are longer than metric
// ids: the July 2026 study has one of 115 characters.
func idsProblem(name string) string { return ids.Problem(name, ids.MaxScenario) }

// SplitKey splits "<benchmark>__<metric_id>".
func SplitKey(key string) (bench, metric string, ok bool) {
	i := strings.LastIndex(key, "__")
	if i <= 0 || i+2 >= len(key) {
		return "", "", false
	}
	return key[:i], key[i+2:], true
}

// Key joins a benchmark and a metric id.
func Key(bench, metric string) string { return bench + "__" + metric }

// checkNutrition checks the label's own shape.
func (in *Inputs) checkNutrition(ps *problems) {
	file := in.NutritionPath()
	catIDs := map[string]string{}
	for i, c := range in.Nutrition {
		ce := indexPath("", i)
		switch {
		case strings.TrimSpace(c.ID) == "":
			ps.add(file, in.nutLines.line(ce), joinPath(ce, "id"), "", "required")
		case catIDs[c.ID] != "":
			ps.add(file, in.nutLines.line(joinPath(ce, "id")), joinPath(ce, "id"), c.ID, "duplicate category id (first at %s)", catIDs[c.ID])
		default:
			catIDs[c.ID] = ce
		}
		if strings.TrimSpace(c.Label) == "" {
			ps.add(file, in.nutLines.line(ce), joinPath(ce, "label"), "", "required")
		}
		if len(c.Metrics) == 0 {
			ps.add(file, in.nutLines.line(ce), joinPath(ce, "metrics"), "", "empty category: list its metric keys")
		}
		for k, r := range c.Metrics {
			e := indexPath(joinPath(ce, "metrics"), k)
			checkKeySpelling(ps, file, in.nutLines, e, r.ID)
			if p := ids.Problem(r.LabelMetricID, ids.MaxName); r.LabelMetricID != "" && p != "" {
				ps.add(file, in.nutLines.line(e), e+".label_metric_id", r.LabelMetricID, "a label_metric_id is a metric id of the nutritional-label benchmark, but %s", p)
			}
		}
	}
}
