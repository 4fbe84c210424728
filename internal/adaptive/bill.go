package adaptive

import (
	"fmt"
	"io"
	"math"

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
// every metric reaches Max (Worst, the most the design can spend), and if
// the study decides like the replays of an earlier one (Expected, their
// mean, and P95, their 95th percentile; From says which). SoFar, when the
// study already has rows, is the same from its own last look. Every model
// runs every metric's scenarios.
type Bill struct {
	First           int     `json:"first"`
	Worst           int     `json:"worst"`
	Expected        float64 `json:"expected"`
	P95             float64 `json:"p95"`
	From            string  `json:"expected_from"`
	FirstDollars    float64 `json:"first_usd"`
	WorstDollars    float64 `json:"worst_usd"`
	ExpectedDollars float64 `json:"expected_usd"`
	P95Dollars      float64 `json:"p95_usd"`
	SoFar           *SoFar  `json:"so_far,omitempty"`
}

// SoFar is the bill from a study's own rounds: where its last look
// stands, the conversations it has judged, those it will have after the
// next round (Next: every metric at the base scenarios the look asked
// for), and the expected, 95th-percentile and worst-case totals from
// here (a metric keeps at least what it has been asked for; the rest
// grows as the replays' metrics did; stopped, all four are Next).
type SoFar struct {
	Look            int     `json:"look"`
	Looks           int     `json:"looks"`
	Stopped         bool    `json:"stopped"`
	Growing         int     `json:"growing"` // metrics the look grows
	Judged          int     `json:"judged"`
	Next            int     `json:"next"`
	Expected        float64 `json:"expected"`
	P95             float64 `json:"p95"`
	Worst           int     `json:"worst"`
	NextDollars     float64 `json:"next_usd"`
	ExpectedDollars float64 `json:"expected_usd"`
	P95Dollars      float64 `json:"p95_usd"`
	WorstDollars    float64 `json:"worst_usd"`
}

// Evidence is what the expected bill rests on: Table, the stop counts of
// replays of an earlier study (JulyStops; nil: none, the expected bill is
// the worst case); SoFar, the study's own last Look when it has rows
// (nil, or a Look before the first round's rows: none).
type Evidence struct {
	Table *StopTable
	SoFar *Round
}

// Estimate is the bill of plan p under the design's options and the
// evidence ev: a replay whose metrics went a share g of the way from its
// Start to its Max stands for this study's metrics going g of the way
// from o.Start to o.Max.
func Estimate(p Plan, o Options, ev Evidence, prices Prices) (Bill, error) {
	o, err := o.withDefaults()
	if err != nil {
		return Bill{}, err
	}
	if p.Metrics < 0 || p.PerScenario < 1 || len(p.Models) == 0 {
		return Bill{}, &OptionError{"Plan", fmt.Sprintf("%d metrics, %d models, %d per scenario", p.Metrics, len(p.Models), p.PerScenario), "metrics ≥ 0, a model, and at least 1 conversation per base scenario"}
	}
	growth := []float64{1} // no replays: every metric at Max
	b := Bill{First: p.conversations(float64(p.Metrics * o.Start)), Worst: p.conversations(float64(p.Metrics * o.Max)), From: "no replays of an earlier study: the worst case"}
	if ev.Table != nil {
		if err := ev.Table.check(); err != nil {
			return Bill{}, err
		}
		growth = ev.Table.growth()
		b.From = fmt.Sprintf("%d replays of %s (%s; the mean and 95th percentile of how far from --adaptive-start to --adaptive-max its metrics went, applied to this study's)", len(growth), ev.Table.Name, ev.Table.Source)
	}
	totals := make([]float64, len(growth))
	for i, g := range growth {
		totals[i] = float64(p.conversations(float64(p.Metrics) * (float64(o.Start) + g*float64(o.Max-o.Start))))
	}
	q := quantiles(totals)
	b.Expected, b.P95 = q.Mean, q.P95
	b.FirstDollars, b.WorstDollars = p.dollars(float64(b.First), prices), p.dollars(float64(b.Worst), prices)
	b.ExpectedDollars, b.P95Dollars = p.dollars(b.Expected, prices), p.dollars(b.P95, prices)
	if r := ev.SoFar; r != nil && r.Look >= 1 {
		b.SoFar = soFar(p, o, r, growth, prices)
	}
	return b, nil
}

// soFar is the bill from the study's own look r: each metric at least at
// what r asked for, the rest growing as the replays' did.
func soFar(p Plan, o Options, r *Round, growth []float64, prices Prices) *SoFar {
	next := 0
	for _, t := range r.Targets {
		next += t.Want
	}
	s := &SoFar{Look: r.Look, Looks: r.Looks, Stopped: r.Stop, Judged: r.Conversations, Next: p.conversations(float64(next))}
	for _, t := range r.Targets {
		if t.Want > t.Have {
			s.Growing++
		}
	}
	s.Expected, s.P95, s.Worst = float64(s.Next), float64(s.Next), s.Next
	if !r.Stop {
		totals := make([]float64, len(growth))
		for i, g := range growth {
			for _, t := range r.Targets {
				totals[i] += max(float64(t.Want), float64(o.Start)+g*float64(o.Max-o.Start))
			}
			totals[i] *= float64(len(p.Models) * p.PerScenario)
		}
		q := quantiles(totals)
		s.Expected, s.P95, s.Worst = q.Mean, q.P95, p.conversations(float64(len(r.Targets)*o.Max))
	}
	s.NextDollars, s.WorstDollars = p.dollars(float64(s.Next), prices), p.dollars(float64(s.Worst), prices)
	s.ExpectedDollars, s.P95Dollars = p.dollars(s.Expected, prices), p.dollars(s.P95, prices)
	return s
}

// conversations is the conversations of bases base scenarios (summed over
// the metrics) for every model.
func (p Plan) conversations(bases float64) int {
	return int(math.Round(bases * float64(p.PerScenario) * float64(len(p.Models))))
}

// dollars prices conversations spread evenly over the models.
func (p Plan) dollars(conversations float64, prices Prices) float64 {
	sum := 0.0
	for _, m := range p.Models {
		sum += conversations / float64(len(p.Models)) * prices.of(m)
	}
	return sum
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
// expected bill and its 95th percentile (and where they come from), the
// worst case, and the study's own rounds so far, in conversations and
// dollars.
func (b Bill) WriteText(w io.Writer) error {
	line := func(label string, conv, dollars float64) string {
		return fmt.Sprintf("  %-38s %9.0f conversations  $%.2f\n", label, conv, dollars)
	}
	s := "adaptive study bill:\n" +
		line("every metric stops after round 1:", float64(b.First), b.FirstDollars) +
		line("expected:", b.Expected, b.ExpectedDollars) +
		line("95th percentile:", b.P95, b.P95Dollars) +
		line("worst case (every metric at Max):", float64(b.Worst), b.WorstDollars) +
		"  expected from: " + b.From + "\n"
	if f := b.SoFar; f != nil {
		state := fmt.Sprintf("%d metric(s) still growing", f.Growing)
		if f.Stopped {
			state = "stopped: nothing more to run"
		}
		s += fmt.Sprintf("this study so far: look %d of %d, %d conversations judged, %s\n", f.Look, f.Looks, f.Judged, state) +
			line("after the next round:", float64(f.Next), f.NextDollars) +
			line("expected from here:", f.Expected, f.ExpectedDollars) +
			line("95th percentile from here:", f.P95, f.P95Dollars) +
			line("worst case from here:", float64(f.Worst), f.WorstDollars)
	}
	_, err := io.WriteString(w, s)
	return err
}
