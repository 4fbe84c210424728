package site

import (
	"slices"
	"strings"
	"testing"

	"github.com/impactbench/impactbench/internal/study"
)

func TestGradeWithheldWhenTheIntervalSpansBands(t *testing.T) {
	for _, c := range []struct {
		kind            string
		lo, hi          float64
		grade, from, to string
	}{
		{study.KindNutrition, 0.76, 0.79, "B", "", ""},
		{study.KindNutrition, 0.75, 0.7999, "B", "", ""},
		{study.KindNutrition, 0.7499, 0.76, "", "B-", "B"},
		{study.KindNutrition, 0.40, 0.95, "", "D-", "A+"},
		{study.KindLabel, 0, 0.3999, "F", "", ""},
		{study.KindOverall, 0.751, 0.792, "Strongly beneficial", "", ""},
		{study.KindOverall, 0.743, 0.792, "", "Moderately beneficial", "Strongly beneficial"},
		{study.KindOverall, 0.6849, 0.736, "Moderately beneficial", "", ""},
		{study.KindArea, 0.53, 0.58, "", "Neutral", "Slight benefit"},
		{study.KindSubarea, 0.1, 0.24, "Significant concern", "", ""},
		{study.KindMetric, 0.19, 1, "", "Failing", "Adequate"},
		{study.KindMetric, 0.8, 1, "Adequate", "", ""},
	} {
		g, from, to := scaleFor(c.kind).grade(c.lo, c.hi)
		if g != c.grade || from != c.from || to != c.to {
			t.Errorf("%s [%v, %v]: grade %q (spans %q–%q), want %q (%q–%q)", c.kind, c.lo, c.hi, g, from, to, c.grade, c.from, c.to)
		}
	}
}

func TestScalesAreTheSites(t *testing.T) {
	// Every band boundary of the reference's thresholds, from its text.
	want := map[string]string{
		"word":   "0.75 Strongly beneficial|0.6 Moderately beneficial|0.55 Slight benefit|0.45 Neutral|0.4 Slight concern|0.25 Moderate concern|0 Significant concern",
		"letter": "0.95 A+|0.9 A|0.85 A-|0.8 B+|0.75 B|0.7 B-|0.65 C+|0.6 C|0.55 C-|0.5 D+|0.45 D|0.4 D-|0 F",
		"step":   "0.75 Adequate|0.55 Partial|0.35 Lacking|0 Failing",
	}
	for _, s := range []scale{wordScale, letterScale, stepScale} {
		var parts []string
		for _, b := range s.Bands {
			parts = append(parts, strings.TrimSpace(strings.Join([]string{ftoa(b.Min), b.Name}, " ")))
		}
		if got := strings.Join(parts, "|"); got != want[s.ID] {
			t.Errorf("%s scale: %s\nwant %s", s.ID, got, want[s.ID])
		}
	}
}

func TestTieGroups(t *testing.T) {
	for _, c := range []struct {
		name  string
		order []string
		ties  [][2]string
		want  []string
	}{
		{"none", []string{"a", "b", "c"}, nil, []string{"a", "b", "c"}},
		{"all", []string{"a", "b", "c"}, [][2]string{{"a", "b"}, {"a", "c"}, {"b", "c"}}, []string{"a", "a", "a"}},
		{"chain", []string{"a", "b", "c"}, [][2]string{{"a", "b"}, {"b", "c"}}, []string{"a", "ab", "b"}},
		{"top two and bottom two", []string{"w", "x", "y", "z"}, [][2]string{{"w", "x"}, {"y", "z"}}, []string{"a", "a", "b", "b"}},
		{"gap in the middle", []string{"p", "q", "r"}, [][2]string{{"p", "r"}}, []string{"a", "b", "a"}},
	} {
		tied := func(a, b string) bool {
			return slices.Contains(c.ties, [2]string{a, b}) || slices.Contains(c.ties, [2]string{b, a})
		}
		got := tieGroups(c.order, tied)
		var flat []string
		for _, g := range got {
			flat = append(flat, strings.Join(g, ""))
		}
		if !slices.Equal(flat, c.want) {
			t.Errorf("%s: %v, want %v", c.name, flat, c.want)
		}
		// The defining property: two models share a letter iff tied.
		for i := range c.order {
			for j := range c.order {
				if i == j {
					continue
				}
				share := slices.ContainsFunc(got[i], func(l string) bool { return slices.Contains(got[j], l) })
				if share != tied(c.order[i], c.order[j]) {
					t.Errorf("%s: %s and %s share a letter: %v, tied: %v", c.name, c.order[i], c.order[j], share, !share)
				}
			}
		}
	}
	if letter(0) != "a" || letter(25) != "z" || letter(26) != "aa" || letter(27) != "ab" {
		t.Error("letters after z")
	}
}

// TestCellGradeReadsTheSitesInterval: a cell is graded on its own
// interval, an area cell on its by-placement interval (the area card's),
// and the bands it spans are positions on the node kind's scale.
func TestCellGradeReadsTheSitesInterval(t *testing.T) {
	f := func(x float64) *float64 { return &x }
	for _, c := range []struct {
		kind string
		cell study.Cell
		want Grading
	}{
		{study.KindOverall, study.Cell{Lo: f(0.751), Hi: f(0.792)}, Grading{"Strongly beneficial", 0, 0}},
		{study.KindOverall, study.Cell{Lo: f(0.743), Hi: f(0.792)}, Grading{"", 0, 1}},
		{study.KindArea, study.Cell{Lo: f(0.743), Hi: f(0.792), ByPlacement: &study.Estimate{Lo: 0.76, Hi: 0.8}}, Grading{"Strongly beneficial", 0, 0}},
		{study.KindArea, study.Cell{Lo: f(0.76), Hi: f(0.79), ByPlacement: &study.Estimate{Lo: 0.5, Hi: 0.8}}, Grading{"", 0, 3}},
		{study.KindNutrition, study.Cell{Lo: f(0.86), Hi: f(0.89)}, Grading{"A-", 2, 2}},
		{study.KindMetric, study.Cell{Lo: f(0.19), Hi: f(1)}, Grading{"", 0, 3}},
		{study.KindGroup, study.Cell{}, Grading{"", -1, -1}},
	} {
		if got := CellGrade(c.kind, c.cell); got != c.want {
			t.Errorf("%s %+v: %+v, want %+v", c.kind, c.cell, got, c.want)
		}
	}
}
