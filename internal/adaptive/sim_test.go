package adaptive

import (
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"testing"

	"github.com/impactbench/impactbench/internal/racemode"
	"github.com/impactbench/impactbench/internal/site"
	"github.com/impactbench/impactbench/internal/stats"
	"github.com/impactbench/impactbench/internal/study"
)

// The simulation world: each July metric's three base scenarios (every
// model's verdicts on them together, both ages) are its whole population,
// and a simulated study draws each metric's scenarios from them with
// replacement. The truth is then known exactly: a model's rate on a
// metric is the mean over the three, so every node's true score, every
// pair's true difference and every true rank are the full July study's
// point values.

// draws is one simulated study: each metric's scenarios, n of them, drawn
// from its July base scenarios.
func draws(s *study.Study, rng *rand.Rand, n int) Clusters {
	idx := make([][]int, len(s.Metrics))
	for k, m := range s.Metrics {
		idx[k] = make([]int, n)
		for j := range idx[k] {
			idx[k][j] = rng.IntN(max(len(m.Bases), 1))
		}
	}
	return func(mi, ai, k int) []stats.ClusterSum {
		cs := s.Clusters(mi, ai, k)
		if len(cs) == 0 {
			return nil
		}
		out := make([]stats.ClusterSum, n)
		for j, b := range idx[k] {
			out[j] = cs[b]
		}
		return out
	}
}

// nullDraws is a simulated study of the null world: as draws, but each
// drawn scenario hands every model the verdicts of a model picked by a
// random permutation of those with rows on the metric (the same for both
// ages), so every model has the same true rate everywhere and any
// different-call is wrong.
func nullDraws(s *study.Study, rng *rand.Rand, n int) Clusters {
	type draw struct {
		base int
		perm []int
	}
	plan := make([][]draw, len(s.Metrics))
	for k, m := range s.Metrics {
		var with []int
		for mi := range s.Models {
			if len(s.Clusters(mi, 0, k))+len(s.Clusters(mi, 1, k)) > 0 {
				with = append(with, mi)
			}
		}
		plan[k] = make([]draw, n)
		for j := range plan[k] {
			perm := make([]int, len(s.Models))
			for i := range perm {
				perm[i] = i
			}
			for i, p := range rng.Perm(len(with)) {
				perm[with[i]] = with[p]
			}
			plan[k][j] = draw{base: rng.IntN(max(len(m.Bases), 1)), perm: perm}
		}
	}
	return func(mi, ai, k int) []stats.ClusterSum {
		if len(s.Clusters(mi, ai, k)) == 0 {
			return nil
		}
		out := make([]stats.ClusterSum, n)
		for j, dr := range plan[k] {
			if cs := s.Clusters(dr.perm[mi], ai, k); len(cs) > dr.base {
				out[j] = cs[dr.base]
			}
		}
		return out
	}
}

// nullTruth is the null world's truth for different-calls and ranks:
// every difference 0, every model rank 1.
func nullTruth(full *fullView) *fullView {
	t := &fullView{sign: map[[4]string]int{}, rank: map[[3]string]int{}, score: full.score, kind: full.kind}
	for k := range full.sign {
		t.sign[k] = 0
	}
	for k := range full.rank {
		t.rank[k] = 1
	}
	return t
}

// simErrors is what one simulated study states that is wrong.
type simErrors struct {
	families, familiesWrong int // node × age families; with a wrong call or rank interval
	cells, gradesWrong      int // cells; with a wrong grade
	stated, rows            int // conclusions stated; judged rows used
}

// errorsOf checks conclusions and ranks against the truth.
func errorsOf(truth *fullView, decided []Conclusion, ranks []Rank, rows int) simErrors {
	e := simErrors{cells: len(truth.score), stated: len(decided), rows: rows}
	wrong := map[[2]string]bool{}
	fams := map[[2]string]bool{}
	for k := range truth.sign {
		fams[[2]string{k[0], k[1]}] = true
	}
	for _, c := range decided {
		switch c.Kind {
		case KindDifferent:
			k, sign := pairKey(c)
			if truth.sign[k] != sign {
				wrong[[2]string{c.Node, c.Age}] = true
			}
		case KindGrade:
			if truth.graded == nil {
				continue // the null world checks calls only
			}
			x := truth.score[[3]string{c.Node, c.Age, c.Model}]
			if site.CellGrade(truth.kind[c.Node], study.Cell{Lo: &x, Hi: &x}).Grade != c.Grade {
				e.gradesWrong++
			}
		}
	}
	for _, r := range ranks {
		fk := [2]string{r.Node, r.Age}
		if truth.kind[r.Node] == study.KindMetric {
			continue // the study stores no pairs there; counted apart below
		}
		fams[fk] = true
		if want := truth.rank[[3]string{r.Node, r.Age, r.Model}]; want < r.Lo || want > r.Hi {
			wrong[fk] = true
		}
	}
	e.families, e.familiesWrong = len(fams), len(wrong)
	return e
}

// fixedDecided is the fixed design's conclusions: the study's own at 0.05
// on all the rows.
func fixedDecided(s *study.Study, clusters Clusters) ([]Conclusion, []Rank, int) {
	d := newDesign(s, Options{Start: 1, Max: 1, Alpha: study.Alpha, Rho: 1, Hope: 1, Budget: 1})
	var led ledger
	res, rows := d.compute(clusters, fullCounts(s, clusters), 1)
	led.add(d, res, 1)
	r := &Round{}
	led.fill(d, r, res)
	return r.Decided, r.Ranks, sum(rows)
}

func fullCounts(s *study.Study, clusters Clusters) []int {
	d := &design{s: s}
	return d.have(clusters)
}

// simSize is the simulated studies per design: 1, or 100 with
// IMPACTBENCH_ADAPTIVE_SIM=full (`IMPACTBENCH_ADAPTIVE_SIM=full go test
// -run TestDesignKeepsItsErrorRate -v -timeout 4h ./internal/adaptive/`).
func simSize() int {
	if os.Getenv("IMPACTBENCH_ADAPTIVE_SIM") == "full" {
		return 100
	}
	return 1
}

// TestDesignKeepsItsErrorRate: in the July world with known truth, the
// adaptive design's stated conclusions are wrong no more often than its
// guarantee allows — per family (node × age group), a wrong different-call
// or rank interval at most α = 5 % of the time; per cell, a wrong grade at
// most 5 % — at its data-dependent stop, with the fixed design's error
// rates on the same studies beside it.
func TestDesignKeepsItsErrorRate(t *testing.T) {
	racemode.SkipHeavy(t)
	s := july(t)
	truth := newFullView(s)
	n := simSize()
	null := nullTruth(truth)
	for _, c := range []struct {
		label string
		o     Options
		null  bool
	}{{"July world, default, Max 3", Options{}, false}, {"null world, default, Max 3", Options{}, true},
		{"July world, Hope 0.4, Max 3", Options{Hope: 0.4}, false}, {"null world, Hope 0.4", Options{Hope: 0.4}, true},
		{"July world, default, Max 6", Options{Max: 6}, false}, {"null world, default, Max 6", Options{Max: 6}, true}} {
		if n < 100 && c.o != (Options{}) {
			continue
		}
		tr, world := truth, draws
		if c.null {
			tr, world = null, nullDraws
		}
		ad, fx := simulate(t, s, tr, c.o, n, world)
		t.Logf("%s (%d simulated studies): adaptive: %s; fixed design at Max: %s; adaptive used %.1f %% of the fixed design's rows and stated %.1f %% as many conclusions",
			c.label, n, ad.line(), fx.line(), 100*ad.rows/fx.rows, 100*ad.stated/fx.stated)
		if ad.famRate > DefaultAlpha || ad.gradeRate > DefaultAlpha {
			t.Errorf("%s: error rates %.4f per family and %.4f per cell, above α = %v", c.label, ad.famRate, ad.gradeRate, DefaultAlpha)
		}
	}
	// The check has teeth: at α = 0.5 it finds wrong calls in the null
	// world and wrong grades in the July world.
	if ad, _ := simulate(t, s, null, Options{Alpha: 0.5, Rho: 1}, 2, nullDraws); ad.famRate == 0 {
		t.Error("α = 0.5 in the null world: no wrong call found")
	}
	if ad, _ := simulate(t, s, truth, Options{Alpha: 0.5, Start: 1, Max: 1}, 1, draws); ad.gradeRate == 0 {
		t.Error("α = 0.5 on one scenario per metric: no wrong grade found")
	}
}

// simTotals are error rates and sizes averaged over simulated studies.
type simTotals struct {
	famRate, famMax, gradeRate float64
	stated, rows               float64
	callsOnly                  bool // the null world: grades not checked
}

func (s simTotals) line() string {
	grades := fmtf("cells with a wrong grade %.3f %%", 100*s.gradeRate)
	if s.callsOnly {
		grades = "grades not checked"
	}
	return fmtf("families with a wrong call or rank interval %.2f %% (worst study %.2f %%), %s, %.0f conclusions, %.0f rows",
		100*s.famRate, 100*s.famMax, grades, s.stated, s.rows)
}

func simulate(t *testing.T, s *study.Study, truth *fullView, o Options, n int, world func(*study.Study, *rand.Rand, int) Clusters) (ad, fx simTotals) {
	o, err := o.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	res := make([][2]simErrors, n)
	var wg sync.WaitGroup
	jobs := make(chan int)
	for range 2 {
		wg.Go(func() {
			for i := range jobs {
				clusters := world(s, rand.New(rand.NewPCG(uint64(o.Max), uint64(i)+1)), o.Max)
				r := newDesign(s, o).run(clusters)
				res[i][0] = errorsOf(truth, r.Decided, r.Ranks, r.Conversations)
				dec, ranks, rows := fixedDecided(s, clusters)
				res[i][1] = errorsOf(truth, dec, ranks, rows)
			}
		})
	}
	for i := range n {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	ad.callsOnly, fx.callsOnly = truth.graded == nil, truth.graded == nil
	for _, r := range res {
		for j, tot := range []*simTotals{&ad, &fx} {
			e := r[j]
			rate := float64(e.familiesWrong) / float64(e.families)
			tot.famRate += rate / float64(n)
			tot.famMax = max(tot.famMax, rate)
			tot.gradeRate += float64(e.gradesWrong) / float64(e.cells) / float64(n)
			tot.stated += float64(e.stated) / float64(n)
			tot.rows += float64(e.rows) / float64(n)
		}
	}
	return ad, fx
}

func fmtf(format string, args ...any) string { return fmt.Sprintf(format, args...) }
