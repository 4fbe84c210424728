package results

import (
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/stats"
)

// ageStudy builds one target's rows on metric m01 (positive) with an age
// axis: bases base scenarios, each with a child and an adult variant and
// samples samples. pass(b, child, s) decides each verdict.
func ageStudy(target string, bases, samples int, pass func(b int, child bool, s int) bool) ([]artifacts.Scenario, []artifacts.Score) {
	var scen []artifacts.Scenario
	var rows []artifacts.Score
	for b := range bases {
		for v, child := range []bool{true, false} {
			id := fmt.Sprintf("m01_s%03d_v%02d", b+1, v+1)
			age := "adult"
			if child {
				age = "child"
			}
			scen = append(scen, artifacts.Scenario{ID: id, MetricID: "m01", Demographic: artifacts.Demographic{{Key: "age", Value: age}}})
			for s := range samples {
				p := pass(b, child, s)
				rows = append(rows, artifacts.Score{ID: id, MetricID: "m01", TargetModel: target, Sample: s, Passed: ptr(p), Present: ptr(p)})
			}
		}
	}
	return scen, rows
}

// TestAggregate_TwoOf12ScenariosNotSignificant is issue 12's case: 2 of 12
// base scenarios treat children differently (6 samples each: McNemar b =
// 12, c = 0, p = 2·0.5^12 ≈ 0.0005), the other 10 treat both alike. Over
// scenarios only 2 differences are non-zero, and 2 of their 4 sign
// patterns are as extreme: p = 0.5, not significant.
func TestAggregate_TwoOf12ScenariosNotSignificant(t *testing.T) {
	scen, rows := ageStudy("t", 12, 6, func(b int, child bool, s int) bool {
		if b < 2 {
			return child
		}
		return s%2 == 0
	})
	res, err := Aggregate(Input{Metrics: metrics, Scores: rows, Scenarios: scen}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	g := res[0].DemographicGaps[0]
	if g.B != 12 || g.C != 0 || *g.McNemarP != 0.0004883 {
		t.Errorf("McNemar counts b=%d c=%d p=%v, want 12, 0, 0.0004883", g.B, g.C, fmtp(g.McNemarP))
	}
	if g.PValue != 0.5 || g.PAdjusted != 0.5 || g.Significant || g.NClusters != 12 || g.Test != stats.MethodDiffExact || *g.PSignFlip != 0.5 {
		t.Errorf("clustered test: %s", compact(t, g))
	}
	// Mean per-scenario difference 2/12 with an interval that includes 0.
	if *g.ClusterDiff != 0.1667 || !(*g.CILow < 0) || g.Warning != "" {
		t.Errorf("difference %s [%s, %s], warning %q", fmtp(g.ClusterDiff), fmtp(g.CILow), fmtp(g.CIHigh), g.Warning)
	}
}

// TestAggregate_PanelKeepsSplitRows: two judges on a positive metric over
// 4 base scenarios. Judge 1 says present on every row, judge 2 on half:
// the split rows have no majority (passed null) and upstream's rate drops
// them; the panel rate counts every verdict.
func TestAggregate_PanelKeepsSplitRows(t *testing.T) {
	var rows []artifacts.Score
	for b := range 4 {
		for s := range 4 {
			j2 := s%2 == 0
			r := artifacts.Score{ID: fmt.Sprintf("m01_s%03d_v01", b+1), MetricID: "m01", TargetModel: "t", Sample: s,
				Judges: []artifacts.JudgeVerdict{{Judge: "a", Present: T}, {Judge: "b", Present: ptr(j2)}}}
			if j2 {
				r.Present, r.Passed = T, T
			}
			rows = append(rows, r)
		}
	}
	res, err := Aggregate(Input{Metrics: metrics, Scores: rows}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	m := res[0]
	// Upstream: only the 8 unanimous rows, all passed.
	if *m.PositivePassRate != 1 || m.NNull != 8 {
		t.Errorf("upstream rate %s with %d nulls, want 1.0 with 8", fmtp(m.PositivePassRate), m.NNull)
	}
	p := m.Judges.Panel
	if p.NRows != 16 || p.NSplit != 8 || p.NNoMajority != 8 {
		t.Errorf("panel counts %s", compact(t, p))
	}
	// 32 verdicts, 24 "present" → 0.75; every scenario at 6/8, so the
	// interval comes from the Wilson floor and is not zero-width.
	if p.Positive.N != 32 || p.Positive.Passed != 24 || *p.Positive.Estimate != 0.75 || p.Positive.Clusters != 4 ||
		!(*p.Positive.Low < 0.75 && *p.Positive.High > 0.75) || p.Positive.Warning == "" {
		t.Errorf("panel positive %s", compact(t, p.Positive))
	}
	a, _ := p.ByJudge.Get("a")
	b, _ := p.ByJudge.Get("b")
	if *a.Positive.Estimate != 1 || *b.Positive.Estimate != 0.5 || a.Negative.N != 0 {
		t.Errorf("per judge: a %s, b %s", compact(t, a), compact(t, b))
	}
	// The panel rate sits between the judges' (here exactly their mean),
	// and its interval reaches beyond the upstream rate's point.
	if *p.Positive.Estimate != (*a.Positive.Estimate+*b.Positive.Estimate)/2 {
		t.Error("panel rate is not the mean of the judges' rates")
	}
}

// TestAggregate_PresentAgreementIgnoresCoding: the same present verdicts
// under a positive and under a negative metric must give the same
// per-metric α and κ; the legacy pooled κ on passed does not (issue 12).
func TestAggregate_PresentAgreementIgnoresCoding(t *testing.T) {
	present := [][]bool{{true, true, true}, {true, false, true}, {false, false, false}, {true, true, false}}
	var rows []artifacts.Score
	for _, mid := range []string{"m01", "m02"} { // m01 positive, m02 negative
		for u, verdicts := range present {
			for s, v := range verdicts {
				passed := v == (mid == "m01")
				rows = append(rows, artifacts.Score{ID: fmt.Sprintf("%s_s%03d_v01", mid, u+1), MetricID: mid, TargetModel: "t",
					Sample: s, Present: ptr(v), Passed: ptr(passed)})
			}
		}
	}
	res, err := Aggregate(Input{Metrics: metrics, Scores: rows}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ag := res[0].Agreement
	m1, _ := ag.ByMetric.Get("m01")
	m2, _ := ag.ByMetric.Get("m02")
	if compact(t, m1) != compact(t, m2) || m1.Alpha == nil {
		t.Errorf("per-metric agreement depends on coding: m01 %s, m02 %s", compact(t, m1), compact(t, m2))
	}
	// By hand for m01: n = 12, n₁ = 7; D_o = 2 + 2 = 4 (two mixed units);
	// D_e = (144 − 49 − 25)/11 = 70/11 → α = 1 − 44/70 = 0.3714.
	if *m1.Alpha != 0.3714 {
		t.Errorf("α = %s, want 0.3714", fmtp(m1.Alpha))
	}
}

// threeModels: A and B behave alike, C is much worse; 12 base scenarios on
// each track, 4 conversations each.
func threeModels() []artifacts.Score {
	var rows []artifacts.Score
	for _, target := range []string{"A", "B", "C"} {
		for _, mid := range []string{"m01", "m02"} {
			for b := range 12 {
				for s := range 4 {
					var pass bool
					switch target {
					case "A":
						pass = (b+s)%4 != 0 // 75%
					case "B":
						pass = (b+s+1)%4 != 0 // 75%, other conversations
					case "C":
						pass = (b+s)%4 == 0 // 25%
					}
					rows = append(rows, artifacts.Score{ID: fmt.Sprintf("%s_s%03d_v01", mid, b+1), MetricID: mid,
						TargetModel: target, Sample: s, Passed: ptr(pass)})
				}
			}
		}
	}
	return rows
}

func TestAggregate_ModelVsModel(t *testing.T) {
	res, err := Aggregate(Input{Metrics: metrics, Scores: threeModels()}, Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	by := map[string]ModelResult{}
	for _, m := range res {
		by[m.TargetModel] = m
	}
	a, b, c := by["A"], by["B"], by["C"]
	if *a.Leaderboard.Score != 0.75 || *c.Leaderboard.Score != 0.25 || *a.Leaderboard.Rank != 1 || *b.Leaderboard.Rank != 1 || *c.Leaderboard.Rank != 3 {
		t.Errorf("leaderboard A %s, C %s", compact(t, a.Leaderboard), compact(t, c.Leaderboard))
	}
	if !slices.Equal(a.Leaderboard.TiedWith, []string{"B"}) || len(c.Leaderboard.TiedWith) != 0 {
		t.Errorf("ties: A %v, C %v", a.Leaderboard.TiedWith, c.Leaderboard.TiedWith)
	}
	if *c.Leaderboard.RankCILow != 3 || *c.Leaderboard.RankCIHigh != 3 || *a.Leaderboard.RankCILow != 1 || *a.Leaderboard.RankCIHigh != 2 {
		t.Errorf("rank intervals A [%d, %d], C [%d, %d]", *a.Leaderboard.RankCILow, *a.Leaderboard.RankCIHigh,
			*c.Leaderboard.RankCILow, *c.Leaderboard.RankCIHigh)
	}
	// Each model lists both others × (leaderboard, positive, negative, m01, m02).
	if len(a.Pairwise) != 10 || len(c.Pairwise) != 10 {
		t.Fatalf("pairwise entries: A %d, C %d", len(a.Pairwise), len(c.Pairwise))
	}
	find := func(m ModelResult, other, track string) Pairwise {
		for _, p := range m.Pairwise {
			if p.Other == other && p.Track == track && p.MetricID == nil {
				return p
			}
		}
		t.Fatalf("%s has no %s/%s entry", m.TargetModel, other, track)
		return Pairwise{}
	}
	ac, ca := find(a, "C", trackLeaderboard), find(c, "A", trackLeaderboard)
	// A − C is 0.5 in every scenario: 24 scenarios, Monte Carlo sign flip
	// at its floor 2/10000 (only the observed pattern is as extreme), Holm
	// over the 3 pairs of the pairwise:leaderboard family.
	if *ac.Diff != 0.5 || *ca.Diff != -0.5 || *ac.CILow != -*ca.CIHigh || ac.PValue != ca.PValue ||
		!ac.Significant || ac.NClusters != 24 || ac.Test != stats.MethodDiffMonteCarlo || ac.PValue != 0.0002 ||
		ac.Family != "pairwise:leaderboard" || ac.FamilySize != 3 || *ac.PSignFlip != 0.0002 {
		t.Errorf("A vs C %s / C vs A %s", compact(t, ac), compact(t, ca))
	}
	ab := find(a, "B", trackPositive)
	if *ab.Diff != 0 || ab.Significant || ab.NClusters != 12 || ab.Test != stats.MethodDiffExact || ab.Family != "pairwise:positive" {
		t.Errorf("A vs B %s", compact(t, ab))
	}
	wantFamilies := `{"pairwise:leaderboard":3,"pairwise:positive":3,"pairwise:negative":3,"pairwise:metric:m01":3,"pairwise:metric:m02":3}`
	if a.Multiplicity.FamilySize != 3 || a.Multiplicity.Correction != "holm" || compact(t, a.Multiplicity.Families) != wantFamilies {
		t.Errorf("multiplicity %s", compact(t, a.Multiplicity))
	}
	// p_adjusted is Holm and q_value Benjamini–Hochberg within each family.
	checkFamilies(t, res)
}

// checkFamilies recomputes every test's Holm and Benjamini–Hochberg
// adjustment within its family from the file's raw p-values (each pair
// once) and checks significant against p_adjusted.
func checkFamilies(t *testing.T, res []ModelResult) {
	t.Helper()
	type test struct{ p, adj, q float64 }
	fams := map[string][]test{}
	sizes := map[string]int{}
	add := func(name string, tt Tested, p, adj float64, sig bool) {
		fams[tt.Family] = append(fams[tt.Family], test{p, adj, *tt.QValue})
		sizes[tt.Family] = tt.FamilySize
		if sig != (adj < 0.05) {
			t.Errorf("%s: significant %v with p_adjusted %v", name, sig, adj)
		}
	}
	for i, m := range res {
		for _, g := range m.DemographicGaps {
			add(m.TargetModel+" gap "+g.Axis, g.Tested, g.PValue, g.PAdjusted, g.Significant)
		}
		for _, p := range m.Pairwise {
			if slices.IndexFunc(res, func(o ModelResult) bool { return o.TargetModel == p.Other }) > i {
				add(m.TargetModel+" vs "+p.Other, p.Tested, p.PValue, p.PAdjusted, p.Significant)
			}
		}
	}
	for fam, ts := range fams {
		if len(ts) != sizes[fam] {
			t.Errorf("family %s: %d tests, family_size %d", fam, len(ts), sizes[fam])
		}
		raw := make([]float64, len(ts))
		for i, x := range ts {
			raw[i] = x.p
		}
		holm, bh := stats.Holm(raw), stats.BenjaminiHochberg(raw)
		for i, x := range ts {
			if math.Abs(x.adj-holm[i]) > 1e-3*holm[i] || math.Abs(x.q-bh[i]) > 1e-3*bh[i] {
				t.Errorf("family %s test %d: p_adjusted %v q %v; recomputed %v %v", fam, i, x.adj, x.q, holm[i], bh[i])
			}
		}
	}
}

// TestAggregate_FamiliesByQuestion: a model's demographic gaps on a metric
// are one family, the pairs' score differences another; adding a model
// leaves the first model's gaps exactly as they were.
func TestAggregate_FamiliesByQuestion(t *testing.T) {
	scen, rows := ageStudy("x", 6, 2, func(b int, child bool, s int) bool { return child })
	_, rows2 := ageStudy("y", 6, 2, func(b int, child bool, s int) bool { return child || s == 0 })
	alone, err := Aggregate(Input{Metrics: metrics, Scores: slices.Clone(rows), Scenarios: scen}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	both, err := Aggregate(Input{Metrics: metrics, Scores: append(slices.Clone(rows), rows2...), Scenarios: scen}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	x := both[slices.IndexFunc(both, func(m ModelResult) bool { return m.TargetModel == "x" })]
	// x's gap alone in its family: 6 scenarios all d = 1 → sign flip
	// p = 2/64 = 0.03125 (the binomial floor's is far smaller), Holm over
	// a family of 1 → significant. (In one family per file, with the
	// pair's 3 tests and y's gap beside it, Holm's first step made it
	// 0.156: not significant.)
	g := x.DemographicGaps[0]
	if g.PValue != 0.03125 || g.PAdjusted != 0.03125 || !g.Significant || g.Family != "gaps:x:m01" || g.FamilySize != 1 {
		t.Errorf("gap %s", compact(t, g))
	}
	if d := cmp.Diff(compact(t, alone[0].DemographicGaps), compact(t, x.DemographicGaps)); d != "" {
		t.Errorf("adding model y changed x's gaps (-alone +with y):\n%s", d)
	}
	wantFamilies := `{"gaps:x:m01":1,"gaps:y:m01":1,"pairwise:leaderboard":1,"pairwise:positive":1,"pairwise:metric:m01":1}`
	if got := compact(t, x.Multiplicity.Families); got != wantFamilies {
		t.Errorf("families %s, want %s", got, wantFamilies)
	}
	checkFamilies(t, both)
}

// TestAggregate_ICCPerTrack: positive_ci records the track's ICC (the pilot
// for planning), as stats.ICC computes it over base scenarios.
func TestAggregate_ICCPerTrack(t *testing.T) {
	res, err := Aggregate(Input{Metrics: metrics, Scores: threeModels()}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var cs []stats.ClusterSum
	for b := range 12 {
		k := 0
		for s := range 4 {
			if (b+s)%4 != 0 {
				k++
			}
		}
		cs = append(cs, stats.Binary(k, 4))
	}
	a := res[slices.IndexFunc(res, func(m ModelResult) bool { return m.TargetModel == "A" })]
	if want := round4(stats.ICC(cs)); *a.PositiveCI.ICC != want {
		t.Errorf("icc %s, want %v", fmtp(a.PositiveCI.ICC), want)
	}
	m01, _ := a.ByMetric.Get("m01")
	if m01.ClusterCI == nil || m01.ClusterCI.Clusters != 12 {
		t.Errorf("by_metric cluster_ci %s", compact(t, m01.ClusterCI))
	}
}

// TestReadResults_BeforeIssue12: a results.json written before the
// clustered statistics (bootstrap positive_ci with reps/seed, McNemar
// p-values, no pairwise) still parses.
func TestReadResults_BeforeIssue12(t *testing.T) {
	back, err := ReadResults(filepath.Join("testdata", "results_before_issue12.json"))
	if err != nil || len(back) != 1 || !back[0].Extended {
		t.Fatalf("old file: %v, %d entries", err, len(back))
	}
	m := back[0]
	if m.PositiveCI.Method != stats.MethodClusterBootstrap || m.PositiveCI.Reps != 2000 || m.PositiveCI.Low == nil {
		t.Errorf("old positive_ci %s", compact(t, m.PositiveCI))
	}
	if len(m.DemographicGaps) == 0 || m.DemographicGaps[0].Test != "" || m.Leaderboard != nil {
		t.Errorf("old gaps/leaderboard: %s", compact(t, m.DemographicGaps))
	}
	if !strings.Contains(compact(t, m.DemographicGaps[0]), `"p_value"`) {
		t.Error("old McNemar p_value not read")
	}
}
