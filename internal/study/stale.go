package study

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/impactbench/impactbench/internal/layout"
)

// Stale lists the study's inputs in dir (the benchmarks directory) that
// changed after study.json at resultPath was written: the taxonomy, the
// nutrition label, models.yaml, and every benchmark's benchmark.yaml,
// scenarios.json, results.json and runs/*/scores.json (nothing: it is up
// to date). It reads no file, only their times, so a study whose inputs
// no longer load still says what changed — `run all` leaves study.json
// as it was when its refresh fails, and `status --study` must not show it
// as current.
func Stale(dir, resultPath string) ([]string, error) {
	st, err := os.Stat(resultPath)
	if err != nil {
		return nil, err
	}
	written := st.ModTime()
	out := []string{}
	check := func(path string) {
		if fi, err := os.Stat(path); err == nil && fi.ModTime().After(written) {
			rel, err := filepath.Rel(filepath.Dir(dir), path)
			if err != nil {
				rel = path
			}
			out = append(out, rel)
		}
	}
	for _, f := range []string{TaxonomyFile, NutritionFile, ModelsFile} {
		check(filepath.Join(dir, f))
	}
	inputs := len(out) // the study's own inputs first, then the benchmarks' files
	names, err := layout.BenchmarksIn(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	for _, name := range names {
		b := layout.Bench{Dir: filepath.Join(dir, name)}
		for _, f := range []string{layout.BenchmarkPath(b.Dir), b.Scenarios(), b.Results()} {
			check(f)
		}
		runs, _ := layout.ListRunDirs(b.Dir)
		for _, r := range runs {
			check(layout.Run{Dir: r}.Scores())
		}
	}
	sort.Strings(out[inputs:])
	return out, nil
}

// DescribeStale names up to three changed inputs (the study's own first)
// and counts the rest.
func DescribeStale(files []string) string {
	const shown = 3
	if len(files) <= shown {
		return strings.Join(files, ", ")
	}
	return fmt.Sprintf("%s and %d other input(s)", strings.Join(files[:shown], ", "), len(files)-shown)
}
