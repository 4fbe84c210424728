package adaptive

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
)

// Quantiles summarise a distribution over replays.
type Quantiles struct {
	Mean float64 `json:"mean"`
	Min  float64 `json:"min"`
	P5   float64 `json:"p5"`
	P50  float64 `json:"p50"`
	P95  float64 `json:"p95"`
	Max  float64 `json:"max"`
}

func quantiles(xs []float64) Quantiles {
	if len(xs) == 0 {
		return Quantiles{}
	}
	s := slices.Sorted(slices.Values(xs))
	at := func(p float64) float64 { return s[int(math.Round(p*float64(len(s)-1)))] }
	sum := 0.0
	for _, x := range s {
		sum += x
	}
	return Quantiles{Mean: sum / float64(len(s)), Min: s[0], P5: at(0.05), P50: at(0.5), P95: at(0.95), Max: s[len(s)-1]}
}

// Summary is a replay's distribution and the goal: at most half
// the conversations, and in at least 95 % of the replays no conclusion
// against the full study and at least 90 % of its different-calls and
// grades stated.
type Summary struct {
	Replays int `json:"replays"`
	// Share is the conversations over the full study's; Kept the share
	// of the full study's different-calls and grades stated;
	// DifferentKept and GradesKept each kind's.
	Share         Quantiles `json:"share"`
	Kept          Quantiles `json:"kept"`
	DifferentKept Quantiles `json:"different_kept"`
	GradesKept    Quantiles `json:"grades_kept"`
	// NoAgainst is the share of replays without a contradiction;
	// NoBeyond, of those also without a grade the full study withholds;
	// Kept90, of replays stating ≥ 90 % of the full study's conclusions.
	NoAgainst float64 `json:"no_against"`
	NoBeyond  float64 `json:"no_beyond"`
	Kept90    float64 `json:"kept_90"`
	// Goal: Share.Mean ≤ 0.5, NoAgainst ≥ 0.95 and Kept90 ≥ 0.95.
	Goal bool `json:"goal"`
	// PerConclusion is the mean conversations per conclusion stated
	// (different-calls and grades); FullPerConclusion the full study's.
	PerConclusion     float64 `json:"per_conclusion"`
	FullPerConclusion float64 `json:"full_per_conclusion"`
	// Cost is each demand class's mean share of the rows added after the
	// first round.
	Cost map[string]float64 `json:"cost"`
}

// Summarize is the distribution over runs.
func Summarize(runs []ReplayRun) Summary {
	s := Summary{Replays: len(runs), Cost: map[string]float64{}}
	if len(runs) == 0 {
		return s
	}
	var share, kept, dk, gk, per []float64
	for _, r := range runs {
		share = append(share, r.Share())
		kept = append(kept, r.Kept())
		dk = append(dk, float64(r.DifferentKept)/float64(max(r.DifferentFull, 1)))
		gk = append(gk, float64(r.GradesKept)/float64(max(r.GradesFull, 1)))
		per = append(per, float64(r.Conversations)/float64(max(r.Different+r.Grades, 1)))
		s.NoAgainst += b2f(r.Against() == 0)
		s.NoBeyond += b2f(r.Against() == 0 && r.GradeBeyond == 0)
		s.Kept90 += b2f(r.Kept() >= 0.9)
		added := 0.0
		for _, v := range r.Cost {
			added += v
		}
		for k, v := range r.Cost {
			s.Cost[k] += v / max(added, 1) / float64(len(runs))
		}
	}
	n := float64(len(runs))
	s.NoAgainst, s.NoBeyond, s.Kept90 = s.NoAgainst/n, s.NoBeyond/n, s.Kept90/n
	s.Share, s.Kept, s.DifferentKept, s.GradesKept = quantiles(share), quantiles(kept), quantiles(dk), quantiles(gk)
	s.PerConclusion = quantiles(per).Mean
	r0 := runs[0]
	s.FullPerConclusion = float64(r0.Full) / float64(max(r0.DifferentFull+r0.GradesFull, 1))
	s.Goal = s.Share.Mean <= 0.5 && s.NoAgainst >= 0.95 && s.Kept90 >= 0.95
	return s
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// Row is the summary as a row of docs/statistics.md's replay table.
func (s Summary) Row(label string) string {
	pct := func(x float64) string { return fmt.Sprintf("%.1f", 100*x) }
	return fmt.Sprintf("| %s | %d | %s (%s–%s) | %s (%s–%s) | %s | %s | %s | %s | %s | %.1f |", label, s.Replays,
		pct(s.Share.Mean), pct(s.Share.P5), pct(s.Share.P95),
		pct(s.Kept.Mean), pct(s.Kept.P5), pct(s.Kept.P95),
		pct(s.DifferentKept.Mean), pct(s.GradesKept.Mean), pct(s.NoAgainst), pct(s.NoBeyond), pct(s.Kept90), s.PerConclusion)
}

// TableHeader is the replay table's header (Row's columns).
const TableHeader = "| design | replays | conversations, % of the full study (5–95 %) | conclusions stated, % of the full study's (5–95 %) | different-calls | grades | replays with none against | …and none beyond | replays stating ≥ 90 % | conversations per conclusion |\n|---|---|---|---|---|---|---|---|---|---|"

// CostLine lists the demand classes by their share of the added rows.
func (s Summary) CostLine() string {
	keys := slices.SortedFunc(maps.Keys(s.Cost), func(a, b string) int { return cmpFloat(s.Cost[b], s.Cost[a]) })
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %.0f %%", k, 100*s.Cost[k]))
	}
	return strings.Join(parts, ", ")
}
