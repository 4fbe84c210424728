package plan

import (
	"path/filepath"
	"testing"

	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/results"
)

// A pilot whose variance components say where its variance comes from
// plans a new design with them: when the samples of a scenario carry the
// variance (not the scenario), the planned design with more samples per
// scenario gets a lower ICC than the pilot's own, and plan says the ICC
// came from the pilot's variance components.
func TestPlanUsesThePilotsVarianceComponents(t *testing.T) {
	f := func(x float64) *float64 { return &x }
	icc := 0.5
	split := &results.VarianceSplit{Scenarios: 30, Variants: 2,
		Scenario: results.VarianceComponent{Variance: f(0.01)}, Variant: results.VarianceComponent{Variance: f(0.0)},
		Residual: results.VarianceComponent{Variance: f(0.24)}}
	res := []results.ModelResult{{TargetModel: "m", Extended: true,
		PositiveCI:         &results.ClusterCI{ICC: &icc, Clusters: 30},
		VarianceComponents: &results.Variance{Positive: split}}}
	path := filepath.Join(t.TempDir(), "results.json")
	if err := results.WriteResults(path, res); err != nil {
		t.Fatal(err)
	}
	cfg := &config.Config{}
	cfg.Generation.ScenariosPerMetric, cfg.Generation.NumSamples = 10, 4
	bench := &config.Benchmark{Metrics: []config.Metric{{ID: "m01", Type: config.Positive}}}
	p, err := PlanPrecision(cfg, bench, PrecisionOptions{ICC: 0.3, Rate: 0.5, HalfWidth: 0.1, Pilot: path})
	if err != nil {
		t.Fatal(err)
	}
	pos := p.Scopes[0]
	if pos.ICCSource != "pilot variance" || pos.ICC >= icc || pos.ICC > 0.1 {
		t.Errorf("positive track planned with ICC %.3f (%s), want the components' (about 0.04 for 4 samples), not the pilot's %.2f", pos.ICC, pos.ICCSource, icc)
	}
}
