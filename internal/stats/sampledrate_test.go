package stats

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/impactbench/impactbench/internal/racemode"
)

func TestSampledValidRate(t *testing.T) {
	tests := []struct {
		name                                       string
		known, knownValid, sampled, pass, unsample int
		est, lo, hi                                float64
	}{
		// Everything audited: the rate is known exactly.
		{"census", 100, 90, 0, 0, 0, 0.9, 0.9, 0.9},
		// All sampled ones pass: the estimate is all valid, the interval
		// allows some unsampled failures.
		{"sample all pass", 20, 18, 10, 10, 90, 108.0 / 110, 0, 108.0 / 110},
		// No sample: bounds only.
		{"no sample", 10, 5, 0, 0, 10, 0.5, 0.25, 0.75},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := SampledValidRate(tt.known, tt.knownValid, tt.sampled, tt.pass, tt.unsample, 0.95)
			if math.Abs(r.Estimate-tt.est) > 1e-12 || math.Abs(r.Hi-tt.hi) > 1e-12 || r.Lo > r.Estimate || r.Hi < r.Estimate {
				t.Errorf("%+v", r)
			}
			if tt.lo > 0 && math.Abs(r.Lo-tt.lo) > 1e-12 {
				t.Errorf("lo %v, want %v", r.Lo, tt.lo)
			}
		})
	}
	// The exact interval for K by hand: population 10, a sample of 5, all
	// successes. P(X ≥ 5 | K) = C(K,5)/C(10,5): at K = 7 21/252 = 0.083 >
	// 0.025, at K = 6 6/252 = 0.024 ≤ 0.025; so K ∈ [7, 10].
	if lo, hi := hypergeometricInterval(10, 5, 5, 0.025); lo != 7 || hi != 10 {
		t.Errorf("K in [%d, %d], want [7, 10]", lo, hi)
	}
}

// TestSampledValidRateCoverage is the seeded simulation with known truth:
// a run of N conversations, a share flagged by the turn checks (audited in
// full, redone when invalid), the rest sampled at the audit's share; the
// truth is the run's realised share of valid kept conversations. The
// interval must cover it in at least 95 % of runs (less 3 Monte Carlo
// standard errors) in every cell, including thin samples.
func TestSampledValidRateCoverage(t *testing.T) {
	racemode.SkipHeavy(t)
	const reps = 2000
	cells := []struct {
		n                     int
		flagged, pass, share  float64 // flagged share; unflagged first-attempt pass rate; audit share
		flaggedValid, rescued float64 // flagged kept valid; a sampled failure valid after its redo
	}{
		{200, 0.02, 0.97, 0.10, 0.9, 0.8},
		{200, 0.30, 0.85, 0.10, 0.7, 0.5},
		{1000, 0.05, 0.99, 0.10, 0.9, 0.9},
		{1000, 0.50, 0.80, 0.25, 0.6, 0.5},
		{5000, 0.01, 0.95, 0.05, 0.9, 0.9},
		{500, 0.10, 1.00, 0.10, 0.9, 0.9},
		{500, 0.10, 0.50, 0.50, 0.9, 0.9},
	}
	rng := rand.New(rand.NewPCG(37, 2))
	for _, c := range cells {
		covered, width := 0, 0.0
		for range reps {
			var known, knownValid, sampled, pass, unsampled, trueValid int
			for range c.n {
				firstPass := rng.Float64() < c.pass
				switch {
				case rng.Float64() < c.flagged:
					known++
					if rng.Float64() < c.flaggedValid {
						knownValid++
						trueValid++
					}
				case rng.Float64() < c.share:
					known++
					sampled++
					valid := firstPass || rng.Float64() < c.rescued
					if firstPass {
						pass++
					}
					if valid {
						knownValid++
						trueValid++
					}
				default:
					unsampled++
					if firstPass {
						trueValid++
					}
				}
			}
			r := SampledValidRate(known, knownValid, sampled, pass, unsampled, 0.95)
			truth := float64(trueValid) / float64(c.n)
			if r.Lo-1e-12 <= truth && truth <= r.Hi+1e-12 {
				covered++
			}
			width += r.Hi - r.Lo
		}
		cov := float64(covered) / reps
		t.Logf("N %d, flagged %.2f, pass %.2f, share %.2f: coverage %.3f over %d runs, mean width %.3f", c.n, c.flagged, c.pass, c.share, cov, reps, width/reps)
		if cov < 0.95-3*math.Sqrt(0.95*0.05/reps) {
			t.Errorf("N %d, pass %.2f, share %.2f: coverage %.3f", c.n, c.pass, c.share, cov)
		}
	}
}
