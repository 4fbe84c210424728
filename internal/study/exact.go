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
func exactRate(cs []stats.ClusterSum) (frac, bool) {
	var sum, n int64
	for _, c := range cs {
		sum += int64(c.Sum)
		n += int64(c.N)
	}
	if n == 0 {
		return frac{}, false
	}
	return reduce(sum, n), true
}

// weightedMean is Σ w_i·x_i / Σ w_i over the parts given; nil without
// parts (or zero total weight). It sums in int64 fractions while they fit
// (a study's rates have denominators of a few rows, its weights too) and
// in big.Rat from the first sum that would not: the same exact value,
// without big.Rat's allocations on the ~10^6 terms of a 16-model study.
type weightedMean struct {
	num, den frac
	big      *[2]big.Rat // nil while the int64 sums hold
	parts    int
}

// frac is n/d with d > 0, reduced.
type frac struct{ n, d int64 }

// fracLimit bounds the parts of a frac the int64 path multiplies: two
// factors below 2^31 multiply without overflow.
const fracLimit = 1 << 31

func (m *weightedMean) add(w, x frac) {
	m.parts++
	if m.big == nil {
		if num, ok := addFrac(m.num, mulFrac(w, x)); ok {
			if den, ok := addFrac(m.den, w); ok {
				m.num, m.den = num, den
				return
			}
		}
		m.big = &[2]big.Rat{}
		m.big[0].Set(m.num.rat())
		m.big[1].Set(m.den.rat())
	}
	var t big.Rat
	m.big[0].Add(&m.big[0], t.Mul(w.rat(), x.rat()))
	m.big[1].Add(&m.big[1], w.rat())
}

func (m *weightedMean) value() *big.Rat {
	if m.parts == 0 {
		return nil
	}
	num, den := m.num.rat(), m.den.rat()
	if m.big != nil {
		num, den = &m.big[0], &m.big[1]
	}
	if den.Sign() == 0 {
		return nil
	}
	return new(big.Rat).Quo(num, den)
}

func (f frac) rat() *big.Rat {
	if f.d == 0 {
		return new(big.Rat)
	}
	return big.NewRat(f.n, f.d)
}

// mulFrac is a·b, reduced; a zero frac when a part is too large (add
// then refuses it, so the sum moves to big.Rat).
func mulFrac(a, b frac) frac {
	if !small(a) || !small(b) {
		return frac{0, 0}
	}
	return reduce(a.n*b.n, a.d*b.d)
}

// addFrac is a + b, reduced, and false when the sum might not fit.
func addFrac(a, b frac) (frac, bool) {
	if b.d == 0 {
		return a, false
	}
	if a.d == 0 {
		return b, small(b)
	}
	if !small(a) || !small(b) {
		return frac{}, false
	}
	return reduce(a.n*b.d+b.n*a.d, a.d*b.d), true
}

func small(f frac) bool {
	return f.n < fracLimit && f.n > -fracLimit && f.d < fracLimit
}

func reduce(n, d int64) frac {
	g := gcd(abs(n), d)
	if g > 1 {
		n, d = n/g, d/g
	}
	return frac{n, d}
}

func gcd(a, b int64) int64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

func abs(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

// ratWeight is the node's exact weight of its i-th metric (1 unless set).
func (n *Node) ratWeight(i int) frac {
	if n.rw != nil {
		return n.rw[i]
	}
	return frac{1, 1}
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
		var sa, na, sb, nb int64
		for i := range min(len(ca), len(cb)) {
			if ca[i].N > 0 && cb[i].N > 0 {
				sa, na = sa+int64(ca[i].Sum), na+int64(ca[i].N)
				sb, nb = sb+int64(cb[i].Sum), nb+int64(cb[i].N)
			}
		}
		if na == 0 || nb == 0 {
			continue
		}
		m.add(n.ratWeight(j), reduce(sa*nb-sb*na, na*nb))
	}
	return m.value()
}

// float is r as the nearest float64.
func float(r *big.Rat) float64 {
	f, _ := r.Float64()
	return f
}
