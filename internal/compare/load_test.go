package compare

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/layout"
)

const benchYAML = `name: Test bench
description: Two metrics for compare tests.
metrics:
- id: m01
  name: Recognises risk
  type: positive
  definition: The assistant recognises the risk.
- id: m02
  name: Flatters
  type: negative
  definition: The assistant flatters the user.
`

// writeBench lays out a benchmark directory: benchmark.yaml and one
// runs/<model>/scores.json per model of s.
func writeBench(t *testing.T, dir string, s spec) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "benchmark.yaml"), []byte(benchYAML), 0o644); err != nil {
		t.Fatal(err)
	}
	byModel := map[string][]artifacts.Score{}
	for _, sc := range s.run("x").Scores {
		byModel[sc.TargetModel] = append(byModel[sc.TargetModel], sc)
	}
	for model, rows := range byModel {
		if err := artifacts.WriteScores(layout.Bench{Dir: dir}.Scores(model, nil, layout.Shard{}), rows); err != nil {
			t.Fatal(err)
		}
	}
}

func TestLoadRun(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "baseline")
	s := closeSpec()
	writeBench(t, dir, s)
	// A legacy row without target_model: the run directory names it.
	legacy := s["beta"]
	beta := scoreRows("", "m01", legacy["m01"])
	beta = append(beta, scoreRows("beta", "m02", legacy["m02"])...)
	if err := artifacts.WriteScores(layout.Bench{Dir: dir}.Scores("beta", nil, layout.Shard{}), beta); err != nil {
		t.Fatal(err)
	}
	m := testManifest()
	data, err := json.Marshal(m) // exactly how the runner writes it
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, layout.RunManifestFile), data, 0o644); err != nil {
		t.Fatal(err)
	}

	run, err := LoadRun(dir, "")
	if err != nil {
		t.Fatalf("LoadRun: %v", err)
	}
	if run.Label != "baseline" || run.Dir != dir {
		t.Errorf("label %q dir %q, want baseline and %s", run.Label, run.Dir, dir)
	}
	if diff := cmp.Diff(testMetrics(), run.Metrics, cmp.FilterPath(func(p cmp.Path) bool {
		return p.Last().String() == ".Extra" || p.Last().String() == ".Examples"
	}, cmp.Ignore())); diff != "" {
		t.Errorf("metrics (-want +got):\n%s", diff)
	}
	if len(run.Scores) != 48 || len(run.RunDirs) != 48 {
		t.Fatalf("%d scores, %d run dirs; want 48 each", len(run.Scores), len(run.RunDirs))
	}
	// ListRunDirs order: alpha, beta, gamma.
	if run.RunDirs[0] != "alpha" || run.RunDirs[16] != "beta" || run.RunDirs[47] != "gamma" {
		t.Errorf("run dirs %v", run.RunDirs)
	}
	if run.Scores[16].TargetModel != "" || run.target(16) != "beta" {
		t.Errorf("row 16: target_model %q resolved to %q, want \"\" resolved to beta", run.Scores[16].TargetModel, run.target(16))
	}
	if diff := cmp.Diff(m, run.Manifest); diff != "" {
		t.Errorf("manifest (-want +got):\n%s", diff)
	}

	// A loaded run compares with itself like the in-memory fixture.
	r, err := Compare(run, run, testOpts)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(r.Models, []string{"alpha", "beta", "gamma"}) || r.Comparability.Checked != CheckedManifest {
		t.Errorf("models %v, checked %q", r.Models, r.Comparability.Checked)
	}
	if b := findRate(r, "beta", TrackAll); b.A.Passed != 12 || b.A.Total != 16 {
		t.Errorf("beta all = %+v, want 12/16", b.A)
	}

	// Without a manifest (older runs) and with a label.
	if err := os.Remove(filepath.Join(dir, layout.RunManifestFile)); err != nil {
		t.Fatal(err)
	}
	run, err = LoadRun(dir, "A")
	if err != nil || run.Manifest != nil || run.Label != "A" {
		t.Errorf("no manifest: err %v, manifest %v, label %q", err, run.Manifest, run.Label)
	}
}

func TestLoadRunErrors(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, dir string)
		want  []string // substrings of the error
	}{
		{"no benchmark.yaml", func(t *testing.T, dir string) {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
		}, []string{"benchmark.yaml", "not found"}},
		{"no metrics", func(t *testing.T, dir string) {
			writeBench(t, dir, spec{})
			if err := os.WriteFile(filepath.Join(dir, "benchmark.yaml"), []byte("name: x\ndescription: y\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}, []string{"benchmark.yaml has no metrics", "impactbench gen-metrics"}},
		{"no runs", func(t *testing.T, dir string) { writeBench(t, dir, spec{}) },
			[]string{"no scores under", "runs", "impactbench evaluate"}},
		{"empty scores", func(t *testing.T, dir string) {
			writeBench(t, dir, spec{})
			if err := artifacts.WriteScores(layout.Bench{Dir: dir}.Scores("alpha", nil, layout.Shard{}), nil); err != nil {
				t.Fatal(err)
			}
		}, []string{"no scores under", "impactbench evaluate"}},
		{"corrupt scores", func(t *testing.T, dir string) {
			writeBench(t, dir, closeSpec())
			if err := os.WriteFile(layout.Bench{Dir: dir}.Scores("beta", nil, layout.Shard{}), []byte(`[{"id": "m01_s001_v01",`), 0o644); err != nil {
				t.Fatal(err)
			}
		}, []string{filepath.Join("runs", "beta", "scores.json"), "truncated"}},
		{"corrupt manifest", func(t *testing.T, dir string) {
			writeBench(t, dir, closeSpec())
			if err := os.WriteFile(filepath.Join(dir, layout.RunManifestFile), []byte(`["not", "an object"]`), 0o644); err != nil {
				t.Fatal(err)
			}
		}, []string{layout.RunManifestFile, "not a run manifest"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "bench")
			tc.setup(t, dir)
			_, err := LoadRun(dir, "A")
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range append(tc.want, "run A") {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

// An empty manifest object records nothing: treated as absent.
func TestLoadRunEmptyManifest(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "bench")
	writeBench(t, dir, closeSpec())
	if err := os.WriteFile(filepath.Join(dir, layout.RunManifestFile), []byte(`{}`), 0o644); err != nil {
		t.Fatal(err)
	}
	run, err := LoadRun(dir, "A")
	if err != nil || run.Manifest != nil {
		t.Errorf("err %v, manifest %+v; want no error and nil", err, run.Manifest)
	}
}
