package study

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/layout"
)

// Scaffold is a study's three input files drafted from a project's own
// benchmarks and targets (`impactbench init --study` in a project that has
// benchmarks of its own): every metric placed once in the taxonomy (one
// area, a subarea per benchmark, a group per metric type), the nutrition
// label split by metric type, and a models.yaml entry per target. The
// arrangement is a start to edit, not an editorial choice; the files load
// as they are.
func Scaffold(benches []*config.Benchmark, targets []config.ModelConfig, year int) ([]config.ScaffoldFile, error) {
	all := Area{ID: "all", Name: "All benchmarks", Icon: "fa-layer-group", Color: "#2563eb"}
	byType := map[config.MetricType][]string{}
	for _, b := range benches {
		if p := idsProblem(b.Slug); p != "" {
			return nil, &InputError{Problems: []Problem{{File: b.Dir, Key: b.Slug,
				Msg: "a benchmark folder's name becomes the first half of its metric keys and a published path, but " + p + "; rename the folder"}}}
		}
		sa := Subarea{ID: b.Slug, Name: b.Name, Icon: "fa-list"}
		if sa.Name == "" {
			sa.Name = b.Slug
		}
		for _, t := range []config.MetricType{config.Positive, config.Negative} {
			var ids []string
			for _, m := range b.Metrics {
				if m.Type == t {
					ids = append(ids, Key(b.Slug, m.ID))
				}
			}
			if len(ids) > 0 {
				sa.Groups = append(sa.Groups, Group{Name: typeGroupName(t), MetricIDs: ids})
				byType[t] = append(byType[t], ids...)
			}
		}
		if len(sa.Groups) > 0 {
			all.Subareas = append(all.Subareas, sa)
		}
	}
	if len(all.Subareas) == 0 {
		return nil, fmt.Errorf("init --study: the project's benchmarks have no metrics yet (run gen-metrics first)")
	}
	var label []Category
	if ids := byType[config.Positive]; len(ids) > 0 {
		label = append(label, Category{ID: "promotes-wanted-behaviours", Label: "Promotes wanted behaviours", Description: "The positive metrics: behaviour that should be present.", Metrics: refs(ids)})
	}
	if ids := byType[config.Negative]; len(ids) > 0 {
		label = append(label, Category{ID: "avoids-harmful-behaviours", Label: "Avoids harmful behaviours", Description: "The negative metrics: behaviour that should be absent.", Metrics: refs(ids)})
	}
	tax, err := json.MarshalIndent(Taxonomy{Areas: []Area{all}}, "", "  ")
	if err != nil {
		return nil, err
	}
	nut, err := json.MarshalIndent(label, "", "  ")
	if err != nil {
		return nil, err
	}
	return []config.ScaffoldFile{
		{Path: layout.StudyPath("", TaxonomyFile), Data: append(tax, '\n')},
		{Path: layout.StudyPath("", NutritionFile), Data: append(nut, '\n')},
		{Path: layout.StudyPath("", ModelsFile), Data: scaffoldModels(targets, year)},
	}, nil
}

// refs are metric keys as nutrition-label references (written as strings).
func refs(keys []string) []CategoryRef {
	out := make([]CategoryRef, len(keys))
	for i, k := range keys {
		out[i] = CategoryRef{ID: k}
	}
	return out
}

func typeGroupName(t config.MetricType) string {
	if t == config.Positive {
		return "Wanted behaviours"
	}
	return "Harmful behaviours"
}

// scaffoldModels is models.yaml with one entry per target; a JSON string
// is a valid YAML scalar, so every value is written quoted that way.
func scaffoldModels(targets []config.ModelConfig, year int) []byte {
	var b strings.Builder
	b.WriteString("# The study's models: which run directory (" + layout.RunDirRel("<bench>", "<run_dir>") + ")\n" +
		"# is which published model, one entry per target of config.yaml. Edit the\n" +
		"# public id, name, provider and release year; shapes: docs/study.md.\n" +
		"models:\n")
	q := func(s string) string { v, _ := json.Marshal(s); return string(v) }
	for _, t := range targets {
		provider := t.Source
		if provider == "" {
			provider = "openai"
		}
		fmt.Fprintf(&b, "  - {run_dir: %s, id: %s, name: %s, provider: %s, releaseYear: %d, surfaces: [full]}\n",
			q(t.ID), q(t.ID), q(t.Model), q(provider), year)
	}
	return []byte(b.String())
}
