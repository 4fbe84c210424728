package work

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

func TestSweepTempsRemovesOnlyStaleTempFiles(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	old := now.Add(-2 * StaleTempAge)
	files := map[string]time.Time{
		".conversations.json.tmp-123": old, // killed atomic write: removed
		".tmp-456":                    old, // call store / manifest temp: removed
		".report-789.html.tmp":        old, // report temp: removed
		".scores.json.tmp-1":          now, // may belong to a live writer: kept
		"conversations.json":          old, // an output: kept
		".env":                        old, // not ours: kept
		"notes.tmp":                   old, // not hidden: kept
	}
	for name, mt := range files {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, mt, mt); err != nil {
			t.Fatal(err)
		}
	}
	if n := sweepTemps(now, dir, filepath.Join(dir, "missing")); n != 3 {
		t.Errorf("removed %d files, want 3", n)
	}
	ents, _ := os.ReadDir(dir)
	var left []string
	for _, e := range ents {
		left = append(left, e.Name())
	}
	want := []string{".env", ".scores.json.tmp-1", "conversations.json", "notes.tmp"}
	if !slices.Equal(left, want) {
		t.Errorf("left %v, want %v", left, want)
	}
}
