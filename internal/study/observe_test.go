package study_test

import (
	"reflect"
	"testing"

	"github.com/impactbench/impactbench/internal/stats"
	"github.com/impactbench/impactbench/internal/study"
	"github.com/impactbench/impactbench/internal/study/studytest"
)

// TestWithClustersScoresTheGivenRows: the copy scores the clusters it is
// given with the study's own rules. Given the study's own clusters it
// computes the same study.json; given the first base scenario of each
// metric only, its cells count one scenario per metric and it stays
// consistent (CheckConsistent); the original is untouched.
func TestWithClustersScoresTheGivenRows(t *testing.T) {
	_, bench := small(t)
	s, err := study.Load(bench)
	if err != nil {
		t.Fatal(err)
	}
	want := s.Compute()
	same := s.WithClusters(s.Clusters).Compute()
	if !reflect.DeepEqual(want.Cells, same.Cells) || !reflect.DeepEqual(want.Pairs, same.Pairs) {
		t.Fatal("WithClusters(s.Clusters) computes another study")
	}
	first := s.WithClusters(func(mi, ai, k int) []stats.ClusterSum {
		cs := s.Clusters(mi, ai, k)
		if len(cs) == 0 {
			return nil
		}
		return cs[:1]
	}).Compute()
	studytest.CheckConsistent(t, first)
	checked := 0
	for _, c := range first.Cells {
		if c.Node == study.KindOverall && c.MinScenarios > 0 {
			checked++
			if c.Scenarios != c.Metrics {
				t.Errorf("%s %s: %d scenarios over %d metrics, want one each", c.Age, c.Model, c.Scenarios, c.Metrics)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no overall cell")
	}
	if again := s.Compute(); !reflect.DeepEqual(want.Cells, again.Cells) {
		t.Error("WithClusters changed the study it copied")
	}
}

// TestAtLevelSpendsAnotherAlpha: at study.json's own level the copy
// computes the same file; at a smaller alpha its intervals are wider,
// Result.Conf says the level, and a pair is significant only if it is at
// 0.05 too. Model A passes nearly everything and model B one scenario in
// three, so A−C is significant at 0.05 (adjusted p 0.029) and not at 0.01,
// A−B at both.
func TestAtLevelSpendsAnotherAlpha(t *testing.T) {
	_, bench := small(t)
	order := []string{"alpha__m01", "beta__m01", "alpha__m02", "beta__m02", "gamma__m01", "gamma__m02"}
	for i, key := range order {
		setPasses(t, bench, "model-a", key, min(3, 8-i))
		setPasses(t, bench, "model-b", key, 1)
	}
	s, err := study.Load(bench)
	if err != nil {
		t.Fatal(err)
	}
	want := s.Compute()
	if got := s.AtLevel(study.Conf, study.Alpha).Compute(); !reflect.DeepEqual(want, got) {
		t.Fatal("AtLevel(Conf, Alpha) computes another study")
	}
	strict := s.AtLevel(0.99, 0.01).Compute()
	if strict.Conf != 0.99 {
		t.Errorf("conf %v, want 0.99", strict.Conf)
	}
	lost := 0
	for i, p := range strict.Pairs {
		if want.Pairs[i].Significant && !p.Significant {
			lost++
		}
	}
	if lost == 0 {
		t.Error("no pair significant at 0.05 lost its significance at 0.01")
	}
	wider := 0
	for i, c := range strict.Cells {
		w := want.Cells[i]
		if *c.Hi-*c.Lo < *w.Hi-*w.Lo-1e-12 {
			t.Errorf("%s %s %s: 99 %% interval [%v, %v] narrower than 95 %% [%v, %v]", c.Node, c.Age, c.Model, *c.Lo, *c.Hi, *w.Lo, *w.Hi)
		}
		if *c.Hi-*c.Lo > *w.Hi-*w.Lo+1e-12 {
			wider++
		}
	}
	if wider == 0 {
		t.Error("no interval got wider at 99 %")
	}
	for i, p := range strict.Pairs {
		if p.Significant && !want.Pairs[i].Significant {
			t.Errorf("%s %s %s−%s significant at 0.01 but not at 0.05", p.Node, p.Age, p.A, p.B)
		}
		if p.Significant != (p.PAdjusted < 0.01 && p.Diff != 0) {
			t.Errorf("%s %s %s−%s: significant %v with adjusted p %v at alpha 0.01", p.Node, p.Age, p.A, p.B, p.Significant, p.PAdjusted)
		}
	}
}
