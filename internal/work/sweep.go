package work

import (
	"time"

	"github.com/impactbench/impactbench/internal/fsx"
)

// StaleTempAge is how old a temp file must be before a run removes it. Every
// impactbench writer that can run beside a locked run (report, export) uses
// a temp file for seconds at most, so a minute-old one is a crash's leftover.
const StaleTempAge = time.Minute

// sweepTemps removes temp files left behind by a process killed in the middle
// of an atomic write (temp file written, not yet renamed into place), at any
// depth under dirs (fsx.SweepTemps). They are never read, but they pile up
// over interrupted runs and a report's can be large. It runs with the
// benchmark lock held, so no other run is writing them; it only looks where
// the tool writes and only at its own temp names.
func sweepTemps(now time.Time, dirs ...string) (removed int) {
	return fsx.SweepTemps(now.Add(-StaleTempAge), dirs...)
}
