package stats

import "math"

// MethodJudgeHeterogeneity names JudgeHeterogeneity's test.
const MethodJudgeHeterogeneity = "permutation test (within each human answer, group × judge answer, sum of pearson chi-squares)"

// Heterogeneity is the result of JudgeHeterogeneity.
type Heterogeneity struct {
	// Stat is Σ over the two human answers of Pearson's X² of the group ×
	// judge-answer table of the labelled rows with that human answer; DF
	// its degrees of freedom (tables with one judge answer add none).
	Stat float64
	DF   int
	// P is the permutation p-value, (1 + #{X²* ≥ X²}) / (1 + reps); NaN
	// when DF is 0 (nothing to compare: one group, or the judge never
	// varies within a human answer).
	P      float64
	Groups int
	Method string
}

// JudgeHeterogeneity tests whether a judge errs alike in every group (e.g.
// every target of a metric): H0 says the judge's sensitivity and
// specificity are the same in every group, while the groups' prevalences
// may differ.
//
// Labels drawn at random within judge verdicts of the pooled rows (the
// viewer's calibration queue), under H0 the group of a labelled row is
// independent of the judge's verdict given the humans' verdict:
// P(group | H, J) ∝ P(group)·P(H | group)·P(J | H)·f_J cancels to
// P(group | H), whatever the sampling fractions f_J of the verdicts. So
// within each human answer the group labels are exchangeable across judge
// verdicts, and shuffling them (reps times, seeded) gives the statistic's
// null distribution exactly, however few the labels. If the sampling
// fraction of a verdict differed by group (labels picked per target, by
// hand), the test would also react to that.
func JudgeHeterogeneity(group []int, human, judge []bool, reps int, seed uint64) Heterogeneity {
	out := Heterogeneity{P: math.NaN(), Method: MethodJudgeHeterogeneity}
	if len(group) != len(human) || len(group) != len(judge) {
		panic("stats: JudgeHeterogeneity: slices of different lengths")
	}
	// Dense group indices.
	idx := map[int]int{}
	g := make([]int, len(group))
	for i, x := range group {
		k, ok := idx[x]
		if !ok {
			k = len(idx)
			idx[x] = k
		}
		g[i] = k
	}
	out.Groups = len(idx)
	var byH [2][]int // item indices per human answer
	for i, h := range human {
		byH[b2int(h)] = append(byH[b2int(h)], i)
	}
	stat := func(g []int) (float64, int) {
		var x2 float64
		df := 0
		for _, its := range byH {
			s, d := chiSquareGroupByJudge(its, g, judge, out.Groups)
			x2 += s
			df += d
		}
		return x2, df
	}
	out.Stat, out.DF = stat(g)
	if out.DF == 0 {
		return out
	}
	rng := newRand(seed)
	perm := make([]int, len(g))
	copy(perm, g)
	ge := 0
	for range reps {
		for _, its := range byH {
			for k := len(its) - 1; k > 0; k-- {
				j := rng.IntN(k + 1)
				perm[its[k]], perm[its[j]] = perm[its[j]], perm[its[k]]
			}
		}
		if s, _ := stat(perm); s >= out.Stat-1e-9 {
			ge++
		}
	}
	out.P = float64(1+ge) / float64(1+reps)
	return out
}

// chiSquareGroupByJudge is Pearson's X² of the groups × judge-answer table
// of items, and its degrees of freedom (groups present − 1; 0 when the
// judge gave one answer only).
func chiSquareGroupByJudge(items, group []int, judge []bool, groups int) (float64, int) {
	if len(items) == 0 {
		return 0, 0
	}
	rows := make([][2]float64, groups)
	var col [2]float64
	for _, i := range items {
		rows[group[i]][b2int(judge[i])]++
		col[b2int(judge[i])]++
	}
	if col[0] == 0 || col[1] == 0 {
		return 0, 0
	}
	n := col[0] + col[1]
	var x2 float64
	present := 0
	for _, r := range rows {
		tot := r[0] + r[1]
		if tot == 0 {
			continue
		}
		present++
		for j := range 2 {
			e := tot * col[j] / n
			x2 += sq(r[j]-e) / e
		}
	}
	return x2, present - 1
}
