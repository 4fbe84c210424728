package batch

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/impactbench/impactbench/internal/llm"
)

// lower sets *limit to n for the test.
func lower(t *testing.T, limit *int64, n int64) {
	old := *limit
	*limit = n
	t.Cleanup(func() { *limit = old })
}

// TestCacheFilesOverTheirBoundAreNotRead: a state file over maxStateBytes
// is refused like a corrupt one (a *StateError naming it: it lists batches
// already paid for), and a batch's saved results over maxResultsBytes are
// treated as missing (downloaded again); neither is read whole.
func TestCacheFilesOverTheirBoundAreNotRead(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	st := &stateFile{Version: stateVersion, Provider: "p", Batches: []*batchRec{{ID: "batch_1", CustomIDs: []string{"k1"}, Hashes: []string{"h1"}, State: StateDone, Saved: true}}}
	if err := saveState(path, st); err != nil {
		t.Fatal(err)
	}
	if err := saveResults(path, "batch_1", []Result{{CustomID: "k1", Resp: llm.Response{Text: strings.Repeat("answer ", 100)}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := loadState(path, "p"); err != nil {
		t.Fatalf("within the bound: %v", err)
	}
	if _, ok := loadResults(path, "batch_1"); !ok {
		t.Fatal("saved results within the bound were not read")
	}
	lower(t, &maxStateBytes, 64)
	lower(t, &maxResultsBytes, 64)
	_, err := loadState(path, "p")
	var se *StateError
	if !errors.As(err, &se) || se.Path != path || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("a state file over the bound: want a *StateError naming %s and the bound, got %T %v", path, err, err)
	}
	if _, ok := loadResults(path, "batch_1"); ok {
		t.Error("saved results over the bound were read")
	}
}
