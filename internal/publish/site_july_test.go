package publish

import (
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/impactbench/impactbench/internal/browsertest"
	"github.com/impactbench/impactbench/internal/layout"
	"github.com/impactbench/impactbench/internal/study"
)

// TestJulySitePaintsInUnderASecond opens the static site of the rebuilt
// July 2026 study (16 models × 360 metrics × 2,160 scenario rows) from
// file:// in Chromium and measures, from navigation start, when the page
// has painted the leaderboard and three drill-down pages (an area, a
// metric with its scenarios, a transcript): warm (the median of five
// loads after a first one), each must be under a second. docs/study.md
// gives the numbers measured by hand (internal/site's TestSitePaintTimes).
func TestJulySitePaintsInUnderASecond(t *testing.T) {
	j := rebuiltJuly(t)
	ctx, log := browsertest.New(t, 1280, 900)
	abs, _ := filepath.Abs(filepath.Join(j.out, layout.SiteIndex))
	base := (&url.URL{Scheme: "file", Path: abs}).String()
	log.SetAllow(func(u string) bool { return strings.HasPrefix(u, "file://"+filepath.Dir(abs)+"/") })
	load := func(route string) float64 {
		t.Helper()
		if err := chromedp.Do(ctx, chromedp.Navigate("about:blank"), chromedp.Navigate(base+"#"+route)); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(30 * time.Second)
		for {
			v, err := chromedp.Run(ctx, chromedp.Evaluate[float64](`(function(){var t = window.__siteTimings; return t && t.length && window.__siteReady === location.hash ? t[0].painted : -1})()`))
			if err != nil {
				t.Fatal(err)
			}
			if v >= 0 {
				return v
			}
			if errs, _, _ := log.Snapshot(); len(errs) > 0 || time.Now().After(deadline) {
				t.Fatalf("%s did not paint: %q", route, errs)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	for _, route := range []string{"/", "/node/area/physical?model=gpt-5", "/metric/humanebench__m01?model=gpt-5", "/scenario/humanebench__m01/m01_s001_v02?model=gpt-5"} {
		cold := load(route)
		var warm []float64
		for range 5 {
			warm = append(warm, load(route))
		}
		slices.Sort(warm)
		t.Logf("%s: painted %.0f ms cold, %.0f ms warm (median of 5)", route, cold, warm[2])
		if warm[2] >= 1000 {
			t.Errorf("%s: painted %.0f ms after navigation start (warm): not under a second", route, warm[2])
		}
	}
	if errs, dialogs, reqs := log.Snapshot(); len(errs)+len(dialogs)+len(reqs) > 0 {
		t.Errorf("errors %q, dialogs %q, requests outside the site %q", errs, dialogs, reqs)
	}
}

// TestJulySiteNumbersInDocs: docs/study.md says how many of the rebuilt
// July study's cells the site grades and what the adults' overall tie
// groups are; this reads them from the published site's core chunk.
func TestJulySiteNumbersInDocs(t *testing.T) {
	j := rebuiltJuly(t)
	b, err := os.ReadFile(filepath.Join(j.out, "site", "data", "core.js"))
	if err != nil {
		t.Fatal(err)
	}
	var core struct {
		Models []struct{ ID string } `json:"models"`
		Nodes  []struct {
			ID    string                       `json:"id"`
			Cells map[string][]json.RawMessage `json:"cells"`
		} `json:"nodes"`
		Levels []struct {
			Kind   string `json:"kind"`
			Cells  int    `json:"cells"`
			Graded int    `json:"graded"`
		} `json:"levels"`
	}
	body := string(b)
	if err := json.Unmarshal([]byte(strings.TrimSuffix(body[strings.Index(body, "]=")+2:], ";\n")), &core); err != nil {
		t.Fatal(err)
	}
	graded := map[string]string{}
	for _, l := range core.Levels {
		graded[l.Kind] = fmt.Sprintf("%d of the %d", l.Graded, l.Cells)
	}
	groups := map[string][]string{}
	var letters []string
	for _, n := range core.Nodes {
		if n.ID != study.KindOverall {
			continue
		}
		for _, raw := range n.Cells["adult"] {
			var c []any
			if err := json.Unmarshal(raw, &c); err != nil {
				t.Fatal(err)
			}
			ties, _ := c[12].(string)
			for _, l := range strings.Split(ties, ",") {
				if l == "" {
					continue
				}
				if groups[l] == nil {
					letters = append(letters, l)
				}
				groups[l] = append(groups[l], core.Models[int(c[0].(float64))].ID)
			}
		}
	}
	slices.Sort(letters)
	var gs []string
	for _, l := range letters {
		slices.Sort(groups[l])
		gs = append(gs, l+": "+strings.Join(groups[l], ", "))
	}
	got := fmt.Sprintf("July 2026: the site shows a grade word for %s overall cells, a letter for %s label overalls and %s category cells, and a step label for %s metric cells. The adults' overall tie groups are %s.\n",
		graded[study.KindOverall], graded[study.KindLabel], graded[study.KindNutrition], graded[study.KindMetric], strings.Join(gs, "; "))
	if want := docBlock(t, "july-site"); got != want {
		t.Errorf("docs/study.md's july-site block says\n%s\nthe site has\n%s", want, got)
	}
}
