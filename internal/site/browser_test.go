package site_test

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/browsertest"
	"github.com/impactbench/impactbench/internal/study"
	"github.com/impactbench/impactbench/internal/study/studytest"
)

// page is one open site in one browser tab.
type page struct {
	t    *testing.T
	ctx  context.Context
	log  *browsertest.Log
	base string // the index.html URL, without a fragment
}

func fileURL(path string) string {
	abs, _ := filepath.Abs(path)
	return (&url.URL{Scheme: "file", Path: abs}).String()
}

// newPage starts Chromium with every request outside base's directory
// counted as a violation.
func newPage(t *testing.T, base string) *page {
	t.Helper()
	ctx, log := browsertest.New(t, 1280, 900)
	dir := base[:strings.LastIndex(base, "/")+1]
	log.SetAllow(func(u string) bool { return strings.HasPrefix(u, dir) })
	return &page{t: t, ctx: ctx, log: log, base: base}
}

// open loads the site at route (a fragment such as "/metric/alpha__m01")
// from scratch and waits until the page says it has painted it.
func (p *page) open(route string) {
	p.t.Helper()
	u := p.base + "#" + route
	if err := chromedp.Do(p.ctx, chromedp.Navigate("about:blank"), chromedp.Navigate(u)); err != nil {
		p.t.Fatalf("open %s: %v", u, err)
	}
	p.waitReady("#" + route)
}

// go_ changes the route within the loaded page (a click's effect).
func (p *page) waitReady(hash string) {
	p.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		got := eval[string](p, `String(window.__siteReady || '')`)
		if got == hash || (hash == "#/" && got == "#/") {
			return
		}
		if errs, dialogs, _ := p.log.Snapshot(); len(errs)+len(dialogs) > 0 {
			p.t.Fatalf("page errors while waiting for %s: %q %q", hash, errs, dialogs)
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("%s did not render in 30 s (ready: %q)", hash, got)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// click follows the first element matching sel and waits for the route
// it leads to.
func (p *page) click(sel string) {
	p.t.Helper()
	href := eval[string](p, fmt.Sprintf(`(function(){var e=document.querySelector(%q); if(!e) return ''; e.click(); return e.getAttribute('href')||''})()`, sel))
	if href == "" {
		p.t.Fatalf("no link %s on %s", sel, eval[string](p, `location.hash`))
	}
	p.waitReady(eval[string](p, `location.hash`))
}

func eval[T any](p *page, js string) T {
	p.t.Helper()
	v, err := chromedp.Run(p.ctx, chromedp.Evaluate[T](js))
	if err != nil {
		p.t.Fatalf("eval %s: %v", js, err)
	}
	return v
}

func (p *page) text(sel string) string {
	p.t.Helper()
	return eval[string](p, fmt.Sprintf(`(function(){var e=document.querySelector(%q); return e ? e.textContent : '<missing>'})()`, sel))
}

func (p *page) texts(sel string) []string {
	p.t.Helper()
	return eval[[]string](p, fmt.Sprintf(`Array.from(document.querySelectorAll(%q)).map(function(e){return e.textContent})`, sel))
}

// clean asserts nothing ran that should not have, nothing failed and
// nothing was requested from outside the site.
func (p *page) clean() {
	p.t.Helper()
	if x := eval[string](p, `typeof window.__xss`); x != "undefined" {
		p.t.Errorf("a payload executed: window.__xss is %s", x)
	}
	errs, dialogs, reqs := p.log.Snapshot()
	if len(errs) > 0 || len(dialogs) > 0 {
		p.t.Errorf("page errors %q, dialogs %q", errs, dialogs)
	}
	if len(reqs) > 0 {
		p.t.Errorf("requests outside the site: %q", reqs)
	}
	// A missing value must never be printed as one.
	if bad := eval[string](p, `(function(){var w=document.createTreeWalker(document.getElementById('main'), NodeFilter.SHOW_TEXT), n;
		while ((n = w.nextNode())) if (/(^|[^A-Za-z])(null|undefined|NaN)([^A-Za-z]|$)/.test(n.data)) return n.data; return ''})()`); bad != "" {
		p.t.Errorf("the page shows %q: %s", bad, eval[string](p, "location.hash"))
	}
	// No element the data could have made: the page only creates these.
	if n := eval[int](p, `document.querySelectorAll('img, iframe, object, embed, svg, script:not([src]), [onerror], [onload], [style*="url"]').length`); n != 0 {
		p.t.Errorf("%d elements the page never creates", n)
	}
}

func f3(x float64) string { return fmt.Sprintf("%.3f", x) }

// TestSite drives the published small study's site from file://: the
// leaderboard's intervals, rank intervals and tie groups; the drill-down
// from an area to a transcript with the judge's evidence marked; the
// nutrition label with its grades withheld where the interval spans two;
// model vs model; the thin page and what calibration corrected — with the
// payload in every model-controlled string never running and shown as
// text, and no request outside the site's directory.
func TestSite(t *testing.T) {
	dir, out := siteStudy(t)
	res, err := readStudy(dir)
	if err != nil {
		t.Fatal(err)
	}
	p := newPage(t, fileURL(filepath.Join(out, "index.html")))

	t.Run("leaderboard", func(t *testing.T) {
		p.t = t
		p.open("/")
		grades := map[bool]bool{}
		letters := map[string]bool{}
		for _, age := range []string{"adult", "child"} {
			if age == "child" {
				p.click(`.toggle a[data-age="child"]`)
			}
			rows := p.texts(`table.board tbody tr`)
			if len(rows) != 3 {
				t.Fatalf("%s: %d rows: %q", age, len(rows), rows)
			}
			var order []string
			for _, id := range eval[[]string](p, `Array.from(document.querySelectorAll('table.board tbody tr')).map(function(r){return r.dataset.model})`) {
				c, ok := res.Cell(study.KindOverall, age, id)
				if !ok {
					t.Fatalf("no overall cell for %s", id)
				}
				order = append(order, id)
				row := fmt.Sprintf(`table.board tr[data-model=%q] `, id)
				if got, want := p.text(row+"td.score"), f3(*c.Score)+" ["+f3(*c.Lo)+", "+f3(*c.Hi)+"]"; !strings.HasPrefix(got, want) {
					t.Errorf("%s %s: score %q, want %q", age, id, got, want)
				}
				// model-a has judge calibration on alpha only: its overall
				// score is not corrected, and says so.
				if got, corr := p.text(row+"td.score .corr"), c.Corrected; (corr == nil) != (got == "<missing>") || corr != nil && corr.Score == nil && got != "not corrected for judge error" {
					t.Errorf("%s %s: correction %q for %+v", age, id, got, corr)
				}
				wantRank := fmt.Sprintf("%d (%d–%d)", *c.Rank, *c.RankLo, *c.RankHi)
				if *c.RankLo == *c.RankHi {
					wantRank = fmt.Sprint(*c.Rank)
				}
				if got := p.text(row + "td.rank"); got != wantRank {
					t.Errorf("%s %s: rank %q, want %q", age, id, got, wantRank)
				}
				g := eval[string](p, fmt.Sprintf(`document.querySelector(%q).dataset.grade`, row+"[data-grade]"))
				if want := word(*c.Lo, *c.Hi); g != want {
					t.Errorf("%s %s [%v, %v]: grade %q, want %q", age, id, *c.Lo, *c.Hi, g, want)
				}
				grades[g != ""] = true
			}
			// Tie groups: two models share a letter exactly when study.json
			// says they are tied (the fixture has both).
			for _, a := range order {
				for _, b := range order {
					if a == b {
						continue
					}
					la, lb := p.text(fmt.Sprintf(`tr[data-model=%q] td.ties`, a)), p.text(fmt.Sprintf(`tr[data-model=%q] td.ties`, b))
					share := strings.ContainsAny(la, lb)
					letters[la] = true
					ca, _ := res.Cell(study.KindOverall, age, a)
					if tied := slices.Contains(ca.TiedWith, b); share != tied {
						t.Errorf("%s: %s (%q) and %s (%q) share a tie letter: %v; tied in study.json: %v", age, a, la, b, lb, share, tied)
					}
				}
			}
		}
		if !grades[true] || !grades[false] {
			t.Errorf("the fixture should show a grade and withhold one: %v", grades)
		}
		if len(letters) < 2 {
			t.Errorf("the fixture should have more than one tie group: %v", letters)
		}
		if got := p.text(`tr[data-model="model-a"] td:nth-child(3)`); got != modelNameA {
			t.Errorf("model name shown as %q, want the text %q", got, modelNameA)
		}
		if got := p.text(`tr[data-model="model-a"] td:nth-child(4)`); got != providerA {
			t.Errorf("provider shown as %q", got)
		}
		p.clean()
	})

	t.Run("drill-down to a transcript", func(t *testing.T) {
		p.t = t
		p.open("/node/overall?model=model-a")
		p.click(`table.kids a[href*="area%2Fmind"], table.kids a[href*="area/mind"]`)
		if got := p.text("h1"); got != "Area "+areaName {
			t.Errorf("area page: %q", got)
		}
		// The area's leaderboard: score with each metric once, the area
		// card's with every placement (alpha__m01 is in two of its
		// subareas), and the grade word from the area card's interval.
		placed := 0
		for _, id := range studytest.SmallModels {
			c, _ := res.Cell("area/mind", "adult", id)
			row := fmt.Sprintf(`table.board tr[data-model=%q] `, id)
			if got, want := p.text(row+"td.place"), f3(c.ByPlacement.Score)+" ["+f3(c.ByPlacement.Lo)+", "+f3(c.ByPlacement.Hi)+"]"; got != want {
				t.Errorf("area card of %s: %q, want %q", id, got, want)
			}
			g := eval[string](p, fmt.Sprintf(`document.querySelector(%q).dataset.grade`, row+"[data-grade]"))
			if want := word(c.ByPlacement.Lo, c.ByPlacement.Hi); g != want {
				t.Errorf("area grade of %s: %q, want %q (the area card's interval)", id, g, want)
			}
			if c.ByPlacement.Score != *c.Score {
				placed++
			}
		}
		if placed == 0 {
			t.Error("the fixture's area card and leaderboard scores should differ for some model")
		}
		p.click(`table.kids a`) // the subarea
		p.click(`table.kids a`) // its first group
		if got := p.text("h1"); got != "Group "+groupName {
			t.Errorf("group page: %q", got)
		}
		p.click(`table.kids tr[data-kind="metric"] a`) // alpha__m01
		if got := p.text("h1"); got != "Metric "+metricName {
			t.Errorf("metric page: %q", got)
		}
		if got := p.text("dl.about dd"); got != metricDef {
			t.Errorf("definition shown as %q", got)
		}
		if p.text(".crumbs") == "<missing>" || !strings.Contains(p.text(".crumbs"), groupName) {
			t.Errorf("the metric page lost the path it was reached by: %q", p.text(".crumbs"))
		}
		p.click(`table.scen tbody a`)
		if got := p.text("h1"); got != goal {
			t.Errorf("scenario title %q", got)
		}
		p.waitFor(`document.querySelector('.conv .transcript') !== null`)
		marks := p.texts(`.transcript mark.ev`)
		if len(marks) != 1 || marks[0] != xssQuote {
			t.Errorf("evidence marked: %q, want [%q]", marks, xssQuote)
		}
		if got := p.texts(`.transcript .turn.ai .body`); len(got) != 1 || got[0] != assistant {
			t.Errorf("assistant's words shown as %q", got)
		}
		if got := p.text(`.just`); got != justText {
			t.Errorf("justification %q", got)
		}
		ev := p.texts(`ul.evidence li`)
		if len(ev) != 2 || !strings.HasPrefix(ev[0], "“"+xssQuote+"”") || !strings.Contains(ev[1], "not found") {
			t.Errorf("evidence list %q", ev)
		}
		if got := p.text(`details.scenario`); !strings.Contains(got, persona) || !strings.Contains(got, "Ask "+xss) {
			t.Errorf("scenario details %q", got)
		}
		// Another model's conversation of the same scenario.
		p.click(`.switch a[data-model="model-b"]`)
		p.waitFor(`document.querySelector('.conv .transcript') !== null`)
		if got := p.texts(`.transcript mark.ev`); len(got) != 1 {
			t.Errorf("model-b's evidence marked: %q", got)
		}
		if !strings.Contains(p.text(".crumbs"), groupName) {
			t.Errorf("switching the model lost the path: %q", p.text(".crumbs"))
		}
		p.clean()
	})

	t.Run("nutrition label", func(t *testing.T) {
		p.t = t
		p.open("/nutrition?model=model-a")
		for _, age := range res.Ages {
			card := fmt.Sprintf(`.card[data-age=%q] `, age)
			for _, n := range res.Nodes {
				if n.Kind != study.KindNutrition {
					continue
				}
				c, ok := res.Cell(n.ID, age, "model-a")
				if !ok {
					continue
				}
				row := card + fmt.Sprintf(`tr[data-category=%q] `, n.ID)
				if got, want := p.text(row+"td.score"), f3(*c.Score)+" ["+f3(*c.Lo)+", "+f3(*c.Hi)+"]"+fmt.Sprintf("%d base scenarios", c.Scenarios); !strings.HasPrefix(got, want) {
					t.Errorf("%s %s: %q, want %q…", age, n.ID, got, want)
				}
				g := eval[string](p, fmt.Sprintf(`document.querySelector(%q).dataset.grade`, row+"[data-grade]"))
				if want := letter(*c.Lo, *c.Hi); g != want {
					t.Errorf("%s %s [%v, %v]: grade %q, want %q", age, n.ID, *c.Lo, *c.Hi, g, want)
				}
				if g == "" && !strings.HasPrefix(p.text(row+".withheld"), "withheld") {
					t.Errorf("%s %s: a withheld grade must say so: %q", age, n.ID, p.text(row+".withheld"))
				}
			}
			if got := p.texts(card + `tr[data-category] td a`); !slices.Contains(got, categoryLbl) {
				t.Errorf("category names %q lack %q", got, categoryLbl)
			}
		}
		p.clean()
	})

	t.Run("model vs model", func(t *testing.T) {
		p.t = t
		p.open("/compare?a=model-b&b=model-a&age=adult")
		rows := eval[[]string](p, `Array.from(document.querySelectorAll('table.pairs tbody tr')).map(function(r){return r.dataset.node})`)
		var want []string
		for _, pr := range res.Pairs {
			if pr.Age != "adult" || pr.A != "model-a" || pr.B != "model-b" {
				continue
			}
			want = append(want, pr.Node)
			// The page shows B − A here: the pair's negation.
			tr := fmt.Sprintf(`table.pairs tr[data-node=%q] `, pr.Node)
			if w := signed(-pr.Diff) + " [" + lim(-pr.Hi) + ", " + lim(-pr.Lo) + "]"; p.text(tr+"td.diff") != w {
				t.Errorf("%s: %q, want %q", pr.Node, p.text(tr+"td.diff"), w)
			}
			// The reading is study.json's Holm-adjusted decision; p and
			// p adj. never print across 0.05.
			reading := "not shown different"
			if pr.Significant {
				reading = modelNameA + " higher"
				if pr.Diff < 0 {
					reading = "Model B higher"
				}
			}
			if got := p.text(tr + "td.reading"); got != reading {
				t.Errorf("%s: reading %q, want %q", pr.Node, got, reading)
			}
			if got, want := p.text(tr+"td.p")+"|"+p.text(tr+"td.padj"), artifacts.PValue(pr.P, 0.05, 3)+"|"+artifacts.PValue(pr.PAdjusted, 0.05, 3); got != want {
				t.Errorf("%s: p %q, want %q", pr.Node, got, want)
			}
		}
		if !slices.Equal(rows, want) || len(want) == 0 {
			t.Errorf("levels %q, want %q", rows, want)
		}
		// A group's metrics, unpaired: both models' scores.
		group := "group/autonomy/0"
		eval[bool](p, fmt.Sprintf(`(document.querySelector('tr[data-node=%q] button.expand').click(), true)`, group))
		p.waitFor(`document.querySelector('tr.metric-row') !== null`)
		var node *study.Node
		for _, n := range res.Nodes {
			if n.ID == group {
				node = n
			}
		}
		got := eval[[]string](p, `Array.from(document.querySelectorAll('tr.metric-row')).map(function(r){return r.dataset.metric + '|' + r.children[1].textContent + '|' + r.children[2].textContent})`)
		var wantM []string
		for _, k := range node.Metrics {
			ca, _ := res.Cell("metric/"+k, "adult", "model-b")
			cb, _ := res.Cell("metric/"+k, "adult", "model-a")
			wantM = append(wantM, k+"|"+f3(*ca.Score)+"|"+f3(*cb.Score))
		}
		if !slices.Equal(got, wantM) {
			t.Errorf("%s's metrics: %q, want %q", group, got, wantM)
		}
		p.clean()
	})

	t.Run("thin and calibration", func(t *testing.T) {
		p.t = t
		p.open("/thin")
		p.waitFor(`document.querySelector('.calib') !== null`)
		listed := eval[[]string](p, `Array.from(document.querySelectorAll('table.thinlist tr[data-node]')).map(function(r){return r.dataset.node + '|' + r.dataset.age})`)
		var want []string
		kind := map[string]string{}
		for _, n := range res.Nodes {
			kind[n.ID] = n.Kind
		}
		for _, n := range res.Nodes {
			for _, age := range res.Ages {
				for _, c := range res.Cells {
					if c.Node == n.ID && c.Age == age && n.Kind != study.KindMetric && (c.Thin || (!c.Complete && c.Rank != nil)) {
						want = append(want, n.ID+"|"+age)
						break
					}
				}
			}
		}
		if !slices.Equal(listed, want) || len(want) == 0 {
			t.Errorf("thin cells listed %q, want %q", listed, want)
		}
		levels := p.texts(`table.levels tbody tr td:first-child`)
		if len(levels) == 0 || levels[len(levels)-1] != "Metric" {
			t.Errorf("levels %q", levels)
		}
		cal := p.text(`.calib[data-bench="alpha"][data-model="model-a"]`)
		for _, w := range []string{modelNameA, f3(calObserved), f3(calCorrected), f3(calMetricObs), f3(calMetricCor), metricName, judgeName, "too few labels " + xss} {
			if !strings.Contains(cal, w) {
				t.Errorf("calibration block lacks %q: %q", w, cal)
			}
		}
		p.clean()
	})
}

func (p *page) waitFor(cond string) {
	p.t.Helper()
	if _, err := chromedp.Run(p.ctx, chromedp.Poll[bool](cond, chromedp.WithPollingTimeout(30*time.Second))); err != nil {
		p.t.Fatalf("wait for %s: %v", cond, err)
	}
}

// lim is the page's interval limit: signed, and a limit that is not 0
// never printed as 0 (artifacts.Limit).
func lim(x float64) string {
	if x == 0 || strings.Trim(f3(math.Abs(x)), "0.") != "" {
		return signed(x)
	}
	s := artifacts.Limit(math.Abs(x), 3, false)
	if x < 0 {
		return "−" + s
	}
	return "+" + s
}

func signed(x float64) string {
	switch {
	case x > 0:
		return "+" + f3(x)
	case x < 0:
		return "−" + f3(-x)
	}
	return "±0.000"
}

// letter is the site's letter grade of [lo, hi], "" when the interval
// spans two grades (written out independently of the package's scale).
func letter(lo, hi float64) string {
	g := func(x float64) string {
		for _, b := range []struct {
			min float64
			g   string
		}{{.95, "A+"}, {.9, "A"}, {.85, "A-"}, {.8, "B+"}, {.75, "B"}, {.7, "B-"}, {.65, "C+"}, {.6, "C"}, {.55, "C-"}, {.5, "D+"}, {.45, "D"}, {.4, "D-"}} {
			if x >= b.min {
				return b.g
			}
		}
		return "F"
	}
	if g(lo) != g(hi) {
		return ""
	}
	return g(lo)
}

// word is the site's grade word of [lo, hi], "" when the interval spans
// two (written out independently of the package's scale).
func word(lo, hi float64) string {
	g := func(x float64) string {
		for _, b := range []struct {
			min float64
			g   string
		}{{.75, "Strongly beneficial"}, {.6, "Moderately beneficial"}, {.55, "Slight benefit"}, {.45, "Neutral"}, {.4, "Slight concern"}, {.25, "Moderate concern"}} {
			if x >= b.min {
				return b.g
			}
		}
		return "Significant concern"
	}
	if g(lo) != g(hi) {
		return ""
	}
	return g(lo)
}

func readStudy(dir string) (*study.Result, error) {
	return study.ReadResult(filepath.Join(dir, "published", "data", "uncertainty.json"))
}

// TestSiteFromAStaticHost serves the published directory over HTTP, as
// any static host would, and opens a transcript: the same files work
// there, with no request outside the site's origin.
func TestSiteFromAStaticHost(t *testing.T) {
	_, out := siteStudy(t)
	srv := httptest.NewServer(http.FileServer(http.Dir(out)))
	defer srv.Close()
	p := newPage(t, srv.URL+"/index.html")
	p.open("/")
	if n := len(p.texts(`table.board tbody tr`)); n != 3 {
		t.Errorf("leaderboard rows: %d", n)
	}
	p.open("/scenario/alpha__m01/m01_s001_v02?model=model-c")
	p.waitFor(`document.querySelector('.conv .transcript') !== null`)
	if got := p.texts(`.transcript mark.ev`); len(got) != 1 || got[0] != xssQuote {
		t.Errorf("evidence marked %q", got)
	}
	p.clean()
}

func evalAwait[T any](p *page, js string) (T, error) {
	return chromedp.Run(p.ctx, chromedp.Evaluate[T](js, chromedp.EvalAwaitPromise))
}
