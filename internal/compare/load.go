// Package compare puts two runs of the same benchmark side by side: the
// validation runs that swap one role (the generator that writes scenarios,
// the model playing the simulated user, the judge) and `impactbench compare
// A B` on any two runs. It answers "do the pass rates and the ranking of the
// target models survive the swap?", with intervals over base scenarios
// (the clustered interval results.json uses) so that chance differences
// are not read as findings.
//
// LoadRun does the I/O; Comparable and Compare are pure functions of the
// loaded runs; WriteTable and WriteJSON render a Report.
package compare

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/layout"
	"github.com/impactbench/impactbench/internal/results"
)

// Manifest is what a run was measured with (layout.RunManifestFile, the
// optional file next to benchmark.yaml): one hash per component. It is
// results.Fingerprint itself, so the runner writes it with json.Marshal and
// nothing has to be kept in sync.
type Manifest = results.Fingerprint

// Run is one benchmark directory's scores, ready to compare.
type Run struct {
	Label string // short name in reports ("A", "baseline", "user-swap")
	Dir   string
	// Metrics are benchmark.yaml's metrics (their types define the tracks).
	Metrics []config.Metric
	// Scores are every runs/*/scores.json row, run directories in
	// layout.ListRunDirs order, rows in file order.
	Scores []artifacts.Score
	// RunDirs[i] is the run directory name of Scores[i], the target of rows
	// without a target_model (legacy files). Nil means every row names it.
	RunDirs []string
	// Manifest is run_manifest.json; nil when the run did not record one.
	Manifest *Manifest
	// played are the conversations people played against each target
	// (runs/<target>/human/), by target: listed beside the rates, never in
	// them.
	played map[string]*played
}

// target is the model a score row belongs to.
func (r Run) target(i int) string {
	if t := r.Scores[i].TargetModel; t != "" {
		return t
	}
	if i < len(r.RunDirs) {
		return r.RunDirs[i]
	}
	return ""
}

// LoadRun reads the benchmark directory dir: benchmark.yaml, every
// runs/*/scores.json and, when present, run_manifest.json. An empty label
// becomes the directory's base name.
func LoadRun(dir, label string) (Run, error) {
	if label == "" {
		label = filepath.Base(filepath.Clean(dir))
	}
	run := Run{Label: label, Dir: dir}

	// LoadBenchmark's errors already name the file (with line and column).
	bench, err := config.LoadBenchmark(layout.BenchmarkPath(dir))
	if err != nil {
		return Run{}, fmt.Errorf("run %s: %w", label, err)
	}
	if len(bench.Metrics) == 0 {
		return Run{}, fmt.Errorf("run %s: %s has no metrics: run `impactbench gen-metrics %s` first", label, bench.Path, dir)
	}
	run.Metrics = bench.Metrics

	dirs, err := layout.ListRunDirs(dir)
	if err != nil {
		return Run{}, fmt.Errorf("run %s: list %s: %w", label, layout.Bench{Dir: dir}.RunsDir(), err)
	}
	for _, d := range dirs {
		name := filepath.Base(d)
		err := artifacts.EachScore(layout.Run{Dir: d}.Scores(), func(_ int, s artifacts.Score) error {
			run.Scores = append(run.Scores, s)
			run.RunDirs = append(run.RunDirs, name)
			return nil
		})
		if err != nil {
			return Run{}, fmt.Errorf("run %s: %w", label, err) // names the file and row
		}
	}
	if len(run.Scores) == 0 {
		return Run{}, fmt.Errorf("run %s: no scores under %s (no %s with rows): run `impactbench evaluate %s` first",
			label, layout.Bench{Dir: dir}.RunsDir(), layout.RunFileRel("*", layout.ScoresFile), dir)
	}

	m, err := readManifest(layout.Bench{Dir: dir}.RunManifest())
	if err != nil {
		return Run{}, fmt.Errorf("run %s: %w", label, err)
	}
	run.Manifest = m
	if run.played, err = loadPlayed(dir, dirs); err != nil {
		return Run{}, fmt.Errorf("run %s: %w", label, err)
	}
	return run, nil
}

// readManifest returns nil (no error) when the file does not exist or
// records nothing: older runs simply cannot be checked component by
// component, which Comparable reports.
func readManifest(path string) (*Manifest, error) {
	var m Manifest
	err := artifacts.ReadObjectFile(path, &m) // damaged: *artifacts.FileError, exit 2
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	var fe *artifacts.FileError
	if errors.As(err, &fe) {
		fe.Hint = "; not a run manifest (expected a JSON object with metrics, scenarios, prompts, user_model, generator, judges, settings, targets): re-run aggregate to rewrite it"
	}
	if err != nil {
		return nil, err
	}
	if m.IsZero() {
		return nil, nil
	}
	return &m, nil
}
