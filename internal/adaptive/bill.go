package adaptive

import (
	"fmt"
	"io"

	"github.com/impactbench/impactbench/internal/study"
)

// Plan is a study's size before anything runs.
type Plan struct {
	Metrics int      // the study's metrics
	Models  []string // every target, by id
	// PerScenario is the conversations one base scenario costs one model:
	// demographic variants × samples (July: 2 ages × 1 sample).
	PerScenario int
}

// Prices are the dollars a conversation costs (simulated user, target
// and judge), by model id; Default for a model not listed.
type Prices struct {
	PerModel map[string]float64
	Default  float64
}

func (p Prices) of(model string) float64 {
	if v, ok := p.PerModel[model]; ok {
		return v
	}
	return p.Default
}

// Bill is the dry-run estimate of an adaptive study: its conversations
// and dollars when every metric stops after the first round (First), when
// every metric reaches Max (Worst, the most the design can spend), and as
// a pilot's replays make likely (Expected, mean, and P95, the 95th
// percentile). Every model runs every metric's scenarios.
type Bill struct {
	First, Worst    int
	Expected, P95   float64
	Pilot           string // where Expected comes from
	FirstDollars    float64
	WorstDollars    float64
	ExpectedDollars float64
	P95Dollars      float64
	// Conclusions is the mean the pilot's replays stated (different-calls
	// and grades), DollarsPerConclusion the expected dollars over it (0
	// without a pilot).
	Conclusions          float64
	DollarsPerConclusion float64
}

// Estimate is the bill of plan p under the design's options. pilot are
// replays of an earlier study under the same options (Replay); their
// shares of the full study's conversations make Expected and P95. With
// no pilot, Expected and P95 are the worst case.
func Estimate(p Plan, o Options, pilot []ReplayRun, prices Prices) (Bill, error) {
	o, err := o.withDefaults()
	if err != nil {
		return Bill{}, err
	}
	if p.Metrics < 0 || p.PerScenario < 1 || len(p.Models) == 0 {
		return Bill{}, &OptionError{"Plan", fmt.Sprintf("%d metrics, %d models, %d per scenario", p.Metrics, len(p.Models), p.PerScenario), "metrics ≥ 0, a model, and at least 1 conversation per base scenario"}
	}
	perModel := func(scenarios int) int { return p.Metrics * scenarios * p.PerScenario }
	dollars := func(conversations float64) float64 {
		sum := 0.0
		for _, m := range p.Models {
			sum += conversations / float64(len(p.Models)) * prices.of(m)
		}
		return sum
	}
	b := Bill{First: perModel(o.Start) * len(p.Models), Worst: perModel(o.Max) * len(p.Models)}
	b.Expected, b.P95, b.Pilot = float64(b.Worst), float64(b.Worst), "no pilot: the worst case"
	if len(pilot) > 0 {
		s := Summarize(pilot)
		b.Expected, b.P95 = s.Share.Mean*float64(b.Worst), s.Share.P95*float64(b.Worst)
		b.Pilot = fmt.Sprintf("%d replays of a pilot study (mean and 95th percentile of their share of its conversations)", len(pilot))
		for _, r := range pilot {
			b.Conclusions += float64(r.Different+r.Grades) / float64(len(pilot))
		}
	}
	b.FirstDollars, b.WorstDollars = dollars(float64(b.First)), dollars(float64(b.Worst))
	b.ExpectedDollars, b.P95Dollars = dollars(b.Expected), dollars(b.P95)
	if b.Conclusions > 0 {
		b.DollarsPerConclusion = b.ExpectedDollars / b.Conclusions
	}
	return b, nil
}

// PlanOf is a loaded study's plan: its metrics and models, perScenario
// conversations per base scenario and model.
func PlanOf(s *study.Study, perScenario int) Plan {
	p := Plan{Metrics: len(s.Metrics), PerScenario: perScenario}
	for _, m := range s.Models {
		p.Models = append(p.Models, m.ID)
	}
	return p
}

// WriteText prints the bill as a dry run states it: the first round, the
// expected bill and its 95th percentile (and where they come from), and
// the worst case, in conversations and dollars.
func (b Bill) WriteText(w io.Writer) error {
	line := func(label string, conv, dollars float64) string {
		return fmt.Sprintf("  %-34s %9.0f conversations  $%.2f\n", label, conv, dollars)
	}
	s := "adaptive study bill:\n" +
		line("every metric stops after round 1:", float64(b.First), b.FirstDollars) +
		line("expected:", b.Expected, b.ExpectedDollars) +
		line("95th percentile:", b.P95, b.P95Dollars) +
		line("worst case (every metric at Max):", float64(b.Worst), b.WorstDollars) +
		"  expected from: " + b.Pilot + "\n"
	if b.Conclusions > 0 {
		s += fmt.Sprintf("  the pilot stated %.0f conclusions: $%.4f per conclusion expected\n", b.Conclusions, b.DollarsPerConclusion)
	}
	_, err := io.WriteString(w, s)
	return err
}
