package adaptrun

import (
	"context"
	"fmt"

	"github.com/impactbench/impactbench/internal/adaptive"
	"github.com/impactbench/impactbench/internal/phase"
	"github.com/impactbench/impactbench/internal/plan"
	"github.com/impactbench/impactbench/internal/stages"
	"github.com/impactbench/impactbench/internal/study"
)

// DryRun plans an adaptive study without calling anything: the first
// round's rows as a dry run plans them (s must be a dry-run study, whose
// RunRound writes nothing), and the design's bill, adaptive.Estimate
// priced from that plan (each target's conversation at what the plan
// prices its simulate and evaluate rows, generation left out). The
// expected bill is July 2026's replays (adaptive.JulyStops) carried over
// to this study; when the study already has rows, the bill from its own
// last look is added (adaptive.Bill.SoFar).
func DryRun(ctx context.Context, s Study, targets []string, o Options) (adaptive.Bill, error) {
	if err := check(s, o); err != nil {
		return adaptive.Bill{}, err
	}
	grow, err := firstRound(ctx, s, o)
	if err != nil {
		return adaptive.Bill{}, err
	}
	if err := s.RunRound(ctx, targets, grow); err != nil {
		return adaptive.Bill{}, err
	}
	st, err := study.Load(o.Dir)
	if err != nil {
		return adaptive.Bill{}, err
	}
	p, err := planOf(s, st, targets)
	if err != nil {
		return adaptive.Bill{}, err
	}
	ev, err := evidence(st, o.Design)
	if err != nil {
		return adaptive.Bill{}, err
	}
	return adaptive.Estimate(p, o.Design, ev, pricesOf(s))
}

// evidence is what the expected bill rests on: the July 2026 replays, and
// the study's own last look over the rows it has.
func evidence(st *study.Study, o adaptive.Options) (adaptive.Evidence, error) {
	table, err := adaptive.JulyStops()
	if err != nil {
		return adaptive.Evidence{}, err
	}
	r, err := adaptive.Look(st, st.Clusters, o)
	if err != nil {
		return adaptive.Evidence{}, err
	}
	return adaptive.Evidence{Table: table, SoFar: r}, nil
}

// planOf is the study's size: its metrics, the targets (every configured
// one when none is named), and a base scenario's conversations per model
// (demographic variants × samples).
func planOf(s Study, st *study.Study, targets []string) (adaptive.Plan, error) {
	b := s.Benches()[0]
	combos, err := stages.Combos(b.Cfg.Demographics)
	if err != nil {
		return adaptive.Plan{}, fmt.Errorf("adaptive bill: %w", err)
	}
	p := adaptive.Plan{Metrics: len(st.Metrics), PerScenario: len(combos) * max(b.Cfg.Generation.NumSamples, 1), Models: targets}
	if len(p.Models) == 0 {
		for _, t := range b.Cfg.Targets {
			p.Models = append(p.Models, t.ID)
		}
	}
	return p, nil
}

// pricesOf is each target's dollars per conversation in the dry run's
// plan: its simulate and evaluate rows' cost over its conversations,
// summed over the benchmarks.
func pricesOf(s Study) adaptive.Prices {
	cost, convs := map[string]float64{}, map[string]int{}
	for _, b := range s.Benches() {
		_, _, rows, _ := b.Report.Totals()
		for target, c := range targetCosts(rows) {
			cost[target] += c.cost
			convs[target] += c.convs
		}
	}
	p := adaptive.Prices{PerModel: map[string]float64{}}
	for target, n := range convs {
		if n > 0 {
			p.PerModel[target] = cost[target] / float64(n)
		}
	}
	return p
}

type targetCost struct {
	cost  float64
	convs int
}

// targetCosts sums a benchmark's plan by target: the cost of its simulate
// and evaluate rows, and its conversations (the most rows any one of its
// simulate rows plans: each role's row counts the same conversations).
func targetCosts(rows []plan.Row) map[string]targetCost {
	out := map[string]targetCost{}
	for _, r := range rows {
		if r.Target == "" {
			continue
		}
		c := out[r.Target]
		switch r.Phase {
		case phase.StageSimulate.String():
			c.cost += r.Cost
			c.convs = max(c.convs, r.Rows)
		case phase.StageEvaluate.String():
			c.cost += r.Cost
		}
		out[r.Target] = c
	}
	return out
}
