package site_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// paint is one page load's timings, in ms from navigation start: when
// the page had built the route's content (rendered), the frame after it
// (painted), and Chromium's first contentful and largest contentful
// paints.
type paint struct {
	Rendered, Painted, FCP, LCP float64
}

// measure loads route from scratch and returns its timings.
func (p *page) measure(route string) paint {
	p.t.Helper()
	p.open(route)
	var out paint
	m := eval[map[string]float64](p, `(function(){var t = window.__siteTimings[0] || {}; var f = performance.getEntriesByName('first-contentful-paint')[0];
		return {rendered: t.rendered || -1, painted: t.painted || -1, fcp: f ? f.startTime : -1}})()`)
	out.Rendered, out.Painted, out.FCP = m["rendered"], m["painted"], m["fcp"]
	lcp, err := evalAwait[float64](p, `new Promise(function (resolve) {
		new PerformanceObserver(function (l) { var e = l.getEntries(); resolve(e.length ? e[e.length-1].startTime : -1); }).observe({type: 'largest-contentful-paint', buffered: true});
		setTimeout(function () { resolve(-1); }, 2000); })`)
	if err == nil {
		out.LCP = lcp
	}
	return out
}

// warmPaints loads route once to warm the browser, then n times, and
// returns the median of each timing over the n warm loads.
func (p *page) warmPaints(route string, n int) (cold, warm paint) {
	cold = p.measure(route)
	var all []paint
	for range n {
		all = append(all, p.measure(route))
	}
	med := func(f func(paint) float64) float64 {
		xs := make([]float64, len(all))
		for i, a := range all {
			xs[i] = f(a)
		}
		slices.Sort(xs)
		return xs[len(xs)/2]
	}
	warm = paint{Rendered: med(func(a paint) float64 { return a.Rendered }), Painted: med(func(a paint) float64 { return a.Painted }),
		FCP: med(func(a paint) float64 { return a.FCP }), LCP: med(func(a paint) float64 { return a.LCP })}
	return cold, warm
}

// TestSitePaintTimes measures, in Chromium from file://, how long a
// published site takes from navigation start to painting the leaderboard
// and three drill-down pages (an area, a metric with its scenarios, a
// transcript), cold and warm. It needs a published site:
//
//	STUDYTEST_OUT=/tmp/july go test ./internal/study/studytest -run TestWriteRebuiltStudy
//	impactbench --config /tmp/july/config.yaml publish --site -o /tmp/july/out
//	SITE_TIMING_DIR=/tmp/july/out go test ./internal/site -run TestSitePaintTimes -v
//
// docs/study.md records the numbers for the full July 2026 study; the
// warm ones must stay under a second.
func TestSitePaintTimes(t *testing.T) {
	dir := os.Getenv("SITE_TIMING_DIR")
	if dir == "" {
		t.Skip("set SITE_TIMING_DIR to a published site (see the comment) to measure it")
	}
	routes := []string{"/", "/node/area/physical?model=gpt-5", "/metric/humanebench__m01?model=gpt-5", "/scenario/humanebench__m01/m01_s001_v02?model=gpt-5"}
	if r := os.Getenv("SITE_TIMING_ROUTES"); r != "" {
		routes = filepath.SplitList(r)
	}
	p := newPage(t, fileURL(filepath.Join(dir, "index.html")))
	for _, r := range routes {
		start := time.Now()
		cold, warm := p.warmPaints(r, 7)
		t.Logf("%-60s cold: rendered %4.0f, painted %4.0f, FCP %4.0f, LCP %4.0f ms | warm (median of 7): rendered %4.0f, painted %4.0f, FCP %4.0f, LCP %4.0f ms (%v)",
			r, cold.Rendered, cold.Painted, cold.FCP, cold.LCP, warm.Rendered, warm.Painted, warm.FCP, warm.LCP, time.Since(start).Round(time.Millisecond))
		if warm.Painted > 1000 || warm.LCP > 1000 {
			t.Errorf("%s: warm paint %.0f ms, LCP %.0f ms: over a second", r, warm.Painted, warm.LCP)
		}
	}
	p.clean()
}
