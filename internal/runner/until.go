package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/fault"
	"github.com/impactbench/impactbench/internal/fsx"
	"github.com/impactbench/impactbench/internal/generate"
	"github.com/impactbench/impactbench/internal/phase"
	"github.com/impactbench/impactbench/internal/stats"
)

// Run until precise (`run --until ±W`): the benchmark runs in rounds. After
// each round every headline rate (each model's positive and negative
// track) has an anytime-valid interval — a betting confidence sequence over
// its base scenarios in the order the rounds added them, valid however
// many times it is looked at and whenever the run stops — and the run
// stops when every one is within ±W, the cost ceiling is reached, or the
// round limit. Otherwise the tracks that are still wide get more base
// scenarios, each of their metrics the share the width says it needs
// (width shrinks as one over the square root of the scenarios), and the
// next round runs: the scenario set grows (scenarioset.go), and only the
// new scenarios' rows are paid.

// UntilOptions are run --until's settings.
type UntilOptions struct {
	HalfWidth float64 // the target: every headline interval within ±HalfWidth
	MaxRounds int     // 0: DefaultUntilRounds
}

// DefaultUntilRounds bounds run --until's rounds.
const DefaultUntilRounds = 8

const untilConf = 0.95

// UntilFile is where run --until records its rounds and intervals.
const UntilFile = "until.json"

// UntilState is until.json: the target, the base scenarios each round
// added (the order the confidence sequences take them in), why the run
// stopped, and every headline's interval when it did.
type UntilState struct {
	HalfWidth float64         `json:"target_half_width"`
	Conf      float64         `json:"conf"`
	Method    string          `json:"method"`
	Rounds    []UntilRound    `json:"rounds"`
	Stopped   string          `json:"stopped,omitempty"` // met | cost ceiling | round limit | "" (still going)
	Intervals []UntilInterval `json:"intervals"`
}

// UntilRound is one round: the base scenarios it added.
type UntilRound struct {
	Round int      `json:"round"`
	Bases []string `json:"bases"`
}

// UntilInterval is one headline rate's anytime-valid interval.
type UntilInterval struct {
	Model     string  `json:"model"`
	Track     string  `json:"track"`
	Estimate  float64 `json:"estimate"`
	Low       float64 `json:"low"`
	High      float64 `json:"high"`
	Scenarios int     `json:"base_scenarios"`
	Met       bool    `json:"met"`
}

const untilMethod = "betting confidence sequence over base scenarios (Waudby-Smith & Ramdas 2024), in the order the rounds added them: valid at every look and at a data-dependent stop"

// RunUntil runs the benchmark in rounds until every headline interval is
// within ±HalfWidth (see the comment above).
func (r *Runner) RunUntil(ctx context.Context, targets []string, o UntilOptions) error {
	err := r.runUntil(ctx, targets, o)
	r.Report.Settle()
	return err
}

func (r *Runner) runUntil(ctx context.Context, targets []string, o UntilOptions) error {
	if !(o.HalfWidth > 0 && o.HalfWidth < 0.5) {
		return fault.Inputf("--until ±%v: the target half-width is a fraction between 0 and 0.5 (0.05 = ±5 points)", o.HalfWidth)
	}
	if o.MaxRounds <= 0 {
		o.MaxRounds = DefaultUntilRounds
	}
	st, err := r.readUntil(o.HalfWidth)
	if err != nil {
		return err
	}
	for {
		if err := r.untilRound(ctx, targets, st); err != nil {
			return err
		}
		want, done := r.untilLook(st, o)
		if err := r.writeUntil(st); err != nil || done {
			return err
		}
		if err := r.prepareGrowth(ctx, want, st); err != nil {
			return err
		}
	}
}

// untilRound runs one round (a normal run over the current set; with a
// growth prepared, the set grows first) and records its new bases.
func (r *Runner) untilRound(ctx context.Context, targets []string, st *UntilState) error {
	before, _ := generate.ReadSetBases(r.b) // nil before the first generation
	var lineage []SetVersion
	if r.grow != nil {
		var err error
		if lineage, err = r.keepSet("grow", nil); err != nil {
			return err
		}
	}
	err := r.run(ctx, targets)
	grew := r.grow != nil && r.Report.Wrote(phase.StageGenScenarios)
	r.grow = nil
	if err != nil {
		return err
	}
	if grew {
		if err := r.recordSet(lineage, before); err != nil {
			return err
		}
	}
	return r.noteRoundBases(st)
}

// noteRoundBases records, as a new round, the base scenarios of the set
// that no earlier round has.
func (r *Runner) noteRoundBases(st *UntilState) error {
	sb, err := generate.ReadSetBases(r.b)
	if err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, rd := range st.Rounds {
		for _, b := range rd.Bases {
			seen[b] = true
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
		st.Rounds = append(st.Rounds, UntilRound{Round: len(st.Rounds) + 1, Bases: added})
	}
	return nil
}

// untilLook computes every headline's confidence sequence, logs it, and
// says which metrics should grow to what (done: stop).
func (r *Runner) untilLook(st *UntilState, o UntilOptions) (want map[string]int, done bool) {
	st.Intervals = r.untilIntervals(st)
	wide := map[string]float64{} // track → the widest of its models' widths
	for _, iv := range st.Intervals {
		r.b.Logf("round %d: %s %s %.1f%% [%.1f, %.1f] over %d base scenarios (anytime-valid)%s", len(st.Rounds), iv.Model, iv.Track,
			100*iv.Estimate, 100*iv.Low, 100*iv.High, iv.Scenarios, map[bool]string{true: "", false: fmt.Sprintf(" — wider than ±%.1f pt", 100*o.HalfWidth)}[iv.Met])
		if !iv.Met {
			wide[iv.Track] = max(wide[iv.Track], iv.High-iv.Low)
		}
	}
	switch {
	case len(st.Intervals) == 0:
		st.Stopped = "no scores"
	case len(wide) == 0:
		st.Stopped = "met"
	case r.b.Models.Budget() != nil && r.b.Models.Budget().Exhausted():
		st.Stopped = "cost ceiling"
	case len(st.Rounds) >= o.MaxRounds:
		st.Stopped = "round limit"
	default:
		return r.growthWanted(wide, o.HalfWidth), false
	}
	r.b.Logf("run --until: stopped after %d round(s): %s", len(st.Rounds), st.Stopped)
	return nil, true
}

// growthWanted gives every metric of a track still too wide the base
// scenarios the width says it needs (width ∝ 1/√scenarios), at most
// twice what it has, at least one more.
func (r *Runner) growthWanted(wide map[string]float64, half float64) map[string]int {
	sb, err := generate.ReadSetBases(r.b)
	if err != nil {
		return nil
	}
	want := map[string]int{}
	for _, m := range r.b.Spec.Metrics {
		w, ok := wide[string(m.Type)]
		have := len(sb.IDs[m.ID])
		if !ok || have == 0 {
			continue
		}
		want[m.ID] = grownSize(have, w, half)
	}
	return want
}

// grownSize is how many base scenarios a metric of a track whose interval
// is width wide gets next round: what width ∝ 1/√scenarios says ±half
// needs, at least one more and at most twice as many.
func grownSize(have int, width, half float64) int {
	need := int(math.Ceil(float64(have) * math.Pow(width/(2*half), 2)))
	return max(have+1, min(need, 2*have))
}

// prepareGrowth sets the growth the next round's gen_scenarios makes.
func (r *Runner) prepareGrowth(ctx context.Context, want map[string]int, st *UntilState) error {
	sb, err := generate.ReadSetBases(r.b)
	if err != nil {
		return err
	}
	g, err := generate.GrowthFor(ctx, r.b, sb, nil, want)
	if err != nil {
		return err
	}
	r.grow = g
	return nil
}

// untilIntervals is each model's positive and negative track confidence
// sequence over the rounds' base scenarios, from every target's scores.
func (r *Runner) untilIntervals(st *UntilState) []UntilInterval {
	types := map[string]config.MetricType{}
	for _, m := range r.b.Spec.Metrics {
		types[m.ID] = m.Type
	}
	sums := r.baseSums()
	var out []UntilInterval
	for _, model := range mapKeys(sums) {
		for _, track := range []config.MetricType{config.Positive, config.Negative} {
			if iv, ok := untilInterval(st, sums[model], types, track); ok {
				iv.Model, iv.Met = model, iv.High-iv.Low <= 2*st.HalfWidth
				out = append(out, iv)
			}
		}
	}
	return out
}

// untilInterval runs one track's confidence sequence round by round.
func untilInterval(st *UntilState, sums map[string]stats.ClusterSum, types map[string]config.MetricType, track config.MetricType) (UntilInterval, bool) {
	cs := stats.NewBettingCS(untilConf, 0)
	iv := UntilInterval{Track: string(track), Low: 0, High: 1}
	var n, passed float64
	for _, rd := range st.Rounds {
		var round []stats.ClusterSum
		for _, b := range rd.Bases {
			c, ok := sums[b]
			if !ok || types[metricOfBase(b)] != track {
				continue
			}
			round = append(round, c)
			n, passed = n+float64(c.N), passed+c.Sum
			iv.Scenarios++
		}
		if len(round) > 0 {
			iv.Low, iv.High = cs.Add(round...)
		}
	}
	if iv.Scenarios == 0 {
		return iv, false
	}
	iv.Estimate = passed / n
	return iv, true
}

// baseSums reads every target's scores.json: per model, each base
// scenario's verdicts (passed of those with a verdict).
func (r *Runner) baseSums() map[string]map[string]stats.ClusterSum {
	out := map[string]map[string]stats.ClusterSum{}
	dirs, _ := artifacts.ListRunDirs(r.b.Files.Dir)
	for _, d := range dirs {
		_ = artifacts.EachScore(filepath.Join(d, "scores.json"), func(_ int, s artifacts.Score) error {
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
			b := artifacts.Scenario{ID: s.ID}.BaseID()
			c := out[model][b]
			c.N++
			if *s.Passed {
				c.Sum++
				c.SumSq++
			}
			out[model][b] = c
			return nil
		})
	}
	return out
}

// metricOfBase is a base scenario id's metric (m01_s003 → m01).
func metricOfBase(b string) string {
	if i := len(b) - len("_s000"); i > 0 && b[i:i+2] == "_s" {
		return b[:i]
	}
	return b
}

func mapKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// readUntil reads until.json (a run --until resumed after a stop or a
// kill continues its rounds, so the sequences see the same order), or
// starts one. A different target starts the rounds' looks anew over the
// same scenarios.
func (r *Runner) readUntil(half float64) (*UntilState, error) {
	path := filepath.Join(r.b.Files.Dir, UntilFile)
	st := &UntilState{HalfWidth: half, Conf: untilConf, Method: untilMethod}
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return nil, err
	}
	var old UntilState
	if err := json.Unmarshal(b, &old); err != nil {
		return nil, fault.Inputf("%s: %v (delete it to start the rounds again)", path, err)
	}
	st.Rounds = old.Rounds
	return st, nil
}

func (r *Runner) writeUntil(st *UntilState) error {
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	return fsx.WriteFile(filepath.Join(r.b.Files.Dir, UntilFile), append(b, '\n'), fsx.Shared)
}
