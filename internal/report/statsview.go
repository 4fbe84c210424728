package report

import (
	"fmt"
	"sort"

	"github.com/impactbench/impactbench/internal/results"
	"github.com/impactbench/impactbench/internal/stats"
)

// This file turns results.json's clustered statistics (leaderboard score,
// rank intervals, ties, model-vs-model differences, judge panels and
// per-metric agreement) into the views app.js draws. The page only reads
// them; every number comes from results.json.

// scoreView is a leaderboard row's ordering quantity. From results.json's
// leaderboard when present; otherwise (upstream files, provisional rows)
// the mean of the track rates computed here, without an interval.
type scoreView struct {
	Score  *float64 `json:"score"`
	Lo     *float64 `json:"lo,omitempty"`
	Hi     *float64 `json:"hi,omitempty"`
	Method string   `json:"method,omitempty"`
	Rank   *int     `json:"rank,omitempty"`
	RankLo *int     `json:"rank_lo,omitempty"`
	RankHi *int     `json:"rank_hi,omitempty"`
	Tied   []string `json:"tied,omitempty"`
	Warn   string   `json:"warn,omitempty"`
	// Local: results.json has no leaderboard block; Score is the plain
	// mean of the track rates.
	Local bool `json:"local,omitempty"`
}

// scoreFor is r's leaderboard score, or the mean of the row's track rates.
func scoreFor(r *results.ModelResult, pos, neg rateView) scoreView {
	if r != nil && r.Leaderboard != nil && r.Leaderboard.Score != nil {
		lb := r.Leaderboard
		return scoreView{Score: lb.Score, Lo: lb.CILow, Hi: lb.CIHigh, Method: lb.Method,
			Rank: lb.Rank, RankLo: lb.RankCILow, RankHi: lb.RankCIHigh, Tied: lb.TiedWith, Warn: lb.Warning}
	}
	var sum float64
	k := 0
	for _, v := range []rateView{pos, neg} {
		if v.Rate != nil {
			sum += *v.Rate
			k++
		}
	}
	if k == 0 {
		return scoreView{Local: true}
	}
	m := sum / float64(k)
	return scoreView{Score: &m, Local: true}
}

// legacyFewClusters is the warning for a file written with the cluster
// bootstrap, whose intervals are too narrow with few base scenarios.
func legacyFewClusters(clusters int) string {
	return fmt.Sprintf("only %d base scenario(s), and this results.json uses the cluster bootstrap, whose intervals are too narrow below %d: run aggregate again for honest intervals",
		clusters, stats.FewClusters)
}

// clusterWarning is the few-clusters warning of a headline interval:
// results.json's own, or for older bootstrap files one derived from the
// cluster count.
func clusterWarning(ci *results.ClusterCI) string {
	if ci == nil {
		return ""
	}
	if ci.Warning != "" {
		return ci.Warning
	}
	current := ci.Method == stats.MethodClusterScore || ci.Method == stats.MethodStratifiedScore || ci.Method == stats.MethodClusterBetting || ci.Method == stats.MethodClusterTWilson
	if !current && ci.Clusters > 0 && ci.Clusters < stats.FewClusters {
		return legacyFewClusters(ci.Clusters)
	}
	return ""
}

// pairwiseView is the "Model vs model" section: every pair of models once,
// per comparison (leaderboard score, each track, each metric).
type pairwiseView struct {
	Rows []pairRow `json:"rows"`
	// Comparisons lists the comparison keys in display order
	// ("leaderboard", "positive", "negative", then metric ids).
	Comparisons  []string              `json:"comparisons"`
	Multiplicity *results.Multiplicity `json:"mult,omitempty"`
}

// pairRow is A − B for one comparison, with A the model listed first in
// score order, so most differences read as "how far ahead".
type pairRow struct {
	A           string   `json:"a"`
	B           string   `json:"b"`
	Key         string   `json:"key"` // comparison key
	Track       string   `json:"track"`
	Metric      string   `json:"metric,omitempty"`
	Diff        *float64 `json:"diff"`
	Lo          *float64 `json:"lo"`
	Hi          *float64 `json:"hi"`
	P           float64  `json:"p"`
	PAdj        float64  `json:"p_adj"`
	Significant bool     `json:"sig"`
	Clusters    int      `json:"g"`
	Test        string   `json:"test"`
	Warn        string   `json:"warn,omitempty"`
	Family      string   `json:"family,omitempty"`
	FamilySize  int      `json:"family_size,omitempty"`
	Q           *float64 `json:"q,omitempty"`
}

// buildPairwise collects results.json's pairwise entries, each pair once
// (from the side of the model that comes first in order).
func buildPairwise(in *Input, order []string) pairwiseView {
	pos := map[string]int{}
	for i, m := range order {
		pos[m] = i
	}
	v := pairwiseView{}
	keys := map[string]bool{}
	var metricKeys []string
	for i := range in.Results {
		r := &in.Results[i]
		if r.Multiplicity != nil && v.Multiplicity == nil {
			v.Multiplicity = r.Multiplicity
		}
		pa, okA := pos[r.TargetModel]
		for _, p := range r.Pairwise {
			pb, okB := pos[p.Other]
			if !okA || !okB || pa > pb {
				continue // shown from the other model's side
			}
			row := pairRow{A: r.TargetModel, B: p.Other, Key: p.Track, Track: p.Track, Diff: p.Diff, Lo: p.CILow, Hi: p.CIHigh,
				P: p.PValue, PAdj: p.PAdjusted, Significant: p.Significant, Clusters: p.NClusters, Test: p.Test, Warn: p.Warning,
				Family: p.Family, FamilySize: p.FamilySize, Q: p.QValue}
			if p.MetricID != nil {
				row.Metric, row.Key = *p.MetricID, *p.MetricID
				if !keys[row.Key] {
					metricKeys = append(metricKeys, row.Key)
				}
			}
			keys[row.Key] = true
			v.Rows = append(v.Rows, row)
		}
	}
	for _, k := range []string{"leaderboard", "positive", "negative"} {
		if keys[k] {
			v.Comparisons = append(v.Comparisons, k)
		}
	}
	sort.Strings(metricKeys)
	v.Comparisons = append(v.Comparisons, metricKeys...)
	sort.SliceStable(v.Rows, func(i, j int) bool {
		a, b := v.Rows[i], v.Rows[j]
		if pos[a.A] != pos[b.A] {
			return pos[a.A] < pos[b.A]
		}
		return pos[a.B] < pos[b.B]
	})
	v.Rows = nonNil(v.Rows)
	v.Comparisons = nonNil(v.Comparisons)
	return v
}

// reliabilityView is the "Judges and agreement" section.
type reliabilityView struct {
	Panels    []panelView     `json:"panels"`
	Agreement []agreementView `json:"agreement"`
	// Identical names, per model, the scenarios whose samples are
	// byte-identical conversations (left out of the agreement figures).
	Identical []identicalView `json:"identical"`
}

// panelView is one model's judge panel: the panel rate from every verdict
// and each judge's own rate, per track.
type panelView struct {
	Model       string      `json:"model"`
	Judges      []string    `json:"judges"`
	Rows        int         `json:"rows"`
	Split       int         `json:"split"`
	NoMajority  int         `json:"no_majority"`
	Alpha       *float64    `json:"alpha"`
	Kappa       *float64    `json:"kappa"`
	KappaMethod string      `json:"kappa_method"`
	Pos         rateView    `json:"pos"`
	Neg         rateView    `json:"neg"`
	ByJudge     []judgeRate `json:"by_judge"`
}

type judgeRate struct {
	Judge string   `json:"judge"`
	Pos   rateView `json:"pos"`
	Neg   rateView `json:"neg"`
}

// agreementView is per-metric agreement on present for one model: between
// repeated samples and between judges, Krippendorff's α beside κ.
type agreementView struct {
	Model  string         `json:"model"`
	Metric string         `json:"metric"`
	Sample *agreementCell `json:"samples,omitempty"`
	Judge  *agreementCell `json:"judges,omitempty"`
}

type agreementCell struct {
	Alpha *float64 `json:"alpha"`
	Kappa *float64 `json:"kappa"`
	// Units are the scenarios (samples) or rows (judges) α is computed on;
	// Values the verdicts.
	Units  int `json:"units"`
	Values int `json:"values,omitempty"`
}

func buildReliability(in *Input, order []string, metrics []metricView) reliabilityView {
	var v reliabilityView
	for _, model := range order {
		r := resultFor(in, model)
		if r == nil {
			continue
		}
		if p := panelFor(r); p != nil {
			v.Panels = append(v.Panels, *p)
		}
		v.Agreement = append(v.Agreement, agreementFor(r, metrics)...)
		if id := identicalFor(r); id != nil {
			v.Identical = append(v.Identical, *id)
		}
	}
	v.Panels = nonNil(v.Panels)
	v.Agreement = nonNil(v.Agreement)
	v.Identical = nonNil(v.Identical)
	return v
}

func panelFor(r *results.ModelResult) *panelView {
	j := r.Judges
	if j == nil || j.Panel == nil {
		return nil
	}
	p := &panelView{Model: r.TargetModel, Judges: nonNil(j.Judges), Rows: j.Panel.NRows, Split: j.Panel.NSplit,
		NoMajority: j.Panel.NNoMajority, Alpha: j.Alpha, Kappa: j.Kappa, KappaMethod: j.KappaMethod,
		Pos: fromClusterCI(j.Panel.Positive), Neg: fromClusterCI(j.Panel.Negative)}
	for _, e := range j.Panel.ByJudge {
		p.ByJudge = append(p.ByJudge, judgeRate{Judge: e.Key, Pos: fromClusterCI(e.Value.Positive), Neg: fromClusterCI(e.Value.Negative)})
	}
	p.ByJudge = nonNil(p.ByJudge)
	return p
}

// agreementFor lists r's per-metric agreement in benchmark order.
func agreementFor(r *results.ModelResult, metrics []metricView) []agreementView {
	var out []agreementView
	for _, m := range metrics {
		a := agreementView{Model: r.TargetModel, Metric: m.ID}
		if r.Agreement != nil {
			if pa, ok := r.Agreement.ByMetric.Get(m.ID); ok {
				a.Sample = &agreementCell{Alpha: pa.Alpha, Kappa: pa.FleissKappa, Units: pa.NUnits, Values: pa.NValues}
			}
		}
		if r.Judges != nil {
			if jm, ok := r.Judges.ByMetric.Get(m.ID); ok {
				a.Judge = &agreementCell{Alpha: jm.Alpha, Kappa: jm.Kappa, Units: jm.N, Values: jm.NAlpha}
			}
		}
		if a.Sample != nil || a.Judge != nil {
			out = append(out, a)
		}
	}
	return out
}

// fromClusterCI is a panel or judge rate as the page shows it.
func fromClusterCI(ci *results.ClusterCI) rateView {
	if ci == nil {
		return rateView{}
	}
	v := rateView{Rate: ci.Estimate, N: ci.N, K: ci.Passed, Clusters: ci.Clusters, Warn: clusterWarning(ci)}
	if ci.Low != nil && ci.High != nil {
		v.Lo, v.Hi, v.Method = ci.Low, ci.High, ci.Method
	}
	return v
}

// scoreOrder lists the leaderboard's models by score, highest first (no
// score last; equal scores by name): the order every view shows them in.
func scoreOrder(rows []leaderboardRow) []string {
	rs := append([]leaderboardRow(nil), rows...)
	key := func(r leaderboardRow) float64 {
		if r.Score.Score == nil {
			return -1
		}
		return *r.Score.Score
	}
	sort.SliceStable(rs, func(i, j int) bool {
		if ki, kj := key(rs[i]), key(rs[j]); ki != kj {
			return ki > kj
		}
		return rs[i].Model < rs[j].Model
	})
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.Model
	}
	return out
}

// byScore reorders models to follow order; models not in it keep their
// place after those that are.
func byScore(models, order []string) []string {
	in := map[string]bool{}
	for _, m := range models {
		in[m] = true
	}
	out := make([]string, 0, len(models))
	seen := map[string]bool{}
	for _, m := range order {
		if in[m] && !seen[m] {
			seen[m] = true
			out = append(out, m)
		}
	}
	for _, m := range models {
		if !seen[m] {
			seen[m] = true
			out = append(out, m)
		}
	}
	return out
}
