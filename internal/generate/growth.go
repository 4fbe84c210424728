package generate

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/clientset"
	"github.com/impactbench/impactbench/internal/fault"
	"github.com/impactbench/impactbench/internal/layout"
	"github.com/impactbench/impactbench/internal/llm"
	"github.com/impactbench/impactbench/internal/phase"
	"github.com/impactbench/impactbench/internal/work"
)

// Growth is how gen_scenarios changes the set: per metric, the base
// scenarios kept (in order), how many the metric should have, and the
// number of its first new id.
type Growth struct {
	keep   map[string][]artifacts.Scenario
	target map[string]int
	next   map[string]int
}

// metricResult is what a gen_scenarios row stores: its variants' count
// and its base scenarios, so a later top-up can keep them exactly.
type metricResult struct {
	Variants int                  `json:"variants"`
	Bases    []artifacts.Scenario `json:"bases"`
}

// SetBases are the base scenarios of the current scenarios.json, per
// metric in file order, and each metric's largest id number.
type SetBases struct {
	IDs    map[string][]string // metric → base ids
	MaxNum map[string]int
	Order  []string // metrics
}

// ReadSetBases reads the base scenarios of the current scenarios.json.
func ReadSetBases(b *work.Bench) (*SetBases, error) {
	sb := &SetBases{IDs: map[string][]string{}, MaxNum: map[string]int{}}
	seen := map[string]bool{}
	err := b.ScanScenarios(func(s artifacts.Scenario) {
		id := s.BaseID()
		if seen[id] {
			return
		}
		seen[id] = true
		if _, ok := sb.IDs[s.MetricID]; !ok {
			sb.Order = append(sb.Order, s.MetricID)
		}
		sb.IDs[s.MetricID] = append(sb.IDs[s.MetricID], id)
		if i := strings.LastIndex(id, "_s"); i >= 0 {
			if n, err := strconv.Atoi(id[i+2:]); err == nil {
				sb.MaxNum[s.MetricID] = max(sb.MaxNum[s.MetricID], n)
			}
		}
	})
	return sb, err
}

// storedBases reads the base scenarios a metric's gen_scenarios row stored.
// Rows stored before bases were kept hold only a count: their bases are
// replayed from the call store instead (replayBases).
func storedBases(ctx context.Context, b *work.Bench, metricID string, count int) ([]artifacts.Scenario, error) {
	var mr metricResult
	if _, ok := b.Store.ReadResult(layout.GenScenariosUnit(metricID), &mr); ok && len(mr.Bases) > 0 {
		return mr.Bases, nil
	}
	return replayBases(ctx, b, metricID, count)
}

// errNotStored answers a call the top-up needed from the store but did not find.
var errNotStored = errors.New("not in the call store")

// replayBases replays a metric's first generation from the call store
// (never calling the provider): the same request gives the same bases.
func replayBases(ctx context.Context, b *work.Bench, metricID string, count int) ([]artifacts.Scenario, error) {
	m, ok := b.Spec.MetricByID(metricID)
	if !ok {
		return nil, fault.Inputf("scenarios.json: metric %q is not in %s", metricID, b.Spec.Path)
	}
	unit, err := b.Store.Unit(layout.GenScenariosUnit(metricID))
	if err != nil {
		return nil, err
	}
	defer unit.Close()
	none := llm.ClientFunc(func(context.Context, llm.Request) (llm.Response, error) { return llm.Response{}, errNotStored })
	bases, _, err := genBases(ctx, b, unit.Client(clientset.Identity(b.Cfg.Generator()), none), m, count, nil, 0)
	if err != nil {
		return nil, fmt.Errorf("the base scenarios of %s cannot be kept: their generation is not in the call store (%s); regenerate the set with `impactbench gen-scenarios %s --force`", metricID, b.Store.Location(), b.Spec.Slug)
	}
	return bases, nil
}

// GrowthFor builds the growth that keeps every base scenario of the set
// except drop, and gives each metric want[metric] base scenarios (absent:
// as many as it has now). A metric of want the set does not hold yet (a
// first generation the cost ceiling stopped) starts as a fresh set's
// does (FreshGrowth).
func GrowthFor(ctx context.Context, b *work.Bench, sb *SetBases, drop map[string]bool, want map[string]int) (*Growth, error) {
	g := &Growth{keep: map[string][]artifacts.Scenario{}, target: map[string]int{}, next: map[string]int{}}
	for _, metric := range sb.Order {
		bases, err := storedBases(ctx, b, metric, len(sb.IDs[metric]))
		if err != nil {
			return nil, err
		}
		inSet := map[string]bool{}
		for _, id := range sb.IDs[metric] {
			inSet[id] = true
		}
		for _, s := range bases {
			if inSet[s.ID] && !drop[s.ID] {
				g.keep[metric] = append(g.keep[metric], s)
			}
		}
		g.target[metric] = len(sb.IDs[metric])
		if n, ok := want[metric]; ok {
			g.target[metric] = n
		}
		g.next[metric] = sb.MaxNum[metric] + 1
	}
	for metric, n := range want {
		if _, ok := sb.IDs[metric]; !ok {
			g.target[metric] = n
		}
	}
	return g, nil
}

// MetricsWillRun: gen_metrics writes metrics only into a benchmark that
// has none, or when regenerate (gen-metrics --force) asks for it. `run`
// never regenerates metrics a person may have written.
func MetricsWillRun(b *work.Bench, regenerate bool) bool {
	return len(b.Spec.Metrics) == 0 || regenerate
}

// ScenariosWillRun mirrors Scenarios' skip rule for the set g makes
// (nil: a fresh one).
func ScenariosWillRun(b *work.Bench, g *Growth) bool {
	upToDate, _ := b.UpToDate(phase.StageGenScenarios.String(), b.Files.Scenarios(), scenarioInputs(b, g))
	return !upToDate
}

// Target is how many base scenarios each metric of the changed set has.
func (g *Growth) Target() map[string]int { return g.target }

// FreshGrowth is a new set (nothing kept) that gives each metric
// want[metric] base scenarios generated as a fresh set is (no kept
// bases, no first id: stages.GenOptions' zero values): the first round of
// a design that grows its sets in rounds (a metric absent from want gets
// none). An empty set has no bases to keep, so GrowthFor cannot start it.
func FreshGrowth(want map[string]int) *Growth {
	g := &Growth{keep: map[string][]artifacts.Scenario{}, target: map[string]int{}, next: map[string]int{}}
	for metric, n := range want {
		g.target[metric] = n
	}
	return g
}
