package viewer

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/impactbench/impactbench/internal/report"
)

// aliasBombBenchmark is a benchmark.yaml holding a list that stands for
// 10^levels strings under a key the viewer does not read, and a metric
// merging a mapping that stands for 10^levels keys.
func aliasBombBenchmark(levels int) string {
	var b strings.Builder
	b.WriteString("name: n\ndescription: d\nl0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n")
	for i := 1; i <= levels; i++ {
		fmt.Fprintf(&b, "l%d: &l%d [%s]\n", i, i, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*l%d, ", i-1), 10), ", "))
	}
	fmt.Fprintf(&b, "x: *l%d\n", levels)
	b.WriteString("m0: &m0 {a: 1, b: 2, c: 3, d: 4, e: 5, f: 6, g: 7, h: 8, i: 9, j: 10}\n")
	for i := 1; i <= levels; i++ {
		fmt.Fprintf(&b, "m%d: &m%d {<<: [%s]}\n", i, i, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*m%d, ", i-1), 10), ", "))
	}
	fmt.Fprintf(&b, "metrics:\n- {id: m01, <<: *m%d}\n", levels)
	return b.String()
}

// The viewer reads benchmark.yaml with the same bounds as every command.
// Decoded as plain YAML, this 1.3 KB file allocated 105 MB in 0.8 s, and
// each level more ten times that (a 1.6 KB one, 10 GB); bounded, it is a
// note naming the limit.
func TestViewerReadsBenchmarkYAMLBounded(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "benchmark.yaml"), []byte(aliasBombBenchmark(5)), 0o644); err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	ix := loadIndex("bomb", dir, report.Settings{}, time.Now())
	title := benchTitle(dir, "bomb")
	runtime.ReadMemStats(&after)
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 40<<20 {
		t.Errorf("reading the file allocated %d MB", alloc>>20)
	}
	if note := strings.Join(ix.notes, "\n"); !strings.Contains(note, "benchmark.yaml") || !strings.Contains(note, "aliases") {
		t.Errorf("notes %q, want one naming benchmark.yaml and the alias limit", ix.notes)
	}
	if title != "bomb" || ix.bench.Name != "bomb" {
		t.Errorf("title %q, index name %q: want the directory's name", title, ix.bench.Name)
	}
}
