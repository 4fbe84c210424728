package publish

import (
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/impactbench/impactbench/internal/browsertest"
	"github.com/impactbench/impactbench/internal/site"
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
	abs, _ := filepath.Abs(filepath.Join(j.out, site.Index))
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
