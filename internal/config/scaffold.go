package config

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/impactbench/impactbench/internal/fault"
	"github.com/impactbench/impactbench/internal/fsx"
	"github.com/impactbench/impactbench/internal/layout"
)

// The templates are files rather than Go strings so they can be read,
// diffed and YAML-linted as what the user gets. .env.example is stored as
// env.example because go:embed skips dot files.
//
//go:embed scaffold/config.yaml scaffold/env.example scaffold/benchmarks/example/benchmark.yaml scaffold/study
var scaffoldFS embed.FS

// scaffoldFiles maps each written path (relative to the project dir) to its
// embedded template.
func scaffoldFiles() [][2]string {
	return [][2]string{
		{layout.ConfigPath(""), "scaffold/config.yaml"},
		{layout.EnvExampleFile, "scaffold/env.example"},
		{layout.BenchmarkPath(layout.BenchDir("", "example")), "scaffold/benchmarks/example/benchmark.yaml"},
	}
}

// studyScaffoldFiles are the study's inputs, for `init --study`: a taxonomy
// and a nutrition label over the example benchmark's two metrics, and the
// scaffold config's two offline targets as models.
func studyScaffoldFiles() [][2]string {
	return [][2]string{
		{layout.StudyPath("", layout.StudyTaxonomyFile), "scaffold/study/taxonomy.json"},
		{layout.StudyPath("", layout.StudyNutritionFile), "scaffold/study/nutrition-label.json"},
		{layout.StudyPath("", layout.StudyModelsFile), "scaffold/study/models.yaml"},
	}
}

// ScaffoldStudy writes a study's input files into dir/benchmarks for
// `impactbench init --study`, under the same rules as Scaffold.
func ScaffoldStudy(dir string, force bool) ([]string, error) {
	return scaffold(dir, force, studyScaffoldFiles())
}

// StarterStudyFiles are the files ScaffoldStudy writes, read: the starter
// example's taxonomy and nutrition label, and models.yaml naming the
// starter config's two offline targets.
func StarterStudyFiles() ([]ScaffoldFile, error) {
	var out []ScaffoldFile
	for _, f := range studyScaffoldFiles() {
		data, err := scaffoldFS.ReadFile(f[1])
		if err != nil {
			return nil, fmt.Errorf("init: %w", err)
		}
		out = append(out, ScaffoldFile{Path: f[0], Data: data})
	}
	return out, nil
}

// Scaffold writes a starter project into dir for `impactbench init`:
// config.yaml (every key documented; offline models so the quickstart needs
// no API key), .env.example and benchmarks/example/benchmark.yaml. Existing
// files are never overwritten unless force; without force, if any of them
// exists nothing is written and the error wraps fs.ErrExist. It returns the
// paths written.
func Scaffold(dir string, force bool) ([]string, error) {
	return scaffold(dir, force, scaffoldFiles())
}

// ScaffoldFile is a file WriteScaffold writes: its path under the
// project directory and its contents.
type ScaffoldFile struct {
	Path string
	Data []byte
}

// WriteScaffold writes files into dir under Scaffold's rules: nothing
// existing is overwritten unless force, and without force nothing at all
// is written if any of them exists.
func WriteScaffold(dir string, force bool, files []ScaffoldFile) ([]string, error) {
	embedded := make([][2]string, len(files))
	data := map[string][]byte{}
	for i, f := range files {
		embedded[i] = [2]string{f.Path, f.Path}
		data[f.Path] = f.Data
	}
	return scaffoldWith(dir, force, embedded, func(name string) ([]byte, error) { return data[name], nil })
}

func scaffold(dir string, force bool, files [][2]string) ([]string, error) {
	return scaffoldWith(dir, force, files, scaffoldFS.ReadFile)
}

func scaffoldWith(dir string, force bool, files [][2]string, read func(string) ([]byte, error)) ([]string, error) {
	if !force {
		var existing []string
		for _, f := range files {
			p := filepath.Join(dir, f[0])
			if _, err := os.Lstat(p); err == nil {
				existing = append(existing, p)
			} else if !errors.Is(err, fs.ErrNotExist) {
				return nil, fmt.Errorf("init: %w", err)
			}
		}
		if len(existing) > 0 {
			// A usage error (exit 2): nothing was written, and rerunning
			// as is cannot help; --force or another directory does.
			return nil, &fault.Error{Kind: fault.Usage, Err: fs.ErrExist,
				Msg: fmt.Sprintf("init: %s already exist(s); nothing was written (use --force to overwrite, or name another directory)", strings.Join(existing, ", "))}
		}
	}
	var written []string
	for _, f := range files {
		data, err := read(f[1])
		if err != nil {
			return written, fmt.Errorf("init: %w", err)
		}
		p := filepath.Join(dir, f[0])
		if err := fsx.WriteFile(p, data, fsx.Shared); err != nil {
			return written, fmt.Errorf("init: write %s: %w", p, err)
		}
		written = append(written, p)
	}
	return written, nil
}
