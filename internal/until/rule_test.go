package until

import (
	"math/rand/v2"
	"testing"

	"github.com/impactbench/impactbench/internal/stats"
)

// The rule run --until follows — look after each round, stop when the
// confidence sequence is within ±half, else grow by grownSize — keeps its
// coverage at the data-dependent stop, also when a few "hot" scenarios
// carry the behaviour (seeded simulation, 400 runs per cell).
func TestRunUntilRuleCoversAtTheStop(t *testing.T) {
	type cell struct {
		name      string
		hot       float64 // share of hot scenarios
		pHot, p   float64 // their rate, the others'
		m         int     // conversations per scenario
		half      float64
		truth     float64
		startSize int
	}
	cells := []cell{
		{"10% hot, m=12, ±0.10", 0.10, 0.95, 0.02, 12, 0.10, 0, 6},
		{"5% hot, m=12, ±0.075", 0.05, 0.95, 0.02, 12, 0.075, 0, 6},
		{"50% at 0.3/0.7, m=4, ±0.10", 0.5, 0.7, 0.3, 4, 0.10, 0, 3},
	}
	for ci, c := range cells {
		c.truth = c.hot*c.pHot + (1-c.hot)*c.p
		rng := rand.New(rand.NewPCG(20261126, uint64(ci)))
		const reps, maxG = 400, 400
		covered, rounds, size := 0, 0, 0
		for range reps {
			cs := stats.NewBettingCS(conf, c.m)
			have, added := 0, c.startSize
			var lo, hi float64
			for {
				round := make([]stats.ClusterSum, added)
				for i := range round {
					p := c.p
					if rng.Float64() < c.hot {
						p = c.pHot
					}
					passed := 0
					for range c.m {
						if rng.Float64() < p {
							passed++
						}
					}
					round[i] = stats.Binary(passed, c.m)
				}
				have += added
				lo, hi = cs.Add(round...)
				rounds++
				if hi-lo <= 2*c.half || have >= maxG {
					break
				}
				added = min(grownSize(have, hi-lo, c.half), maxG) - have
			}
			size += have
			if lo <= c.truth && c.truth <= hi {
				covered++
			}
		}
		cov := float64(covered) / reps
		t.Logf("%s: covers %.1f%% at the stop, %.1f rounds and %.0f base scenarios on average", c.name, 100*cov, float64(rounds)/reps, float64(size)/reps)
		if cov < 0.93 {
			t.Errorf("%s: coverage at the stop %.3f, want ≥ 0.93", c.name, cov)
		}
	}
}
