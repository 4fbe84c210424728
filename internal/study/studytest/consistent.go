package studytest

import (
	"slices"
	"testing"

	"github.com/impactbench/impactbench/internal/study"
)

// CheckConsistent checks study.json's decisions against each other: in
// every pair, p < Alpha exactly when the 95 % interval excludes 0;
// significant is Holm's adjusted p below Alpha (and the difference not
// 0); tied_with lists exactly the pairs that are not significant; each
// rank interval (above the metric level, where pairs are stored) is 1 +
// the models shown better to the count minus those shown worse; equal
// scores share a rank and a higher score never gets a worse one.
func CheckConsistent(t testing.TB, res *study.Result) {
	t.Helper()
	type key struct{ node, age, model string }
	cells := map[key]study.Cell{}
	byNode := map[[2]string][]study.Cell{}
	for _, c := range res.Cells {
		cells[key{c.Node, c.Age, c.Model}] = c
		if c.Rank != nil {
			byNode[[2]string{c.Node, c.Age}] = append(byNode[[2]string{c.Node, c.Age}], c)
		}
	}
	better := map[key]int{}
	worse := map[key]int{}
	for _, p := range res.Pairs {
		if (p.P < study.Alpha) != (p.Lo > 0 || p.Hi < 0) {
			t.Errorf("%s %s %s−%s: p %v with interval [%v, %v]", p.Node, p.Age, p.A, p.B, p.P, p.Lo, p.Hi)
		}
		if p.Significant != (p.PAdjusted < study.Alpha && p.Diff != 0) || p.PAdjusted < p.P {
			t.Errorf("%s %s %s−%s: significant %v with p %v, adjusted %v", p.Node, p.Age, p.A, p.B, p.Significant, p.P, p.PAdjusted)
		}
		ka, kb := key{p.Node, p.Age, p.A}, key{p.Node, p.Age, p.B}
		tied := slices.Contains(cells[ka].TiedWith, p.B)
		if tied != !p.Significant || slices.Contains(cells[kb].TiedWith, p.A) != tied {
			t.Errorf("%s %s %s−%s: tied %v, significant %v", p.Node, p.Age, p.A, p.B, tied, p.Significant)
		}
		if p.Significant && p.Diff > 0 {
			better[kb]++
			worse[ka]++
		}
		if p.Significant && p.Diff < 0 {
			better[ka]++
			worse[kb]++
		}
	}
	kinds := map[string]string{}
	for _, n := range res.Nodes {
		kinds[n.ID] = n.Kind
	}
	for nk, cs := range byNode {
		for _, c := range cs {
			rank := 1
			for _, o := range cs {
				if *o.Score > *c.Score {
					rank++
				}
			}
			if *c.Rank != rank {
				t.Errorf("%v %s: rank %d with score %v, want %d", nk, c.Model, *c.Rank, *c.Score, rank)
			}
			k := key{c.Node, c.Age, c.Model}
			if kinds[c.Node] != study.KindMetric && (*c.RankLo != 1+better[k] || *c.RankHi != len(cs)-worse[k]) {
				t.Errorf("%v %s: rank interval %d–%d, %d shown better and %d worse of %d", nk, c.Model, *c.RankLo, *c.RankHi, better[k], worse[k], len(cs))
			}
		}
	}
}
