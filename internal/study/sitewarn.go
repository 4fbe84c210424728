package study

import (
	"fmt"
	"strings"
)

// What impactbench-web does with a study's published files that the
// study's own numbers cannot show (facts of impactbench-web @ 43ce2f85).
const (
	// SiteDefaultModel is the model the site opens on: its filter's
	// default is hard-coded, whatever the published models are.
	SiteDefaultModel = "claude-haiku-4-5"
)

// SiteLabelPrefixes are the only label beginnings the site's nutrition
// label shows: it splits categories into "harmful" and "positive" by
// these prefixes and drops the others.
var SiteLabelPrefixes = []string{"Avoids", "Promotes"}

// SiteWarnings are what a publish of this study would lose or show oddly
// on impactbench-web: nutrition categories it drops, and a study without
// the model it opens on.
func (s *Study) SiteWarnings() []string {
	var out []string
	for i, c := range s.Inputs.Nutrition {
		if !shownLabel(c.Label) {
			out = append(out, fmt.Sprintf("%s: [%d] (%q): impactbench-web shows only categories whose label starts with %q or %q, and will drop this one (its scores stay in study.json and the static site)",
				NutritionFile, i, c.Label, SiteLabelPrefixes[0], SiteLabelPrefixes[1]))
		}
	}
	if len(s.Models) > 0 && !s.hasModel(SiteDefaultModel) {
		out = append(out, fmt.Sprintf("%s: no model has id %q, the model impactbench-web opens on (hard-coded): its pages show no scores until a visitor picks a model", ModelsFile, SiteDefaultModel))
	}
	return out
}

func shownLabel(label string) bool {
	for _, p := range SiteLabelPrefixes {
		if strings.HasPrefix(label, p) {
			return true
		}
	}
	return false
}

func (s *Study) hasModel(id string) bool {
	for _, m := range s.Models {
		if m.ID == id {
			return true
		}
	}
	return false
}
