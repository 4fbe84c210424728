package adaptive

import (
	"os"
	"strings"
	"testing"

	"github.com/impactbench/impactbench/internal/racemode"
)

// replayDesigns are the designs docs/statistics.md's replay table lists:
// the default, the default held to half and to 90 % of the worst case,
// and two fixed designs through the same machinery (every metric at 1 or
// 2 base scenarios).
var replayDesigns = []struct {
	label string
	o     Options
}{
	{"adaptive, default (Hope 1, ρ 8)", Options{}},
	{"adaptive, budget 50 %", Options{Budget: 0.5}},
	{"adaptive, budget 90 %", Options{Budget: 0.9}},
	{"fixed: 1 base scenario per metric", Options{Start: 1, Max: 1}},
	{"fixed: 2 base scenarios per metric", Options{Start: 2, Max: 2}},
}

// replaySize is the number of replays per design: 2 in the default run,
// 200 with IMPACTBENCH_ADAPTIVE_REPLAY=full (docs/statistics.md's table:
// `IMPACTBENCH_ADAPTIVE_REPLAY=full go test -run TestJulyReplay -v
// -timeout 4h ./internal/adaptive/`).
func replaySize() int {
	if os.Getenv("IMPACTBENCH_ADAPTIVE_REPLAY") == "full" {
		return 200
	}
	return 2
}

// TestJulyReplay replays the published July 2026 verdicts (360 metrics ×
// 3 base scenarios × 2 ages, 16 models) through each design in random
// scenario orders, as if they were being collected, and holds the
// documented figures: the default design states ≥ 90 % of what the full
// study states and nothing against it, at (nearly) all of its
// conversations; the designs that spend half or less state far less; no
// design states a conclusion against the full study.
func TestJulyReplay(t *testing.T) {
	racemode.SkipHeavy(t)
	s := july(t)
	n := replaySize()
	var table []string
	for i, d := range replayDesigns {
		if n < 200 && i > 1 {
			continue // the default run checks the default and the 50 % budget
		}
		runs, err := Replay(t.Context(), s, ReplayOptions{Design: d.o, Replays: n, Seed: 2026, Workers: 2})
		if err != nil {
			t.Fatal(err)
		}
		sum := Summarize(runs)
		table = append(table, sum.Row(d.label))
		t.Logf("%s: cost of the added rows: %s", d.label, sum.CostLine())
		t.Logf("%s: conversations per conclusion %.1f (full study %.1f); different-calls kept %.1f–%.1f %%, grades %.1f–%.1f %%",
			d.label, sum.PerConclusion, sum.FullPerConclusion, 100*sum.DifferentKept.Min, 100*sum.DifferentKept.Max, 100*sum.GradesKept.Min, 100*sum.GradesKept.Max)
		checkReplay(t, d.label, d.o, sum)
	}
	t.Logf("replays of the July 2026 study (%d per design, seed 2026):\n%s\n%s", n, TableHeader, strings.Join(table, "\n"))
}

// checkReplay holds the figures docs/statistics.md states for a design.
func checkReplay(t *testing.T, label string, o Options, s Summary) {
	t.Helper()
	if s.NoAgainst < 0.95 {
		t.Errorf("%s: only %.1f %% of replays state nothing against the full study", label, 100*s.NoAgainst)
	}
	switch o {
	case Options{}:
		if s.Kept.Min < 0.9 || s.Share.Min < 0.95 {
			t.Errorf("%s: kept %.3f at least, share %.3f at least; documented ≥ 0.90 of the conclusions at ≥ 95 %% of the conversations", label, s.Kept.Min, s.Share.Min)
		}
	case Options{Budget: 0.5}:
		if s.Share.Max > 0.5+1e-9 || s.Kept.Max > 0.4 {
			t.Errorf("%s: share up to %.3f, kept up to %.3f; documented at most half the conversations, about a third of the conclusions", label, s.Share.Max, s.Kept.Max)
		}
	}
	if s.Goal {
		t.Errorf("%s meets the issue's goal: update docs/statistics.md, which says no design does", label)
	}
}
