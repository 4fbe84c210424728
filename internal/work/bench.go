package work

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/callstore"
	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/fault"
	"github.com/impactbench/impactbench/internal/layout"
	"github.com/impactbench/impactbench/internal/phase"
	"github.com/impactbench/impactbench/internal/sanitize"
	"github.com/impactbench/impactbench/internal/schedule"
	"github.com/impactbench/impactbench/internal/summary"
)

// Bench is one benchmark of a study being run, over the environment every
// benchmark of the study shares.
type Bench struct {
	*Env
	Spec    *config.Benchmark // benchmark.yaml (metrics reflect gen_metrics once run)
	Files   layout.Bench      // where its outputs and cache are
	Store   *callstore.Store
	Records *phase.Records
	Report  *summary.Summary
	// Convs and Verdicts are its conversation and verdict rows in flight
	// or finished in this invocation.
	Convs    schedule.Set[artifacts.Conversation]
	Verdicts schedule.Set[artifacts.Score]
	// Rank is the benchmark's place in the study (0 for the first or only
	// one): its queued rows start before those of later benchmarks.
	Rank int
	// Pending is what a dry run found simulate would make now.
	Pending DryPending

	lock *benchLock
}

// Open loads the benchmark in benchDir into the environment, opens its
// call store and, unless this is a dry run, takes its lock (a shard's:
// see benchLock) and, holding the whole benchmark, sweeps what a killed
// run left.
func (e *Env) Open(ctx context.Context, benchDir string) (*Bench, error) {
	spec, err := config.LoadBenchmark(layout.BenchmarkPath(benchDir))
	if err != nil {
		return nil, err
	}
	files := layout.ForProject(e.Cfg.Dir, spec.Dir)
	if e.Opts.OutDir != "" {
		files = layout.InDir(e.Opts.OutDir)
	}
	b := &Bench{
		Env: e, Spec: spec, Files: files,
		Records: phase.LoadRecords(files.Records()),
		Report:  summary.New(spec.Slug, e.Opts.DryRun, e.Cfg.Generation.Turns),
		Rank:    e.opened,
	}
	if e.Opts.Shard.Active() {
		b.Records = phase.LoadRecordsOver(files.Records(), files.ShardRecords(e.Opts.Shard))
	}
	// The store first: one that cannot be used is refused before anything
	// is written, the lock file included.
	if b.Store, err = e.openStore(ctx, files, spec.Slug); err != nil {
		return nil, err
	}
	if !e.Opts.DryRun {
		lk, err := acquireLock(ctx, files, lockOptions{
			Bench: spec.Slug, Shard: e.Opts.Shard, Wait: e.Opts.WaitShard, Poll: time.Second,
			Store: b.Store, Logger: e.Log,
			// Said once, on one line: a warning besides the line would
			// say the same thing twice.
			Waiting: func(holder string) {
				e.Prog.Printf("%s: shard %d/%d is held by %s, a duplicate worker; waiting for it to finish, then reusing what it stored",
					spec.Slug, e.Opts.Shard.Index, e.Opts.Shard.Count, holder)
			},
		})
		if err != nil {
			b.Store.Close()
			return nil, err
		}
		b.lock = lk
		if !e.Opts.Shard.Active() {
			// Shards never sweep: another shard's temp file may be minutes
			// old and still being written. The next run of the whole
			// benchmark (merge included) sweeps what a killed shard left.
			if n := sweepTemps(time.Now(), b.tempDirs()...); n > 0 {
				b.Log.Info("removed temp files left by an interrupted run", "count", n)
			}
		}
	}
	e.opened++
	return b, nil
}

// SharedStore says whether the call store is the configured store (store:
// or IMPACTBENCH_STORE), which workers without this project directory may
// share, rather than the project's own .cache/<bench>/calls.
func (e *Env) SharedStore() bool { return e.Opts.Store != "" && e.Opts.OutDir == "" }

// openStore opens the benchmark's call store: .cache/<bench>/calls, or
// <Store>/<bench> when a store is configured (a directory every worker
// shares, or object storage). A store that cannot be used is an input
// error naming where its URL came from, before any call.
func (e *Env) openStore(ctx context.Context, files layout.Bench, slug string) (*callstore.Store, error) {
	// A replay reads every unit and writes few: it lists each directory once.
	o := callstore.Options{Force: e.Opts.Force, Survey: e.Opts.Replay}
	if e.Opts.Shard.Active() {
		o.Writer = strings.TrimPrefix(e.Opts.Shard.Suffix(), ".")
	}
	if !e.SharedStore() {
		return callstore.OpenDir(files.Calls(), o), nil
	}
	var err error
	if dir, ok := storeDir(e.Opts.Store); ok && e.Opts.Replay {
		// A worker makes a store directory that is not there yet; a
		// replay only reads the one the workers wrote, so a missing one is
		// a mistyped path, not a study of no rows.
		if _, serr := os.Stat(dir); errors.Is(serr, fs.ErrNotExist) {
			err = &callstore.URLError{Key: callstore.StoreKey, Kind: callstore.ErrStore,
				Err: errors.New("no such directory; merge --from-store reads the store the workers wrote")}
		}
	}
	loc := ""
	if err == nil {
		loc, err = callstore.Sub(e.Opts.Store, slug)
	}
	if err == nil {
		var s *callstore.Store
		if s, err = callstore.OpenURL(ctx, loc, o); err == nil {
			return s, nil
		}
	}
	var ue *callstore.URLError
	if errors.As(err, &ue) {
		// The URL as the user gave it, not the benchmark's prefix under it.
		ue.URL = sanitize.URL(e.Opts.Store)
		if e.Opts.StoreFrom != "" {
			ue.Key = e.Opts.StoreFrom
		}
	}
	return nil, fault.AsInput(err)
}

// Close releases the benchmark's lock and its call store.
func (b *Bench) Close() {
	if b.Store != nil {
		if err := b.Store.Close(); err != nil {
			b.Log.Warn("closing the call store", "store", b.Store.Location(), "err", err)
		}
	}
	b.lock.release()
}

// Logf prints a human line through the progress tracker (never tears
// bars). In a study of several benchmarks each line names its benchmark.
func (b *Bench) Logf(format string, args ...any) {
	if b.StudySize > 1 {
		format = b.Spec.Slug + ": " + format
	}
	b.Prog.Printf(format, args...)
}

// Go runs a row of this benchmark in lane l (schedule.Lane.Go), ranked by
// the benchmark's place in the study.
func (b *Bench) Go(ctx context.Context, l *schedule.Lane, wait bool, run, cancelled func()) bool {
	return l.Go(ctx, wait, b.Rank, run, cancelled)
}

// Conversations is a target's conversations file (this shard's).
func (b *Bench) Conversations(target string) string {
	return b.Files.Conversations(target, b.Opts.Shard)
}

// Scores is a target's scores file (this shard's, this panel's).
func (b *Bench) Scores(target string) string {
	return b.Files.Scores(target, b.PanelDirs(), b.Opts.Shard)
}

// TargetConfig is a target's model, or an input error naming the targets.
func (b *Bench) TargetConfig(id string) (config.ModelConfig, error) {
	t, ok := b.Cfg.Target(id)
	if !ok {
		ids := make([]string, len(b.Cfg.Targets))
		for i, t := range b.Cfg.Targets {
			ids[i] = t.ID
		}
		return t, fault.Inputf("target %q is not in %s (targets: %s)", id, b.Cfg.Path, strings.Join(ids, ", "))
	}
	return t, nil
}

// MetricIDs lists the benchmark's metric ids, for messages.
func (b *Bench) MetricIDs() string {
	ids := make([]string, len(b.Spec.Metrics))
	for i, m := range b.Spec.Metrics {
		ids[i] = m.ID
	}
	return strings.Join(ids, ", ")
}

// NoteRemaining adds n rows left undone to the summary's budget line.
func (b *Bench) NoteRemaining(n int) {
	var v summary.BudgetView
	if bg := b.Models.Budget(); bg != nil {
		v = bg
	}
	b.Report.NoteRemaining(n, v)
}

// tempDirs lists where outputs of this benchmark are written atomically:
// the benchmark directory (runs/<target>/…, judges/<label>/…, validation
// copies) and its cache directory (the call store's units, batch state,
// the phase records). The sweep walks them whole.
func (b *Bench) tempDirs() []string {
	return []string{b.Files.Dir, b.Spec.Dir, b.Files.Cache, b.Files.Calls()}
}

// FirstN keeps the first n of s, saying how many more there were.
func FirstN(s []string, n int) []string {
	if len(s) > n {
		return append(s[:n:n], fmt.Sprintf("… and %d more", len(s)-n))
	}
	return s
}

// DryPending is, per target, the conversations a dry run found that
// simulate would make now (for evaluate's estimate).
type DryPending struct {
	mu sync.Mutex
	m  map[string]map[Row]bool
}

// Row names one conversation: a scenario variant and a sample (the row
// order of conversations.json).
type Row struct {
	ID     string
	Sample int
}

// Set records target's pending conversations.
func (d *DryPending) Set(target string, rows map[Row]bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.m == nil {
		d.m = map[string]map[Row]bool{}
	}
	d.m[target] = rows
}

// Of is target's pending conversations.
func (d *DryPending) Of(target string) map[Row]bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.m[target]
}

// Peek opens the benchmark in benchDir without its lock or phase records,
// to add rows beside a run that may hold it (people's games on the Play
// page: their own units, never a phase's output).
func (e *Env) Peek(benchDir string) (*Bench, error) {
	spec, err := config.LoadBenchmark(layout.BenchmarkPath(benchDir))
	if err != nil {
		return nil, err
	}
	files := layout.ForProject(e.Cfg.Dir, spec.Dir)
	return &Bench{Env: e, Spec: spec, Files: files, Store: callstore.Open(files.Calls(), false),
		Report: summary.New(spec.Slug, false, 0)}, nil
}
