package results

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/racemode"
)

// randomStudy is one random benchmark: 2–4 models, one to three metrics of
// both types, 2–21 base scenarios per metric, two age variants and 1–3
// samples each. Models differ by a random shift, scenarios by a random
// difficulty, and one in five scenarios is "hot" for the youngest variant,
// so ties, clear differences and demographic gaps all occur.
func randomStudy(rng *rand.Rand) ([]config.Metric, []artifacts.Scenario, []artifacts.Score) {
	var ms []config.Metric
	for i := range 1 + rng.IntN(3) {
		typ := config.Positive
		if i%2 == 1 {
			typ = config.Negative
		}
		ms = append(ms, config.Metric{ID: fmt.Sprintf("m%02d", i+1), Type: typ})
	}
	models := 2 + rng.IntN(3)
	shift := make([]float64, models)
	for i := range shift {
		shift[i] = rng.Float64()*0.6 - 0.3
	}
	samples := 1 + rng.IntN(3)
	var scen []artifacts.Scenario
	var rows []artifacts.Score
	for _, m := range ms {
		for b := range 2 + rng.IntN(20) {
			difficulty := rng.Float64()
			hot := rng.IntN(5) == 0
			for v, age := range []string{"child", "adult"} {
				id := fmt.Sprintf("%s_s%03d_v%02d", m.ID, b+1, v+1)
				scen = append(scen, artifacts.Scenario{ID: id, MetricID: m.ID, Demographic: artifacts.Demographic{{Key: "age", Value: age}}})
				for t := range models {
					p := clamp(difficulty + shift[t])
					if hot && age == "child" {
						p = clamp(p - 0.6)
					}
					for s := range samples {
						pass := rng.Float64() < p
						rows = append(rows, artifacts.Score{ID: id, MetricID: m.ID, TargetModel: fmt.Sprintf("model-%d", t),
							Sample: s, Passed: ptr(pass), Present: ptr(pass != (m.Type == config.Positive))})
					}
				}
			}
		}
	}
	return ms, scen, rows
}

func clamp(p float64) float64 { return max(0, min(1, p)) }

// TestResultsFilesTiesMatchSignificance is issue 27's acceptance check: in
// results files written by aggregate, no model pair is both untied and not
// significant, or tied and significant; every test's interval excludes 0
// exactly when its p_value is below 0.05 (one procedure); significant
// means p_adjusted < 0.05; and p_adjusted and q_value are Holm and
// Benjamini–Hochberg within the test's family. 60 random studies, each
// written to disk and read back.
func TestResultsFilesTiesMatchSignificance(t *testing.T) {
	racemode.SkipHeavy(t)
	rng := rand.New(rand.NewPCG(27, 2026))
	dir := t.TempDir()
	var pairs, sigPairs, tests, excluding int
	for study := range 60 {
		ms, scen, rows := randomStudy(rng)
		res, err := Aggregate(Input{Metrics: ms, Scores: rows, Scenarios: scen}, Options{Seed: uint64(study)})
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, fmt.Sprintf("results-%d.json", study))
		if err := WriteResults(path, res); err != nil {
			t.Fatal(err)
		}
		file, err := ReadResults(path)
		if err != nil {
			t.Fatal(err)
		}
		p, s, n, e := checkResultsFile(t, fmt.Sprintf("study %d", study), file)
		pairs, sigPairs, tests, excluding = pairs+p, sigPairs+s, tests+n, excluding+e
		checkFamilies(t, file)
	}
	t.Logf("%d leaderboard pairs (%d significant), %d tests (%d intervals excluding 0)", pairs, sigPairs, tests, excluding)
	if sigPairs == 0 || sigPairs == pairs || excluding == 0 || excluding == tests {
		t.Error("the random studies did not produce both outcomes: the check proves nothing")
	}
}

// checkResultsFile checks one file's invariants and counts what it saw.
func checkResultsFile(t *testing.T, name string, file []ModelResult) (pairs, sigPairs, tests, excluding int) {
	t.Helper()
	sigOf := map[[2]string]bool{}
	for _, m := range file {
		for _, p := range m.Pairwise {
			tests++
			if oneProcedure(t, name+" "+m.TargetModel+" vs "+p.Other, p.CILow, p.CIHigh, p.PValue) {
				excluding++
			}
			if p.Significant != (p.PAdjusted < significance) {
				t.Errorf("%s %s vs %s: significant %v, p_adjusted %v", name, m.TargetModel, p.Other, p.Significant, p.PAdjusted)
			}
			if p.Track != trackLeaderboard || p.MetricID != nil {
				continue
			}
			pairs++
			if p.Significant {
				sigPairs++
			}
			tied := slices.Contains(m.Leaderboard.TiedWith, p.Other)
			if tied == p.Significant {
				t.Errorf("%s: %s and %s are tied=%v and significant=%v", name, m.TargetModel, p.Other, tied, p.Significant)
			}
			key := [2]string{min(m.TargetModel, p.Other), max(m.TargetModel, p.Other)}
			if prev, seen := sigOf[key]; seen && prev != p.Significant {
				t.Errorf("%s: the pair %v is significant from one side only", name, key)
			}
			sigOf[key] = p.Significant
		}
		for _, g := range m.DemographicGaps {
			tests++
			if oneProcedure(t, name+" "+m.TargetModel+" gap "+g.Axis, g.CILow, g.CIHigh, g.PValue) {
				excluding++
			}
		}
	}
	return pairs, sigPairs / 2, tests, excluding
}

// oneProcedure checks that an interval excludes 0 exactly when p < 0.05,
// and reports whether it does. A null interval (one scenario) excludes
// nothing.
func oneProcedure(t *testing.T, name string, lo, hi *float64, p float64) bool {
	t.Helper()
	excludes := lo != nil && hi != nil && (*lo > 0 || *hi < 0)
	if excludes != (p < significance) {
		t.Errorf("%s: interval [%s, %s] with p_value %v", name, fmtp(lo), fmtp(hi), p)
	}
	return excludes
}

// TestGoldenTiesMatchSignificance runs the same checks on the files the
// other tests pin: the real slice and the three-model fixture.
func TestGoldenTiesMatchSignificance(t *testing.T) {
	checkResultsFile(t, "humanebench", humaneResults(t, Options{Seed: 1}))
	res, err := Aggregate(Input{Metrics: metrics, Scores: threeModels()}, Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if pairs, sig, _, _ := checkResultsFile(t, "three models", res); pairs != 6 || sig != 2 {
		t.Errorf("three models: %d pair sides, %d significant pairs; want 6 and 2 (A and B each beat C)", pairs, sig)
	}
}

// TestEqualLeaderboardScoresShareARank: X passes 1 and 7 of 10 base
// scenarios on its two tracks, Y 3 and 5: both score 0.4, but summed in
// floating point 0.1 + 0.7 = 0.7999999999999999 and 0.3 + 0.5 = 0.8, which
// split the tie before. Equal scores share the better rank.
func TestEqualLeaderboardScoresShareARank(t *testing.T) {
	var rows []artifacts.Score
	add := func(target, mid string, passes int) {
		for b := range 10 {
			rows = append(rows, artifacts.Score{ID: fmt.Sprintf("%s_s%03d_v01", mid, b+1), MetricID: mid, TargetModel: target, Passed: ptr(b < passes)})
		}
	}
	add("X", "m01", 1)
	add("X", "m02", 7)
	add("Y", "m01", 3)
	add("Y", "m02", 5)
	res, err := Aggregate(Input{Metrics: metrics, Scores: rows}, Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	x, y := res[0].Leaderboard, res[1].Leaderboard
	if *x.Rank != 1 || *y.Rank != 1 {
		t.Errorf("ranks %d and %d for scores %v and %v, want both 1", *x.Rank, *y.Rank, *x.Score, *y.Score)
	}
}

// TestRankIntervalsComeFromTheTiesTests: in 60 random results files, each
// model's rank interval is 1 + the models significantly better (Holm,
// pairwise:leaderboard) to the count minus those significantly worse —
// the same decisions as tied_with and significant.
func TestRankIntervalsComeFromTheTiesTests(t *testing.T) {
	racemode.SkipHeavy(t)
	rng := rand.New(rand.NewPCG(36, 2026))
	checked := 0
	for study := range 60 {
		ms, scen, rows := randomStudy(rng)
		res, err := Aggregate(Input{Metrics: ms, Scores: rows, Scenarios: scen}, Options{Seed: uint64(study)})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range res {
			lb := m.Leaderboard
			if lb == nil || lb.Rank == nil {
				continue
			}
			better, worse := 0, 0
			for _, p := range m.Pairwise {
				if p.Track != trackLeaderboard || p.MetricID != nil || !p.Significant {
					continue
				}
				if *p.Diff < 0 {
					better++
				} else if *p.Diff > 0 {
					worse++
				}
			}
			if *lb.RankCILow != 1+better || *lb.RankCIHigh != len(res)-worse || *lb.Rank < *lb.RankCILow || *lb.Rank > *lb.RankCIHigh {
				t.Errorf("study %d %s: rank %d [%d, %d] with %d significantly better and %d worse of %d", study, m.TargetModel, *lb.Rank, *lb.RankCILow, *lb.RankCIHigh, better, worse, len(res))
			}
			checked++
		}
	}
	if checked < 100 {
		t.Errorf("checked %d models", checked)
	}
}
