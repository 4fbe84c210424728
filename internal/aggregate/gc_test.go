package aggregate

import (
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"

	"github.com/impactbench/impactbench/internal/layout"
)

// gcPercent reads GOGC without changing it.
func gcPercent() int {
	v := debug.SetGCPercent(100)
	debug.SetGCPercent(v)
	return v
}

// Overlapping aggregates (a study's benchmarks) must leave GOGC as they
// found it whichever ends first: each restoring the value it saw left the
// tight 40 behind for the rest of the run when they ended in their start
// order.
func TestTightenGCOverlapping(t *testing.T) {
	for _, order := range []string{"first-started ends first", "last-started ends first"} {
		t.Run(order, func(t *testing.T) {
			defer debug.SetGCPercent(debug.SetGCPercent(123))
			a := tightenGC()
			b := tightenGC()
			if got := gcPercent(); got != aggregateGCPercent {
				t.Fatalf("GOGC while two aggregates run = %d, want %d", got, aggregateGCPercent)
			}
			first, last := a, b
			if order == "last-started ends first" {
				first, last = b, a
			}
			first()
			first() // a second call gives back nothing more
			if got := gcPercent(); got != aggregateGCPercent {
				t.Fatalf("GOGC after one of two ended = %d, want %d", got, aggregateGCPercent)
			}
			last()
			if got := gcPercent(); got != 123 {
				t.Fatalf("GOGC after both ended = %d, want the 123 they found", got)
			}
		})
	}
}

// Only a benchmark whose scores are big gets the tight GOGC: the
// threshold counts every target's scores.json and nothing else.
func TestScoresSizeCountsEveryTarget(t *testing.T) {
	root := t.TempDir()
	var dirs []string
	for i, size := range []int64{tightAbove / 2, tightAbove/2 - 1, 0} {
		d := filepath.Join(root, "runs", string(rune('a'+i)))
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if size > 0 {
			if err := os.WriteFile(layout.Run{Dir: d}.Scores(), make([]byte, size), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		// A big file beside scores.json does not count.
		if err := os.WriteFile(layout.Run{Dir: d}.Conversations(), make([]byte, tightAbove), 0o644); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, d)
	}
	if got := scoresSize(dirs); got != tightAbove-1 {
		t.Fatalf("scoresSize = %d, want %d", got, tightAbove-1)
	}
	if err := os.WriteFile(layout.Run{Dir: dirs[2]}.Scores(), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := scoresSize(dirs); got < tightAbove {
		t.Fatalf("scoresSize = %d, want at least %d once the third target has scores", got, tightAbove)
	}
}
