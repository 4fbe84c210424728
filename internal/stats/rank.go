package stats

import (
	"cmp"
	"fmt"
	"math"
	"slices"
)

// Ranks returns the 1-based ranks of x, giving tied values the average of the
// ranks they span (e.g. [10, 20, 20, 30] → [1, 2.5, 2.5, 4]). NaN entries are
// left out of the ranking and get rank NaN.
func Ranks(x []float64) []float64 {
	r := make([]float64, len(x))
	order := make([]int, 0, len(x))
	for i, v := range x {
		if math.IsNaN(v) {
			r[i] = math.NaN()
			continue
		}
		order = append(order, i)
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(x[a], x[b]) })
	for lo := 0; lo < len(order); {
		hi := lo // order[lo..hi] is one run of tied values
		for hi+1 < len(order) && x[order[hi+1]] == x[order[lo]] {
			hi++
		}
		avg := float64(lo+hi)/2 + 1
		for _, i := range order[lo : hi+1] {
			r[i] = avg
		}
		lo = hi + 1
	}
	return r
}

// Spearman returns Spearman's rank correlation ρ: the Pearson correlation of
// the average ranks of x and y, which handles ties correctly. It answers
// "do two runs order the models the same way?" on a −1…1 scale.
//
// It returns NaN when it is undefined: fewer than 2 items, any NaN input, or
// all values of x (or of y) tied. It panics if len(x) != len(y).
func Spearman(x, y []float64) float64 {
	if !validPairs("Spearman", x, y) {
		return math.NaN()
	}
	return pearson(Ranks(x), Ranks(y))
}

// KendallTauB returns Kendall's τ-b: (concordant − discordant pairs) divided
// by the geometric mean of the pairs not tied in x and not tied in y, which
// is the tie correction of Kendall (1945). It is easier to read than Spearman
// ("τ = 0.6 means 80% of model pairs keep their order", absent ties) and is
// the usual choice for small numbers of items. O(n²), fine for model counts.
//
// NaN and panic conventions as for Spearman.
func KendallTauB(x, y []float64) float64 {
	if !validPairs("KendallTauB", x, y) {
		return math.NaN()
	}
	n := len(x)
	var concordant, discordant, tiedX, tiedY int
	for i := 0; i < n; i++ {
		for j := i + 1; j < n; j++ {
			sx, sy := cmp.Compare(x[i], x[j]), cmp.Compare(y[i], y[j])
			if sx == 0 {
				tiedX++
			}
			if sy == 0 {
				tiedY++
			}
			switch s := sx * sy; {
			case s > 0:
				concordant++
			case s < 0:
				discordant++
			}
		}
	}
	pairs := n * (n - 1) / 2
	denom := math.Sqrt(float64(pairs-tiedX) * float64(pairs-tiedY))
	if denom == 0 {
		return math.NaN()
	}
	return float64(concordant-discordant) / denom
}

// Pearson is the Pearson correlation of x and y (e.g. an item's pass rate
// per model against the models' rates on the other items: the item-total
// correlation of item analysis). NaN and panic conventions as for
// Spearman.
func Pearson(x, y []float64) float64 {
	if !validPairs("Pearson", x, y) {
		return math.NaN()
	}
	return pearson(x, y)
}

// validPairs panics on mismatched lengths and reports whether a correlation
// can be computed at all (n ≥ 2 and no NaN).
func validPairs(fn string, x, y []float64) bool {
	if len(x) != len(y) {
		panic(fmt.Sprintf("stats: %s: len(x)=%d != len(y)=%d", fn, len(x), len(y)))
	}
	if len(x) < 2 {
		return false
	}
	for i := range x {
		if math.IsNaN(x[i]) || math.IsNaN(y[i]) {
			return false
		}
	}
	return true
}

// pearson is the Pearson correlation of equal-length x and y; NaN when either
// has zero variance.
func pearson(x, y []float64) float64 {
	n := float64(len(x))
	var mx, my float64
	for i := range x {
		mx += x[i]
		my += y[i]
	}
	mx, my = mx/n, my/n
	var sxy, sxx, syy float64
	for i := range x {
		dx, dy := x[i]-mx, y[i]-my
		sxy += dx * dy
		sxx += dx * dx
		syy += dy * dy
	}
	if sxx == 0 || syy == 0 {
		return math.NaN()
	}
	// Clamp: rounding can push a perfect correlation to 1.0000000000000002,
	// which would look like a bug in a report.
	return max(-1, min(1, sxy/math.Sqrt(sxx*syy)))
}

// RankIntervals gives each of items a percentile-bootstrap interval for its
// rank (1 = highest score): each of reps replicates draws, within every
// stratum independently, as many cluster indices with replacement as the
// stratum has (strata[k] clusters; e.g. the base scenarios of the positive
// and of the negative track), asks score to fill out[i] with item i's score
// on that resample, and ranks the items (ties share the average rank; NaN
// scores are not ranked). The interval is the (1−conf)/2 and (1+conf)/2
// quantiles of an item's ranks, widened to whole ranks (floor, ceil); NaN
// when the item was never ranked. score must not retain idx.
//
// A rank interval answers "how sure is the ordering?": [1, 3] means the data
// fit this item being anywhere from best to third. With few clusters the
// percentile bootstrap is too narrow (see ClusterRate), so treat it as
// descriptive; ties are decided by the paired tests.
func RankIntervals(strata []int, items, reps int, conf float64, seed uint64, score func(idx [][]int, out []float64)) (lo, hi []float64) {
	checkConf("RankIntervals", conf)
	if reps < 1 || items < 0 {
		panic(fmt.Sprintf("stats: RankIntervals: invalid reps=%d items=%d", reps, items))
	}
	rng := newRand(seed)
	idx := make([][]int, len(strata))
	for k, n := range strata {
		idx[k] = make([]int, n)
	}
	out := make([]float64, items)
	neg := make([]float64, items)
	ranks := make([][]float64, items)
	for range reps {
		for k, n := range strata {
			for j := range idx[k] {
				idx[k][j] = rng.IntN(n)
			}
		}
		for i := range out {
			out[i] = math.NaN()
		}
		score(idx, out)
		for i, v := range out {
			neg[i] = -v
		}
		for i, r := range Ranks(neg) {
			if !math.IsNaN(r) {
				ranks[i] = append(ranks[i], r)
			}
		}
	}
	lo, hi = make([]float64, items), make([]float64, items)
	for i, rs := range ranks {
		if len(rs) == 0 {
			lo[i], hi[i] = math.NaN(), math.NaN()
			continue
		}
		slices.Sort(rs)
		lo[i] = math.Floor(quantileSorted(rs, (1-conf)/2))
		hi[i] = math.Ceil(quantileSorted(rs, (1+conf)/2))
	}
	return lo, hi
}

// MethodTestedRanks names TestedRanks' method as study.json and
// results.json use it: the decisions are the family's Holm-adjusted paired
// tests.
const MethodTestedRanks = "holm-tested (rank interval from the same Holm-adjusted paired tests as tied_with: lo = 1 + the models significantly better, hi = K - those significantly worse; all K intervals hold together with probability >= 95 %)"

// TestedRanks gives each of k items (models) a rank and a rank interval
// from one family's pairwise decisions. cmp(i, j) compares the estimates
// (> 0: i's is higher); it should compare exact values, so that equal
// scores tie: they share the better rank (1 = highest). decided(i, j) is
// +1 when the family's test shows i better than j, −1 when it shows j
// better than i, and 0 when it does not decide (or the two cannot be
// compared), and
//
//	lo = 1 + #{j : j shown better than i}
//	hi = k − #{j : j shown worse than i}
//
// When the decisions control the family-wise error rate at α (Holm over
// every pair of the family), all k intervals hold the true ranks together
// with probability ≥ 1 − α: whenever no decision is wrong, every model
// shown better is better and every one shown worse is worse (the joint
// rank intervals of Klein, Wright & Wieczorek 2020, J. R. Stat. Soc. C
// 69:917, from Holm's tests). The same decisions give "tied with" (not
// shown different), so a rank interval and the ties never disagree.
// Checked by TestTestedRanksCoverage.
func TestedRanks(k int, cmp func(i, j int) int, decided func(i, j int) int) (rank, lo, hi []int) {
	rank, lo, hi = make([]int, k), make([]int, k), make([]int, k)
	for i := range k {
		rank[i], lo[i], hi[i] = 1, 1, k
		for j := range k {
			if j != i && cmp(j, i) > 0 {
				rank[i]++
			}
		}
	}
	for i := range k {
		for j := i + 1; j < k; j++ {
			switch decided(i, j) {
			case 1: // i better than j
				lo[j]++
				hi[i]--
			case -1: // j better than i
				lo[i]++
				hi[j]--
			}
		}
	}
	return rank, lo, hi
}
