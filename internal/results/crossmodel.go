package results

import (
	"cmp"
	"math"
	"sort"

	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/stats"
)

// Track names in pairwise and leaderboard.
const (
	trackLeaderboard = "leaderboard"
	trackPositive    = "positive"
	trackNegative    = "negative"
)

// leaderboardMethod says how Leaderboard's score and interval are made.
const leaderboardMethod = "mean of the track pass rates; interval: mean of the tracks' " + stats.MethodStratifiedScore + " limits (conservative)"

// tracks pairs each metric type with its name.
var tracks = []struct {
	typ  config.MetricType
	name string
}{{config.Positive, trackPositive}, {config.Negative, trackNegative}}

// finishFile computes what needs every model of the file: the leaderboard
// (score, rank, rank interval, ties), paired model-vs-model differences,
// and the multiplicity adjustment within each family of tests (see
// multiplicity.go). models[i] and mcs[i] belong together (first-appearance
// order).
func finishFile(models []ModelResult, mcs []*modelClusters, opts Options) {
	var tests []familyTest
	for i := range models {
		models[i].Leaderboard = leaderboardOf(mcs[i])
		for j := range models[i].DemographicGaps {
			g := &models[i].DemographicGaps[j]
			tests = append(tests, familyTest{family: gapFamily(models[i].TargetModel, g.MetricID), p: g.PValue, parts: g.Tested,
				set: func(p, adj float64, t Tested, sig bool) {
					g.PValue, g.PAdjusted, g.Tested, g.Significant = p, adj, t, sig
				}})
		}
	}
	if len(models) >= 2 {
		tests = append(tests, pairwiseAll(models, mcs, opts)...)
	}
	if mult := adjustFamilies(tests); mult != nil {
		for i := range models {
			models[i].Multiplicity = mult
		}
	}
	// After the adjustment: ties are the pairs that are not significant.
	rankModels(models, mcs)
}

// leaderboardOf is the mean of the model's track rates with the mean of
// their interval limits (stats.MeanOfRates: conservative).
func leaderboardOf(mc *modelClusters) *Leaderboard {
	lb := &Leaderboard{Method: leaderboardMethod, Tracks: []string{}, TiedWith: []string{}}
	minClusters := math.MaxInt
	for _, tr := range tracks {
		if iv := mc.track(tr.typ); iv.N > 0 {
			lb.Tracks = append(lb.Tracks, tr.name)
			minClusters = min(minClusters, iv.Clusters)
		}
	}
	if len(lb.Tracks) == 0 {
		return lb
	}
	est, lo, hi := stats.MeanOfRates(mc.pos, mc.neg)
	lb.Score, lb.CILow, lb.CIHigh = finite(est), finite(lo), finite(hi)
	lb.Warning = stats.ClusterWarning(minClusters)
	return lb
}

func (mc *modelClusters) track(typ config.MetricType) stats.RateInterval {
	if typ == config.Positive {
		return mc.pos
	}
	return mc.neg
}

// rawScore is the unrounded leaderboard score (NaN without tracks).
func (mc *modelClusters) rawScore() float64 {
	est, _, _ := stats.MeanOfRates(mc.pos, mc.neg)
	return est
}

// ---- model vs model ----

// pairwiseAll compares every pair of models on the base scenarios both
// have verdicts for, and returns the tests for the family. Each pair is
// tested once; both models list it, from their own side.
func pairwiseAll(models []ModelResult, mcs []*modelClusters, opts Options) []familyTest {
	type ref struct {
		i, ei, j, ej int // models[i].Pairwise[ei] and models[j].Pairwise[ej]
		family       string
		p            float64
		parts        Tested
	}
	var refs []ref
	for i := range models {
		models[i].Pairwise = []Pairwise{}
	}
	for i := range models {
		for j := i + 1; j < len(models); j++ {
			a, b := models[i].TargetModel, models[j].TargetModel
			for _, c := range pairComparisons(mcs[i], mcs[j]) {
				d := stats.StratifiedDiff(c.strata, opts.Conf, stats.DefaultSignFlipReps,
					testSeed(opts.Seed, "pairwise", a, b, c.track, c.metric))
				if d.Clusters == 0 {
					continue
				}
				fromA, fromB := pairwiseEntries(b, a, c, d)
				models[i].Pairwise = append(models[i].Pairwise, fromA)
				models[j].Pairwise = append(models[j].Pairwise, fromB)
				refs = append(refs, ref{i, len(models[i].Pairwise) - 1, j, len(models[j].Pairwise) - 1,
					pairFamily(c.track, c.metric), d.P, testParts(d)})
			}
		}
	}
	// Setters index the slices at call time: the appends above may have
	// moved earlier entries.
	tests := make([]familyTest, len(refs))
	for n, r := range refs {
		tests[n] = familyTest{family: r.family, p: r.p, parts: r.parts, set: func(p, adj float64, t Tested, sig bool) {
			for _, e := range []*Pairwise{&models[r.i].Pairwise[r.ei], &models[r.j].Pairwise[r.ej]} {
				e.PValue, e.PAdjusted, e.Tested, e.Significant = p, adj, t, sig
			}
		}}
	}
	return tests
}

// comparison is one model-vs-model question: the paired clusters (one
// stratum per track involved), the track and, for a per-metric test, the
// metric.
type comparison struct {
	track, metric string
	strata        [][]stats.PairedCluster
}

// pairComparisons lists the comparisons of a pair: leaderboard (both
// tracks, equally weighted), each track, each metric.
func pairComparisons(a, b *modelClusters) []comparison {
	byTrack := map[config.MetricType][]stats.PairedCluster{}
	byMetric := map[string][]stats.PairedCluster{}
	metricTrack := map[string]string{}
	for _, k := range a.keys {
		typ := a.types[k.metric]
		if typ != config.Positive && typ != config.Negative {
			continue
		}
		ta, tb := a.get(k), b.get(k)
		if ta.total == 0 || tb.total == 0 {
			continue
		}
		pc := stats.PairedCluster{NA: ta.total, NB: tb.total, SumA: float64(ta.passed), SumB: float64(tb.passed)}
		byTrack[typ] = append(byTrack[typ], pc)
		byMetric[k.metric] = append(byMetric[k.metric], pc)
		metricTrack[k.metric] = trackName(typ)
	}
	lead := comparison{track: trackLeaderboard}
	var out []comparison
	for _, tr := range tracks {
		if len(byTrack[tr.typ]) > 0 {
			lead.strata = append(lead.strata, byTrack[tr.typ])
		}
	}
	out = append(out, lead)
	for _, tr := range tracks {
		out = append(out, comparison{track: tr.name, strata: [][]stats.PairedCluster{byTrack[tr.typ]}})
	}
	metrics := make([]string, 0, len(byMetric))
	for m := range byMetric {
		metrics = append(metrics, m)
	}
	sort.Strings(metrics)
	for _, m := range metrics {
		out = append(out, comparison{track: metricTrack[m], metric: m, strata: [][]stats.PairedCluster{byMetric[m]}})
	}
	return out
}

func trackName(typ config.MetricType) string {
	if typ == config.Positive {
		return trackPositive
	}
	return trackNegative
}

// pairwiseEntries are one comparison seen from A (A − B, other = B) and
// from B (B − A, other = A). p-values are filled in by the family.
func pairwiseEntries(otherOfA, otherOfB string, c comparison, d stats.DiffResult) (fromA, fromB Pairwise) {
	var metric *string
	if c.metric != "" {
		metric = ptr(c.metric)
	}
	fromA = Pairwise{Other: otherOfA, Track: c.track, MetricID: metric,
		Diff: finite(d.Mean), CILow: limit(d.Lo), CIHigh: limit(d.Hi),
		PValue: d.P, NClusters: d.Clusters, Test: d.Method, Warning: stats.ClusterWarning(d.Clusters)}
	fromB = fromA
	fromB.Other = otherOfB
	fromB.Diff, fromB.CILow, fromB.CIHigh = finite(-d.Mean), limit(-d.Hi), limit(-d.Lo)
	return fromA, fromB
}

// ---- ranks ----

// sameScore is the tolerance within which two leaderboard scores are
// equal. Scores are means of pass rates, fractions of small integers; the
// same fraction summed in another order can differ in the last bits
// (~1e-16), and would otherwise split a tie. Two different fractions of a
// benchmark's counts differ by far more than 1e-12 (that would need
// denominators above 10^12).
const sameScore = 1e-12

// compareScores compares two leaderboard scores with that tolerance.
func compareScores(a, b float64) int {
	if math.Abs(a-b) <= sameScore*max(1, math.Abs(a), math.Abs(b)) {
		return 0
	}
	return cmp.Compare(a, b)
}

// rankModels sets each leaderboard's rank (1 = highest score; equal
// scores, within sameScore, share the better rank), its rank interval and
// the models it is tied with, all from the same decisions: the paired
// leaderboard differences after Holm within the pairwise:leaderboard
// family (stats.TestedRanks). tied_with lists the pairs that are not
// significant, so tied_with, significant and the rank intervals never
// disagree. Run it after adjustFamilies.
func rankModels(models []ModelResult, mcs []*modelClusters) {
	var idx []int // models with a score
	scores := make([]float64, 0, len(models))
	for i, mc := range mcs {
		if sc := mc.rawScore(); !math.IsNaN(sc) {
			idx = append(idx, i)
			scores = append(scores, sc)
		}
	}
	pos := map[string]int{} // target → position in idx
	for k, i := range idx {
		pos[models[i].TargetModel] = k
	}
	decided := map[[2]int]int{}
	for k, i := range idx {
		for _, p := range models[i].Pairwise {
			j, ok := pos[p.Other]
			if !ok || p.Track != trackLeaderboard || p.MetricID != nil || !p.Significant || p.Diff == nil {
				continue
			}
			if *p.Diff > 0 {
				decided[[2]int{k, j}] = 1
			} else if *p.Diff < 0 {
				decided[[2]int{k, j}] = -1
			}
		}
	}
	rank, lo, hi := stats.TestedRanks(len(idx), func(a, b int) int { return compareScores(scores[a], scores[b]) },
		func(a, b int) int { return decided[[2]int{a, b}] })
	for k, i := range idx {
		lb := models[i].Leaderboard
		lb.Rank, lb.RankCILow, lb.RankCIHigh = ptr(rank[k]), ptr(lo[k]), ptr(hi[k])
	}
	for i := range models {
		lb := models[i].Leaderboard
		for _, p := range models[i].Pairwise {
			if p.Track == trackLeaderboard && p.MetricID == nil && !p.Significant {
				lb.TiedWith = append(lb.TiedWith, p.Other)
			}
		}
	}
}
