package report

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// status all: a row per benchmark and per target, each summed over the
// other, and the study's totals; the golden file holds the layout.
func TestStudyStatusGolden(t *testing.T) {
	mini := miniBench(t)
	benches := []StudyBench{{Dir: mini}, {Dir: "testdata/humanebench"}}
	var buf bytes.Buffer
	if err := StudyStatus(&buf, benches, []string{"alpha", "beta", "claude-haiku-4-5"}, StatusOptions{}); err != nil {
		t.Fatal(err)
	}
	got := strings.ReplaceAll(buf.String(), filepath.Base(mini), "<mini>")
	golden(t, "status_study.golden", []byte(got))
	for _, want := range []string{"2 benchmarks", "TOTAL", "claude-haiku-4-5"} {
		if !strings.Contains(got, want) {
			t.Errorf("study status lacks %q:\n%s", want, got)
		}
	}
}

// status all names a benchmark whose benchmark.yaml (or scenarios.json, or
// results.json) it could not read, as status <bench> does: its counts are
// left out of the tables, which said nothing of why.
func TestStudyStatusNamesUnreadableFiles(t *testing.T) {
	good, bad := t.TempDir(), filepath.Join(t.TempDir(), "broken")
	if err := os.MkdirAll(bad, 0o755); err != nil {
		t.Fatal(err)
	}
	for dir, yaml := range map[string]string{good: "name: g\ndescription: d\n", bad: "name: [\n"} {
		if err := os.WriteFile(filepath.Join(dir, "benchmark.yaml"), []byte(yaml), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(bad, "results.json"), []byte("[{"), 0o644); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := StudyStatus(&buf, []StudyBench{{Dir: good}, {Dir: bad}}, nil, StatusOptions{}); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{"broken: benchmark.yaml unreadable", "broken: results.json unreadable"} {
		if !strings.Contains(out, want) {
			t.Errorf("status all lacks %q:\n%s", want, out)
		}
	}
	if strings.Count(out, "unreadable") != 2 {
		t.Errorf("status all reports more than the two broken files:\n%s", out)
	}
}
