package runner

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/impactbench/impactbench/internal/work"
)

// TestRunnerSweepsTempsOfAKilledRun: opening a benchmark (lock taken)
// removes what a killed atomic write left in the run directories, as the
// README promises; a dry run (no lock) leaves them.
func TestRunnerSweepsTempsOfAKilledRun(t *testing.T) {
	cfg, bench := project(t)
	stale := filepath.Join(bench, "runs", "offline-careful", ".conversations.json.tmp-42")
	if err := os.MkdirAll(filepath.Dir(stale), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(stale, []byte("half"), 0o644); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-2 * work.StaleTempAge)
	if err := os.Chtimes(stale, old, old); err != nil {
		t.Fatal(err)
	}
	newRunner(t, cfg, bench, Options{DryRun: true}).Close()
	if _, err := os.Stat(stale); err != nil {
		t.Fatalf("a dry run removed %s: %v", stale, err)
	}
	newRunner(t, cfg, bench, Options{}).Close()
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("%s is still there after a run opened the benchmark (%v)", stale, err)
	}
}
