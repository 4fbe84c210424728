package adaptive

import (
	"bytes"
	"flag"
	"math"
	"os"
	"reflect"
	"testing"

	"github.com/impactbench/impactbench/internal/racemode"
)

var updateStops = flag.Bool("update-stops", false, "rewrite july2026_stops.json from 200 replays of the July 2026 study")

const (
	stopsFile       = "july2026_stops.json"
	stopsReplays    = 200
	stopsSeed       = 2026
	stopsRegenerate = "go test -run TestJulyStopTable -update-stops -timeout 1h ./internal/adaptive/ (compare only: IMPACTBENCH_ADAPTIVE_REPLAY=full go test -run TestJulyStopTable ./internal/adaptive/)"
	stopsSource     = "the published July 2026 study: 16 models, 360 metrics × 3 base scenarios × 2 ages, 31,236 verdicts; 200 replays in random scenario orders, seed 2026, default design"
)

// TestJulyStopTable regenerates the committed stop table the dry run's
// expected bill rests on and compares it: every replay's stop counts are
// those of Replay over the July 2026 study (seed 2026, default design).
// The default run recomputes the first 2 replays (each replay's order
// depends only on the seed and its index); IMPACTBENCH_ADAPTIVE_REPLAY=full
// all 200; -update-stops rewrites the file.
func TestJulyStopTable(t *testing.T) {
	racemode.SkipHeavy(t)
	n := replaySize()
	if *updateStops {
		n = stopsReplays
	}
	runs, err := Replay(t.Context(), july(t), ReplayOptions{Replays: n, Seed: stopsSeed, Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	got, err := NewStopTable(runs, Options{}, stopsSeed, "July 2026", stopsSource, stopsRegenerate)
	if err != nil {
		t.Fatal(err)
	}
	if *updateStops {
		b, err := got.JSON()
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(stopsFile, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := JulyStops()
	if err != nil {
		t.Fatal(err)
	}
	if b, err := want.JSON(); err != nil || !bytes.Equal(b, julyStops) {
		t.Errorf("%s is not as StopTable.JSON writes it (%v); rerun %s", stopsFile, err, stopsRegenerate)
	}
	if len(want.Runs) != stopsReplays || want.Seed != stopsSeed || want.Metrics != 360 || want.Design != got.Design {
		t.Errorf("committed table: %d replays, seed %d, %d metrics, design %+v; want %d, %d, 360, %+v", len(want.Runs), want.Seed, want.Metrics, want.Design, stopsReplays, stopsSeed, got.Design)
	}
	if !reflect.DeepEqual(want.Runs[:n], got.Runs) {
		t.Errorf("the committed table's first %d replays differ from Replay's: committed %v, now %v; rerun %s", n, want.Runs[:n], got.Runs, stopsRegenerate)
	}
}

// TestJulyStopsAsDocumented: docs/statistics.md's figures of the committed
// table: July's metrics went to 2.996 base scenarios on average (2.986 to
// 3.000 over the replays), so the expected bill is 99.9 % of the worst case.
func TestJulyStopsAsDocumented(t *testing.T) {
	table, err := JulyStops()
	if err != nil {
		t.Fatal(err)
	}
	g := quantiles(table.growth())
	mean, lo, hi := 1+2*g.Mean, 1+2*g.Min, 1+2*g.Max
	if math.Round(mean*1000) != 2996 || math.Round(lo*1000) != 2986 || math.Round(hi*1000) != 3000 {
		t.Errorf("the July table's metrics went to %.3f base scenarios on average (%.3f–%.3f); docs/statistics.md says 2.996 (2.986–3.000)", mean, lo, hi)
	}
	b, err := Estimate(julyPlan(), Options{}, Evidence{Table: table}, Prices{})
	if err != nil {
		t.Fatal(err)
	}
	if share := b.Expected / float64(b.Worst); math.Round(share*1000) != 999 {
		t.Errorf("expected bill %.4f of the worst case; docs/statistics.md says 99.9 %%", share)
	}
}
