package site

import (
	"math"

	"github.com/impactbench/impactbench/internal/study"
)

// The site's grade scales, as impactbench-web defines them
// (/work/shared/reference/impactbench-web.md): a score at or above a band's
// Min and below the next band's gets its Name.
type band struct {
	Min  float64 `json:"min"`
	Name string  `json:"name"`
}

// scale is a named list of bands, highest first (the last has Min 0).
type scale struct {
	ID    string `json:"id"`
	Title string `json:"title"`
	Bands []band `json:"bands"`
}

var (
	// wordScale grades taxonomy scores (the site's Explore pages).
	wordScale = scale{ID: "word", Title: "grade word", Bands: []band{
		{0.75, "Strongly beneficial"}, {0.60, "Moderately beneficial"}, {0.55, "Slight benefit"},
		{0.45, "Neutral"}, {0.40, "Slight concern"}, {0.25, "Moderate concern"}, {0, "Significant concern"}}}
	// letterScale grades the nutrition label.
	letterScale = scale{ID: "letter", Title: "letter grade", Bands: []band{
		{0.95, "A+"}, {0.90, "A"}, {0.85, "A-"}, {0.80, "B+"}, {0.75, "B"}, {0.70, "B-"},
		{0.65, "C+"}, {0.60, "C"}, {0.55, "C-"}, {0.50, "D+"}, {0.45, "D"}, {0.40, "D-"}, {0, "F"}}}
	// stepScale labels a single metric's score.
	stepScale = scale{ID: "step", Title: "step label", Bands: []band{
		{0.75, "Adequate"}, {0.55, "Partial"}, {0.35, "Lacking"}, {0, "Failing"}}}
)

// scaleFor is the scale the site grades a node kind with.
func scaleFor(kind string) scale {
	switch kind {
	case study.KindLabel, study.KindNutrition:
		return letterScale
	case study.KindMetric:
		return stepScale
	default:
		return wordScale
	}
}

// of is the band name a score falls in.
func (s scale) of(x float64) string {
	for _, b := range s.Bands {
		if x >= b.Min {
			return b.Name
		}
	}
	return s.Bands[len(s.Bands)-1].Name
}

// grade is the grade of a score whose interval is [lo, hi]: shown only
// when the whole interval lies in one band. Otherwise grade is "" and
// from, to name the bands the interval spans (lowest, highest): the data
// cannot say which of them the score deserves, so the site withholds it.
func (s scale) grade(lo, hi float64) (grade, from, to string) {
	g, h := s.of(lo), s.of(hi)
	if g == h {
		return g, "", ""
	}
	return "", g, h
}

// index is a band's index by name, -1 for "".
func (s scale) index(name string) int {
	for i, b := range s.Bands {
		if b.Name == name {
			return i
		}
	}
	return -1
}

// Grading is the grade the site gives a study cell: Grade is "" when the
// interval spans bands (withheld); Top and Bottom are the positions, 0 the
// highest band, of the bands holding the interval's upper and lower limits
// (equal when Grade is set; -1 for a cell without an interval).
type Grading struct {
	Grade       string
	Top, Bottom int
}

// CellGrade is the grade the site gives cell c of a node of that kind, by
// the site's rule (scaleFor, grade, gradedInterval). The adaptive study
// states grade words with it.
func CellGrade(kind string, c study.Cell) Grading {
	s := scaleFor(kind)
	lo, hi := gradedInterval(c)
	if math.IsNaN(lo) || math.IsNaN(hi) {
		return Grading{Top: -1, Bottom: -1}
	}
	g, _, _ := s.grade(lo, hi)
	return Grading{Grade: g, Top: s.index(s.of(hi)), Bottom: s.index(s.of(lo))}
}

// gradedInterval is the interval the site grades a cell by: an area's
// by-placement interval when it has one (the area card and its grade word
// average every placement), the cell's own otherwise; NaN without one.
func gradedInterval(c study.Cell) (lo, hi float64) {
	switch {
	case c.ByPlacement != nil:
		return c.ByPlacement.Lo, c.ByPlacement.Hi
	case c.Lo != nil && c.Hi != nil:
		return *c.Lo, *c.Hi
	}
	return math.NaN(), math.NaN()
}
