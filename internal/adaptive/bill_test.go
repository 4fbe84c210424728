package adaptive

import (
	"errors"
	"math"
	"strings"
	"testing"
)

// julyPlan is a July-sized study: 360 metrics, 16 models, 2 age variants
// × 1 sample per base scenario.
func julyPlan() Plan {
	models := make([]string, 16)
	for i := range models {
		models[i] = string(rune('a' + i))
	}
	return Plan{Metrics: 360, Models: models, PerScenario: 2}
}

// TestEstimateBill: the dry-run bill of a July-sized study: 11,520
// conversations if every metric stops after the first round, 34,560 at
// most (every metric at 3); without replays the expected bill is the
// worst case; with them, their mean and 95th percentile of how far the
// metrics went from Start to Max, carried over to this study's Start and
// Max; prices by model.
func TestEstimateBill(t *testing.T) {
	plan := julyPlan()
	prices := Prices{PerModel: map[string]float64{"a": 0.5}, Default: 0.02}
	b, err := Estimate(plan, Options{}, Evidence{}, prices)
	if err != nil {
		t.Fatal(err)
	}
	perModelWorst := 360.0 * 3 * 2
	wantWorst := perModelWorst*0.5 + 15*perModelWorst*0.02
	if b.First != 11520 || b.Worst != 34560 || b.Expected != 34560 || b.P95 != 34560 || math.Abs(b.WorstDollars-wantWorst) > 1e-9 || math.Abs(b.FirstDollars-wantWorst/3) > 1e-9 {
		t.Errorf("bill %+v; want first 11,520, worst and expected 34,560, worst $%.2f", b, wantWorst)
	}
	// One replay stopped every metric after round 1 (g = 0), one grew
	// half of them to 2 and the other half to 3 (g = 0.75), twenty at Max.
	runs := [][]int{{0, 360, 0, 0}, {0, 0, 180, 180}}
	for range 18 {
		runs = append(runs, []int{0, 0, 0, 360})
	}
	table := &StopTable{Name: "a pilot", Source: "test", Design: Options{Start: 1, Max: 3}, Metrics: 360, Runs: runs}
	b, err = Estimate(plan, Options{}, Evidence{Table: table}, prices)
	if err != nil {
		t.Fatal(err)
	}
	mean := (11520 + (11520 + 0.75*23040) + 18*34560) / 20.0
	if math.Abs(b.Expected-mean) > 1e-6 || b.P95 != 34560 || math.Abs(b.ExpectedDollars-wantWorst*mean/34560) > 1e-6 || !strings.Contains(b.From, "20 replays of a pilot") {
		t.Errorf("bill with replays %+v; want expected %.1f, p95 34,560", b, mean)
	}
	// Carried over to another design: g of the way from 2 to 6.
	b, err = Estimate(Plan{Metrics: 10, Models: []string{"a"}, PerScenario: 1}, Options{Start: 2, Max: 6}, Evidence{Table: &StopTable{Name: "p", Design: Options{Start: 1, Max: 3}, Metrics: 2, Runs: [][]int{{0, 0, 2, 0}}}}, prices)
	if err != nil || b.First != 20 || b.Worst != 60 || b.Expected != 40 {
		t.Errorf("another design: %+v, %v; want first 20, expected 40 (half way), worst 60", b, err)
	}
	var oe *OptionError
	if _, err := Estimate(Plan{Metrics: 3, PerScenario: 0, Models: plan.Models}, Options{}, Evidence{}, prices); !errors.As(err, &oe) {
		t.Errorf("a plan without conversations per scenario: %v", err)
	}
	if _, err := Estimate(plan, Options{Budget: 2}, Evidence{}, prices); !errors.As(err, &oe) || oe.Field != "Budget" {
		t.Errorf("budget 2: %v", err)
	}
	bad := &StopTable{Name: "bad", Design: Options{Start: 1, Max: 3}, Metrics: 360, Runs: [][]int{{0, 0, 0, 359}}}
	if _, err := Estimate(plan, Options{}, Evidence{Table: bad}, prices); err == nil {
		t.Error("a table whose replay does not count every metric was taken")
	}
}

// TestEstimateSoFar: from the study's own look, each metric keeps at least
// what the look asked for and the others grow as the replays' did; a
// stopped study's bill from here is what it has.
func TestEstimateSoFar(t *testing.T) {
	plan := Plan{Metrics: 4, Models: []string{"a", "b"}, PerScenario: 2}
	prices := Prices{Default: 1}
	r := &Round{Look: 2, Looks: 3, Conversations: 40, Targets: []Target{
		{Have: 2, Want: 3}, {Have: 2, Want: 3}, {Have: 2, Want: 2}, {Have: 1, Want: 1},
	}}
	table := &StopTable{Name: "p", Design: Options{Start: 1, Max: 3}, Metrics: 2, Runs: [][]int{{0, 2, 0, 0}, {0, 0, 2, 0}}}
	b, err := Estimate(plan, Options{}, Evidence{Table: table, SoFar: r}, prices)
	if err != nil {
		t.Fatal(err)
	}
	f := b.SoFar
	// Replay 1 (g 0): 3+3+2+1 = 9 bases; replay 2 (g 0.5, 2 each): 3+3+2+2 = 10; × 2 models × 2.
	if f == nil || f.Next != 36 || f.Growing != 2 || f.Judged != 40 || math.Abs(f.Expected-38) > 1e-9 || f.P95 != 40 || f.Worst != 48 || f.ExpectedDollars != 38 {
		t.Fatalf("so far %+v; want next 36, expected 38, p95 40, worst 48", f)
	}
	r.Stop = true
	b, _ = Estimate(plan, Options{}, Evidence{Table: table, SoFar: r}, prices)
	if f := b.SoFar; f.Expected != 36 || f.P95 != 36 || f.Worst != 36 || !f.Stopped {
		t.Errorf("stopped: %+v; want 36 everywhere", f)
	}
	if b, _ := Estimate(plan, Options{}, Evidence{SoFar: &Round{Look: 0}}, prices); b.SoFar != nil {
		t.Error("a look before the first round's rows gave a bill so far")
	}
}

// TestBillText: the dry run prints the three figures, where the expected
// one comes from, and the study's own rounds.
func TestBillText(t *testing.T) {
	table := &StopTable{Name: "July 2026", Source: "the published study", Design: Options{Start: 1, Max: 3}, Metrics: 360, Runs: [][]int{{0, 0, 0, 360}}}
	r := &Round{Look: 1, Looks: 3, Conversations: 11520, Targets: make([]Target, 360)}
	for i := range r.Targets {
		r.Targets[i] = Target{Have: 1, Want: 2}
	}
	b, err := Estimate(julyPlan(), Options{}, Evidence{Table: table, SoFar: r}, Prices{Default: 0.05})
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	if err := b.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	flat := strings.Join(strings.Fields(text.String()), " ")
	for _, want := range []string{"every metric stops after round 1: 11520 conversations $576.00", "expected: 34560 conversations $1728.00",
		"95th percentile: 34560 conversations", "worst case (every metric at Max): 34560 conversations $1728.00",
		"expected from: 1 replays of July 2026 (the published study;", "this study so far: look 1 of 3, 11520 conversations judged, 360 metric(s) still growing",
		"after the next round: 23040 conversations $1152.00", "expected from here: 34560", "worst case from here: 34560"} {
		if !strings.Contains(flat, want) {
			t.Errorf("bill text lacks %q:\n%s", want, text.String())
		}
	}
}
