package aggregate

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"runtime/debug"
	"sync"

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
	dirs, err := layout.ListRunDirs(b.Files.Dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	// Aggregate's live heap is every row at once, and reading them makes
	// garbage many times their size; at the default GOGC the heap doubles
	// the live rows before a collection, which made this phase the peak
	// of a whole run. A big input gets a tighter target (a few more
	// collections in a phase of seconds) and its garbage handed back.
	big := scoresSize(dirs) >= tightAbove
	if big {
		defer tightenGC()()
	}
	in, err := aggregateInput(ctx, b, dirs, big)
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
	if big {
		debug.FreeOSMemory()
	}
	if err := writeResults(b, out, res); err != nil {
		return err
	}
	rep.Status, rep.Rows = phase.StatusRan, rows
	b.Report.Add(rep)
	return nil
}

// aggregateInput reads what results.Aggregate needs: every score row,
// slimmed, the scenarios' demographics and the calibration labels.
func aggregateInput(ctx context.Context, b *work.Bench, dirs []string, big bool) (results.Input, error) {
	var err error
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
	if big {
		debug.FreeOSMemory()
	}
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
		if line := results.RefusedLine(m); line != "" {
			b.Logf("%s", line)
		}
		if line := results.CalibrationLine(m); line != "" {
			b.Logf("%s", line)
		}
		if line := results.HumanLine(m); line != "" {
			b.Logf("%s", line)
		}
	}
	return nil
}

// aggregateGCPercent is GOGC while a big aggregate runs (see Run).
const aggregateGCPercent = 40

// tightAbove is the size of a benchmark's scores.json files from which
// aggregate tightens GOGC and hands its garbage back to the system (about
// 20,000 rows of the offline model). Below it the rest of the run, not
// aggregate, sets the peak: a study's benchmarks are aggregated while the
// others still converse, and a process-wide GOGC of 40 there tripled the
// collections of the whole run (each scanning a thousand goroutines'
// stacks), while every forced collection handed back memory the next
// conversations faulted in again.
const tightAbove = 16 << 20

// scoresSize is the bytes of the scores.json files under dirs.
func scoresSize(dirs []string) int64 {
	var n int64
	for _, d := range dirs {
		if fi, err := os.Stat(layout.Run{Dir: d}.Scores()); err == nil {
			n += fi.Size()
		}
	}
	return n
}

// gcTight is the process's aggregates holding GOGC tight. They overlap
// in a study; each restoring the value it found would leave the tight one
// behind for the rest of the run whenever they end out of order.
var gcTight struct {
	mu   sync.Mutex
	n    int
	prev int
}

// tightenGC sets GOGC to aggregateGCPercent until the returned func is
// called, by the first of overlapping callers; the last restores it.
func tightenGC() (restore func()) {
	gcTight.mu.Lock()
	if gcTight.n == 0 {
		gcTight.prev = debug.SetGCPercent(aggregateGCPercent)
	}
	gcTight.n++
	gcTight.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			gcTight.mu.Lock()
			defer gcTight.mu.Unlock()
			if gcTight.n--; gcTight.n == 0 {
				debug.SetGCPercent(gcTight.prev)
			}
		})
	}
}

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
		// Bounded, and never a named pipe or a device: the earlier manifest
		// only lends its concurrency, and is replaced below either way.
		if b, err := artifacts.LimitedReadFile(path, artifacts.MaxObjectFileBytes); err == nil && json.Unmarshal(b, &old) == nil && reflect.DeepEqual(old.Fingerprint, m.Fingerprint) {
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
