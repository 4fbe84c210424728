package stats

import (
	"fmt"
	"math"
)

// MethodStratifiedCS names UntilLook's interval.
const MethodStratifiedCS = "stratified betting confidence sequence over rounds of one base scenario per metric (Waudby-Smith & Ramdas 2024), bets sized for the target width: valid at every look and at a data-dependent stop"

// Run until precise, the statistics side. A track's rate is a weighted
// mean of its metrics' rates, the metrics fixed (every run has all of
// them) and each metric's base scenarios sampled. Pooling the track's
// scenarios into one sequence, as if a metric were drawn at random with
// each scenario, makes the sequence carry the spread between the metrics'
// rates (a track with metrics at 10, 50 and 85 % pass has a pooled
// scenario spread about 8 times the stratified one), and adding scenarios
// metric by metric breaks the sequence's assumption that each scenario is
// a fresh draw from one population.
//
// The stratified sequence instead takes blocks: block j holds the j-th
// base scenario of every metric, and its value Y_j = Σ_m w_m·x_{m,j} (x a
// scenario's pass rate, w the metric's fixed weight) lies in [0, 1] and
// has exactly the track's mean rate, whatever the metrics' rates; blocks
// are independent. A betting confidence sequence over the blocks (the same
// hedged capital as BettingCS, intersected over every block) is then valid
// at every look and at any stop the data decide. Its bets are sized for the
// target: λ_t = √(2·log(2/α) / (σ̂²_{t−1}·n*)), n* the number of blocks at
// which a fixed-n betting interval with the spread seen so far would reach
// the target half-width (at least t), so the sequence is close to the
// fixed-n interval where it stops (TestUntilStratifiedSimulation).
//
// Allocation is round-robin: every metric grows to the same number of
// scenarios, so blocks stay complete.

// UntilMetric is one metric of a track: its weight, fixed by the design
// and never by the data (1 for every metric, or its variants × samples),
// and its base scenarios' sums in the order the rounds added them.
type UntilMetric struct {
	ID        string
	Weight    float64
	Scenarios []ClusterSum
}

// UntilOptions are the sequence's settings.
type UntilOptions struct {
	HalfWidth float64 // the target: Hi − Lo ≤ 2·HalfWidth
	Conf      float64 // e.g. 0.95
	// MaxGrowth bounds a round's growth: at most MaxGrowth times the
	// blocks there are (0: untilGrowth).
	MaxGrowth float64
}

const (
	// untilGrowth is the default growth bound per round. Doubling (the rule
	// before) spends four rounds getting from 3 to 48 scenarios per metric;
	// four times as many gets there in two and leaves rounds for a careful
	// approach to the target.
	untilGrowth = 4
	// untilAim is the share of the projected need a round grows to. The
	// projection is noisy and a run stops at the first look that meets the
	// target, so aiming at all of it overshoots (+15–28 % over the fixed-n
	// interval in TestUntilStratifiedSimulation); 0.85 with small top-up
	// rounds after gave −2 to +10 %, in 4–6 rounds.
	untilAim = 0.85
)

// UntilState is one look at a track: the anytime-valid interval, whether
// it meets the target, and how many base scenarios each metric should have
// after the next round (Want, by metric id; empty when Met).
type UntilState struct {
	Estimate float64 // Σ w_m·p̂_m over the blocks' scenarios (NaN: none)
	Lo, Hi   float64
	Blocks   int // complete blocks the sequence used
	Met      bool
	Want     map[string]int
	Method   string
}

// UntilLook computes a track's stratified confidence sequence from its
// metrics' scenarios in arrival order and says whether to stop and how
// far each metric should grow: to the number of blocks that the width
// shrinking as 1/√blocks says the target needs (projected from the fixed-n
// betting interval on the same blocks, aiming at untilAim of it), at least one more and at
// most MaxGrowth times as many, the same for every metric (a metric behind
// the others first catches up). Metrics with no scenario yet are left out
// of the interval and get the others' count. It panics on a half-width
// outside (0, 0.5), conf outside (0, 1), a negative or NaN weight, or
// invalid sums.
func UntilLook(metrics []UntilMetric, o UntilOptions) UntilState {
	checkConf("UntilLook", o.Conf)
	if !(o.HalfWidth > 0 && o.HalfWidth < 0.5) {
		panic(fmt.Sprintf("stats: UntilLook: half-width %v outside (0, 0.5)", o.HalfWidth))
	}
	growth := o.MaxGrowth
	if growth <= 1 {
		growth = untilGrowth
	}
	ys, est := untilBlocks(metrics)
	st := UntilState{Estimate: est, Lo: 0, Hi: 1, Blocks: len(ys), Method: MethodStratifiedCS}
	if len(ys) > 0 {
		st.Lo, st.Hi = stratifiedSequence(ys, o.Conf, o.HalfWidth)
	}
	st.Met = len(ys) > 0 && st.Hi-st.Lo <= 2*o.HalfWidth
	if st.Met {
		return st
	}
	most := 0
	for _, m := range metrics {
		most = max(most, len(m.Scenarios))
	}
	target := most + 1
	if b := len(ys); b > 0 {
		// Project with the fixed-n betting interval on the same blocks, whose
		// width shrinks as 1/√blocks; the sequence's own width shrinks faster
		// near its horizon, and projecting from it overshoots.
		cs := make([]ClusterSum, b)
		for j, y := range ys {
			cs[j] = ClusterSum{N: 1, Sum: y, SumSq: y * y}
		}
		lo, hi := BettingCI(cs, o.Conf)
		need := int(math.Ceil(untilAim * float64(b) * math.Pow((hi-lo)/(2*o.HalfWidth), 2)))
		target = max(most, min(need, int(growth*float64(b))), b+1)
	}
	st.Want = map[string]int{}
	for _, m := range metrics {
		st.Want[m.ID] = target
	}
	return st
}

// untilBlocks turns the metrics' scenarios into block values Y_j (weights
// renormalised over the metrics with scenarios) and the estimate over
// those scenarios.
func untilBlocks(metrics []UntilMetric) (ys []float64, est float64) {
	blocks, wsum := math.MaxInt, 0.0
	for _, m := range metrics {
		if m.Weight < 0 || math.IsNaN(m.Weight) {
			panic(fmt.Sprintf("stats: UntilLook: metric %q has weight %v", m.ID, m.Weight))
		}
		for i, c := range m.Scenarios {
			checkClusterSum("UntilLook", i, c)
		}
		if len(m.Scenarios) > 0 && m.Weight > 0 {
			blocks = min(blocks, len(m.Scenarios))
			wsum += m.Weight
		}
	}
	if wsum == 0 {
		return nil, math.NaN()
	}
	ys = make([]float64, blocks)
	for _, m := range metrics {
		if len(m.Scenarios) == 0 || m.Weight == 0 {
			continue
		}
		w := m.Weight / wsum
		var n, s float64
		for j, c := range m.Scenarios[:blocks] {
			if c.N > 0 {
				ys[j] += w * c.Sum / float64(c.N)
			}
			n += float64(c.N)
			s += c.Sum
		}
		if n > 0 {
			est += w * s / n
		}
	}
	for j := range ys {
		ys[j] = clamp01(ys[j])
	}
	return ys, est
}

// stratifiedSequence is the confidence sequence over the block values ys
// (in order), intersected over every prefix, with bets sized for the
// target half-width (see above).
func stratifiedSequence(ys []float64, conf, half float64) (lo, hi float64) {
	alpha := 1 - conf
	logK := math.Log(2 / alpha)
	terms := make([]bettingTerm, 0, len(ys))
	sx, sw, ss := 0.5, 1.0, 0.25 // running spread with one pseudo-block (see setBets)
	lo, hi = 0, 1
	logAbove, logBelow := -math.Log(alpha*bettingTheta), -math.Log(alpha*(1-bettingTheta))
	for t, y := range ys {
		variance := ss / float64(t+1)
		horizon := max(float64(t+1), 2*logK*variance/(half*half))
		terms = append(terms, bettingTerm{x: y, w: 1, stake: math.Sqrt(2 * logK / (variance * horizon))})
		sx += y
		sw++
		mu := sx / sw
		ss += (y - mu) * (y - mu)
		l, h := bettingLimits(
			func(m float64) float64 { return math.Log(capital(terms, m, +1)) - logAbove },
			func(m float64) float64 { return math.Log(capital(terms, m, -1)) - logBelow })
		if nl, nh := max(lo, l), min(hi, h); nl <= nh {
			lo, hi = nl, nh
		} else {
			lo, hi = l, h // the looks disagree: only on the α-probability event
		}
	}
	return lo, hi
}
