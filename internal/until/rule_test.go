package until

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/impactbench/impactbench/internal/stats"
)

// The rule run --until follows — look after each round with every track's
// stratified sequence (interval), grow every metric of a track still too
// wide to what its look asks (growthWanted), stop when every look meets
// the target — keeps its coverage at the data-dependent stop and grows
// round-robin: at the stop every metric of the track has the same number
// of base scenarios (seeded simulation, 200 runs per world).
func TestRunUntilRuleCoversAtTheStop(t *testing.T) {
	type world struct {
		name  string
		rates []float64 // each metric's scenario rate
		hot   []float64 // each metric's share of hot scenarios (rate 0.95 instead)
		m     int       // conversations per scenario
		half  float64
	}
	worlds := []world{
		{"3 metrics at 0.10/0.50/0.85, m=8, ±0.08", []float64{0.10, 0.50, 0.85}, []float64{0, 0, 0}, 8, 0.08},
		{"2 metrics, one carried by 10% hot scenarios, m=12, ±0.08", []float64{0.02, 0.30}, []float64{0.10, 0}, 12, 0.08},
	}
	for wi, w := range worlds {
		truth := 0.0
		for i, p := range w.rates {
			if w.hot[i] > 0 {
				p = w.hot[i]*0.95 + (1-w.hot[i])*p
			}
			truth += p / float64(len(w.rates))
		}
		rng := rand.New(rand.NewPCG(20261129, uint64(wi)))
		draw := func(i int) stats.ClusterSum {
			p := w.rates[i]
			if rng.Float64() < w.hot[i] {
				p = 0.95
			}
			passed := 0
			for range w.m {
				if rng.Float64() < p {
					passed++
				}
			}
			return stats.Binary(passed, w.m)
		}
		const runs, maxPer = 200, 300
		covered, size := 0, 0
		for range runs {
			ms := make([]stats.UntilMetric, len(w.rates))
			want := map[string]int{}
			for i := range ms {
				ms[i] = stats.UntilMetric{ID: fmt.Sprintf("m%d", i), Weight: 1}
				want[ms[i].ID] = 3
			}
			var iv Interval
			for {
				for i := range ms {
					for len(ms[i].Scenarios) < min(want[ms[i].ID], maxPer) {
						ms[i].Scenarios = append(ms[i].Scenarios, draw(i))
					}
				}
				var l stats.UntilState
				iv, l, _ = interval(ms, w.half)
				want = growthWanted([]trackLook{{UntilState: l}})
				if len(want) == 0 || len(ms[0].Scenarios) >= maxPer {
					break
				}
			}
			for _, m := range ms[1:] {
				if len(m.Scenarios) != len(ms[0].Scenarios) {
					t.Fatalf("%s: metrics stopped at %d and %d base scenarios, want round-robin", w.name, len(ms[0].Scenarios), len(m.Scenarios))
				}
			}
			size += len(ms[0].Scenarios)
			if iv.Low <= truth && truth <= iv.High {
				covered++
			}
		}
		cov := float64(covered) / runs
		t.Logf("%s: covers %.1f%% at the stop, %.1f base scenarios per metric on average", w.name, 100*cov, float64(size)/runs)
		if cov < 0.95 {
			t.Errorf("%s: coverage at the stop %.3f, want ≥ 0.95", w.name, cov)
		}
	}
}
