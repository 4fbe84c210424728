package publish

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/study"
	"github.com/impactbench/impactbench/internal/study/studytest"
)

func publishDir(t *testing.T, dir, out string, dry bool) *Report {
	t.Helper()
	s, err := study.Load(filepath.Join(dir, "benchmarks"))
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Publish(context.Background(), s, s.Compute(), Options{Out: out, DryRun: dry})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// snapshot records every file under out with its FileInfo.
func snapshot(t *testing.T, out string) map[string]os.FileInfo {
	t.Helper()
	m := map[string]os.FileInfo{}
	err := filepath.WalkDir(out, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		st, err := os.Stat(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(out, p)
		m[filepath.ToSlash(rel)] = st
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// touched lists the files whose inode changed (replaced) or that appeared.
func touched(before, after map[string]os.FileInfo) []string {
	var out []string
	for rel, st := range after {
		if b, ok := before[rel]; !ok || !os.SameFile(b, st) {
			out = append(out, rel)
		}
	}
	slices.Sort(out)
	return out
}

func flip(t *testing.T, benchDir, run, scenario string) {
	t.Helper()
	rows, err := artifacts.ReadScores(filepath.Join(benchDir, "runs", run, "scores.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if r.ID == scenario {
			if err := studytest.SetVerdict(benchDir, run, scenario, !*r.Present); err != nil {
				t.Fatal(err)
			}
			return
		}
	}
	t.Fatalf("no row %s", scenario)
}

// TestRepublishRewritesOnlyWhatChanged is acceptance 4(c): publish a
// 3-benchmark study, change one verdict of one benchmark, publish again:
// only that benchmark's transcript file and the aggregate files are
// rewritten; every other file keeps its inode. A dry run lists the change
// and writes nothing; a model that leaves the study takes its files along.
func TestRepublishRewritesOnlyWhatChanged(t *testing.T) {
	dir := t.TempDir()
	if err := studytest.WriteSmall(dir); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "site")
	first := publishDir(t, dir, out, false)
	// 7 data files + 3 benchmarks × 2 metrics × 6 scenarios × 3 models.
	if first.Files != 7+3*2*6*3 || len(first.Written) != first.Files || first.Unchanged != 0 {
		t.Fatalf("first publish: %d files, %d written, %d unchanged", first.Files, len(first.Written), first.Unchanged)
	}
	s0 := snapshot(t, out)

	again := publishDir(t, dir, out, false)
	if len(again.Written) != 0 || again.Unchanged != again.Files {
		t.Fatalf("unchanged study: rewrote %v", again.Written)
	}
	if got := touched(s0, snapshot(t, out)); len(got) != 0 {
		t.Fatalf("unchanged study: files replaced %v", got)
	}

	beta := filepath.Join(dir, "benchmarks", "beta")
	flip(t, beta, "model-a", "m01_s002_v02")
	dry := publishDir(t, dir, out, true)
	if got := touched(s0, snapshot(t, out)); len(got) != 0 {
		t.Fatalf("dry run wrote %v", got)
	}
	wet := publishDir(t, dir, out, false)
	if !slices.Equal(dry.Written, wet.Written) {
		t.Errorf("dry run listed %v, publish wrote %v", dry.Written, wet.Written)
	}
	want := []string{"data/benchmark-data.json", "data/nutrition.json", "data/scenario-index.json", "data/uncertainty.json",
		"scenarios/beta/model-a/m01_s002_v02.json"}
	got := touched(s0, snapshot(t, out))
	if !slices.Equal(got, want) {
		t.Errorf("after one verdict of beta changed, replaced %v; want %v", got, want)
	}
	w := slices.Clone(wet.Written)
	slices.Sort(w)
	if !slices.Equal(w, want) {
		t.Errorf("report lists %v; want %v", w, want)
	}
	for _, f := range got {
		if !strings.HasPrefix(f, "data/") && !strings.HasPrefix(f, "scenarios/beta/") {
			t.Errorf("%s rewritten, but only beta changed", f)
		}
	}

	// model-c leaves the study: its runs move away, its entry goes.
	for _, b := range studytest.SmallBenchmarks {
		if err := os.Rename(filepath.Join(dir, "benchmarks", b, "runs", "model-c"), filepath.Join(dir, "model-c-"+b)); err != nil {
			t.Fatal(err)
		}
	}
	models := filepath.Join(dir, "benchmarks", study.ModelsFile)
	y, _ := os.ReadFile(models)
	lines := strings.Split(string(y), "\n")
	if err := os.WriteFile(models, []byte(strings.Join(slices.DeleteFunc(lines, func(l string) bool { return strings.Contains(l, "model-c") }), "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	gone := publishDir(t, dir, out, false)
	if len(gone.Removed) != 3*2*6 {
		t.Errorf("removed %d files, want model-c's 36", len(gone.Removed))
	}
	for _, b := range studytest.SmallBenchmarks {
		if _, err := os.Stat(filepath.Join(out, "scenarios", b, "model-c")); !os.IsNotExist(err) {
			t.Errorf("scenarios/%s/model-c still there (%v)", b, err)
		}
	}
	// A file publish never wrote is never removed.
	keep := filepath.Join(out, "scenarios", "beta", "notes.txt")
	if err := os.WriteFile(keep, []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	publishDir(t, dir, out, false)
	if _, err := os.Stat(keep); err != nil {
		t.Errorf("publish removed a file it did not write: %v", err)
	}
}
