package stats

import (
	"fmt"
	"math/big"
)

// PassAtKAll is τ-bench's pass^k estimator (Yao et al. 2024, "τ-bench",
// arXiv:2406.12045): given c passes among n trials of one task, it is the
// probability that k trials drawn without replacement all pass,
// C(c, k) / C(n, k). It measures reliability: a model that passes 3 of 4
// trials has pass^1 = 0.75 but pass^2 = 0.5. Average it over tasks for the
// benchmark-level figure.
//
// PassAtKAll(c, n, 0) = 1 and it is 0 whenever c < k. It panics unless
// 0 ≤ c ≤ n and 0 ≤ k ≤ n.
func PassAtKAll(c, n, k int) float64 {
	checkPassK("PassAtKAll", c, n, k)
	return binomRatio(c, n, k)
}

// PassAtK is the complementary pass@k estimator (Chen et al. 2021,
// "Evaluating Large Language Models Trained on Code", arXiv:2107.03374):
// the probability that at least one of k trials drawn without replacement
// passes, 1 − C(n−c, k) / C(n, k). Same argument rules as PassAtKAll.
func PassAtK(c, n, k int) float64 {
	checkPassK("PassAtK", c, n, k)
	return 1 - binomRatio(n-c, n, k)
}

// binomRatio returns C(a, k) / C(n, k) for 0 ≤ a ≤ n, 0 ≤ k ≤ n. It uses exact
// big-integer arithmetic and a single rounding, because the binomial
// coefficients overflow float64 long before n reaches typical trial counts
// and a product of ratios would accumulate rounding error.
func binomRatio(a, n, k int) float64 {
	if a < k {
		return 0
	}
	num := new(big.Int).Binomial(int64(a), int64(k))
	den := new(big.Int).Binomial(int64(n), int64(k))
	f, _ := new(big.Rat).SetFrac(num, den).Float64()
	return f
}

// checkPassK panics on arguments that describe no possible experiment.
func checkPassK(fn string, c, n, k int) {
	if c < 0 || n < 0 || c > n || k < 0 || k > n {
		panic(fmt.Sprintf("stats: %s: need 0 ≤ c ≤ n and 0 ≤ k ≤ n, got c=%d n=%d k=%d", fn, c, n, k))
	}
}
