package stats

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// Simulation helpers shared by the Monte Carlo tests: clustered pass/fail
// data with a known rate and intra-class correlation.

// gammaVariate draws from Gamma(shape, 1) (Marsaglia & Tsang 2000, ACM TOMS
// 26:363-372; shape < 1 through the U^(1/shape) boost).
func gammaVariate(rng *rand.Rand, shape float64) float64 {
	if shape < 1 {
		return gammaVariate(rng, shape+1) * math.Pow(rng.Float64(), 1/shape)
	}
	d := shape - 1.0/3
	c := 1 / math.Sqrt(9*d)
	for {
		x := rng.NormFloat64()
		v := 1 + c*x
		if v <= 0 {
			continue
		}
		v = v * v * v
		u := rng.Float64()
		if u < 1-0.0331*x*x*x*x || math.Log(u) < 0.5*x*x+d*(1-v+math.Log(v)) {
			return d * v
		}
	}
}

// clusterRateDraw is one cluster's true pass rate under a beta-binomial
// model with mean p and ICC rho: Beta(p(1−ρ)/ρ, (1−p)(1−ρ)/ρ), whose
// Bernoulli draws have intra-class correlation exactly ρ (ρ = 0: every
// cluster has rate p).
func clusterRateDraw(rng *rand.Rand, p, rho float64) float64 {
	if rho == 0 {
		return p
	}
	s := (1 - rho) / rho
	a := gammaVariate(rng, p*s)
	b := gammaVariate(rng, (1-p)*s)
	if a+b == 0 {
		return p
	}
	return a / (a + b)
}

// sizeScheme draws a cluster's number of conversations.
type sizeScheme struct {
	name   string
	lo, hi int // uniform on [lo, hi]
}

func (s sizeScheme) draw(rng *rand.Rand) int { return s.lo + rng.IntN(s.hi-s.lo+1) }

// fillClusters overwrites cs with one simulated study; no allocation.
func fillClusters(rng *rand.Rand, cs []ClusterSum, p, rho float64, sizes sizeScheme) {
	for i := range cs {
		pi := clusterRateDraw(rng, p, rho)
		m := sizes.draw(rng)
		k := 0
		for range m {
			if rng.Float64() < pi {
				k++
			}
		}
		cs[i] = Binary(k, m)
	}
}

// population is a distribution of scenario rates with a known mean.
type population struct {
	name string
	mean float64
	draw func(rng *rand.Rand) float64
	// lpmf is the log probability that a scenario of m conversations
	// drawn from the population has k passes.
	lpmf func(k, m int) float64
}

// betaBinomial is the beta-binomial population of clusterRateDraw.
func betaBinomial(p, rho float64) population {
	lpmf := func(k, m int) float64 { return lbinom(k, m, p) }
	if rho > 0 {
		a, b := p*(1-rho)/rho, (1-p)*(1-rho)/rho
		lpmf = func(k, m int) float64 {
			return lchoose(m, k) + lbeta(float64(k)+a, float64(m-k)+b) - lbeta(a, b)
		}
	}
	return population{fmt.Sprintf("beta p=%.2f ICC=%.1f", p, rho), p,
		func(rng *rand.Rand) float64 { return clusterRateDraw(rng, p, rho) }, lpmf}
}

// hotCold is a two-point population: a share of "hot" scenarios at rate
// hot, the rest at cold — the rare behaviour that a few scenarios trigger.
func hotCold(share, hot, cold float64) population {
	return population{fmt.Sprintf("hot %g%%@%.2f/%.2f", 100*share, hot, cold), share*hot + (1-share)*cold,
		func(rng *rand.Rand) float64 {
			if rng.Float64() < share {
				return hot
			}
			return cold
		},
		func(k, m int) float64 {
			h, c := math.Log(share)+lbinom(k, m, hot), math.Log1p(-share)+lbinom(k, m, cold)
			return max(h, c) + math.Log1p(math.Exp(min(h, c)-max(h, c)))
		}}
}

// lbinom is the log binomial probability of k successes in m at rate p.
func lbinom(k, m int, p float64) float64 {
	return lchoose(m, k) + float64(k)*math.Log(p) + float64(m-k)*math.Log1p(-p)
}

// lbeta is the log beta function.
func lbeta(a, b float64) float64 {
	x, _ := math.Lgamma(a)
	y, _ := math.Lgamma(b)
	z, _ := math.Lgamma(a + b)
	return x + y - z
}

// fillFrom overwrites cs with one simulated study from pop.
func fillFrom(rng *rand.Rand, cs []ClusterSum, pop population, sizes sizeScheme) {
	for i := range cs {
		pi := pop.draw(rng)
		m := sizes.draw(rng)
		k := 0
		for range m {
			if rng.Float64() < pi {
				k++
			}
		}
		cs[i] = Binary(k, m)
	}
}
