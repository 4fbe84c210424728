package publish

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/layout"
	"github.com/impactbench/impactbench/internal/site"
	"github.com/impactbench/impactbench/internal/study"
)

// Options says where and how to publish.
type Options struct {
	Out    string // the output directory (holds data/ and scenarios/)
	DryRun bool   // compare and list, write nothing
	// Site adds the static study site beside the data: Out/index.html and
	// Out/site/ (internal/site).
	Site bool
	// Force takes over the files already at paths publish writes that no
	// earlier publish into Out wrote (refused otherwise, naming the first).
	// Force also takes over the files an earlier publish wrote that were
	// changed since (their bytes differ from the sha256 its manifest
	// records), to overwrite or remove them (refused otherwise).
	Force bool
}

// Report is what a publish did (or, dry, would do).
type Report struct {
	Out    string `json:"out"`
	DryRun bool   `json:"dry_run"`
	// Files counts the files this study publishes; Written lists those
	// whose bytes changed (paths relative to Out; in a dry run, would
	// change), Unchanged counts the others; Removed lists files the last
	// publish wrote that this one no longer does.
	Files         int      `json:"files"`
	Written       []string `json:"written"`
	Unchanged     int      `json:"unchanged"`
	Removed       []string `json:"removed"`
	Models        int      `json:"models"`
	Metrics       int      `json:"metrics"`
	Scenarios     int      `json:"scenarios"`
	Conversations int      `json:"conversations"`
	// Site is the static site's page (Out/index.html) when --site wrote
	// it, else "".
	Site     string   `json:"site"`
	Warnings []string `json:"warnings"`
}

// Publish writes s (scored as res) under opts.Out. Model text goes into
// JSON strings only (escaped as Python's json.dumps does), never into HTML.
//
// All or nothing: a first pass builds every file and checks every path,
// the manifest and the output directory (ids, lengths, links) and reads
// every input, writing nothing; only when it passes does the second pass
// write. A refused input leaves the output directory byte for byte as it
// was. The second pass first removes the temp files a killed publish left,
// then, before its first write, records in the manifest every file it is
// about to write.
//
// Publish owns only what an earlier publish into opts.Out wrote, as it
// wrote it (its manifest lists them, with each one's size and sha256): a
// file already at a path it writes that the manifest does not list — a
// folder it never published into, such as a checkout of the website — is
// refused, naming it, unless opts.Force; so is a listed file whose bytes
// were changed since (hand-edited, replaced), whether publish would
// overwrite it or, no longer writing it, remove it. The write pass looks
// again right before it replaces or removes each file: one planted or
// edited since the check pass stops it there, naming the file, with the
// manifest listing what publish owns at that point (stillAsChecked,
// refuse).
func Publish(ctx context.Context, s *study.Study, res *study.Result, opts Options) (*Report, error) {
	planned, err := publish(ctx, s, res, opts, check, nil)
	if err != nil {
		return nil, err
	}
	if betweenPasses != nil {
		betweenPasses()
	}
	m := write
	if opts.DryRun {
		m = dry
	}
	w, err := publish(ctx, s, res, opts, m, planned)
	if err != nil {
		return nil, err
	}
	return w.rep, nil
}

// betweenPasses, when set (by a test), runs between Publish's check pass
// and its write pass.
var betweenPasses func()

// publish is one pass of Publish; planned is the check pass (nil in the
// check pass itself): the files this publish writes, and the files it
// found holding the bytes the manifest records.
func publish(ctx context.Context, s *study.Study, res *study.Result, opts Options, m mode, planned *writer) (*writer, error) {
	if len(s.Models) == 0 {
		return nil, &study.InputError{Problems: []study.Problem{{File: s.Inputs.ModelsPath(), Msg: "no model has score rows in the study's benchmarks: nothing to publish (run the benchmarks first)"}}}
	}
	if err := checkFileNames(s); err != nil {
		return nil, err
	}
	if st, err := os.Stat(opts.Out); err == nil && !st.IsDir() {
		return nil, &artifacts.FileError{Path: opts.Out, Row: -1, Err: errors.New("is not a directory: publish writes a folder of files there")}
	}
	rep := &Report{Out: opts.Out, DryRun: opts.DryRun, Written: []string{}, Removed: []string{}, Warnings: []string{}, Models: len(s.Models)}
	w := newWriter(opts.Out, m, rep)
	w.force = opts.Force
	for _, model := range s.Models {
		w.models = append(w.models, model.ID)
	}
	if err := w.readOwned(); err != nil {
		return nil, err
	}
	if planned != nil {
		w.planned, w.intact, w.absent = planned.seen, planned.intact, planned.absent
	}
	if m == write {
		// The manifest claims the planned files at the first write (claim).
		w.sweepTemps(time.Now())
	}
	if err := emitData(s, res, w); err != nil {
		return nil, err
	}
	for _, m := range s.Metrics {
		if m.Type != "" {
			rep.Metrics++
			rep.Scenarios += len(m.Scenarios)
		}
	}
	if err := emitScenariosAndSite(ctx, s, res, opts, w); err != nil {
		return nil, err
	}
	if err := w.finish(); err != nil {
		return nil, err
	}
	return w, nil
}

// emitData emits the site's data files (taxonomy, models, scores, scenario
// index, metric details, nutrition label) and the uncertainty file, in
// that order.
func emitData(s *study.Study, res *study.Result, w *writer) error {
	scores := scoresData(s)
	for _, f := range []struct {
		name    string
		v       any
		compact bool
	}{
		{layout.PublishedTaxonomyFile, taxonomyData(s), false},
		{layout.PublishedModelsFile, modelsData(s), false},
		{layout.PublishedBenchmarkDataFile, scores, true},
		{layout.PublishedScenarioIndexFile, indexData(s), true},
		{layout.PublishedMetricDetailsFile, detailsData(s), false},
		{layout.PublishedNutritionFile, nutritionData(s, scores), false},
	} {
		data, err := encode(f.v, f.compact)
		if err != nil {
			return fmt.Errorf("publish %s: %w", f.name, err)
		}
		if err := w.emit(layout.PublishedData(f.name), data); err != nil {
			return err
		}
	}
	var unc bytes.Buffer
	if err := res.Encode(&unc); err != nil {
		return err
	}
	return w.emit(layout.PublishedData(layout.PublishedUncertaintyFile), unc.Bytes())
}

// emitScenariosAndSite emits the scenario files and, with opts.Site, the
// static site built alongside them, whose index it records in the report.
func emitScenariosAndSite(ctx context.Context, s *study.Study, res *study.Result, opts Options, w *writer) error {
	var sb *site.Builder
	if opts.Site {
		var err error
		if sb, err = site.New(s, res); err != nil {
			return err
		}
	}
	if err := scenarioFiles(ctx, s, w, sb); err != nil {
		return err
	}
	if sb != nil {
		files, err := sb.Finish()
		if err != nil {
			return err
		}
		if err := w.emitAll(files); err != nil {
			return err
		}
		w.rep.Site = filepath.Join(opts.Out, layout.SiteIndex)
	}
	return nil
}

// target is one scenario file to write from a conversation row.
type target struct {
	rel     string
	model   int
	row     *study.ScenarioRow
	verdict study.Verdict
}

type convKey struct {
	id     string
	sample int
}

// scenarioFiles writes one file per published verdict, streaming each
// run's conversations.json once, model by model: with the site, each
// conversation also goes to its transcript files, which are written (and
// dropped from memory) once the model's runs are all read.
func scenarioFiles(ctx context.Context, s *study.Study, w *writer, sb *site.Builder) error {
	need := map[[2]string]map[convKey][]target{} // (bench, run dir) → conversation → files
	for _, m := range s.Metrics {
		for i := range m.Scenarios {
			row := &m.Scenarios[i]
			for mi, v := range row.Verdicts {
				k := [2]string{v.Bench, v.RunDir}
				if need[k] == nil {
					need[k] = map[convKey][]target{}
				}
				rel := layout.PublishedScenario(row.Bench, s.Models[mi].ID, row.ID)
				ck := convKey{v.RowID, v.Sample}
				need[k][ck] = append(need[k][ck], target{rel: rel, model: mi, row: row, verdict: v})
			}
		}
	}
	for mi := range s.Models {
		for _, b := range s.Benchmarks {
			for _, r := range b.Runs {
				want := need[[2]string{b.Slug, r.RunDir}]
				if r.Model != mi || len(want) == 0 {
					continue
				}
				if err := ctx.Err(); err != nil {
					return err
				}
				if err := runFiles(ctx, layout.Run{Dir: r.Path}.Conversations(), want, w, sb); err != nil {
					return err
				}
			}
		}
		if sb != nil {
			files, err := sb.ModelFiles(mi)
			if err != nil {
				return err
			}
			if err := w.emitAll(files); err != nil {
				return err
			}
		}
	}
	return nil
}

// runFiles writes the files of one run's conversations.
func runFiles(ctx context.Context, path string, want map[convKey][]target, w *writer, sb *site.Builder) error {
	found := 0
	err := artifacts.EachConversation(path, func(_ int, c artifacts.Conversation) error {
		ts := want[convKey{c.ID, c.Sample}]
		if len(ts) == 0 {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		found++
		for _, t := range ts {
			if w.mode == check {
				if err := w.checkOnly(t, sb); err != nil {
					return err
				}
				continue
			}
			data, err := encode(newScenarioFile(c, t.row.Scenario, t.verdict.Justification), false)
			if err != nil {
				return err
			}
			if err := w.emit(t.rel, data); err != nil {
				return err
			}
			if sb != nil {
				sb.Add(t.model, t.row, t.verdict, c)
			}
			w.rep.Conversations++
		}
		return nil
	})
	if err != nil {
		return err
	}
	if missing := len(want) - found; missing > 0 {
		w.rep.Warnings = append(w.rep.Warnings, fmt.Sprintf("%s: %d judged conversation(s) are missing; their transcripts are not published", path, missing))
	}
	return nil
}

// checkOnly is runFiles's first pass: the conversation was read (so its
// file is whole and valid); its scenario file's path, and with the site
// its transcript file's, are checked, without building either.
func (w *writer) checkOnly(t target, sb *site.Builder) error {
	if err := w.emit(t.rel, nil); err != nil {
		return err
	}
	if sb == nil {
		return nil
	}
	return w.checkPath(layout.SiteChunk(layout.SiteTranscriptChunk(t.row.Bench, w.models[t.model])))
}

// fileName is what a path segment of a published file may be.
var fileName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// checkFileNames refuses scenario ids and benchmark names that cannot be
// file names under scenarios/ (a "/" or ".." would write outside it).
func checkFileNames(s *study.Study) error {
	var ps []study.Problem
	for _, b := range s.Benchmarks {
		for _, id := range b.Order {
			if !fileName.MatchString(id) || strings.Contains(id, "..") || !isID(id) {
				ps = append(ps, study.Problem{File: layout.Bench{Dir: b.Dir}.Scenarios(), Entry: "id", Key: id,
					Msg: "is not a plain file name (letters, digits, '.', '_', '-'): publish writes it as scenarios/<benchmark>/<model>/<id>.json"})
			}
		}
		if !fileName.MatchString(b.Slug) || !isID(b.Slug) {
			ps = append(ps, study.Problem{File: b.Dir, Key: b.Slug, Msg: "a benchmark directory name must be a plain file name"})
		}
	}
	for _, m := range s.Models {
		if !isID(m.ID) {
			ps = append(ps, study.Problem{File: s.Inputs.ModelsPath(), Line: m.Line, Entry: "id", Key: m.ID, Msg: "is not an id: publish writes it as scenarios/<benchmark>/<model>/…"})
		}
	}
	if len(ps) > 0 {
		return &study.InputError{Problems: ps}
	}
	return nil
}
