package publish

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/layout"
	"github.com/impactbench/impactbench/internal/study"
	"github.com/impactbench/impactbench/internal/study/studytest"
)

// The figures impactbench-web shows, computed from the files publish wrote
// exactly as the site's code computes them (impactbench-web @ 43ce2f85,
// src/lib/utils.ts and Leaderboard.svelte): every score is the mean of
// benchmark-data.json's rates (rounded to 4 dp), metrics without a rate
// left out; an area's card, its grade word and the sunburst average every
// placement of a metric in the area's subareas; the leaderboard, in the
// overview and in an area, averages each metric once; a subarea averages
// its metrics list; the nutrition label shows nutrition.json's category
// scores. The site prints a score with 2 decimals (toFixed(2)), a card's
// pill as round(score × n)/n and a grade word from the score.
type siteFigures struct {
	overall, areaCard, areaBoard, subarea map[string]float64 // "<node>|<age>|<model>" → score
	n                                     map[string]int     // the pill's n: rates averaged
}

func computeSiteFigures(t *testing.T, out string) siteFigures {
	t.Helper()
	var scores map[string]map[string]float64
	readJSON(t, filepath.Join(out, "data", layout.PublishedBenchmarkDataFile), &scores)
	var tax study.Taxonomy
	readJSON(t, filepath.Join(out, "data", layout.PublishedTaxonomyFile), &tax)
	f := siteFigures{overall: map[string]float64{}, areaCard: map[string]float64{}, areaBoard: map[string]float64{}, subarea: map[string]float64{}, n: map[string]int{}}
	mean := func(xs []float64) float64 {
		sum := 0.0
		for _, x := range xs {
			sum += x
		}
		return sum / float64(len(xs))
	}
	for cell, rates := range scores {
		model, age, _ := strings.Cut(cell, "|")
		var all []string
		for _, a := range tax.Areas {
			var placed []float64
			var ids []string
			for _, s := range a.Subareas {
				var sub []float64
				for _, m := range s.Metrics {
					if r, ok := rates[m.ID]; ok {
						placed = append(placed, r)
						sub = append(sub, r)
					}
					ids = append(ids, m.ID)
				}
				if len(sub) > 0 {
					k := study.KindSubarea + "/" + s.ID + "|" + age + "|" + model
					f.subarea[k], f.n[k] = mean(sub), len(sub)
				}
			}
			ids = slices.Compact(dedup(ids))
			all = append(all, ids...)
			if len(placed) > 0 {
				k := study.KindArea + "/" + a.ID + "|" + age + "|" + model
				f.areaCard[k], f.n[k] = mean(placed), len(placed)
				f.areaBoard[k] = mean(present(ids, rates))
			}
		}
		if vals := present(dedup(all), rates); len(vals) > 0 {
			f.overall[study.KindOverall+"|"+age+"|"+model] = mean(vals)
		}
	}
	return f
}

// dedup keeps the first of each id, in order (JavaScript's new Set).
func dedup(ids []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}

func present(ids []string, rates map[string]float64) []float64 {
	var out []float64
	for _, id := range ids {
		if r, ok := rates[id]; ok {
			out = append(out, r)
		}
	}
	return out
}

// siteWord is scoreShortGrade.
func siteWord(x float64) string {
	for _, b := range []struct {
		min  float64
		name string
	}{{.75, "Strongly beneficial"}, {.6, "Moderately beneficial"}, {.55, "Slight benefit"}, {.45, "Neutral"}, {.4, "Slight concern"}, {.25, "Moderate concern"}} {
		if x >= b.min {
			return b.name
		}
	}
	return "Significant concern"
}

func f2(x float64) string { return strconv.FormatFloat(x, 'f', 2, 64) }

// TestJulyStudyShowsTheSitesFigures is issue 36's acceptance check for the
// site's rule: for every model and age of the rebuilt July study, study.json
// gives what impactbench-web shows for the published files — each area's
// card (by_placement: every placement counted), the area leaderboard and the
// overview leaderboard (score: each metric once) and each subarea: the same
// two-decimal figure, the same pill (k/n) and the same grade word, and a
// number within 0.00005 of the site's (which averages rates rounded to 4
// dp). The only differences are three subarea grade words where the
// site's own arithmetic lands just below a boundary the exact score sits
// on (0.6 and 0.4: its sum of rounded rates in floating point); the nutrition
// label's category scores are nutrition.json's (TestJulyNutrition) and get
// the same letter grades from study.json.
func TestJulyStudyShowsTheSitesFigures(t *testing.T) {
	j := rebuiltJuly(t)
	site := computeSiteFigures(t, j.out)
	var boundary []string
	checked := map[string]int{}
	check := func(kind, key string, want float64, got float64, n int) {
		checked[kind]++
		if math.Abs(got-want) > 5e-5+1e-12 {
			t.Errorf("%s %s: study %.6f, site %.6f", kind, key, got, want)
		}
		if f2(got) != f2(want) {
			t.Errorf("%s %s: study shows %s, the site %s", kind, key, f2(got), f2(want))
		}
		if n > 0 && math.Round(got*float64(n)) != math.Round(want*float64(n)) {
			t.Errorf("%s %s: pill %v/%d, the site's %v/%d", kind, key, math.Round(got*float64(n)), n, math.Round(want*float64(n)), n)
		}
		if siteWord(got) != siteWord(want) {
			boundary = append(boundary, fmt.Sprintf("%s %s: %s (site %s, %.17g)", kind, key, siteWord(got), siteWord(want), want))
		}
	}
	// How far the area card (by placement) and the area leaderboard (each
	// metric once) differ, as docs/study.md states it.
	var areaCells, areaDiffer, areaWords int
	var maxAll, maxFull float64
	for _, c := range j.res.Cells {
		key := c.Node + "|" + c.Age + "|" + c.Model
		if v, ok := site.overall[key]; ok {
			check("overview leaderboard", key, v, *c.Score, 0)
		}
		if v, ok := site.areaCard[key]; ok {
			if c.ByPlacement == nil {
				t.Fatalf("%s: no by_placement", key)
			}
			check("area card", key, v, c.ByPlacement.Score, site.n[key])
			check("area leaderboard", key, site.areaBoard[key], *c.Score, 0)
			once, placed := *c.Score, c.ByPlacement.Score
			areaCells++
			if f2(once) != f2(placed) {
				areaDiffer++
			}
			if siteWord(once) != siteWord(placed) {
				areaWords++
			}
			maxAll = max(maxAll, math.Abs(once-placed))
			if c.Model != "apertus-8b" && c.Model != "apertus-70b" {
				maxFull = max(maxFull, math.Abs(once-placed))
			}
		}
		if v, ok := site.subarea[key]; ok {
			check("subarea", key, v, *c.Score, site.n[key])
		}
	}
	// The 14 full models and, where the label's metrics sit in the
	// taxonomy, the 2 label-only ones (the site scores them there too).
	want := map[string]int{"overview leaderboard": 32, "area card": 96, "area leaderboard": 96, "subarea": 352}
	for k, n := range want {
		if checked[k] != n {
			t.Errorf("checked %d %s figures, want %d", checked[k], k, n)
		}
	}
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "study.md"))
	if err != nil {
		t.Fatal(err)
	}
	says := fmt.Sprintf("On July the two differ at 2 decimals in %d of the %d area cells (by up to %.3f; %.3f for the 14 full models), and give another grade word in %d",
		areaDiffer, areaCells, maxAll, maxFull, areaWords)
	if !strings.Contains(strings.Join(strings.Fields(string(doc)), " "), says) {
		t.Errorf("docs/study.md should say %q", says)
	}
	wantBoundary := []string{
		"subarea subarea/legal-civic-rights|adult|deepseek-v3: Moderately beneficial (site Slight benefit, 0.59999999999999987)",
		"subarea subarea/legal-civic-rights|child|grok-4-1: Moderately beneficial (site Slight benefit, 0.59999499999999995)",
		"subarea subarea/safety-protection|adult|deepseek-v3: Slight concern (site Moderate concern, 0.39999999999999997)",
	}
	slices.Sort(boundary)
	if !slices.Equal(boundary, wantBoundary) {
		t.Errorf("grade words that differ from the site's:\n%s\nwant:\n%s", strings.Join(boundary, "\n"), strings.Join(wantBoundary, "\n"))
	}
}

// TestJulyNutritionGradesAreTheSites: every category cell of study.json
// gets the letter grade and two-decimal figure the site shows from
// nutrition.json (the mean of rounded rates).
func TestJulyNutritionGradesAreTheSites(t *testing.T) {
	j := rebuiltJuly(t)
	var cats []struct {
		ID     string                        `json:"id"`
		Models map[string]map[string]float64 `json:"models"`
	}
	readJSON(t, filepath.Join(j.out, "data", layout.PublishedNutritionFile), &cats)
	n := 0
	for _, cat := range cats {
		for model, ages := range cat.Models {
			for age, v := range ages {
				c, ok := j.res.Cell(study.KindNutrition+"/"+cat.ID, age, model)
				if !ok {
					t.Errorf("%s %s %s: no study cell", cat.ID, model, age)
					continue
				}
				if letterGrade(*c.Score) != letterGrade(v) || f2(*c.Score) != f2(v) {
					t.Errorf("%s %s %s: study %v, site %v", cat.ID, model, age, *c.Score, v)
				}
				n++
			}
		}
	}
	if n != 9*16*2 {
		t.Errorf("checked %d category cells", n)
	}
}

// TestJulyStudyDecisionsAgree: in the rebuilt July study no tie is split
// (equal scores share a rank; 256 of 13,252 ranked cells were split by
// floating-point noise), every pair's p agrees with its interval, and
// significant, tied_with and the rank intervals come from the same Holm
// decisions (studytest.CheckConsistent); and no interval limit that
// excludes 0 prints as 0.
func TestJulyStudyDecisionsAgree(t *testing.T) {
	j := rebuiltJuly(t)
	studytest.CheckConsistent(t, j.res)
	equal := 0
	byNode := map[[2]string][]study.Cell{}
	for _, c := range j.res.Cells {
		if c.Rank != nil {
			byNode[[2]string{c.Node, c.Age}] = append(byNode[[2]string{c.Node, c.Age}], c)
		}
	}
	for _, cs := range byNode {
		for i, a := range cs {
			for _, b := range cs[i+1:] {
				if *a.Score == *b.Score {
					equal++
				}
			}
		}
	}
	if equal < 1000 {
		t.Errorf("%d pairs of equal ranked scores: the check needs ties to check", equal)
	}
	near := 0
	for _, p := range j.res.Pairs {
		for _, x := range []float64{p.Lo, p.Hi} {
			if x != 0 && math.Abs(x) < 0.0005 {
				near++
				if s := artifacts.Limit(x, 3, true); strings.Trim(s, "+-0.") == "" {
					t.Errorf("%s %s %s−%s: limit %v prints as %s", p.Node, p.Age, p.A, p.B, x, s)
				}
			}
		}
	}
	t.Logf("%d pairs of equal ranked scores share their rank; %d interval limits within 0.0005 of 0 print as themselves", equal, near)
}
