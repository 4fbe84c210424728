package study_test

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/impactbench/impactbench/internal/study"
	"github.com/impactbench/impactbench/internal/study/studytest"
)

// setPasses makes a model pass the first k of a metric's three adult
// scenarios (and fail the others).
func setPasses(t *testing.T, bench, model, key string, k int) {
	t.Helper()
	slug, mid, _ := study.SplitKey(key)
	for s := 1; s <= 3; s++ {
		pass := s <= k
		present := pass == (mid == "m01") // m01 positive, m02 negative
		if err := studytest.SetVerdict(filepath.Join(bench, slug), model, fmt.Sprintf("%s_s%03d_v02", mid, s), present); err != nil {
			t.Fatal(err)
		}
	}
}

// TestEqualScoresShareARank: two models whose overall scores are the same
// fraction (6/18) but whose per-metric rates, summed in their order, give
// floating-point sums that differ in the last bit (0.3333333333333333 and
// 0.33333333333333337) share the better rank, are tied, and their paired
// difference is exactly 0 and not significant.
func TestEqualScoresShareARank(t *testing.T) {
	_, bench := small(t)
	order := []string{"alpha__m01", "beta__m01", "alpha__m02", "beta__m02", "gamma__m01", "gamma__m02"} // the overall node's order
	for i, k := range []int{0, 0, 0, 1, 2, 3} {
		setPasses(t, bench, "model-a", order[i], k)
	}
	for i, k := range []int{0, 2, 0, 3, 0, 1} {
		setPasses(t, bench, "model-b", order[i], k)
	}
	s, err := study.Load(bench)
	if err != nil {
		t.Fatal(err)
	}
	res := s.Compute()
	if got := res.Nodes[0].Metrics; fmt.Sprint(got) != fmt.Sprint(order) {
		t.Fatalf("overall metrics %v, want %v", got, order)
	}
	a, _ := res.Cell(study.KindOverall, study.AgeAdult, "model-a")
	b, _ := res.Cell(study.KindOverall, study.AgeAdult, "model-b")
	if *a.Score != *b.Score || *a.Score != 1.0/3 {
		t.Errorf("scores %v and %v, want both 1/3", *a.Score, *b.Score)
	}
	if *a.Rank != *b.Rank {
		t.Errorf("equal scores got ranks %d and %d", *a.Rank, *b.Rank)
	}
	for _, p := range res.Pairs {
		if p.Node == study.KindOverall && p.Age == study.AgeAdult && p.A == "model-a" && p.B == "model-b" {
			if p.Diff != 0 || p.Significant {
				t.Errorf("pair %+v: want diff 0, not significant", p)
			}
		}
	}
}

// TestPairsAgreeWithTheirIntervalsAndTies: in every pair, p < Alpha
// exactly when the interval excludes 0; significant is Holm's adjusted p
// below Alpha; tied_with lists exactly the pairs that are not
// significant; each rank interval counts the models shown better and
// worse; equal scores share a rank, and a higher score never gets a worse
// rank.
func TestPairsAgreeWithTheirIntervalsAndTies(t *testing.T) {
	_, bench := small(t)
	s, err := study.Load(bench)
	if err != nil {
		t.Fatal(err)
	}
	studytest.CheckConsistent(t, s.Compute())
}
