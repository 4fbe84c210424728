package report

import (
	"bytes"
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
