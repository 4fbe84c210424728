package config

import (
	"errors"
	"fmt"
	"io/fs"
	"regexp"
	"slices"
	"strings"

	"github.com/goccy/go-yaml/ast"

	"github.com/impactbench/impactbench/internal/ids"
	"github.com/impactbench/impactbench/internal/layout"
)

// Surfaces a study model can appear on (impactbench-web's ModelSurface):
// "full" models are ranked over the whole taxonomy, "nutritional-label"
// models only on the nutrition label.
const (
	SurfaceFull             = "full"
	SurfaceNutritionalLabel = "nutritional-label"
)

// StudyModels is a study's models.yaml: which run directory is which
// published model.
type StudyModels struct {
	Path   string // the file as given
	Models []StudyModel
}

// StudyModel is one models.yaml entry. RunDir is the directory name under
// every benchmark's runs/ that holds this model's files; ID is its public
// id (the key in every published file).
type StudyModel struct {
	RunDir      string   `json:"run_dir"`
	ID          string   `json:"id"`
	Name        string   `json:"name"`
	Provider    string   `json:"provider"`
	ReleaseYear int      `json:"releaseYear"`
	Surfaces    []string `json:"surfaces"`
	// Line is the entry's line in models.yaml, for messages about it.
	Line int `json:"-"`
}

// HasSurface reports whether the model appears on surface s.
func (m StudyModel) HasSurface(s string) bool { return slices.Contains(m.Surfaces, s) }

func studyModelKeys() []string {
	return []string{"run_dir", "id", "name", "provider", "releaseYear", "surfaces"}
}

// studyIDPattern is what a public model id may be: it becomes a file name
// (scenarios/<bench>/<id>/…) and a URL path segment on the site.
var studyIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// LoadStudyModels reads a study's models.yaml:
//
//	models:
//	  - {run_dir: gpt-5-chat, id: gpt-5, name: GPT-5, provider: OpenAI, releaseYear: 2025, surfaces: [full]}
//
// Every problem is reported with its line and field (a *Error, exit 2):
// unknown or missing keys, a surface other than full or nutritional-label,
// an id or run_dir that is not a plain file name, and duplicate ids or run
// directories. A missing file wraps fs.ErrNotExist.
func LoadStudyModels(path string) (*StudyModels, error) {
	src, err := readCapped(path, MaxBenchmarkBytes)
	if err != nil {
		var ce *Error
		if errors.As(err, &ce) {
			return nil, err
		}
		if errors.Is(err, fs.ErrNotExist) {
			return nil, &Error{File: path, Problems: []Problem{{
				Msg: "models.yaml not found; `impactbench init --study` writes an example (models: a list of {run_dir, id, name, provider, releaseYear, surfaces})",
				Err: err,
			}}}
		}
		return nil, fmt.Errorf("models.yaml: %w", err)
	}
	ps := &problems{file: path}
	out := &StudyModels{Path: path}
	body, t, ok := parseYAML(src, ps)
	if ok {
		t.checkFileUTF8(src)
		d := &studyModelsDecoder{tree: t, ps: ps, out: out}
		d.decode(body)
	}
	if err := ps.err(); err != nil {
		return nil, err
	}
	return out, nil
}

type studyModelsDecoder struct {
	*tree
	ps  *problems
	out *StudyModels
}

func (d *studyModelsDecoder) decode(body ast.Node) {
	entries, ok := d.mapping(body, "")
	if !ok || body == nil {
		if body == nil {
			d.ps.add(0, 0, "models", "required: a list of {run_dir, id, name, provider, releaseYear, surfaces}")
		}
		return
	}
	if d.foreign(entries, []string{"models"}, layout.StudyModelsFile) {
		return
	}
	found := false
	for _, e := range entries {
		if e.key != "models" {
			msg := "unknown key (models.yaml has one key, models:)"
			if s := suggest(e.key, []string{"models"}); s != "" {
				msg = "unknown key; did you mean models?"
			}
			d.ps.add(e.line(), e.col(), e.key, "%s", msg)
			continue
		}
		found = true
		items, ok := d.sequence(e.value, "models")
		if !ok {
			d.typeProblem(e.value, "models", "a list of models (- run_dir: …)")
			return
		}
		d.models(items)
	}
	if !found {
		d.ps.add(0, 0, "models", "required: a list of {run_dir, id, name, provider, releaseYear, surfaces}")
	}
}

func (d *studyModelsDecoder) models(items []ast.Node) {
	firstID, firstRun := map[string]int{}, map[string]int{}
	for i, it := range items {
		field := indexField("models", i)
		m, pos, ok := d.model(it, field)
		if !ok {
			continue
		}
		for _, u := range []struct {
			key, val string
			first    map[string]int
		}{{"id", m.ID, firstID}, {"run_dir", m.RunDir, firstRun}} {
			if u.val == "" {
				continue
			}
			if line, dup := u.first[u.val]; dup {
				l, c := pos.at(u.key)
				d.ps.add(l, c, joinField(field, u.key), "duplicate %s %q (first at line %d); each model needs its own", u.key, u.val, line)
			} else {
				u.first[u.val], _ = pos.at(u.key)
			}
		}
		d.out.Models = append(d.out.Models, m)
	}
}

func (d *studyModelsDecoder) model(raw ast.Node, field string) (StudyModel, metricPos, bool) {
	var m StudyModel
	entries, ok := d.mapping(raw, field)
	if !ok {
		return m, metricPos{}, false
	}
	line, col := nodePos(d.deref(raw))
	m.Line = line
	pos := metricPos{start: [2]int{line, col}, fields: map[string][2]int{}}
	seen := map[string]bool{}
	for _, e := range entries {
		f := joinField(field, e.key)
		if !slices.Contains(studyModelKeys(), e.key) {
			msg := "unknown key (a model has " + strings.Join(studyModelKeys(), ", ") + ")"
			if s := suggest(e.key, studyModelKeys()); s != "" {
				msg = "unknown key; did you mean " + s + "?"
			}
			d.ps.add(e.line(), e.col(), f, "%s", msg)
			continue
		}
		seen[e.key] = true
		vl, vc := nodePos(e.value)
		if isNull(d.deref(e.value)) {
			vl, vc = e.line(), e.col()
		}
		pos.fields[e.key] = [2]int{vl, vc}
		switch e.key {
		case "run_dir", "id":
			s, _ := d.scalarText(e.value, f)
			if s != "" && (!studyIDPattern.MatchString(s) || strings.Contains(s, "..")) {
				d.ps.add(vl, vc, f, "%s is not a plain file name (letters, digits, '.', '_', '-'; it names a directory)", ids.Quote(s))
			} else if p := ids.Problem(s, ids.MaxName); s != "" && p != "" {
				d.ps.add(vl, vc, f, "%s is not an id: %s (it names a directory and published files)", ids.Quote(s), p)
			}
			if e.key == "id" {
				m.ID = s
			} else {
				m.RunDir = s
			}
		case "name":
			m.Name, _ = d.scalarText(e.value, f)
		case "provider":
			m.Provider, _ = d.scalarText(e.value, f)
		case "releaseYear":
			if !isNull(d.deref(e.value)) {
				m.ReleaseYear = d.year(e.value, f)
			}
		case "surfaces":
			m.Surfaces = d.surfaces(e.value, f)
		}
	}
	for _, k := range []string{"run_dir", "id", "name"} {
		if !seen[k] {
			d.ps.add(line, col, joinField(field, k), "required")
		}
	}
	if !seen["surfaces"] {
		m.Surfaces = []string{SurfaceFull}
	}
	return m, pos, true
}

func (d *studyModelsDecoder) surfaces(raw ast.Node, field string) []string {
	items, ok := d.sequence(raw, field)
	if !ok {
		d.typeProblem(raw, field, "a list: [full] or [nutritional-label] or both")
		return nil
	}
	var out []string
	for i, it := range items {
		f := indexField(field, i)
		s, _ := d.scalarText(it, f)
		if s != SurfaceFull && s != SurfaceNutritionalLabel {
			line, col := nodePos(it)
			d.ps.add(line, col, f, "unknown surface %q (want %s or %s)", s, SurfaceFull, SurfaceNutritionalLabel)
			continue
		}
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		line, col := nodePos(raw)
		d.ps.add(line, col, field, "must list at least one surface (full or nutritional-label)")
	}
	return out
}

// year reads a release year: published as it is, so a negative or
// five-digit one is refused rather than shown on the site.
func (d *studyModelsDecoder) year(raw ast.Node, field string) int {
	y, ok := d.integer(raw, field)
	if ok && (y < 0 || y > 9999) {
		line, col := nodePos(d.deref(raw))
		d.ps.add(line, col, field, "must be a year (0 to 9999), got %d", y)
		return 0
	}
	return y
}
