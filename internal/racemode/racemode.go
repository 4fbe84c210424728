// Package racemode tells a test whether the race detector is on, so the
// few tests that are long single-threaded computations (Monte Carlo
// coverage grids, replays of the published study) can leave the -race run
// to a run without it: the detector finds nothing in code that shares no
// memory between goroutines, and it makes such a test 5–10× slower.
// .ci/run runs them in a second step without -race, so they still guard
// every change.
package racemode

import (
	"os"
	"testing"
)

// EnvRunAnyway makes SkipHeavy run the test under -race too.
const EnvRunAnyway = "IMPACTBENCH_HEAVY_UNDER_RACE"

// SkipHeavy skips a long single-threaded test when the race detector is
// on (unless EnvRunAnyway is set); .ci/run runs it without -race.
func SkipHeavy(t testing.TB) {
	t.Helper()
	if Enabled && os.Getenv(EnvRunAnyway) == "" {
		t.Skipf("a long single-threaded computation: run without -race (.ci/run's second step), or set %s=1", EnvRunAnyway)
	}
}
