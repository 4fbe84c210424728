// Package until runs a benchmark until it is precise (`run --until ±W`):
// the benchmark runs in rounds. After each round every headline rate (each
// model's positive and negative track) has an anytime-valid interval — the
// stratified betting confidence sequence of stats.UntilLook over blocks of
// one base scenario per metric of the track, in the order the rounds added
// them, valid however many times it is looked at and whenever the run
// stops — and the run stops when every one is within ±W, the cost ceiling
// is reached, or the round limit. Otherwise every metric of a track still
// too wide grows to the same number of base scenarios (round-robin, so the
// blocks stay complete, and the same for every model: the most any model's
// look asks for), and the next round runs: the scenario set grows
// (internal/scenarioset), and only the new scenarios' rows are paid.

package until

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/fault"
	"github.com/impactbench/impactbench/internal/generate"
	"github.com/impactbench/impactbench/internal/layout"
	"github.com/impactbench/impactbench/internal/phase"
	"github.com/impactbench/impactbench/internal/scenarioset"
	"github.com/impactbench/impactbench/internal/stats"
	"github.com/impactbench/impactbench/internal/work"
)

// Options are run --until's settings.
type Options struct {
	HalfWidth float64 // the target: every headline interval within ±HalfWidth
	MaxRounds int     // 0: DefaultRounds
}

// DefaultRounds bounds run --until's rounds.
const DefaultRounds = 8

const conf = 0.95

// State is until.json: the target, the base scenarios each round
// added (the order the confidence sequences take them in), why the run
// stopped, and every headline's interval when it did.
type State struct {
	HalfWidth float64    `json:"target_half_width"`
	Conf      float64    `json:"conf"`
	Method    string     `json:"method"`
	Rounds    []Round    `json:"rounds"`
	Stopped   string     `json:"stopped,omitempty"` // met | cost ceiling | round limit | "" (still going)
	Intervals []Interval `json:"intervals"`
}

// Round is one round: the base scenarios it added.
type Round struct {
	Round int      `json:"round"`
	Bases []string `json:"bases"`
}

// Interval is one headline rate's anytime-valid interval.
type Interval struct {
	Model     string  `json:"model"`
	Track     string  `json:"track"`
	Estimate  float64 `json:"estimate"`
	Low       float64 `json:"low"`
	High      float64 `json:"high"`
	Scenarios int     `json:"base_scenarios"`
	Blocks    int     `json:"blocks"` // complete blocks of one base scenario per metric the sequence used
	Met       bool    `json:"met"`
}

// Runner runs rounds: a normal run over the current scenario set, or over
// the set g grows it into first (runner.Runner).
type Runner interface {
	RunRound(ctx context.Context, targets []string, g *generate.Growth) error
	Work() *work.Bench
}

// Run runs the benchmark in rounds until every headline interval is
// within ±HalfWidth (see the package comment).
func Run(ctx context.Context, r Runner, targets []string, o Options) error {
	err := run(ctx, r, targets, o)
	r.Work().Report.Settle()
	return err
}

func run(ctx context.Context, r Runner, targets []string, o Options) error {
	b := r.Work()
	if !(o.HalfWidth > 0 && o.HalfWidth < 0.5) {
		return fault.Inputf("--until ±%v: the target half-width is a fraction between 0 and 0.5 (0.05 = ±5 points)", o.HalfWidth)
	}
	if o.MaxRounds <= 0 {
		o.MaxRounds = DefaultRounds
	}
	st, err := readState(b.Files, o.HalfWidth)
	if err != nil {
		return err
	}
	var grow *generate.Growth
	for {
		if err := round(ctx, r, targets, st, grow); err != nil {
			return err
		}
		want, done := look(b, st, o)
		if err := writeState(b.Files, st); err != nil || done {
			return err
		}
		if grow, err = growth(ctx, b, want); err != nil {
			return err
		}
	}
}

// round runs one round (a normal run over the current set; with a growth,
// the set grows first) and records its new bases.
func round(ctx context.Context, r Runner, targets []string, st *State, grow *generate.Growth) error {
	b := r.Work()
	before, _ := generate.ReadSetBases(b) // nil before the first generation
	var lineage []scenarioset.SetVersion
	if grow != nil {
		var err error
		if lineage, err = scenarioset.Keep(b.Files, "grow", nil); err != nil {
			return err
		}
	}
	if err := r.RunRound(ctx, targets, grow); err != nil {
		return err
	}
	if grow != nil && b.Report.Wrote(phase.StageGenScenarios) {
		after, err := generate.ReadSetBases(b)
		if err != nil {
			return err
		}
		if err := scenarioset.Record(b.Files, lineage, before, after); err != nil {
			return err
		}
	}
	return noteRoundBases(b, st)
}

// noteRoundBases records, as a new round, the base scenarios of the set
// that no earlier round has.
func noteRoundBases(b *work.Bench, st *State) error {
	sb, err := generate.ReadSetBases(b)
	if err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, rd := range st.Rounds {
		for _, id := range rd.Bases {
			seen[id] = true
		}
	}
	var added []string
	for _, m := range sb.Order {
		for _, id := range sb.IDs[m] {
			if !seen[id] {
				added = append(added, id)
			}
		}
	}
	if len(added) > 0 || len(st.Rounds) == 0 {
		st.Rounds = append(st.Rounds, Round{Round: len(st.Rounds) + 1, Bases: added})
	}
	return nil
}

// look computes every headline's confidence sequence, logs it, and
// says which metrics should grow to what (done: stop).
func look(b *work.Bench, st *State, o Options) (want map[string]int, done bool) {
	var looks []trackLook
	st.Intervals, looks = intervals(b, st)
	for _, iv := range st.Intervals {
		b.Logf("round %d: %s %s %.1f%% [%.1f, %.1f] over %d base scenarios (%d blocks; anytime-valid)%s", len(st.Rounds), iv.Model, iv.Track,
			100*iv.Estimate, 100*iv.Low, 100*iv.High, iv.Scenarios, iv.Blocks, map[bool]string{true: "", false: fmt.Sprintf(" — wider than ±%.1f pt", 100*o.HalfWidth)}[iv.Met])
	}
	want = growthWanted(looks)
	switch {
	case len(st.Intervals) == 0:
		st.Stopped = "no scores"
	case len(want) == 0:
		st.Stopped = "met"
	case b.Models.Budget() != nil && b.Models.Budget().Exhausted():
		st.Stopped = "cost ceiling"
	case len(st.Rounds) >= o.MaxRounds:
		st.Stopped = "round limit"
	default:
		return want, false
	}
	b.Logf("run --until: stopped after %d round(s): %s", len(st.Rounds), st.Stopped)
	return nil, true
}

// trackLook is one model's look at one track.
type trackLook struct {
	model, track string
	stats.UntilState
}

// growthWanted is how many base scenarios each metric of a track still too
// wide should have after the next round: the most any model's look asks
// for, so every model keeps seeing the same scenarios (round-robin within a
// track: stats.UntilLook gives every metric of it the same count).
func growthWanted(looks []trackLook) map[string]int {
	want := map[string]int{}
	for _, l := range looks {
		if l.Met {
			continue
		}
		for id, n := range l.Want {
			want[id] = max(want[id], n)
		}
	}
	return want
}

// growth is the growth the next round's gen_scenarios makes.
func growth(ctx context.Context, b *work.Bench, want map[string]int) (*generate.Growth, error) {
	sb, err := generate.ReadSetBases(b)
	if err != nil {
		return nil, err
	}
	return generate.GrowthFor(ctx, b, sb, nil, want)
}

// intervals is each model's positive and negative track confidence
// sequence over the rounds' base scenarios, from every target's scores.
func intervals(b *work.Bench, st *State) ([]Interval, []trackLook) {
	metricOf := map[string]string{} // base id → metric id
	if sb, err := generate.ReadSetBases(b); err == nil {
		for m, ids := range sb.IDs {
			for _, id := range ids {
				metricOf[id] = m
			}
		}
	}
	sums := baseSums(b.Files)
	var out []Interval
	var looks []trackLook
	for _, model := range mapKeys(sums) {
		for _, track := range []config.MetricType{config.Positive, config.Negative} {
			var ms []stats.UntilMetric
			for _, m := range b.Spec.Metrics {
				if m.Type == track {
					ms = append(ms, untilMetric(st, sums[model], metricOf, m.ID))
				}
			}
			iv, l, ok := interval(ms, st.HalfWidth)
			if !ok {
				continue
			}
			iv.Model, iv.Track = model, string(track)
			out = append(out, iv)
			looks = append(looks, trackLook{model: model, track: string(track), UntilState: l})
		}
	}
	return out, looks
}

// untilMetric is one metric's base scenarios with a verdict for one model,
// in the order the rounds added them. Every metric weighs the same: the
// design gives each the same variants and samples and, growing
// round-robin, the same number of base scenarios.
func untilMetric(st *State, sums map[string]stats.ClusterSum, metricOf map[string]string, id string) stats.UntilMetric {
	m := stats.UntilMetric{ID: id, Weight: 1}
	for _, rd := range st.Rounds {
		for _, base := range rd.Bases {
			if c, ok := sums[base]; ok && metricOf[base] == id {
				m.Scenarios = append(m.Scenarios, c)
			}
		}
	}
	return m
}

// interval is one track's stratified confidence sequence (stats.UntilLook).
func interval(ms []stats.UntilMetric, half float64) (Interval, stats.UntilState, bool) {
	var iv Interval
	for _, m := range ms {
		iv.Scenarios += len(m.Scenarios)
	}
	if iv.Scenarios == 0 {
		return iv, stats.UntilState{}, false
	}
	l := stats.UntilLook(ms, stats.UntilOptions{HalfWidth: half, Conf: conf})
	iv.Estimate, iv.Low, iv.High, iv.Blocks, iv.Met = l.Estimate, l.Lo, l.Hi, l.Blocks, l.Met
	return iv, l, true
}

// baseSums reads every target's scores.json: per model, each base
// scenario's verdicts (passed of those with a verdict).
func baseSums(files layout.Bench) map[string]map[string]stats.ClusterSum {
	out := map[string]map[string]stats.ClusterSum{}
	dirs, _ := layout.ListRunDirs(files.Dir)
	for _, d := range dirs {
		_ = artifacts.EachScore(layout.Run{Dir: d}.Scores(), func(_ int, s artifacts.Score) error {
			if s.Passed == nil {
				return nil
			}
			model := s.TargetModel
			if model == "" {
				model = filepath.Base(d)
			}
			if out[model] == nil {
				out[model] = map[string]stats.ClusterSum{}
			}
			base := artifacts.Scenario{ID: s.ID}.BaseID()
			c := out[model][base]
			c.N++
			if *s.Passed {
				c.Sum++
				c.SumSq++
			}
			out[model][base] = c
			return nil
		})
	}
	return out
}

func mapKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// readState reads until.json (a run --until resumed after a stop or a
// kill continues its rounds, so the sequences see the same order), or
// starts one. A different target starts the rounds' looks anew over the
// same scenarios.
func readState(files layout.Bench, half float64) (*State, error) {
	path := files.Until()
	st := &State{HalfWidth: half, Conf: conf, Method: stats.MethodStratifiedCS}
	// Bounded, and only a regular file: a named pipe here blocked
	// `run --until` forever (a *artifacts.FileError, exit 2, names it).
	data, err := artifacts.LimitedReadFile(path, artifacts.MaxObjectFileBytes)
	if errors.Is(err, os.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return nil, err
	}
	var old State
	if err := json.Unmarshal(data, &old); err != nil {
		return nil, fault.Inputf("%s: %v (delete it to start the rounds again)", path, err)
	}
	st.Rounds = old.Rounds
	return st, nil
}

// writeState writes until.json.
func writeState(files layout.Bench, st *State) error { return work.WriteJSON(files.Until(), st) }
