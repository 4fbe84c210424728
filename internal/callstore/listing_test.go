package callstore

import (
	"os"
	"path/filepath"
	"testing"
)

// TestListUnits: completed units are <unit>.json; a journal means in
// progress, also for a unit completed before and being redone; temp files
// and a missing directory list nothing.
func TestListUnits(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"a.json", "b.json", "b.jsonl", "c.jsonl", ".tmp-1", ".a.json.tmp-2"} {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("{}"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	done, inProgress, err := ListUnits(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(done) != 1 || done[0].Name != "a" || done[0].ModTime.IsZero() || inProgress != 2 {
		t.Errorf("done %+v, in progress %d; want [a], 2", done, inProgress)
	}
	if done, n, err := ListUnits(filepath.Join(dir, "missing")); done != nil || n != 0 || err != nil {
		t.Errorf("missing dir: %v %d %v", done, n, err)
	}
}
