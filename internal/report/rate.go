package report

import (
	"math"

	"github.com/impactbench/impactbench/internal/layout"
	"github.com/impactbench/impactbench/internal/results"
	"github.com/impactbench/impactbench/internal/stats"
)

// Interval methods as shown to readers.
const (
	methodBootstrap = "cluster bootstrap"
	methodWilson    = "Wilson"
	methodGiven     = layout.ResultsFile // the intervals results.json gives
)

// rateView is a pass rate as the page shows it. Rate is nil when there is
// no scored conversation (the page prints "—", never 0%).
type rateView struct {
	Rate   *float64 `json:"rate"`
	Lo     *float64 `json:"lo,omitempty"`
	Hi     *float64 `json:"hi,omitempty"`
	N      int      `json:"n"`
	K      int      `json:"k"`
	Method string   `json:"method,omitempty"`
	// Clusters is the number of base scenarios behind a cluster interval;
	// Warn its few-clusters warning.
	Clusters int    `json:"g,omitempty"`
	Warn     string `json:"warn,omitempty"`
}

// wilsonView builds a rate with a 95% Wilson interval from counts.
func wilsonView(k, n int) rateView {
	if n <= 0 || k < 0 || k > n {
		return rateView{N: max(n, 0)}
	}
	lo, hi := stats.Wilson(k, n, 0.95)
	r := float64(k) / float64(n)
	return rateView{Rate: &r, Lo: &lo, Hi: &hi, N: n, K: k, Method: methodWilson}
}

// fromRate converts a results.json rate, preferring its own interval and
// falling back to Wilson from its counts (upstream writes no intervals).
func fromRate(r results.Rate) rateView {
	if r.PassRate == nil {
		return rateView{N: r.NTotal, K: r.NPassed}
	}
	v := rateView{Rate: r.PassRate, N: r.NTotal, K: r.NPassed}
	if r.CILow != nil && r.CIHigh != nil {
		v.Lo, v.Hi, v.Method = r.CILow, r.CIHigh, methodGiven
		return v
	}
	if w := wilsonView(r.NPassed, r.NTotal); w.Rate != nil {
		v.Lo, v.Hi, v.Method = w.Lo, w.Hi, methodWilson
	}
	return v
}

// fromTypeRate converts positive/negative_pass_rate + n + optional CI.
// Upstream stores only the rounded rate and n, so the Wilson fallback
// recovers k as round(rate·n), which is exact for rates rounded to 4 dp
// whenever n < 5,000 and within one success beyond that.
func fromTypeRate(rate *float64, n int, ci *results.ClusterCI) rateView {
	if rate == nil {
		return rateView{N: n}
	}
	k := int(math.Round(*rate * float64(n)))
	v := rateView{Rate: rate, N: n, K: k}
	if ci != nil && ci.Low != nil && ci.High != nil {
		v.Lo, v.Hi = ci.Low, ci.High
		v.Method = methodBootstrap
		if ci.Method != "" && ci.Method != "cluster_bootstrap" {
			v.Method = ci.Method
		}
		v.Clusters, v.Warn = ci.Clusters, clusterWarning(ci)
		return v
	}
	if w := wilsonView(k, n); w.Rate != nil {
		v.Lo, v.Hi, v.Method = w.Lo, w.Hi, methodWilson
	}
	return v
}
