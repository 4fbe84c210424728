package runner

import (
	"context"
	"math"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/clientset"
	"github.com/impactbench/impactbench/internal/phase"
	"github.com/impactbench/impactbench/internal/schedule"
)

// rowSets are a benchmark's rows in flight or finished in this invocation.
type rowSets struct {
	convs    schedule.Set[artifacts.Conversation]
	verdicts schedule.Set[artifacts.Score]
}

// laneKey names a lane: one kind of row for one target ("" for rows of no target).
type laneKey struct {
	stage  phase.Stage
	target string
}

// barPart is one output's share of a lane's progress bar.
type barPart = schedule.BarPart[laneKey]

// newLanes makes the lanes that bound the rows in flight of each kind and
// target across the whole study: run.concurrency's value for the stage (a
// cap, as upstream), or with auto a ceiling high enough that the provider
// pools' adaptive limits, not the lane, decide how many calls are in flight.
func newLanes(e *env) *schedule.Lanes[laneKey] {
	return schedule.NewLanes(func(k laneKey) int {
		conf := configuredConcurrency(e.cfg.Run.Concurrency, k.stage)
		n := e.workers(conf, math.MaxInt)
		if conf <= 0 {
			n = min(n, clientset.LaneCeiling(e.cfg, k.stage, k.target))
		}
		return n
	})
}

// openBar adds n rows of an output to the progress bar of stage and target.
func (e *env) openBar(stage phase.Stage, target string, n int) *barPart {
	label := stage.String()
	if target != "" {
		label += " " + target
	}
	return e.bars.Open(laneKey{stage, target}, label, n)
}

// goRow runs a row of this benchmark in lane l (see schedule.Lane.Go),
// ranked by the benchmark's place in the study.
func (r *Runner) goRow(ctx context.Context, l *schedule.Lane, wait bool, run, cancelled func()) bool {
	return l.Go(ctx, wait, r.rank, run, cancelled)
}
