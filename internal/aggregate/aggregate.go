package aggregate

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"runtime/debug"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/calibrate"
	"github.com/impactbench/impactbench/internal/clientset"
	"github.com/impactbench/impactbench/internal/fault"
	"github.com/impactbench/impactbench/internal/human"
	"github.com/impactbench/impactbench/internal/layout"
	"github.com/impactbench/impactbench/internal/phase"
	"github.com/impactbench/impactbench/internal/results"
	"github.com/impactbench/impactbench/internal/scenarioset"
	"github.com/impactbench/impactbench/internal/summary"
	"github.com/impactbench/impactbench/internal/work"
)

// Run reads every runs/*/scores.json and writes results.json. It is
// never skipped (upstream: always recomputed; it is cheap).
func Run(ctx context.Context, b *work.Bench) error {
	out := b.Files.Results()
	rep := summary.PhaseReport{Phase: phase.StageAggregate, Output: out}
	if b.Opts.DryRun {
		b.Logf("[dry-run] aggregate %s → %s (no model calls)", b.Spec.Slug, out)
		return nil
	}
	// Aggregate's live heap is every row at once, and reading them makes
	// garbage many times their size; at the default GOGC the heap doubles
	// the live rows before a collection, which made this phase the peak
	// of a whole run. A tighter target costs a few more collections in a
	// phase of seconds.
	defer debug.SetGCPercent(debug.SetGCPercent(aggregateGCPercent))
	in, err := aggregateInput(ctx, b)
	if err != nil {
		return err
	}
	rows := len(in.Rows)
	res, err := results.Aggregate(handOff(&in), results.Options{
		Seed:         b.Cfg.Seed,
		ValidOnly:    b.Cfg.Validity.ValidOnly,
		UpstreamOnly: b.Opts.UpstreamOnly,
		Fingerprint:  Fingerprint(b),
	})
	if err != nil {
		return err
	}
	debug.FreeOSMemory()
	if err := writeResults(b, out, res); err != nil {
		return err
	}
	rep.Status, rep.Rows = phase.StatusRan, rows
	b.Report.Add(rep)
	return nil
}

// aggregateInput reads what results.Aggregate needs: every score row,
// slimmed, the scenarios' demographics and the calibration labels.
func aggregateInput(ctx context.Context, b *work.Bench) (results.Input, error) {
	dirs, err := layout.ListRunDirs(b.Files.Dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return results.Input{}, err
	}
	in := results.Input{Metrics: b.Spec.Metrics}
	slim := newSlimmer()
	for _, d := range dirs {
		path := layout.Run{Dir: d}.Scores()
		if _, err := os.Stat(path); err != nil {
			continue
		}
		target := filepath.Base(d)
		err := artifacts.EachScore(path, func(i int, s artifacts.Score) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			in.Rows = append(in.Rows, slim.score(s, target))
			return nil
		})
		if err != nil {
			return results.Input{}, err // *artifacts.FileError: exit 2, and never "aggregate skipped"
		}
	}
	if len(in.Rows) == 0 {
		return results.Input{}, fault.Inputf("no scores to aggregate under %s: run `impactbench evaluate %s` first", b.Files.RunsDir(), b.Spec.Slug)
	}
	err = artifacts.EachScenarioDemographic(b.Files.Scenarios(), func(_ int, id string, d artifacts.Demographic) error {
		in.Demographics = append(in.Demographics, slim.demographic(id, d))
		return nil
	})
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return results.Input{}, err
	}
	if !b.Opts.UpstreamOnly {
		if in.Calibration, err = calibrate.Input(ctx, b.Files, mainJudge(b)); err != nil {
			return results.Input{}, err
		}
		if in.Calibration != nil {
			in.Calibration.IncludeAfterReveal = b.Opts.IncludeAfterReveal
		}
		if in.Human, err = humanInput(dirs); err != nil {
			return results.Input{}, err
		}
	}
	// Reading left garbage several times the rows' size (decoded rows, the
	// intern map); collect it before the statistics allocate, so the peak
	// is what aggregate holds, not the sum of both.
	slim = nil
	debug.FreeOSMemory()
	return in, nil
}

// writeResults writes results.json (unless it would lose models or rows)
// and run_manifest.json, and keeps each model's headline for the summary.
func writeResults(b *work.Bench, out string, res []results.ModelResult) error {
	if err := phase.GuardResults(b.Opts.AcceptFewer, out, res); err != nil {
		return err
	}
	if err := results.WriteResults(out, res); err != nil {
		return err
	}
	// run_manifest.json records what defines this measurement, component by
	// component, so `impactbench compare` can say what differs between runs.
	if !b.Opts.UpstreamOnly {
		if err := writeRunManifest(b); err != nil {
			return err
		}
	}
	b.Report.Results = b.Report.Results[:0]
	for _, m := range res {
		b.Report.Results = append(b.Report.Results, m.Headline())
		b.Logf("%s", results.SummaryLine(m))
		if line := results.IntervalLine(m); line != "" {
			b.Logf("%s", line)
		}
		if line := results.ValidityLine(m); line != "" {
			b.Logf("%s", line)
		}
		if line := results.HumanLine(m); line != "" {
			b.Logf("%s", line)
		}
	}
	return nil
}

// aggregateGCPercent is GOGC while aggregate runs (see Aggregate).
const aggregateGCPercent = 40

// Fingerprint identifies what defines the measurement: metric definitions,
// scenarios, prompts, models and settings. Two runs are comparable only when
// the parts that matter agree.
func Fingerprint(b *work.Bench) results.Fingerprint {
	scSHA, _ := phase.FileSHA(b.Files.Scenarios())
	judges := make([]any, 0, len(b.Cfg.EvaluatorModels))
	for _, j := range b.Judges() {
		judges = append(judges, clientset.Identity(j))
	}
	targets := map[string]string{}
	for _, t := range b.Cfg.Targets {
		targets[t.ID] = phase.Fingerprint(clientset.Identity(t))
	}
	return results.Fingerprint{
		Metrics:   phase.Fingerprint(b.Spec.Metrics),
		Scenarios: scSHA,
		Prompts:   b.Prompts.Hash(),
		UserModel: phase.Fingerprint(clientset.Identity(b.Cfg.UserModel)),
		Generator: phase.Fingerprint(clientset.Identity(b.Cfg.Generator())),
		Judges:    phase.Fingerprint(judges...),
		Settings: phase.Fingerprint(b.Cfg.Generation, b.Cfg.Landmarks, b.Cfg.Perfunctory, b.Cfg.Seed,
			b.Cfg.Judge, b.Cfg.Validity),
		Targets: targets,
	}
}

// handOff gives results.Aggregate the only reference to the rows: it groups
// them in place and drops its input as soon as it can, which a reference
// held here would prevent (14 MB at 100,000 rows).
func handOff(in *results.Input) results.Input {
	out := *in
	*in = results.Input{}
	return out
}

// RunManifest is run_manifest.json: the fingerprint (what defines the
// measurement, which compare reads) and the concurrency each provider pool
// ran at (how it was measured, which compare ignores).
type RunManifest struct {
	results.Fingerprint
	// ItemSet is the version of the scenario set the results rest on,
	// when it was changed (sets/sets.json: a grown set, or weak items
	// replaced); 0 (omitted) for a set never changed.
	ItemSet     int                 `json:"item_set,omitempty"`
	Concurrency []summary.PoolLimit `json:"concurrency,omitempty"`
}

// writeRunManifest writes run_manifest.json. An invocation that called no
// provider (everything reused, or aggregate alone) keeps the concurrency
// the earlier run recorded for the same measurement.
func writeRunManifest(b *work.Bench) error {
	path := b.Files.RunManifest()
	m := RunManifest{Fingerprint: Fingerprint(b), Concurrency: b.Models.PoolLimits()}
	if vs, err := scenarioset.ItemSet(b.Files.Dir); err == nil && len(vs) > 0 {
		m.ItemSet = scenarioset.Current(vs)
	}
	if len(m.Concurrency) == 0 {
		var old RunManifest
		if b, err := os.ReadFile(path); err == nil && json.Unmarshal(b, &old) == nil && reflect.DeepEqual(old.Fingerprint, m.Fingerprint) {
			m.Concurrency = old.Concurrency
		}
	}
	return work.WriteJSON(path, m)
}

// slimmer keeps of score and scenario rows only what results.Aggregate
// reads, with repeated strings and demographics shared: at 100,000 rows the
// full rows (justifications, usage, personas) would be most of the memory
// of a run.
type slimmer struct {
	strs  map[string]string
	demos map[string]artifacts.Demographic
}

func newSlimmer() *slimmer {
	return &slimmer{strs: map[string]string{}, demos: map[string]artifacts.Demographic{}}
}

func (s *slimmer) str(v string) string {
	if w, ok := s.strs[v]; ok {
		return w
	}
	s.strs[v] = v
	return v
}

// score is sc as the statistics read it, with target as its target_model
// when it names none (the run directory's name, as upstream).
func (s *slimmer) score(sc artifacts.Score, target string) results.ScoreRow {
	if len(sc.Judges) < 2 {
		sc.Judges = nil // agreement needs a panel; one verdict is the row's own
	}
	if sc.TargetModel == "" {
		sc.TargetModel = target
	}
	if artifacts.IsConvID(sc.ConvID, sc.ID, sc.TargetModel, sc.Sample) {
		sc.ConvID = "" // results derives it again; 100,000 of them are megabytes
	}
	out := results.RowOf(sc)
	out.ID, out.MetricID, out.TargetModel, out.Judge = s.str(out.ID), s.str(out.MetricID), s.str(out.TargetModel), s.str(out.Judge)
	out.UserModel = s.str(out.UserModel)
	for i := range out.Judges {
		out.Judges[i].Judge = s.str(out.Judges[i].Judge)
	}
	return out
}

func (s *slimmer) demographic(id string, d artifacts.Demographic) results.ScenarioDemographic {
	key, _ := json.Marshal(d)
	shared, ok := s.demos[string(key)]
	if !ok {
		shared = d
		s.demos[string(key)] = d
	}
	return results.ScenarioDemographic{ID: s.str(id), Demographic: shared}
}

// mainJudge is the configured judge's label when there is one judge (a
// panel has none).
func mainJudge(b *work.Bench) string {
	if ev := b.Cfg.EvaluatorModels; len(ev) == 1 {
		return work.JudgeLabel(ev[0])
	}
	return ""
}

// humanInput reads the verdicts on conversations people played
// (runs/<target>/human/scores.json of each run directory) for aggregate's
// human_comparison. A damaged file is an input error naming it.
func humanInput(runDirs []string) ([]results.ScoreRow, error) {
	var out []results.ScoreRow
	for _, d := range runDirs {
		target := filepath.Base(d)
		scores, err := human.ReadScores(layout.Run{Dir: d}.HumanScores(), target)
		if err != nil {
			return nil, err
		}
		for _, s := range scores {
			out = append(out, results.RowOf(s.Score))
		}
	}
	return out, nil
}
