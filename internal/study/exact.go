package study

import (
	"math/big"

	"github.com/impactbench/impactbench/internal/stats"
)

// Scores as the exact fractions they are. A metric's pass rate is passes
// over judged rows, and a node's score a weighted mean of such rates with
// rational weights, so two models with equal scores have equal fractions;
// summed in floating point in a different order, they can differ in the
// last bit and split a tie (256 of the July study's 13,252 ranked cells
// did). Ranks and the signs of paired differences are decided on these
// fractions; study.json stores each as the float64 nearest to it, so a
// reader rounds it once.

// exactRate is a stratum's pooled rate ΣSum/ΣN over its clusters, with
// ok false when it has no observation. Sums are counts of passes.
func exactRate(cs []stats.ClusterSum) (*big.Rat, bool) {
	var sum, n int64
	for _, c := range cs {
		sum += int64(c.Sum)
		n += int64(c.N)
	}
	if n == 0 {
		return nil, false
	}
	return big.NewRat(sum, n), true
}

// weightedMean is Σ w_i·x_i / Σ w_i over the parts given; nil without
// parts (or zero total weight).
type weightedMean struct {
	num, den big.Rat
	parts    int
}

func (m *weightedMean) add(w, x *big.Rat) {
	var t big.Rat
	m.num.Add(&m.num, t.Mul(w, x))
	m.den.Add(&m.den, w)
	m.parts++
}

func (m *weightedMean) value() *big.Rat {
	if m.parts == 0 || m.den.Sign() == 0 {
		return nil
	}
	return new(big.Rat).Quo(&m.num, &m.den)
}

// ratWeight is the node's exact weight of its i-th metric (1 unless set).
func (n *Node) ratWeight(i int) *big.Rat {
	if n.rw != nil {
		return n.rw[i]
	}
	return big.NewRat(1, 1)
}

// exactScore is model mi's exact score at node n and age ai: the weighted
// mean of the rates of the metrics it has rows on (nil: none), as
// stats.StratifiedMean estimates it.
func (s *Study) exactScore(n *Node, mi, ai int) *big.Rat {
	var m weightedMean
	for j, k := range n.idx {
		if r, ok := exactRate(s.obs[mi][ai][k]); ok {
			m.add(n.ratWeight(j), r)
		}
	}
	return m.value()
}

// exactDiff is model a − model b at node n and age ai, exactly as
// stats.StratifiedPairedDiff estimates it: per metric, the two rates over
// the base scenarios both have rows on; the weighted mean over the metrics
// with any (nil: none).
func (s *Study) exactDiff(n *Node, ai, a, b int) *big.Rat {
	var m weightedMean
	for j, k := range n.idx {
		ca, cb := s.obs[a][ai][k], s.obs[b][ai][k]
		var pa, pb []stats.ClusterSum
		for i := range min(len(ca), len(cb)) {
			if ca[i].N > 0 && cb[i].N > 0 {
				pa, pb = append(pa, ca[i]), append(pb, cb[i])
			}
		}
		ra, okA := exactRate(pa)
		rb, okB := exactRate(pb)
		if !okA || !okB {
			continue
		}
		m.add(n.ratWeight(j), new(big.Rat).Sub(ra, rb))
	}
	return m.value()
}

// float is r as the nearest float64.
func float(r *big.Rat) float64 {
	f, _ := r.Float64()
	return f
}
