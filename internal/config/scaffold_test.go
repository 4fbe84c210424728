package config

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestScaffold(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "project") // created by Scaffold
	files, err := Scaffold(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		filepath.Join(dir, "config.yaml"),
		filepath.Join(dir, ".env.example"),
		filepath.Join(dir, "benchmarks", "example", "benchmark.yaml"),
	}
	if diff := cmp.Diff(want, files); diff != "" {
		t.Errorf("files (-want +got):\n%s", diff)
	}

	// The quickstart must load with no API key in the environment.
	cfg, err := LoadWithOptions(dir, LoadOptions{LookupEnv: noEnv})
	if err != nil {
		t.Fatalf("scaffolded config does not load: %v", err)
	}
	if len(cfg.Targets) != 2 {
		t.Fatalf("%d targets, want 2", len(cfg.Targets))
	}
	var cares []float64
	for _, m := range append([]ModelConfig{cfg.UserModel, cfg.EvaluatorModels[0]}, cfg.Targets...) {
		if m.Provider() != "offline" || m.APIKey != "" {
			t.Errorf("%v: want an offline model without key", m)
		}
	}
	for _, tg := range cfg.Targets {
		if tg.Offline == nil || tg.Offline.Care == nil {
			t.Fatalf("target %s has no offline care", tg.ID)
		}
		cares = append(cares, *tg.Offline.Care)
	}
	if diff := cmp.Diff([]float64{0.8, 0.45}, cares); diff != "" {
		t.Errorf("offline care (-want +got):\n%s", diff)
	}
	if g := cfg.Generation; g != (Generation{ScenariosPerMetric: 2, Turns: 4, NumSamples: 2}) {
		t.Errorf("generation = %+v, want the small demo sizes", g)
	}
	if len(cfg.Demographics) != 1 || len(cfg.Demographics[0].Values) != 2 {
		t.Errorf("demographics = %+v, want one axis with two values", cfg.Demographics)
	}
	if len(cfg.Warnings) != 0 || len(cfg.MissingEnv) != 0 {
		t.Errorf("warnings %q missing %v", cfg.Warnings, cfg.MissingEnv)
	}

	b, err := LoadBenchmark(filepath.Join(dir, "benchmarks", "example"))
	if err != nil {
		t.Fatalf("scaffolded benchmark does not load: %v", err)
	}
	if b.Slug != "example" || len(b.Metrics) != 2 || b.Metrics[0].Type != Positive || b.Metrics[1].Type != Negative {
		t.Errorf("benchmark = %s with %d metrics %+v", b.Slug, len(b.Metrics), b.Metrics)
	}
	for _, m := range b.Metrics {
		if len(m.Examples) == 0 {
			t.Errorf("metric %s has no examples", m.ID)
		}
	}

	env, err := os.ReadFile(filepath.Join(dir, ".env.example"))
	if err != nil {
		t.Fatal(err)
	}
	vars, err := readDotEnv(filepath.Join(dir, ".env.example"))
	if err != nil {
		t.Fatalf(".env.example does not parse: %v\n%s", err, env)
	}
	for _, k := range []string{"ANTHROPIC_API_KEY", "OPENAI_API_KEY", "DEEPINFRA_TOKEN", "XAI_API_KEY", "GEMINI_API_KEY"} {
		if v, ok := vars[k]; !ok || v != "" {
			t.Errorf(".env.example: %s = %q, %v; want an empty entry", k, v, ok)
		}
	}
}

func TestScaffoldNeverOverwrites(t *testing.T) {
	dir := t.TempDir()
	mine := []byte("# my own config\n")
	if err := os.WriteFile(filepath.Join(dir, "config.yaml"), mine, 0o600); err != nil {
		t.Fatal(err)
	}
	files, err := Scaffold(dir, false)
	if !errors.Is(err, fs.ErrExist) || files != nil {
		t.Fatalf("Scaffold = %v, %v; want fs.ErrExist and no files", files, err)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "config.yaml")); string(got) != string(mine) {
		t.Errorf("config.yaml was overwritten")
	}
	if _, err := os.Stat(filepath.Join(dir, ".env.example")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("other files were written although one existed: %v", err)
	}

	files, err = Scaffold(dir, true)
	if err != nil || len(files) != 3 {
		t.Fatalf("Scaffold(force) = %v, %v", files, err)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "config.yaml")); string(got) == string(mine) {
		t.Errorf("force did not overwrite config.yaml")
	}
}

// TestLoadStudyModelsProblems: models.yaml's problems name line and field.
func TestLoadStudyModelsProblems(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "models.yaml")
	src := "models:\n  - {run_dir: a, id: a, name: A}\n  - {run_dir: b, nam: B}\n  - {run_dir: c, id: c, name: C, releaseYear: soon}\n" +
		"  - {run_dir: d, id: d, name: D, releaseYear: -1}\n  - {run_dir: e, id: e, name: E, releaseYear: 20255}\nmodel: []\n"
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := LoadStudyModels(path)
	var ce *Error
	if !errors.As(err, &ce) {
		t.Fatalf("got %v, want a *config.Error", err)
	}
	for _, want := range []string{
		"models.yaml:3:18: models[1].nam: unknown key; did you mean name?",
		"models.yaml:3:5: models[1].id: required",
		"models.yaml:4:47: models[2].releaseYear: expected an integer, got a string \"soon\"",
		"models.yaml:5:47: models[3].releaseYear: must be a year (0 to 9999), got -1",
		"models.yaml:6:47: models[4].releaseYear: must be a year (0 to 9999), got 20255",
		"models.yaml:7:1: model: unknown key; did you mean models?",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	m, err := LoadStudyModels(filepath.Join("scaffold", "study", "models.yaml"))
	if err != nil || len(m.Models) != 2 || !m.Models[0].HasSurface(SurfaceFull) || m.Models[0].ReleaseYear != 2026 {
		t.Errorf("the scaffold's models.yaml: %+v, %v", m, err)
	}
}
