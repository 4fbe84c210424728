package adaptive

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"

	"github.com/impactbench/impactbench/internal/site"
	"github.com/impactbench/impactbench/internal/stats"
	"github.com/impactbench/impactbench/internal/study"
)

// ReplayOptions set a replay.
type ReplayOptions struct {
	Design  Options
	Replays int    // default 200
	Seed    uint64 // the scenario orders
	Workers int    // replays at once (default 1)
	// Progress, when set, is called after each replay with the replays
	// done so far (from one goroutine at a time).
	Progress func(done, total int)
}

// ReplayRun is one replay: the design run over the study's rows in one
// random order of each metric's base scenarios (the same order for every
// model and age group), compared with what the full study states.
type ReplayRun struct {
	Index int `json:"index"`
	// Conversations are the judged rows the replay used, of Full.
	Conversations int `json:"conversations"`
	Full          int `json:"full"`
	Looks         int `json:"looks"`
	// Different and Grades count what the replay states; the Kept ones
	// are among what the full study states (DifferentFull, GradesFull).
	Different     int `json:"different"`
	DifferentKept int `json:"different_kept"`
	DifferentFull int `json:"different_full"`
	Grades        int `json:"grades"`
	GradesKept    int `json:"grades_kept"`
	GradesFull    int `json:"grades_full"`
	// Contradictions: DiffAgainst, a pair stated different in the
	// direction opposite to the full study's difference (or where it has
	// none); GradeAgainst, a grade in a band the full study's interval
	// does not reach; RankAgainst, a rank interval without the full
	// study's rank. GradeBeyond counts grades stated where the full study
	// withholds one (its interval spans that band and another): not
	// against it, but more than it says.
	DiffAgainst  int `json:"diff_against"`
	GradeAgainst int `json:"grade_against"`
	RankAgainst  int `json:"rank_against"`
	GradeBeyond  int `json:"grade_beyond"`
	Conflicts    int `json:"conflicts"`
	// Cost is the rows added after the first round, by the demand that
	// asked for them ("<node kind> <conclusion kind>"), each growth split
	// equally over the demands that asked for it.
	Cost map[string]float64 `json:"cost"`
	// Bases counts the metrics by the base scenarios they have at the
	// stop: Bases[n] metrics stopped at n (len Max+1). It is what a dry
	// run's expected bill is made from (StopTable).
	Bases []int `json:"bases"`
}

// Against counts the replay's contradictions of the full study.
func (r ReplayRun) Against() int { return r.DiffAgainst + r.GradeAgainst + r.RankAgainst }

// Kept is the share of the full study's different-calls and grades the
// replay states.
func (r ReplayRun) Kept() float64 {
	full := r.DifferentFull + r.GradesFull
	if full == 0 {
		return 1
	}
	return float64(r.DifferentKept+r.GradesKept) / float64(full)
}

// Share is the replay's conversations over the full study's.
func (r ReplayRun) Share() float64 { return float64(r.Conversations) / float64(max(r.Full, 1)) }

// Replay runs the design over s's rows o.Replays times, each in a random
// order of each metric's base scenarios (seeded), as if they were being
// collected, and compares each run with what s itself states. A cancelled
// ctx stops it between replays with ctx's error.
func Replay(ctx context.Context, s *study.Study, o ReplayOptions) ([]ReplayRun, error) {
	d, err := o.Design.withDefaults()
	if err != nil {
		return nil, err
	}
	if o.Replays <= 0 {
		o.Replays = 200
	}
	full := newFullView(s)
	runs := make([]ReplayRun, o.Replays)
	jobs := make(chan int)
	var wg sync.WaitGroup
	var mu sync.Mutex
	done := 0
	for range max(o.Workers, 1) {
		wg.Go(func() {
			for i := range jobs {
				runs[i] = replayOne(s, d, full, i, orders(s, o.Seed, i))
				if o.Progress != nil {
					mu.Lock()
					done++
					o.Progress(done, o.Replays)
					mu.Unlock()
				}
			}
		})
	}
	err = feed(ctx, jobs, o.Replays)
	wg.Wait()
	if err != nil {
		return nil, fmt.Errorf("adaptive: replay: %w", err)
	}
	return runs, nil
}

// feed sends 0..n-1 on jobs, stopping early when ctx is done, and closes
// it.
func feed(ctx context.Context, jobs chan<- int, n int) error {
	defer close(jobs)
	for i := range n {
		select {
		case jobs <- i:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// orders is replay i's order of each metric's base scenarios.
func orders(s *study.Study, seed uint64, i int) [][]int {
	rng := rand.New(rand.NewPCG(seed, uint64(i)+1))
	out := make([][]int, len(s.Metrics))
	for k, m := range s.Metrics {
		out[k] = rng.Perm(len(m.Bases))
	}
	return out
}

// permuted is s's rows with each metric's base scenarios in order perm.
func permuted(s *study.Study, perm [][]int) Clusters {
	return func(mi, ai, k int) []stats.ClusterSum {
		cs := s.Clusters(mi, ai, k)
		if len(cs) != len(perm[k]) {
			return cs
		}
		out := make([]stats.ClusterSum, len(cs))
		for j, b := range perm[k] {
			out[j] = cs[b]
		}
		return out
	}
}

func replayOne(s *study.Study, o Options, full *fullView, i int, perm [][]int) ReplayRun {
	clusters := permuted(s, perm)
	r := newDesign(s, o).run(clusters)
	run := ReplayRun{Index: i, Conversations: r.Conversations, Full: full.rows, Looks: r.Look,
		DifferentFull: len(full.different), GradesFull: len(full.graded), Conflicts: len(r.Conflicts),
		Cost: cost(s, clusters, r.Steps), Bases: stopCounts(r, o.Max)}
	full.compare(r, &run)
	return run
}

// stopCounts counts r's metrics by the base scenarios they stop at.
func stopCounts(r *Round, most int) []int {
	out := make([]int, most+1)
	for _, t := range r.Targets {
		out[min(max(t.Want, 0), most)]++
	}
	return out
}

// cost splits the rows each growth added over the demands that asked.
func cost(s *study.Study, clusters Clusters, steps []Step) map[string]float64 {
	index := map[string]int{}
	for k, m := range s.Metrics {
		index[m.Key] = k
	}
	out := map[string]float64{}
	for _, st := range steps {
		for _, g := range st.Growth {
			rows := 0
			for mi := range s.Models {
				for _, age := range s.Ages {
					cs := clusters(mi, study.AgeIndex(age), index[g.Key])
					for j := g.From; j < min(g.To, len(cs)); j++ {
						rows += cs[j].N
					}
				}
			}
			for _, b := range g.By {
				dm := st.Demands[b]
				out[dm.NodeKind+" "+dm.Kind] += float64(rows) / float64(len(g.By))
			}
		}
	}
	return out
}

// fullView is what the full study states.
type fullView struct {
	rows      int
	sign      map[[4]string]int // pair key (models in id order) → sign of the difference
	different map[[4]string]int // significant pairs → sign
	grading   map[[3]string]site.Grading
	graded    map[[3]string]string
	rank      map[[3]string]int
	// score is each cell's graded estimate (site.CellGrade's: an area's
	// by-placement score), kind each node's kind.
	score map[[3]string]float64
	kind  map[string]string
}

func newFullView(s *study.Study) *fullView {
	res := s.Compute()
	f := &fullView{sign: map[[4]string]int{}, different: map[[4]string]int{}, grading: map[[3]string]site.Grading{},
		graded: map[[3]string]string{}, rank: map[[3]string]int{}, score: map[[3]string]float64{}, kind: map[string]string{}}
	kinds := f.kind
	for _, n := range res.Nodes {
		kinds[n.ID] = n.Kind
	}
	for _, p := range res.Pairs {
		k, sign := pairKey(Conclusion{Node: p.Node, Age: p.Age, Model: p.A, Worse: p.B})
		f.sign[k] = sign * signOf(p.Diff)
		if p.Significant {
			f.different[k] = f.sign[k]
		}
	}
	for _, c := range res.Cells {
		k := [3]string{c.Node, c.Age, c.Model}
		g := site.CellGrade(kinds[c.Node], c)
		f.grading[k] = g
		if g.Grade != "" {
			f.graded[k] = g.Grade
		}
		if c.Rank != nil {
			f.rank[k] = *c.Rank
		}
		f.score[k], _, _, _ = gradedEstimate(c)
	}
	for mi := range s.Models {
		for _, age := range s.Ages {
			for k := range s.Metrics {
				for _, c := range s.Clusters(mi, study.AgeIndex(age), k) {
					f.rows += c.N
				}
			}
		}
	}
	return f
}

func signOf(x float64) int {
	switch {
	case x > 0:
		return 1
	case x < 0:
		return -1
	}
	return 0
}

// compare counts what r states against the full study.
func (f *fullView) compare(r *Round, run *ReplayRun) {
	for _, c := range r.Decided {
		switch c.Kind {
		case KindDifferent:
			run.Different++
			k, sign := pairKey(c)
			if f.different[k] == sign {
				run.DifferentKept++
			}
			if f.sign[k] != sign {
				run.DiffAgainst++
			}
		case KindGrade:
			run.Grades++
			k := [3]string{c.Node, c.Age, c.Model}
			g := f.grading[k]
			switch {
			case f.graded[k] == c.Grade:
				run.GradesKept++
			case c.Band < g.Top || c.Band > g.Bottom:
				run.GradeAgainst++
			default:
				run.GradeBeyond++
			}
		}
	}
	for _, rk := range r.Ranks {
		if want, ok := f.rank[[3]string{rk.Node, rk.Age, rk.Model}]; ok && (want < rk.Lo || want > rk.Hi) {
			run.RankAgainst++
		}
	}
}
