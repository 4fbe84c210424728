package adaptive

import (
	"errors"
	"math"
	"strings"
	"testing"
)

// TestEstimateBill: the dry-run bill of a July-sized study (360 metrics,
// 16 models, 2 age variants × 1 sample per base scenario): 11,520
// conversations if every metric stops after the first round, 34,560 at
// most (every metric at 3); without a pilot the expected bill is the worst
// case; with one, the pilot replays' mean share of it; prices by model.
func TestEstimateBill(t *testing.T) {
	models := make([]string, 16)
	for i := range models {
		models[i] = string(rune('a' + i))
	}
	plan := Plan{Metrics: 360, Models: models, PerScenario: 2}
	prices := Prices{PerModel: map[string]float64{"a": 0.5}, Default: 0.02}
	b, err := Estimate(plan, Options{}, nil, prices)
	if err != nil {
		t.Fatal(err)
	}
	perModelWorst := 360.0 * 3 * 2
	wantWorst := perModelWorst*0.5 + 15*perModelWorst*0.02
	if b.First != 11520 || b.Worst != 34560 || b.Expected != 34560 || math.Abs(b.WorstDollars-wantWorst) > 1e-9 || math.Abs(b.FirstDollars-wantWorst/3) > 1e-9 {
		t.Errorf("bill %+v; want first 11,520, worst and expected 34,560, worst $%.2f", b, wantWorst)
	}
	pilot := []ReplayRun{
		{Conversations: 40, Full: 100, Different: 10, Grades: 2},
		{Conversations: 60, Full: 100, Different: 20, Grades: 4},
	}
	b, err = Estimate(plan, Options{}, pilot, prices)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(b.Expected-0.5*34560) > 1e-9 || math.Abs(b.P95-0.6*34560) > 1e-9 || b.Conclusions != 18 ||
		math.Abs(b.DollarsPerConclusion-b.ExpectedDollars/18) > 1e-12 || math.Abs(b.ExpectedDollars-wantWorst/2) > 1e-9 {
		t.Errorf("bill with a pilot %+v", b)
	}
	var text strings.Builder
	if err := b.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	flat := strings.Join(strings.Fields(text.String()), " ")
	for _, want := range []string{"every metric stops after round 1: 11520 conversations $576.00", "expected: 17280 conversations $864.00",
		"95th percentile: 20736 conversations", "worst case (every metric at Max): 34560 conversations $1728.00",
		"2 replays of a pilot study", "the pilot stated 18 conclusions: $48.0000 per conclusion"} {
		if !strings.Contains(flat, want) {
			t.Errorf("bill text lacks %q:\n%s", want, text.String())
		}
	}
	var oe *OptionError
	if _, err := Estimate(Plan{Metrics: 3, PerScenario: 0, Models: models}, Options{}, nil, prices); !errors.As(err, &oe) {
		t.Errorf("a plan without conversations per scenario: %v", err)
	}
	if _, err := Estimate(plan, Options{Budget: 2}, nil, prices); !errors.As(err, &oe) || oe.Field != "Budget" {
		t.Errorf("budget 2: %v", err)
	}
}
