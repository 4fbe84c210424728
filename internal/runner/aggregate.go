package runner

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"runtime/debug"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/clientset"
	"github.com/impactbench/impactbench/internal/fault"
	"github.com/impactbench/impactbench/internal/phase"
	"github.com/impactbench/impactbench/internal/results"
	"github.com/impactbench/impactbench/internal/summary"
	"github.com/impactbench/impactbench/internal/work"
)

// Aggregate reads every runs/*/scores.json and writes results.json. It is
// never skipped (upstream: always recomputed; it is cheap).
func (r *Runner) Aggregate(ctx context.Context) error {
	out := filepath.Join(r.b.Files.Dir, "results.json")
	rep := summary.PhaseReport{Phase: phase.StageAggregate, Output: out}
	if r.b.Opts.DryRun {
		r.b.Logf("[dry-run] aggregate %s → %s (no model calls)", r.b.Spec.Slug, out)
		return nil
	}
	// Aggregate's live heap is every row at once, and reading them makes
	// garbage many times their size; at the default GOGC the heap doubles
	// the live rows before a collection, which made this phase the peak
	// of a whole run. A tighter target costs a few more collections in a
	// phase of seconds.
	defer debug.SetGCPercent(debug.SetGCPercent(aggregateGCPercent))
	in, err := r.aggregateInput(ctx)
	if err != nil {
		return err
	}
	rows := len(in.Rows)
	res, err := results.Aggregate(handOff(&in), results.Options{
		Seed:         r.b.Cfg.Seed,
		ValidOnly:    r.b.Cfg.Validity.ValidOnly,
		UpstreamOnly: r.b.Opts.UpstreamOnly,
		Fingerprint:  r.Fingerprint(),
	})
	if err != nil {
		return err
	}
	debug.FreeOSMemory()
	if err := r.writeResults(out, res); err != nil {
		return err
	}
	rep.Status, rep.Rows = phase.StatusRan, rows
	r.Report.Add(rep)
	return nil
}

// aggregateInput reads what results.Aggregate needs: every score row,
// slimmed, the scenarios' demographics and the calibration labels.
func (r *Runner) aggregateInput(ctx context.Context) (results.Input, error) {
	dirs, err := artifacts.ListRunDirs(r.b.Files.Dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return results.Input{}, err
	}
	in := results.Input{Metrics: r.b.Spec.Metrics}
	slim := newSlimmer()
	for _, d := range dirs {
		path := filepath.Join(d, "scores.json")
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
		return results.Input{}, fault.Inputf("no scores to aggregate under %s: run `impactbench evaluate %s` first", filepath.Join(r.b.Files.Dir, "runs"), r.b.Spec.Slug)
	}
	err = artifacts.EachScenarioDemographic(filepath.Join(r.b.Files.Dir, "scenarios.json"), func(_ int, id string, d artifacts.Demographic) error {
		in.Demographics = append(in.Demographics, slim.demographic(id, d))
		return nil
	})
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return results.Input{}, err
	}
	if !r.b.Opts.UpstreamOnly {
		if in.Calibration, err = r.calibrationInput(ctx); err != nil {
			return results.Input{}, err
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
func (r *Runner) writeResults(out string, res []results.ModelResult) error {
	if err := phase.GuardResults(r.b.Opts.Force, out, res); err != nil {
		return err
	}
	if err := results.WriteResults(out, res); err != nil {
		return err
	}
	// run_manifest.json records what defines this measurement, component by
	// component, so `impactbench compare` can say what differs between runs.
	if !r.b.Opts.UpstreamOnly {
		if err := r.writeRunManifest(); err != nil {
			return err
		}
	}
	r.Report.Results = r.Report.Results[:0]
	for _, m := range res {
		r.Report.Results = append(r.Report.Results, m.Headline())
		r.b.Logf("%s", results.SummaryLine(m))
		if line := results.IntervalLine(m); line != "" {
			r.b.Logf("%s", line)
		}
		if line := results.ValidityLine(m); line != "" {
			r.b.Logf("%s", line)
		}
		if line := results.HumanLine(m); line != "" {
			r.b.Logf("%s", line)
		}
	}
	return nil
}

// aggregateGCPercent is GOGC while aggregate runs (see Aggregate).
const aggregateGCPercent = 40

// Fingerprint identifies what defines the measurement: metric definitions,
// scenarios, prompts, models and settings. Two runs are comparable only when
// the parts that matter agree.
func (r *Runner) Fingerprint() results.Fingerprint {
	scSHA, _ := phase.FileSHA(filepath.Join(r.b.Files.Dir, "scenarios.json"))
	judges := make([]any, 0, len(r.b.Cfg.EvaluatorModels))
	for _, j := range r.b.Judges() {
		judges = append(judges, clientset.Identity(j))
	}
	targets := map[string]string{}
	for _, t := range r.b.Cfg.Targets {
		targets[t.ID] = phase.Fingerprint(clientset.Identity(t))
	}
	return results.Fingerprint{
		Metrics:   phase.Fingerprint(r.b.Spec.Metrics),
		Scenarios: scSHA,
		Prompts:   r.b.Prompts.Hash(),
		UserModel: phase.Fingerprint(clientset.Identity(r.b.Cfg.UserModel)),
		Generator: phase.Fingerprint(clientset.Identity(r.b.Cfg.Generator())),
		Judges:    phase.Fingerprint(judges...),
		Settings: phase.Fingerprint(r.b.Cfg.Generation, r.b.Cfg.Landmarks, r.b.Cfg.Perfunctory, r.b.Cfg.Seed,
			r.b.Cfg.Judge, r.b.Cfg.Validity),
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

// runManifest is run_manifest.json: the fingerprint (what defines the
// measurement, which compare reads) and the concurrency each provider pool
// ran at (how it was measured, which compare ignores).
type runManifest struct {
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
func (r *Runner) writeRunManifest() error {
	path := filepath.Join(r.b.Files.Dir, "run_manifest.json")
	m := runManifest{Fingerprint: r.Fingerprint(), Concurrency: r.b.Models.PoolLimits()}
	if vs, err := ItemSet(r.b.Files.Dir); err == nil && len(vs) > 0 {
		m.ItemSet = currentSet(vs)
	}
	if len(m.Concurrency) == 0 {
		var old runManifest
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
