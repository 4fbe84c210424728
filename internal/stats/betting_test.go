package stats

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/impactbench/impactbench/internal/racemode"
)

func TestBettingCI(t *testing.T) {
	t.Run("no scenario passes: as wide as any valid interval must be", func(t *testing.T) {
		// 10 scenarios at 0/12. A population where a share q of scenarios
		// always passes gives such a sample with probability (1 − q)^10, so
		// every valid two-sided 95% interval reaches up to q with
		// (1 − q)^10 = 0.025: 0.309. The interval today's t+Wilson hull gave
		// here was about [0, 0.08].
		cs := make([]ClusterSum, 10)
		for i := range cs {
			cs[i] = Binary(0, 12)
		}
		lo, hi := BettingCI(cs, 0.95)
		floor := 1 - math.Pow(0.025, 0.1)
		if lo != 0 || hi < floor || hi > floor+0.15 {
			t.Errorf("BettingCI = [%v, %v], want [0, ≥ %.3f] and not much more", lo, hi, floor)
		}
	})
	t.Run("mirror image", func(t *testing.T) {
		cs := []ClusterSum{Binary(3, 12), Binary(0, 12), Binary(12, 12), Binary(1, 12), Binary(5, 12), Binary(0, 12), Binary(2, 12)}
		flip := make([]ClusterSum, len(cs))
		for i, c := range cs {
			flip[i] = Binary(c.N-int(c.Sum), c.N)
		}
		lo, hi := BettingCI(cs, 0.95)
		flo, fhi := BettingCI(flip, 0.95)
		if !approx(lo, 1-fhi, 1e-6) || !approx(hi, 1-flo, 1e-6) {
			t.Errorf("[%v, %v] vs mirrored [%v, %v]", lo, hi, flo, fhi)
		}
	})
	t.Run("only the scenario sizes' ratios matter", func(t *testing.T) {
		cs := []ClusterSum{Binary(3, 4), Binary(1, 2), Binary(4, 8), Binary(0, 4), Binary(2, 2)}
		big := make([]ClusterSum, len(cs))
		for i, c := range cs {
			big[i] = Binary(3*int(c.Sum), 3*c.N)
		}
		lo, hi := BettingCI(cs, 0.95)
		blo, bhi := BettingCI(big, 0.95)
		if !approx(lo, blo, 1e-6) || !approx(hi, bhi, 1e-6) {
			t.Errorf("[%v, %v] vs sizes ×3 [%v, %v]", lo, hi, blo, bhi)
		}
	})
	t.Run("contains the pooled rate and narrows with more scenarios", func(t *testing.T) {
		rng := newRand(7)
		prev := 1.0
		for _, g := range []int{5, 20, 80, 320} { // 80 and 320 take the allocating path
			cs := make([]ClusterSum, g)
			fillClusters(rng, cs, 0.3, 0.3, sizeScheme{"", 4, 4})
			lo, hi := BettingCI(cs, 0.95)
			var sum float64
			for _, c := range cs {
				sum += c.Sum
			}
			p := sum / float64(4*g)
			if !(lo <= p && p <= hi) || !(hi-lo < prev) {
				t.Errorf("G=%d: [%v, %v] around %v (previous width %v)", g, lo, hi, p, prev)
			}
			prev = hi - lo
		}
	})
	t.Run("empty", func(t *testing.T) {
		if lo, hi := BettingCI([]ClusterSum{{}, {}}, 0.95); lo != 0 || hi != 1 {
			t.Errorf("no data: [%v, %v]", lo, hi)
		}
	})
	mustPanic(t, "conf", func() { BettingCI([]ClusterSum{Binary(1, 2)}, 1) })
	mustPanic(t, "sums", func() { BettingCI([]ClusterSum{{N: 2, Sum: 3, SumSq: 3}}, 0.95) })
}

// TestBettingCIOrderAveraging: the capital depends on the order scenarios
// come in; averaging over 8 orders keeps the limits' dependence on the
// input order small (measured: at most 0.016 over 20 reorderings of 20
// scenarios).
func TestBettingCIOrderAveraging(t *testing.T) {
	rng := newRand(11)
	cs := make([]ClusterSum, 20)
	fillFrom(rng, cs, hotCold(0.2, 0.9, 0.05), sizeScheme{"", 12, 12})
	lo0, hi0 := BettingCI(cs, 0.95)
	worst := 0.0
	for range 20 {
		rng.Shuffle(len(cs), func(i, j int) { cs[i], cs[j] = cs[j], cs[i] })
		lo, hi := BettingCI(cs, 0.95)
		worst = max(worst, math.Abs(lo-lo0), math.Abs(hi-hi0))
	}
	t.Logf("largest change of a limit over 20 input orders: %.4f (interval [%.3f, %.3f])", worst, lo0, hi0)
	if worst > 0.02 {
		t.Errorf("a reordering moved a limit by %.4f", worst)
	}
}

func TestBettingCIDoesNotAllocate(t *testing.T) {
	cs := make([]ClusterSum, bettingStack)
	fillClusters(newRand(3), cs, 0.4, 0.3, sizeScheme{"", 1, 12})
	if n := testing.AllocsPerRun(20, func() { BettingCI(cs, 0.95) }); n != 0 {
		t.Errorf("BettingCI allocates %v times per call at %d clusters", n, len(cs))
	}
}

func TestBettingCS(t *testing.T) {
	cs := NewBettingCS(0.95, 12)
	if lo, hi := cs.Add(); lo != 0 || hi != 1 || cs.Clusters() != 0 {
		t.Errorf("before any cluster: [%v, %v]", lo, hi)
	}
	rng := newRand(5)
	round := make([]ClusterSum, 10)
	prevLo, prevHi := 0.0, 1.0
	for range 10 {
		fillClusters(rng, round, 0.3, 0.3, sizeScheme{"", 12, 12})
		lo, hi := cs.Add(round...)
		// A running intersection only ever narrows.
		if lo < prevLo || hi > prevHi || !(lo < hi) {
			t.Fatalf("after %d clusters: [%v, %v], before [%v, %v]", cs.Clusters(), lo, hi, prevLo, prevHi)
		}
		prevLo, prevHi = lo, hi
	}
	if lo, hi := cs.Interval(); lo != prevLo || hi != prevHi || cs.Clusters() != 100 || hi-lo > 0.3 {
		t.Errorf("after 100 clusters: [%v, %v]", lo, hi)
	}
	// A sequence is wider than the fixed-n interval on the same data: it
	// pays for being allowed to look at every round.
	mustPanic(t, "conf", func() { NewBettingCS(0, 4) })
	mustPanic(t, "ref", func() { NewBettingCS(0.95, -1) })
}

// TestBettingCSOptionalStopping is the acceptance check for run --until:
// base scenarios are added in rounds of 10 (of 12 conversations, or 1–24)
// and the study stops as soon as the reported interval is narrower than a
// target (or at 300 scenarios). At the stop, the confidence sequence must
// still cover the true rate in ≥ 93% of studies, and the rate must lie in
// every interval reported along the way in ≥ 93% of studies (it is valid
// at every look). ClusterRate, looked at after every round with the same
// rule, is logged beside it: a fixed-n interval is not made for repeated
// looks.
func TestBettingCSOptionalStopping(t *testing.T) {
	racemode.SkipHeavy(t) // a pure Monte Carlo: .ci/run runs it without -race
	const reps, roundSize, maxG = 400, 10, 300
	cells := []struct {
		pop    population
		sizes  sizeScheme
		target float64 // full width
	}{
		{hotCold(0.1, 0.95, 0.02), sizeScheme{"m=12", 12, 12}, 0.2},
		{hotCold(0.05, 0.95, 0.02), sizeScheme{"m=12", 12, 12}, 0.15},
		{betaBinomial(0.3, 0.3), sizeScheme{"m=4", 4, 4}, 0.2},
		{betaBinomial(0.5, 0.3), sizeScheme{"m=1..24", 1, 24}, 0.25},
		{betaBinomial(0.05, 0.6), sizeScheme{"m=12", 12, 12}, 0.1},
	}
	var log strings.Builder
	for ci, c := range cells {
		rng := newRand(20261129 + uint64(ci))
		round := make([]ClusterSum, roundSize)
		var atStop, always, naiveAtStop int
		var stopG, naiveStopG float64
		all := make([]ClusterSum, 0, maxG)
		for range reps {
			seq := NewBettingCS(0.95, c.sizes.hi)
			all = all[:0]
			ok, stopped, naiveStopped := true, false, false
			for len(all) < maxG && !(stopped && naiveStopped) {
				fillFrom(rng, round, c.pop, c.sizes)
				all = append(all, round...)
				lo, hi := seq.Add(round...)
				if !stopped {
					if !(lo <= c.pop.mean && c.pop.mean <= hi) {
						ok = false
					}
					if hi-lo <= c.target || len(all) >= maxG {
						stopped = true
						stopG += float64(len(all))
						if lo <= c.pop.mean && c.pop.mean <= hi {
							atStop++
						}
					}
				}
				if !naiveStopped {
					iv := ClusterRate(all, 0.95)
					if iv.Hi-iv.Lo <= c.target || len(all) >= maxG {
						naiveStopped = true
						naiveStopG += float64(len(all))
						if iv.Lo <= c.pop.mean && c.pop.mean <= iv.Hi {
							naiveAtStop++
						}
					}
				}
			}
			if ok {
				always++
			}
		}
		r := float64(reps)
		fmt.Fprintf(&log, "%-22s %-8s width ≤ %.2f: sequence covers %.1f%% at stop (mean %.0f scenarios), every look %.1f%%; ClusterRate %.1f%% at stop (mean %.0f scenarios)\n",
			c.pop.name, c.sizes.name, c.target, 100*float64(atStop)/r, stopG/r, 100*float64(always)/r, 100*float64(naiveAtStop)/r, naiveStopG/r)
		if float64(atStop)/r < 0.93 || float64(always)/r < 0.93 {
			t.Errorf("%s %s: coverage at stop %.3f, at every look %.3f; want ≥ 0.93", c.pop.name, c.sizes.name, float64(atStop)/r, float64(always)/r)
		}
	}
	t.Logf("optional stopping, %d studies per cell, rounds of %d scenarios:\n%s", reps, roundSize, log.String())
}

func BenchmarkBettingCI(b *testing.B) {
	for _, g := range []int{10, 50} {
		cs := make([]ClusterSum, g)
		fillClusters(newRand(1), cs, 0.3, 0.3, sizeScheme{"", 12, 12})
		b.Run(fmt.Sprintf("G=%d", g), func(b *testing.B) {
			for b.Loop() {
				BettingCI(cs, 0.95)
			}
		})
	}
}
