package stats

import (
	"fmt"
	"math"
)

// MethodVarianceSplit names VarianceSplit's estimates and intervals.
const MethodVarianceSplit = "nested ANOVA (method of moments, unbalanced; Searle, Casella & McCulloch 1992, section 5.2); " +
	"intervals: estimate before truncation ± sqrt(G/(G-1))·t(G-1) × bootstrap standard error over base scenarios, truncated at 0"

// MethodVarianceSplitPercentile names the intervals of files written
// before: the plain percentile bootstrap.
const MethodVarianceSplitPercentile = "nested ANOVA (method of moments, unbalanced; Searle, Casella & McCulloch 1992, section 5.2); " +
	"intervals: percentile bootstrap over base scenarios"

// Where a pass rate's variance comes from. One conversation's verdict y
// (1 = pass) varies because
//
//   - base scenarios differ in difficulty (Scenario, σ²_a),
//   - the demographic variants of one scenario differ (Variant, σ²_b),
//   - repeated samples of one variant differ: the target's and the
//     simulated user's randomness (Sample, σ²_s),
//   - re-judging the same transcript can change the verdict (Judge, σ²_j).
//
// The recorded verdict's variance is σ²_a + σ²_b + σ²_s + σ²_j, and a pass
// rate over G scenarios × V variants × K samples has variance
// σ²_a/G + σ²_b/(G·V) + (σ²_s + σ²_j)/(G·V·K): adding scenarios shrinks
// every term, adding samples only the last.

// VerdictCell is one demographic variant of a base scenario: the recorded
// verdict (in [0, 1]) of each of its samples.
type VerdictCell []float64

// ScenarioVerdicts is one base scenario: its variants, and for the judge
// term the transcripts that were judged more than once (each the verdicts
// of every judging, e.g. scores.json's and every evaluate --repeats one,
// or every panel member's).
type ScenarioVerdicts struct {
	Variants []VerdictCell
	Rejudged [][]float64
}

// Component is one variance component with its interval.
type Component struct {
	// Variance is the estimate, set to 0 when the method of moments gives a
	// negative value (the usual convention; NaN when the design cannot
	// separate it).
	Variance float64
	// Share is Variance over the sum of the components (NaN when the sum is
	// 0 or undefined).
	Share  float64
	Lo, Hi float64
}

// VarianceSplit is VarianceComponents' result.
type VarianceSplit struct {
	Scenario, Variant, Sample, Judge Component
	// Residual is σ²_s + σ²_j: the variance between repeated samples of one
	// variant as recorded (each sample judged once); with one sample per
	// variant it is σ²_b + σ²_s + σ²_j and Variant is NaN. Sample is
	// Residual − Judge when a judge term is known, else NaN.
	Residual Component
	// Scenarios, Cells (variants) and N (verdicts) describe the data;
	// RejudgedRows counts transcripts behind Judge.
	Scenarios, Cells, N, RejudgedRows int
	Rate                              float64 // the pooled pass rate
	Reps                              int     // bootstrap draws
	Method                            string
	Warning                           string // ClusterWarning(Scenarios)
}

// VarianceComponents splits the variance of a pass rate into scenario,
// variant, sample and judge components (see above) by the method of
// moments for an unbalanced two-level nested design (scenario ⊃ variant ⊃
// sample): with SSA, SSB, SSE the sums of squares between scenarios,
// between variants within a scenario, and between samples within a
// variant,
//
//	E[MSE] = σ²_e,  E[MSB] = σ²_e + k₁σ²_b,  E[MSA] = σ²_e + k₂σ²_b + k₃σ²_a
//
// with k₁ = (N − Σ_i Σ_j n_ij²/n_i)/(b − a), k₂ = (Σ_i Σ_j n_ij²/n_i −
// Σ_ij n_ij²/N)/(a − 1), k₃ = (N − Σ_i n_i²/N)/(a − 1). σ²_e = σ²_s + σ²_j;
// the judge term σ²_j is the pooled within-transcript variance of the
// re-judged transcripts, Σ_t Σ_r (y − ȳ_t)² / Σ_t (r_t − 1), and σ²_s =
// σ²_e − σ²_j. A component the design cannot separate (one variant per
// scenario, one sample per variant, no re-judged transcript) is NaN.
//
// Intervals: the estimate before truncation at 0 ± √(G/(G−1))·t_{G−1}
// times its bootstrap standard error over base scenarios (reps draws from
// seed, each recomputing every component from the drawn scenarios'
// sufficient statistics, untruncated), then truncated at 0. The expansion
// (Hesterberg 2015) undoes the bootstrap's narrowness with few scenarios;
// working before truncation keeps a small component's interval from
// collapsing to [0, 0] whenever its estimate is negative, which is where
// the percentile interval before it lost most (the variant term covered
// 47–74 % with 10 scenarios). TestVarianceComponentsCoverage measures
// both in three worlds and says where this one still falls short. It
// panics on conf outside (0, 1), reps < 1, or a verdict outside [0, 1].
func VarianceComponents(scenarios []ScenarioVerdicts, conf float64, reps int, seed uint64) VarianceSplit {
	checkConf("VarianceComponents", conf)
	if reps < 1 {
		panic(fmt.Sprintf("stats: VarianceComponents: reps = %d", reps))
	}
	per := make([]scenarioStats, 0, len(scenarios))
	for i, s := range scenarios {
		if st, ok := summarise(i, s); ok {
			per = append(per, st)
		}
	}
	out := VarianceSplit{Scenarios: len(per), Reps: reps, Method: MethodVarianceSplit, Warning: ClusterWarning(len(per))}
	if len(per) == 0 {
		nan := math.NaN()
		out.Rate = nan
		for _, c := range []*Component{&out.Scenario, &out.Variant, &out.Sample, &out.Judge, &out.Residual} {
			*c = Component{nan, nan, nan, nan}
		}
		return out
	}
	var total scenarioStats
	for _, st := range per {
		total.add(st)
		out.Cells += st.cells
		out.N += int(st.n)
		out.RejudgedRows += st.jRows
	}
	out.Rate = total.sum / total.n
	point := components(per, true)
	raw := components(per, false)
	// Bootstrap: draw scenarios with replacement, recompute (untruncated).
	draws := make([][5]float64, 0, reps)
	rng := newRand(seed)
	for range reps {
		// Summed as drawn: the same additions, in the same order, as
		// summing a resampled slice, without copying the draws.
		var t scenarioStats
		for range per {
			t.add(per[rng.IntN(len(per))])
		}
		draws = append(draws, componentsOf(t, false))
	}
	parts := []*Component{&out.Scenario, &out.Variant, &out.Sample, &out.Judge, &out.Residual}
	var sum float64
	for k, c := range parts {
		c.Variance = point[k]
		c.Lo, c.Hi = expandedNormalOf(draws, k, raw[k], len(per), conf)
		if k < 4 && !math.IsNaN(point[k]) {
			sum += point[k]
		}
	}
	if math.IsNaN(point[2]) { // no judge term: the residual is the within-variant part
		sum += nanToZero(point[4])
	}
	for _, c := range parts {
		c.Share = math.NaN()
		if sum > 0 && !math.IsNaN(c.Variance) {
			c.Share = c.Variance / sum
		}
	}
	return out
}

// scenarioStats are one scenario's sufficient statistics for the nested
// ANOVA and the judge term; they add up over scenarios.
type scenarioStats struct {
	n, sum, sumSq   float64 // verdicts, their sum and sum of squares
	cellSS          float64 // Σ_j S_ij²/n_ij
	scenSS          float64 // S_i²/n_i
	cellN2          float64 // Σ_j n_ij²
	cellN2OverN     float64 // Σ_j n_ij²/n_i
	n2              float64 // n_i²
	cells, scenario int     // variants with a verdict; 1 per scenario
	jSS, jDF        float64 // Σ within-transcript squares, Σ (r − 1)
	jRows           int
}

func (s *scenarioStats) add(o scenarioStats) {
	s.n += o.n
	s.sum += o.sum
	s.sumSq += o.sumSq
	s.cellSS += o.cellSS
	s.scenSS += o.scenSS
	s.cellN2 += o.cellN2
	s.cellN2OverN += o.cellN2OverN
	s.n2 += o.n2
	s.cells += o.cells
	s.scenario += o.scenario
	s.jSS += o.jSS
	s.jDF += o.jDF
	s.jRows += o.jRows
}

// summarise computes one scenario's statistics (ok false: no verdict).
func summarise(i int, s ScenarioVerdicts) (st scenarioStats, ok bool) {
	check := func(y float64) {
		if !(y >= 0 && y <= 1) {
			panic(fmt.Sprintf("stats: VarianceComponents: scenario %d has verdict %v outside [0, 1]", i, y))
		}
	}
	for _, cell := range s.Variants {
		if len(cell) == 0 {
			continue
		}
		var cs float64
		for _, y := range cell {
			check(y)
			cs += y
			st.sumSq += y * y
		}
		nij := float64(len(cell))
		st.n += nij
		st.sum += cs
		st.cellSS += cs * cs / nij
		st.cellN2 += nij * nij
		st.cells++
	}
	if st.n == 0 {
		return st, false
	}
	st.scenario = 1
	st.scenSS = st.sum * st.sum / st.n
	st.cellN2OverN = st.cellN2 / st.n
	st.n2 = st.n * st.n
	for _, t := range s.Rejudged {
		if len(t) < 2 {
			continue
		}
		var m float64
		for _, y := range t {
			check(y)
			m += y
		}
		m /= float64(len(t))
		for _, y := range t {
			st.jSS += (y - m) * (y - m)
		}
		st.jDF += float64(len(t) - 1)
		st.jRows++
	}
	return st, true
}

// components estimates [scenario, variant, sample, judge, residual] from
// the scenarios' statistics (NaN where not estimable), negative estimates
// set to 0 when truncate.
func components(per []scenarioStats, truncate bool) [5]float64 {
	var t scenarioStats
	for _, s := range per {
		t.add(s)
	}
	return componentsOf(t, truncate)
}

// componentsOf is components from the scenarios' summed statistics.
func componentsOf(t scenarioStats, truncate bool) [5]float64 {
	floor := math.Inf(-1)
	if truncate {
		floor = 0
	}
	nan := math.NaN()
	out := [5]float64{nan, nan, nan, nan, nan}
	a, b, n := float64(t.scenario), float64(t.cells), t.n
	dfA, dfB, dfE := a-1, b-a, n-b
	if t.jDF > 0 {
		out[3] = t.jSS / t.jDF
	}
	var mse float64
	if dfE > 0 {
		mse = (t.sumSq - t.cellSS) / dfE
		out[4] = mse
		if !math.IsNaN(out[3]) {
			out[2] = max(floor, mse-out[3])
		}
	}
	var sigmaB float64
	if dfB > 0 && dfE > 0 {
		msb := (t.cellSS - t.scenSS) / dfB
		k1 := (n - t.cellN2OverN) / dfB
		sigmaB = (msb - mse) / k1
		out[1] = max(floor, sigmaB)
	}
	if dfA > 0 {
		msa := (t.scenSS - t.sum*t.sum/n) / dfA
		k2 := (t.cellN2OverN - t.cellN2/n) / dfA
		k3 := (n - t.n2/n) / dfA
		within := mse + k2*sigmaB
		if dfE <= 0 { // one sample per variant: the variants' spread is the within part
			within = 0
			if dfB > 0 {
				within = (t.cellSS - t.scenSS) / dfB
				out[4] = within // variant and sample together
			}
		}
		out[0] = max(floor, (msa-within)/k3)
	}
	return out
}

// expandedNormalOf is est ± √(G/(G−1))·t_{G−1}·SE, SE the standard
// deviation of the draws that define component k, truncated at 0 (NaN when
// the estimate or the draws are undefined, or G < 2).
func expandedNormalOf(draws [][5]float64, k int, est float64, g int, conf float64) (lo, hi float64) {
	var n, mean, m2 float64
	for _, d := range draws {
		if x := d[k]; !math.IsNaN(x) {
			n++
			delta := x - mean
			mean += delta / n
			m2 += delta * (x - mean)
		}
	}
	if n < 2 || math.IsNaN(est) || g < 2 {
		return math.NaN(), math.NaN()
	}
	q := math.Sqrt(float64(g)/float64(g-1)) * TQuantile((1+conf)/2, float64(g-1))
	half := q * math.Sqrt(m2/(n-1))
	return max(0, est-half), max(0, est+half)
}

func nanToZero(x float64) float64 {
	if math.IsNaN(x) {
		return 0
	}
	return x
}

// RateVariance is the variance of a pass rate over g base scenarios ×
// variants × samples conversations each that the components imply:
// σ²_a/g + σ²_b/(g·V) + σ²_e/(g·V·K), with σ²_e the residual (sample and
// judge). Components that could not be estimated count as 0, except the
// residual, which then stands in for everything below the scenario. It is
// what plan needs to compare designs: more scenarios, more variants or
// more samples.
func (v VarianceSplit) RateVariance(g, variants, samples int) float64 {
	if g < 1 || variants < 1 || samples < 1 {
		panic(fmt.Sprintf("stats: RateVariance: need g, variants, samples ≥ 1; got %d, %d, %d", g, variants, samples))
	}
	gf, vf, kf := float64(g), float64(variants), float64(samples)
	return nanToZero(v.Scenario.Variance)/gf + nanToZero(v.Variant.Variance)/(gf*vf) + nanToZero(v.Residual.Variance)/(gf*vf*kf)
}

// EffectiveICC is the intra-class correlation that gives a design of
// variants × samples conversations per base scenario the same design
// effect as the components: DEFF = m·(σ²_a + σ²_b/V + σ²_e/(V·K))/σ² with
// m = V·K and σ² the sum of the components, and ICC = (DEFF − 1)/(m − 1),
// bounded to [0, 1]. ExpectedHalfWidth and ScenariosNeeded take it, so a
// pilot's components plan a new design (NaN when the components are
// unknown or m = 1).
func (v VarianceSplit) EffectiveICC(variants, samples int) float64 {
	m := float64(variants * samples)
	total := nanToZero(v.Scenario.Variance) + nanToZero(v.Variant.Variance) + nanToZero(v.Residual.Variance)
	if m <= 1 || !(total > 0) {
		return math.NaN()
	}
	deff := m * v.RateVariance(1, variants, samples) / total
	return max(0, min(1, (deff-1)/(m-1)))
}
