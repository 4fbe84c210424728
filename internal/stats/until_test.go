package stats

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/impactbench/impactbench/internal/racemode"
)

func TestUntilLookByHand(t *testing.T) {
	// Two metrics, the second behind: blocks = 2; it catches up first.
	ms := []UntilMetric{
		{ID: "m01", Weight: 1, Scenarios: []ClusterSum{Binary(4, 4), Binary(0, 4), Binary(2, 4)}},
		{ID: "m02", Weight: 1, Scenarios: []ClusterSum{Binary(4, 4), Binary(4, 4)}},
	}
	st := UntilLook(ms, UntilOptions{HalfWidth: 0.05, Conf: 0.95})
	if st.Blocks != 2 || st.Met || st.Want["m01"] != st.Want["m02"] || st.Want["m01"] < 3 || st.Want["m01"] > 8 {
		t.Fatalf("got %+v", st)
	}
	// The estimate is the weighted mean of the metrics' rates over the
	// blocks' scenarios: (4+0)/8 and 8/8.
	if !approx(st.Estimate, 0.75, 1e-12) || !(st.Lo <= 0.75 && st.Hi >= 0.75) {
		t.Errorf("estimate %v interval [%v, %v]", st.Estimate, st.Lo, st.Hi)
	}
	// Nothing yet: [0, 1], one scenario each.
	if e := UntilLook([]UntilMetric{{ID: "a", Weight: 1}}, UntilOptions{HalfWidth: 0.1, Conf: 0.95}); e.Lo != 0 || e.Hi != 1 || e.Want["a"] != 1 || !math.IsNaN(e.Estimate) {
		t.Errorf("empty: %+v", e)
	}
	// Identical scenarios in large numbers meet a loose target.
	var many []ClusterSum
	for range 200 {
		many = append(many, Binary(2, 4))
	}
	if m := UntilLook([]UntilMetric{{ID: "a", Weight: 1, Scenarios: many}}, UntilOptions{HalfWidth: 0.1, Conf: 0.95}); !m.Met || m.Want != nil {
		t.Errorf("200 identical scenarios: %+v", m)
	}
	mustPanic(t, "half-width", func() { UntilLook(nil, UntilOptions{HalfWidth: 0.6, Conf: 0.95}) })
	mustPanic(t, "weight", func() {
		UntilLook([]UntilMetric{{ID: "a", Weight: -1, Scenarios: many}}, UntilOptions{HalfWidth: 0.1, Conf: 0.95})
	})
}

// untilWorld is a track of metrics with known scenario-rate populations.
type untilWorld struct {
	name    string
	metrics []population
	m       int // conversations per scenario
}

func (w untilWorld) truth() float64 {
	t := 0.0
	for _, p := range w.metrics {
		t += p.mean
	}
	return t / float64(len(w.metrics))
}

func (w untilWorld) scenario(rng *rand.Rand, metric int) ClusterSum {
	cs := make([]ClusterSum, 1)
	fillFrom(rng, cs, w.metrics[metric], sizeScheme{"", w.m, w.m})
	return cs[0]
}

// untilRun is one run --until: start with start scenarios per metric, look
// after every round, grow as UntilLook says, stop when met (or at maxRounds).
func untilRun(rng *rand.Rand, w untilWorld, half float64, start, maxRounds int) (blocks int, covered bool, rounds int) {
	ms := make([]UntilMetric, len(w.metrics))
	for i := range ms {
		ms[i] = UntilMetric{ID: fmt.Sprintf("m%02d", i), Weight: 1}
		for range start {
			ms[i].Scenarios = append(ms[i].Scenarios, w.scenario(rng, i))
		}
	}
	truth := w.truth()
	for rounds = 1; ; rounds++ {
		st := UntilLook(ms, UntilOptions{HalfWidth: half, Conf: 0.95})
		if st.Met || rounds == maxRounds {
			return st.Blocks, st.Lo <= truth && truth <= st.Hi, rounds
		}
		for i := range ms {
			for len(ms[i].Scenarios) < st.Want[ms[i].ID] {
				ms[i].Scenarios = append(ms[i].Scenarios, w.scenario(rng, i))
			}
		}
	}
}

// pooledRun is the rule run --until used before: one betting sequence
// over the track's scenarios pooled, each round's new scenarios added
// metric by metric, every metric growing to what width ∝ 1/√scenarios
// says (at most double). It returns the scenarios per metric at the stop.
func pooledRun(rng *rand.Rand, w untilWorld, half float64, start, maxRounds int) (perMetric int, covered bool) {
	cs := NewBettingCS(0.95, w.m)
	have := start
	var round []ClusterSum
	for i := range w.metrics {
		for range start {
			round = append(round, w.scenario(rng, i))
		}
	}
	truth := w.truth()
	for r := 1; ; r++ {
		lo, hi := cs.Add(round...)
		if hi-lo <= 2*half || r == maxRounds {
			return have, lo <= truth && truth <= hi
		}
		next := max(have+1, min(int(math.Ceil(float64(have)*math.Pow((hi-lo)/(2*half), 2))), 2*have))
		round = round[:0]
		for i := range w.metrics {
			for range next - have {
				round = append(round, w.scenario(rng, i))
			}
		}
		have = next
	}
}

// fixedNeed is the smallest number of blocks (scenarios per metric) at
// which a fixed-n interval's mean width over reps studies is within 2·half:
// the fixed-n design of the same width (doubling, then bisection).
func fixedNeed(rng *rand.Rand, w untilWorld, half float64, reps int, interval func([]Stratum) (float64, float64)) int {
	width := func(n int) float64 {
		total := 0.0
		for range reps {
			strata := make([]Stratum, len(w.metrics))
			for i := range strata {
				strata[i].Weight = 1
				for range n {
					strata[i].Clusters = append(strata[i].Clusters, w.scenario(rng, i))
				}
			}
			lo, hi := interval(strata)
			total += hi - lo
		}
		return total / float64(reps)
	}
	lo, hi := 2, 4
	for width(hi) > 2*half {
		lo, hi = hi, 2*hi
	}
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		if width(mid) > 2*half {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi
}

// TestUntilStratifiedSimulation: tracks of three metrics with different
// rates (known truth, beta scenario rates). run --until with the
// stratified sequence and round-robin growth must cover the track's rate at
// the stop in ≥ 95 % of runs and need at most 15 % more scenarios than the
// fixed-n stratified betting interval of the same width; the pooled
// sequence it replaces is measured beside it, and so is the fixed-n
// nominal interval (StratifiedRate), which an anytime-valid sequence cannot
// match. IMPACTBENCH_UNTIL_SIM=full runs 400 runs per world (the table in
// docs/statistics.md); CI runs 120.
func TestUntilStratifiedSimulation(t *testing.T) {
	racemode.SkipHeavy(t)
	runs, fixedReps := 120, 60
	if os.Getenv("IMPACTBENCH_UNTIL_SIM") == "full" {
		runs, fixedReps = 400, 200
	}
	worlds := []struct {
		w    untilWorld
		half float64
	}{
		{untilWorld{"rates 0.10/0.50/0.85, ICC 0.3, m=8", []population{betaBinomial(0.1, 0.3), betaBinomial(0.5, 0.3), betaBinomial(0.85, 0.3)}, 8}, 0.05},
		{untilWorld{"rates 0.05/0.30/0.70, ICC 0.3, m=4", []population{betaBinomial(0.05, 0.3), betaBinomial(0.3, 0.3), betaBinomial(0.7, 0.3)}, 4}, 0.05},
		{untilWorld{"rates 0.20/0.60/0.90, ICC 0.1, m=12", []population{betaBinomial(0.2, 0.1), betaBinomial(0.6, 0.1), betaBinomial(0.9, 0.1)}, 12}, 0.04},
	}
	var log strings.Builder
	for wi, c := range worlds {
		rng := newRand(20260970 + uint64(wi))
		var blocks, rounds, covered, pooledN, pooledCov float64
		for range runs {
			b, ok, r := untilRun(rng, c.w, c.half, 3, 30)
			blocks += float64(b)
			rounds += float64(r)
			if ok {
				covered++
			}
			p, pok := pooledRun(rng, c.w, c.half, 3, 30)
			pooledN += float64(p)
			if pok {
				pooledCov++
			}
		}
		n := float64(runs)
		blocks, rounds, covered, pooledN, pooledCov = blocks/n, rounds/n, covered/n, pooledN/n, pooledCov/n
		fixBet := fixedNeed(rng, c.w, c.half, fixedReps, func(s []Stratum) (float64, float64) { return StratifiedBettingCI(s, 0.95) })
		fixNom := fixedNeed(rng, c.w, c.half, fixedReps, func(s []Stratum) (float64, float64) {
			r := StratifiedRate(s, 0.95)
			return r.Lo, r.Hi
		})
		excess := blocks/float64(fixBet) - 1
		fmt.Fprintf(&log, "%s, ±%.2f: stratified sequence stops at %.1f scenarios per metric (%.1f rounds), covers %.1f%%; fixed-n betting needs %d (%+.0f%%), fixed-n cluster-score %d (×%.2f); pooled sequence %.1f (×%.1f of the stratified), covers %.1f%%\n",
			c.w.name, c.half, blocks, rounds, 100*covered, fixBet, 100*excess, fixNom, blocks/float64(fixNom), pooledN, pooledN/blocks, 100*pooledCov)
		if covered < 0.95 {
			t.Errorf("%s: coverage at the stop %.3f < 0.95", c.w.name, covered)
		}
		if excess > 0.15 {
			t.Errorf("%s: %.1f scenarios per metric at the stop, %.0f%% more than the fixed-n betting interval's %d", c.w.name, blocks, 100*excess, fixBet)
		}
	}
	t.Logf("%d runs per world, 3 scenarios per metric to start:\n%s", runs, log.String())
}
