package study

import (
	"fmt"

	"github.com/impactbench/impactbench/internal/stats"
)

// WithClusters returns a copy of s that scores other judged rows on the
// same structure (metrics, nodes, models, ages): clusters gives a model's
// clusters on a metric at an age group (indexes as Clusters takes them;
// nil, or N = 0: no judged row), e.g. the base scenarios an adaptive run
// has collected so far. Compute on the copy applies the study's own rules
// (exact scores, intervals, Holm, ranks) to them. The copy shares the rest
// with s and carries no judge calibration (its corrections belong to the
// full run's rows).
func (s *Study) WithClusters(clusters func(model, age, metric int) []stats.ClusterSum) *Study {
	c := *s
	c.calib = calibState{labelled: make([]bool, len(s.Models))}
	c.obs = make([][][][]stats.ClusterSum, len(s.obs))
	for mi := range s.obs {
		c.obs[mi] = make([][][]stats.ClusterSum, len(s.obs[mi]))
		for ai := range s.obs[mi] {
			c.obs[mi][ai] = make([][]stats.ClusterSum, len(s.obs[mi][ai]))
			for k := range s.obs[mi][ai] {
				c.obs[mi][ai][k] = clusters(mi, ai, k)
			}
		}
	}
	return &c
}

// AtLevel returns a copy of s whose Compute gives intervals at confidence
// conf and decides its tests at significance alpha, instead of study.json's
// Conf and Alpha: a study that looks at its data several times spends its
// error rate over the looks (internal/adaptive). It panics on a level
// outside (0, 1).
func (s *Study) AtLevel(conf, alpha float64) *Study {
	if !(conf > 0 && conf < 1 && alpha > 0 && alpha < 1) {
		panic(fmt.Sprintf("study: AtLevel(%v, %v): levels outside (0, 1)", conf, alpha))
	}
	c := *s
	c.conf, c.alpha = conf, alpha
	return &c
}

// level is the confidence level of s's intervals and the significance
// level of its tests (Conf and Alpha unless AtLevel set others).
func (s *Study) level() (conf, alpha float64) {
	if s.conf == 0 {
		return Conf, Alpha
	}
	return s.conf, s.alpha
}
