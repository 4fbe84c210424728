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
	"github.com/impactbench/impactbench/internal/layout"
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

// touched lists the files that appeared or were replaced: another inode,
// or the same inode with another size or modification time. A file
// publish writes twice (the manifest: its claim, then its final record)
// can get its old inode back the second time — the first replacement freed
// it, and ext4 hands a freed inode out again — so the inode alone once
// reported the rewritten manifest as untouched (a CI failure).
func touched(before, after map[string]os.FileInfo) []string {
	var out []string
	for rel, st := range after {
		if b, ok := before[rel]; !ok || !os.SameFile(b, st) || b.Size() != st.Size() || !b.ModTime().Equal(st.ModTime()) {
			out = append(out, rel)
		}
	}
	slices.Sort(out)
	return out
}

// withManifest returns the files replaced, the manifest apart, failing
// unless the manifest is among them: it records the sha256 of every file
// publish wrote, so it changes with them.
func withManifest(t *testing.T, replaced []string) []string {
	t.Helper()
	i := slices.Index(replaced, layout.PublishManifestFile)
	if i < 0 {
		t.Errorf("files were replaced (%v) but the manifest, which records their sha256, was not", replaced)
		return replaced
	}
	return slices.Delete(slices.Clone(replaced), i, i+1)
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
	got := withManifest(t, touched(s0, snapshot(t, out)))
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

// TestRepublishSiteRewritesOnlyWhatChanged: with --site, one changed
// verdict of one benchmark rewrites that benchmark's data and transcript
// chunks, the pair chunks of the levels it changed at (Holm adjusts a
// level's pairs together, so every pair there moves) and the aggregates
// (the core chunk and the page naming its version), and nothing else; the site's
// script, style, the other benchmarks' chunks and the calibration chunk
// keep their inodes. Publishing without --site removes the site.
func TestRepublishSiteRewritesOnlyWhatChanged(t *testing.T) {
	dir := t.TempDir()
	if err := studytest.WriteSmall(dir); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	pub := func(siteToo, dry bool) *Report {
		t.Helper()
		s, err := study.Load(filepath.Join(dir, "benchmarks"))
		if err != nil {
			t.Fatal(err)
		}
		rep, err := Publish(context.Background(), s, s.Compute(), Options{Out: out, DryRun: dry, Site: siteToo})
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	first := pub(true, false)
	// The data, then the page, script, style, core, calibration, 3
	// benchmark chunks, 3 pair chunks and 3 × 3 transcript chunks.
	if want := 7 + 3*2*6*3 + 3 + 2 + 3 + 3 + 9; first.Files != want || first.Site != filepath.Join(out, "index.html") {
		t.Fatalf("first publish: %d files (want %d), site %q", first.Files, want, first.Site)
	}
	s0 := snapshot(t, out)
	if again := pub(true, false); len(again.Written) != 0 {
		t.Fatalf("unchanged study: rewrote %v", again.Written)
	}
	flip(t, filepath.Join(dir, "benchmarks", "beta"), "model-a", "m01_s002_v02")
	dry := pub(true, true)
	wet := pub(true, false)
	want := []string{"data/benchmark-data.json", "data/nutrition.json", "data/scenario-index.json", "data/uncertainty.json",
		"index.html", "scenarios/beta/model-a/m01_s002_v02.json",
		"site/data/bench/beta.js", "site/data/core.js", "site/data/pairs/model-a/model-b.js", "site/data/pairs/model-a/model-c.js",
		// model-b vs model-c: Holm adjusts a level's pairs together, so
		// their adjusted p-values move with model-a's.
		"site/data/pairs/model-b/model-c.js",
		"site/data/tr/beta/model-a.js"}
	if got := withManifest(t, touched(s0, snapshot(t, out))); !slices.Equal(got, want) {
		t.Errorf("after one verdict of beta changed, replaced %v; want %v", got, want)
	}
	if w := slices.Sorted(slices.Values(wet.Written)); !slices.Equal(w, want) || !slices.Equal(dry.Written, wet.Written) {
		t.Errorf("report lists %v (dry run %v); want %v", w, dry.Written, want)
	}

	plain := pub(false, false)
	var removed []string
	for _, f := range plain.Removed {
		if f != "index.html" && !strings.HasPrefix(f, "site/") {
			t.Errorf("publish without --site removed %s", f)
		}
		removed = append(removed, f)
	}
	if len(removed) != 3+2+3+3+9 || plain.Site != "" {
		t.Errorf("publish without --site removed %d files (%v), site %q", len(removed), removed, plain.Site)
	}
	if _, err := os.Stat(filepath.Join(out, "site")); !os.IsNotExist(err) {
		t.Errorf("site/ still there: %v", err)
	}
}
