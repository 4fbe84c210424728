package stats

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
)

// Cluster is the pass/fail tally of one group of correlated conversations,
// e.g. every demographic variant and repeated sample of one base scenario.
type Cluster struct {
	Passed int `json:"passed"`
	Total  int `json:"total"`
}

// pcgIncrement derives the second PCG word from the seed so that callers only
// have to record one number to reproduce an interval.
const pcgIncrement = 0x9e3779b97f4a7c15

// newRand returns the package's only random source. Keeping it in one place
// guarantees that equal seeds give equal intervals across all functions.
func newRand(seed uint64) *rand.Rand {
	return rand.New(rand.NewPCG(seed, seed^pcgIncrement))
}

// ClusterBootstrap estimates the pooled pass rate Σpassed/Σtotal and a
// percentile-bootstrap confidence interval that respects clustering: whole
// clusters are resampled with replacement, so conversations that share a base
// scenario rise and fall together in every replicate. When outcomes within a
// cluster are correlated this interval is (correctly) wider than Wilson,
// which would treat every conversation as independent evidence.
//
// Conventions:
//   - Clusters with Total = 0 carry no information and are dropped before
//     resampling; Interval.Clusters counts only the clusters kept.
//   - With no trials at all, Estimate is NaN and the interval is [0, 1],
//     matching Wilson(0, 0, conf).
//   - The result is a pure function of (clusters, reps, conf, seed).
//   - With very few clusters (under ~10) any bootstrap understates the
//     uncertainty; with one cluster the interval collapses to the point
//     estimate. Check Interval.Clusters before trusting the width.
//
// It panics if reps < 1, conf is not in (0, 1), or a cluster has negative
// counts or Passed > Total.
func ClusterBootstrap(clusters []Cluster, reps int, conf float64, seed uint64) Interval {
	// Validate up front so bad arguments panic even when there is no data.
	checkConf("ClusterBootstrap", conf)
	if reps < 1 {
		panic(fmt.Sprintf("stats: ClusterBootstrap: reps = %d, need at least 1", reps))
	}
	kept := make([]Cluster, 0, len(clusters))
	passed, total := 0, 0
	for i, c := range clusters {
		if c.Passed < 0 || c.Total < 0 || c.Passed > c.Total {
			panic(fmt.Sprintf("stats: ClusterBootstrap: cluster %d has invalid counts %+v", i, c))
		}
		if c.Total > 0 {
			kept = append(kept, c)
			passed += c.Passed
			total += c.Total
		}
	}
	iv := Interval{N: total, Clusters: len(kept), Reps: reps, Seed: seed, Method: MethodClusterBootstrap}
	if total == 0 {
		iv.Estimate, iv.Lo, iv.Hi = math.NaN(), 0, 1
		return iv
	}
	iv.Estimate = float64(passed) / float64(total)
	iv.Lo, iv.Hi = BootstrapStat(len(kept), reps, conf, seed, func(idx []int) float64 {
		p, t := 0, 0
		for _, i := range idx {
			p += kept[i].Passed
			t += kept[i].Total
		}
		return float64(p) / float64(t) // t > 0: every kept cluster has Total > 0
	})
	return iv
}

// BootstrapStat is the generic percentile bootstrap behind ClusterBootstrap
// and PairedBootstrap. Each of reps replicates draws n indices uniformly with
// replacement from [0, n) and passes them to stat; the interval is the
// (1-conf)/2 and (1+conf)/2 quantiles of the replicate values (linear
// interpolation between order statistics, as R's default quantile type 7).
//
// stat receives a buffer that is reused between calls: it must not retain or
// modify idx. Replicates for which stat returns NaN (e.g. a rank correlation
// of a resample in which every item is the same) are discarded; if all are
// NaN, or n = 0, both limits are NaN.
//
// It panics if n < 0, reps < 1 or conf is not in (0, 1).
func BootstrapStat(n int, reps int, conf float64, seed uint64, stat func(idx []int) float64) (lo, hi float64) {
	checkConf("BootstrapStat", conf)
	if n < 0 || reps < 1 {
		panic(fmt.Sprintf("stats: BootstrapStat: invalid n=%d reps=%d", n, reps))
	}
	if n == 0 {
		return math.NaN(), math.NaN()
	}
	rng := newRand(seed)
	idx := make([]int, n)
	vals := make([]float64, 0, reps)
	for range reps {
		for i := range idx {
			idx[i] = rng.IntN(n)
		}
		if v := stat(idx); !math.IsNaN(v) {
			vals = append(vals, v)
		}
	}
	if len(vals) == 0 {
		return math.NaN(), math.NaN()
	}
	slices.Sort(vals)
	return quantileSorted(vals, (1-conf)/2), quantileSorted(vals, (1+conf)/2)
}

// PairedBootstrap returns stat(x, y) with a percentile-bootstrap interval
// obtained by resampling the (x[i], y[i]) pairs together. It is meant for
// rank correlations such as Spearman or KendallTauB between two runs, where
// the items are models: resampling pairs keeps each model's two scores
// together. With only a handful of items the interval is crude, and
// resamples that make stat undefined (NaN) are discarded as in BootstrapStat.
//
// It panics if len(x) != len(y), reps < 1 or conf is not in (0, 1).
func PairedBootstrap(x, y []float64, stat func(x, y []float64) float64, reps int, conf float64, seed uint64) Interval {
	if len(x) != len(y) {
		panic(fmt.Sprintf("stats: PairedBootstrap: len(x)=%d != len(y)=%d", len(x), len(y)))
	}
	n := len(x)
	xs, ys := make([]float64, n), make([]float64, n)
	lo, hi := BootstrapStat(n, reps, conf, seed, func(idx []int) float64 {
		for j, i := range idx {
			xs[j], ys[j] = x[i], y[i]
		}
		return stat(xs, ys)
	})
	est := math.NaN()
	if n > 0 {
		est = stat(x, y)
	}
	return Interval{Estimate: est, Lo: lo, Hi: hi, N: n, Clusters: n, Reps: reps, Seed: seed, Method: MethodPairedBootstrap}
}

// quantileSorted returns the p-quantile of sorted, non-empty s by linear
// interpolation between the closest order statistics (Hyndman & Fan 1996
// definition 7, the default of R and NumPy).
func quantileSorted(s []float64, p float64) float64 {
	h := float64(len(s)-1) * p
	i := int(math.Floor(h))
	if i >= len(s)-1 {
		return s[len(s)-1]
	}
	return s[i] + (h-float64(i))*(s[i+1]-s[i])
}

// ResamplingDefaults fills a caller's unset (zero) bootstrap replicates and
// confidence level with the defaults, and rejects values no interval can
// use: aggregate and compare take the same two settings.
func ResamplingDefaults(reps *int, conf *float64, defReps int, defConf float64) error {
	if *reps == 0 {
		*reps = defReps
	}
	if *conf == 0 {
		*conf = defConf
	}
	if *reps < 1 {
		return fmt.Errorf("bootstrap replicates must be positive, got %d", *reps)
	}
	if !(*conf > 0 && *conf < 1) {
		return fmt.Errorf("confidence level must be between 0 and 1 (e.g. 0.95), got %v", *conf)
	}
	return nil
}
