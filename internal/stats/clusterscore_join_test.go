package stats

import (
	"math"
	"testing"
)

// joinConf95 is the betting level joined to a 95 % interval, as the code
// computes it in floating point (60 % up to rounding).
var joinConf95 = scorePart{seen: math.Inf(1)}.bettingJoinConf(0.95)

// The score interval holds the betting interval at 60 % where the
// scenarios clearly differ (design effect the data show above 1.5), and
// only there: not for scenarios that agree, nor for an all-fail metric,
// whose design effect is assumed rather than seen (docs/statistics.md).
func TestScoreIntervalJoinsBettingWhereScenariosDiffer(t *testing.T) {
	bin := func(m int, passes ...int) []ClusterSum {
		cs := make([]ClusterSum, len(passes))
		for i, k := range passes {
			cs[i] = Binary(k, m)
		}
		return cs
	}
	cases := []struct {
		name   string
		cs     []ClusterSum
		joined bool
	}{
		{"a skewed rare behaviour: two hot scenarios of ten", bin(8, 0, 0, 0, 0, 0, 0, 0, 1, 5, 7), true},
		{"scenarios that differ no more than chance", bin(8, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3), false},
		{"an all-fail metric (design effect assumed, 2.5)", bin(16, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0), false},
	}
	for _, c := range cases {
		part, _ := scorePartOf(c.cs, 1)
		plain := scoreInterval([]scorePart{part}, 0.95, part.s/part.n)
		_, lo, hi := ScoreInterval(c.cs, 0.95)
		bl, bh := BettingCI(c.cs, joinConf95)
		r := ClusterRate(c.cs, 0.95)
		if r.Lo != lo || r.Hi != hi {
			t.Errorf("%s: ClusterRate [%v, %v], ScoreInterval [%v, %v]", c.name, r.Lo, r.Hi, lo, hi)
		}
		if !c.joined {
			if lo != plain.lo || hi != plain.hi {
				t.Errorf("%s: [%.4f, %.4f], want the score interval alone [%.4f, %.4f]", c.name, lo, hi, plain.lo, plain.hi)
			}
			if c.cs[0].Sum == 0 && !(bh > hi) {
				t.Errorf("%s: the 60 %% betting limit %.4f is inside [%.4f, %.4f]; the case does not show the gate", c.name, bh, lo, hi)
			}
			continue
		}
		if lo != math.Min(plain.lo, bl) || hi != math.Max(plain.hi, bh) {
			t.Errorf("%s: [%.4f, %.4f], want the hull of [%.4f, %.4f] and the 60 %% betting [%.4f, %.4f]", c.name, lo, hi, plain.lo, plain.hi, bl, bh)
		}
		if !(bh > plain.hi || bl < plain.lo) {
			t.Errorf("%s: the betting interval [%.4f, %.4f] is inside the score interval [%.4f, %.4f]; the case does not show the join", c.name, bl, bh, plain.lo, plain.hi)
		}
	}
}

// StratifiedRate does not join the betting interval: over a track's
// metrics the stratified interval covers without it (docs/statistics.md).
func TestStratifiedRateDoesNotJoinBetting(t *testing.T) {
	a := []ClusterSum{Binary(0, 8), Binary(0, 8), Binary(0, 8), Binary(0, 8), Binary(6, 8), Binary(0, 8)}
	b := []ClusterSum{Binary(1, 8), Binary(0, 8), Binary(8, 8), Binary(0, 8), Binary(0, 8), Binary(0, 8)}
	strata := []Stratum{{Weight: 48, Clusters: a}, {Weight: 48, Clusters: b}}
	pa, _ := scorePartOf(a, 48)
	pb, _ := scorePartOf(b, 48)
	if pa.bettingJoinConf(0.95) == 0 || pb.bettingJoinConf(0.95) == 0 {
		t.Fatal("each stratum alone would take the betting join; the case does not show its absence")
	}
	plain := scoreInterval([]scorePart{pa, pb}, 0.95, 15.0/96) // the pooled rate: 6 + 9 passes of 96
	if r := StratifiedRate(strata, 0.95); r.Lo != plain.lo || r.Hi != plain.hi {
		t.Errorf("stratified [%.4f, %.4f], want the stratified score interval [%.4f, %.4f]", r.Lo, r.Hi, plain.lo, plain.hi)
	}
}
