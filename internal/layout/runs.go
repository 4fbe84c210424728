package layout

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/impactbench/impactbench/internal/fsx"
)

// ListRunDirs returns the run directories (runs/<name>) of the benchmark
// in benchDir that hold a scores.json, in upstream's order: sorted by the
// scores.json path string (so "runs/a-b" sorts before "runs/a", since
// '-' < '/'), hidden directories skipped as Python's glob does. A missing
// runs/ directory is no runs.
func ListRunDirs(benchDir string) ([]string, error) {
	runs := Bench{Dir: benchDir}.RunsDir()
	entries, err := visible(runs, true, MaxRunEntries)
	if err != nil {
		return nil, err
	}
	var scores []string
	for _, e := range entries {
		sp := filepath.Join(runs, e.Name(), ScoresFile)
		if st, err := os.Stat(sp); err == nil && !st.IsDir() {
			scores = append(scores, sp)
		}
	}
	if len(scores) == 0 {
		return nil, nil
	}
	sort.Strings(scores)
	dirs := make([]string, len(scores))
	for i, s := range scores {
		dirs[i] = filepath.Dir(s)
	}
	return dirs, nil
}

// RunTargets lists the names of the run directories under runs/ (one per
// target that was run; hidden directories skipped as ListRunDirs skips
// them), sorted. A missing runs/ directory is no targets; readers that
// show what there is ignore err (an unreadable runs/ shows as no runs),
// all but an *fsx.TooManyEntriesError (a runs/ over MaxRunEntries), which
// they refuse (exit 2) rather than show as no runs.
func RunTargets(benchDir string) ([]string, error) {
	ents, err := visible(Bench{Dir: benchDir}.RunsDir(), true, MaxRunEntries)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		if e.IsDir() {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

// JudgePanels lists the alternative panels of the run that hold a scores
// file: the names of judges/<panel> (ParsePanelDir reads one), sorted,
// hidden directories skipped.
func (r Run) JudgePanels() ([]string, error) {
	dir := filepath.Join(r.Dir, JudgesDirName)
	ents, err := visible(dir, true, MaxRunEntries)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		if st, err := os.Stat(filepath.Join(dir, e.Name(), ScoresFile)); err == nil && !st.IsDir() {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

// Benchmarks lists the names of the project's benchmarks: the directories
// under benchmarks/ holding a benchmark.yaml (hidden ones skipped), sorted.
// A project without a benchmarks/ directory has none (err says why).
func Benchmarks(projectDir string) ([]string, error) {
	return BenchmarksIn(BenchmarksDir(projectDir))
}

// BenchmarksIn is Benchmarks of a benchmarks directory given itself (a
// study's directory: its inputs sit beside the benchmark folders).
func BenchmarksIn(dir string) ([]string, error) {
	ents, err := visible(dir, false, MaxBenchmarkEntries)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		if _, err := os.Stat(BenchmarkPath(filepath.Join(dir, e.Name()))); err == nil {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

// MaxBenchmarkEntries bounds the entries of a benchmarks/ folder (a study
// has 17 benchmarks), and MaxRunEntries those of a runs/ folder (one per
// target) or a run's judges/ folder (one per panel): a folder over its
// bound is refused with an *fsx.TooManyEntriesError (exit 2) after
// reading that many entries, not listed whole.
var (
	MaxBenchmarkEntries = 10_000
	MaxRunEntries       = 10_000
)

// visible lists dir's entries but hidden ones (a leading dot, as Python's
// glob skips them), at most limit of them (fsx.ReadDir); a missing dir is
// none when missingOK, else an error.
func visible(dir string, missingOK bool, limit int) ([]fs.DirEntry, error) {
	ents, err := fsx.ReadDir(dir, limit, func(e fs.DirEntry) bool { return !strings.HasPrefix(e.Name(), ".") })
	if missingOK && errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return ents, err
}
