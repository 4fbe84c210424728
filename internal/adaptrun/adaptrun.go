package adaptrun

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/impactbench/impactbench/internal/adaptive"
	"github.com/impactbench/impactbench/internal/fault"
	"github.com/impactbench/impactbench/internal/generate"
	"github.com/impactbench/impactbench/internal/study"
	"github.com/impactbench/impactbench/internal/work"
)

// Study is the study the rounds run on (runner.Study): its benchmarks'
// state, and one round over the scenario sets grow gives by benchmark
// slug (a benchmark not listed runs its current set).
type Study interface {
	RunRound(ctx context.Context, targets []string, grow map[string]*generate.Growth) error
	Benches() []*work.Bench
}

// Options are an adaptive run's settings.
type Options struct {
	// Dir is the benchmarks directory holding the study's inputs
	// (taxonomy.json, nutrition-label.json, models.yaml).
	Dir string
	// Design is the adaptive design (Start, Max, Alpha, ...); a zero Max
	// takes the project's scenarios_per_metric (see MaxOf).
	Design adaptive.Options
	// Logf prints a line of progress (nil: nothing).
	Logf func(format string, args ...any)
}

// Stop reasons in Result.Stopped.
const (
	StoppedDecided = "decided"      // no open conclusion left: more scenarios would decide nothing new
	StoppedMax     = "max"          // Result.Last.Open undecided: out of reach even at Max, or at Max
	StoppedCost    = "cost ceiling" // --max-cost reached during round Result.Rounds
)

// Result is how an adaptive run ended: the rounds it ran in this process
// (the last one cut short when Stopped is StoppedCost), why it stopped,
// and the last look over complete rounds (nil: none in this process).
type Result struct {
	Rounds  int
	Stopped string
	Last    *adaptive.Round
	// Looks are the looks this process took, one per complete round.
	Looks []LookLog
}

// LookLog is one round's look: where the design stands after it.
type LookLog struct {
	Round         int `json:"round"`
	Look          int `json:"look"`
	Looks         int `json:"looks"`
	Conversations int `json:"conversations"` // judged rows the look used
	Decided       int `json:"decided"`       // conclusions decided so far
	Open          int `json:"open"`          // conclusions still open
	Growing       int `json:"growing"`       // metrics the next round grows
}

// Metric stop reasons (MetricReasons).
const (
	MetricDecided    = "decided"      // the study stopped with no open conclusion
	MetricMax        = "max"          // at Max base scenarios
	MetricOutOfReach = "out of reach" // the study stopped; its open conclusions are out of reach
	MetricGrowing    = "growing"      // the next round grows it
	MetricHeld       = "held"         // the next round does not grow it; a later one may
	MetricCost       = "cost ceiling" // the cost ceiling stopped the study before it stopped
)

// MetricReason is why metric t of look r stands where it does, the run
// having stopped for stopped (a Stopped* value; "" for a look that does
// not end a run), under a design whose cap is most base scenarios.
func MetricReason(r *adaptive.Round, t adaptive.Target, stopped string, most int) string {
	switch {
	case stopped == StoppedCost:
		return MetricCost
	case r.Stop && r.Open == 0:
		return MetricDecided
	case t.Have >= most && t.Want >= most:
		return MetricMax
	case r.Stop:
		return MetricOutOfReach
	case t.Want > t.Have:
		return MetricGrowing
	}
	return MetricHeld
}

// Run runs the study in rounds until every metric is decided or a cap is
// reached (see the package comment).
func Run(ctx context.Context, s Study, targets []string, o Options) (*Result, error) {
	if err := check(s, o); err != nil {
		return nil, err
	}
	grow, err := firstRound(ctx, s, o)
	if err != nil {
		return nil, err
	}
	res := &Result{}
	for {
		res.Rounds++
		if err := s.RunRound(ctx, targets, grow); err != nil {
			return res, fmt.Errorf("adaptive round %d: %w", res.Rounds, err)
		}
		if costReached(s) {
			// A stop the user asked for, as in a fixed run: the round in
			// flight stopped scheduling; what it finished is saved and a
			// rerun completes it without paying anything twice. No look:
			// its rows are not the round the design asked for.
			res.Stopped = StoppedCost
			o.logf("adaptive round %d: the cost ceiling (--max-cost) was reached; the round is saved as far as it got", res.Rounds)
			return res, nil
		}
		r, err := look(o)
		if err != nil {
			return res, err
		}
		res.Last = r
		res.Looks = append(res.Looks, LookLog{Round: res.Rounds, Look: r.Look, Looks: r.Looks, Conversations: r.Conversations,
			Decided: len(r.Decided), Open: r.Open, Growing: growing(r)})
		o.logf("adaptive round %d: look %d of %d, %d conversations judged, %d conclusion(s) decided, %d open",
			res.Rounds, r.Look, r.Looks, r.Conversations, len(r.Decided), r.Open)
		if res.Stopped = stopped(r); res.Stopped != "" {
			return res, nil
		}
		if res.Rounds > r.Looks {
			// Every round but a resumed run's first moves the design one
			// look on; rounds that do not are rows the runs never judge.
			return res, fmt.Errorf("adaptive round %d: the study's judged rows do not reach the round the design asked for (look %d of %d); see the rows that failed above", res.Rounds, r.Look, r.Looks)
		}
		if grow, err = growths(ctx, s, r.ByBench()); err != nil {
			return res, err
		}
	}
}

// growing counts the metrics look r grows.
func growing(r *adaptive.Round) int {
	n := 0
	for _, t := range r.Targets {
		if t.Want > t.Have {
			n++
		}
	}
	return n
}

// check refuses what an adaptive run cannot do: no study inputs, bad
// design options, no benchmarks.
func check(s Study, o Options) error {
	if err := Check(o); err != nil {
		return err
	}
	if len(s.Benches()) == 0 {
		return fault.Inputf("--adaptive: the study has no benchmarks")
	}
	return nil
}

// Check refuses options an adaptive run cannot start from (no study
// inputs in Dir, design options out of range), before anything is
// opened: an *fault.Error of kind input or usage.
func Check(o Options) error {
	if _, err := os.Stat(filepath.Join(o.Dir, study.TaxonomyFile)); err != nil {
		return fault.Inputf("--adaptive decides a study's conclusions, and %s has no %s: write the study's inputs first (`impactbench init --study`)", o.Dir, study.TaxonomyFile)
	}
	if err := o.Design.Validate(); err != nil {
		return fault.Usagef("--adaptive: %w", err)
	}
	return nil
}

func (o Options) logf(format string, args ...any) {
	if o.Logf != nil {
		o.Logf(format, args...)
	}
}

// look loads the study from disk and runs the design's looks over it.
func look(o Options) (*adaptive.Round, error) {
	st, err := study.Load(o.Dir)
	if err != nil {
		return nil, err
	}
	return adaptive.Look(st, st.Clusters, o.Design)
}

// stopped is why the rounds end after look r ("": they go on).
func stopped(r *adaptive.Round) string {
	switch {
	case r.Stop && r.Open == 0:
		return StoppedDecided
	case r.Stop:
		return StoppedMax
	case len(r.ByBench()) == 0:
		// Look asks for nothing it does not have (it stops instead); a
		// round that added nothing would loop.
		return StoppedMax
	}
	return ""
}

func costReached(s Study) bool {
	for _, b := range s.Benches() {
		if bud := b.Models.Budget(); bud != nil && bud.Exhausted() {
			return true
		}
	}
	return false
}

// firstRound is the first round's sets: a benchmark without a
// scenarios.json starts a fresh set of Start base scenarios per metric;
// one with a set runs it as it is (a resumed study, or one started with a
// fixed design: Look replays its looks over the set's prefixes), topped
// up to what the design asked for where the set is short of it (a
// generation the cost ceiling stopped).
func firstRound(ctx context.Context, s Study, o Options) (map[string]*generate.Growth, error) {
	start := max(o.Design.Start, adaptive.DefaultStart)
	grow := map[string]*generate.Growth{}
	var asked map[string]map[string]int
	for _, b := range s.Benches() {
		_, err := os.Stat(b.Files.Scenarios())
		switch {
		case errors.Is(err, os.ErrNotExist):
			want := map[string]int{}
			for _, m := range b.Spec.Metrics {
				want[m.ID] = start
			}
			grow[b.Spec.Slug] = generate.FreshGrowth(want)
			continue
		case err != nil:
			return nil, err
		}
		if asked == nil {
			if asked, err = askedFor(o); err != nil {
				return nil, err
			}
		}
		if grow[b.Spec.Slug], err = topUp(ctx, b, asked[b.Spec.Slug]); err != nil {
			return nil, err
		}
	}
	return grow, nil
}

// askedFor is every metric's base scenarios the design asks for now (the
// last look over the rows on disk), by benchmark slug and metric id.
func askedFor(o Options) (map[string]map[string]int, error) {
	r, err := look(o)
	if err != nil {
		return nil, err
	}
	return r.Wanted(), nil
}

// topUp is the growth that gives b's set what want asks for where it is
// short (nil when it is not: the set runs as it is).
func topUp(ctx context.Context, b *work.Bench, want map[string]int) (*generate.Growth, error) {
	sb, err := generate.ReadSetBases(b)
	if err != nil {
		return nil, err
	}
	short := map[string]int{}
	for metric, n := range want {
		if len(sb.IDs[metric]) < n {
			short[metric] = n
		}
	}
	if len(short) == 0 {
		return nil, nil
	}
	return generate.GrowthFor(ctx, b, sb, nil, short)
}

// growths are the next round's sets: each benchmark byBench lists keeps
// its set and gives those metrics the base scenarios asked for.
func growths(ctx context.Context, s Study, byBench map[string]map[string]int) (map[string]*generate.Growth, error) {
	grow := map[string]*generate.Growth{}
	for _, b := range s.Benches() {
		want, ok := byBench[b.Spec.Slug]
		if !ok {
			continue
		}
		sb, err := generate.ReadSetBases(b)
		if err != nil {
			return nil, err
		}
		if grow[b.Spec.Slug], err = generate.GrowthFor(ctx, b, sb, nil, want); err != nil {
			return nil, err
		}
	}
	return grow, nil
}
