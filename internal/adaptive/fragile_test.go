package adaptive

import (
	"math"
	"testing"

	"github.com/impactbench/impactbench/internal/racemode"
	"github.com/impactbench/impactbench/internal/site"
	"github.com/impactbench/impactbench/internal/stats"
	"github.com/impactbench/impactbench/internal/study"
)

// TestJulyConclusionsAreFragile measures why no design keeps 90 % of the
// July study's conclusions with half its conversations (docs/statistics.md):
//
//   - how many of the full study's different-calls stay significant (Holm
//     recomputed in each family) and how many grades stay inside one band
//     when every standard error is c times larger, as a design with fewer
//     scenarios has (same level, same t degrees of freedom);
//   - the best allocation of half the base scenarios, knowing each
//     metric's true spread: each metric gets 1 to 3 base scenarios, n_m ∝
//     its spread (Neyman), where the spread is the unfloored cluster
//     variance of its paired differences summed over every pair and age
//     (and of the rates, for the grades); the standard error it gives, over
//     the full design's.
func TestJulyConclusionsAreFragile(t *testing.T) {
	racemode.SkipHeavy(t)
	s := july(t)
	res := s.Compute()
	kinds := map[string]string{}
	for _, n := range res.Nodes {
		kinds[n.ID] = n.Kind
	}
	want := map[float64][2]float64{1.2: {0.6, 0.8}, 1.34: {0.45, 0.65}}
	for _, c := range []float64{1, 1.1, 1.2, 1.34, 1.41} {
		kd, nd := keptCalls(res, c)
		kg, ng := keptGrades(res, kinds, c)
		t.Logf("standard errors ×%.2f: %d of %d different-calls (%.1f %%) and %d of %d grades (%.1f %%) still stated",
			c, kd, nd, 100*float64(kd)/float64(nd), kg, ng, 100*float64(kg)/float64(ng))
		if w, ok := want[c]; ok {
			if share := float64(kd+kg) / float64(nd+ng); share < w[0] || share > w[1] {
				t.Errorf("×%.2f: %.3f of the conclusions kept, documented %v–%v", c, share, w[0], w[1])
			}
		}
	}
	for _, budget := range []float64{1.5, 2} {
		pairs, levels := oracleSE(s, budget)
		t.Logf("best allocation of %.1f base scenarios per metric (of 3): standard errors ×%.3f (pairs) and ×%.3f (rates) the full design's; spread evenly ×%.3f",
			budget, pairs, levels, math.Sqrt(3/budget))
		if budget == 1.5 && (pairs < 1.25 || levels < 1.25) {
			t.Errorf("oracle at half the scenarios: ×%.3f, ×%.3f; documented ≥ 1.3", pairs, levels)
		}
	}
}

// keptCalls is how many significant pairs stay significant with every
// standard error c times larger.
func keptCalls(res *study.Result, c float64) (kept, total int) {
	fams := map[[2]string][]study.Pair{}
	for _, p := range res.Pairs {
		fams[[2]string{p.Node, p.Age}] = append(fams[[2]string{p.Node, p.Age}], p)
	}
	for _, ps := range fams {
		pv := make([]float64, len(ps))
		for i, p := range ps {
			df := math.Inf(1)
			if p.DF != nil {
				df = *p.DF
			}
			tv := tQuantile(1-p.P/2, df)
			if p.P == 0 || math.IsInf(tv, 1) {
				tv = 40 // beyond float precision: significant at any c here
			}
			pv[i] = tTwoSided(tv/c, df)
		}
		for i, adj := range stats.Holm(pv) {
			if ps[i].Significant {
				total++
				if adj < study.Alpha {
					kept++
				}
			}
		}
	}
	return kept, total
}

// keptGrades is how many graded cells keep their grade with every
// interval c times wider about the score.
func keptGrades(res *study.Result, kinds map[string]string, c float64) (kept, total int) {
	for _, cell := range res.Cells {
		g := site.CellGrade(kinds[cell.Node], cell)
		if g.Grade == "" {
			continue
		}
		total++
		score, _, _, _ := gradedEstimate(cell)
		lo, hi := *cell.Lo, *cell.Hi
		if cell.ByPlacement != nil {
			lo, hi = cell.ByPlacement.Lo, cell.ByPlacement.Hi
		}
		wl, wh := score-c*(score-lo), score+c*(hi-score)
		if site.CellGrade(kinds[cell.Node], study.Cell{Lo: &wl, Hi: &wh}).Grade == g.Grade {
			kept++
		}
	}
	return kept, total
}

// oracleSE is the standard error of the Neyman allocation of budget base
// scenarios per metric (each between 1 and 3), over the full design's, for
// the pairs' differences and for the rates.
func oracleSE(s *study.Study, budget float64) (pairs, levels float64) {
	var vp, vl []float64
	for k := range s.Metrics {
		p, l := 0.0, 0.0
		for ai := range s.Ages {
			age := study.AgeIndex(s.Ages[ai])
			for a := range s.Models {
				ca := s.Clusters(a, age, k)
				l += spread(len(ca), func(j int) float64 { return rate(ca[j]) })
				for b := a + 1; b < len(s.Models); b++ {
					cb := s.Clusters(b, age, k)
					if len(ca) == len(cb) {
						p += spread(len(ca), func(j int) float64 { return rate(ca[j]) - rate(cb[j]) })
					}
				}
			}
		}
		vp, vl = append(vp, p), append(vl, l)
	}
	return neyman(vp, budget), neyman(vl, budget)
}

func rate(c stats.ClusterSum) float64 {
	if c.N == 0 {
		return 0
	}
	return c.Sum / float64(c.N)
}

// spread is the sample variance of f over n clusters (0 below 2).
func spread(n int, f func(int) float64) float64 {
	if n < 2 {
		return 0
	}
	mean := 0.0
	for j := range n {
		mean += f(j)
	}
	mean /= float64(n)
	ss := 0.0
	for j := range n {
		ss += (f(j) - mean) * (f(j) - mean)
	}
	return ss / float64(n-1)
}

// neyman allocates budget·len(v) scenarios, n_m = clamp(c·√v_m, 1, 3), and
// returns √(Σ v/n ÷ Σ v/3).
func neyman(v []float64, budget float64) float64 {
	lo, hi := 0.0, 1e9
	ns := make([]float64, len(v))
	for range 200 {
		c, total := (lo+hi)/2, 0.0
		for i, x := range v {
			ns[i] = math.Max(1, math.Min(3, c*math.Sqrt(x)))
			total += ns[i]
		}
		if total > budget*float64(len(v)) {
			hi = c
		} else {
			lo = c
		}
	}
	var got, full float64
	for i, x := range v {
		got += x / ns[i]
		full += x / 3
	}
	return math.Sqrt(got / full)
}
