package plan

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"

	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/fault"
	"github.com/impactbench/impactbench/internal/layout"
	"github.com/impactbench/impactbench/internal/results"
	"github.com/impactbench/impactbench/internal/stats"
)

// Planning defaults (`impactbench plan`, and the precision lines of
// --dry-run): a rate of 0.5 is the widest case, an ICC of 0.3 a moderate
// clustering of a scenario's conversations, ±10 points a useful precision.
const (
	DefaultPlanICC       = 0.3
	DefaultPlanRate      = 0.5
	DefaultPlanHalfWidth = 0.10
	planConf             = 0.95
)

// PrecisionOptions are the assumptions of a precision plan.
type PrecisionOptions struct {
	// ICC is the assumed intra-class correlation, used for every track the
	// pilot gives none for.
	ICC float64
	// Rate is the assumed pass rate (0.5: the widest interval).
	Rate float64
	// HalfWidth is the target half-width for ScenariosNeeded.
	HalfWidth float64
	// Pilot is a results.json (or a benchmark directory holding one) whose
	// track ICCs (positive_ci.icc, negative_ci.icc) replace the assumed
	// ICC; "" uses none. PilotOptional makes a missing file not an error
	// (the dry run looks at the benchmark's own results.json).
	Pilot         string
	PilotOptional bool
}

// PrecisionPlan is the expected interval half-width of a study design and
// the number of base scenarios a target half-width needs.
type PrecisionPlan struct {
	ScenariosPerMetric int     `json:"scenarios_per_metric"`
	Variants           int     `json:"demographic_variants"`
	Samples            int     `json:"num_samples"`
	M                  int     `json:"conversations_per_base_scenario"`
	Rate               float64 `json:"rate"`
	TargetHalfWidth    float64 `json:"target_half_width"`
	Conf               float64 `json:"conf"`
	AssumedICC         float64 `json:"assumed_icc"`
	Pilot              string  `json:"pilot,omitempty"`
	// Scopes: the positive and negative tracks (when benchmark.yaml has
	// metrics of that type) and one metric.
	Scopes []PrecisionScope `json:"scopes"`
	Notes  []string         `json:"notes,omitempty"`
}

// PrecisionScope is one rate's plan: G base scenarios of M conversations.
type PrecisionScope struct {
	Scope     string  `json:"scope"`
	Metrics   int     `json:"metrics"`
	G         int     `json:"base_scenarios"`
	ICC       float64 `json:"icc"`
	ICCSource string  `json:"icc_source"`
	// HalfWidth is stats.ExpectedHalfWidth (+Inf below 2 scenarios: JSON
	// null via HalfWidthOK false).
	HalfWidth   float64 `json:"-"`
	HalfWidthOK bool    `json:"-"`
	// Needed is stats.ScenariosNeeded for the target (0: more than a
	// million); PerMetric the scenarios_per_metric that gives it.
	Needed    int `json:"base_scenarios_needed"`
	PerMetric int `json:"scenarios_per_metric_needed"`
}

// MarshalJSON writes HalfWidth as null when it is infinite.
func (s PrecisionScope) MarshalJSON() ([]byte, error) {
	type plain PrecisionScope
	var hw *float64
	if s.HalfWidthOK {
		hw = &s.HalfWidth
	}
	return json.Marshal(struct {
		plain
		HalfWidth *float64 `json:"expected_half_width"`
	}{plain(s), hw})
}

// PlanPrecision computes the precision plan of cfg's design for bench
// (nil or without metrics: only the one-metric scope). benchDir locates a
// relative pilot path and the dry run's own results.json.
func PlanPrecision(cfg *config.Config, bench *config.Benchmark, opts PrecisionOptions) (*PrecisionPlan, error) {
	if err := checkPrecisionOptions(opts); err != nil {
		return nil, err
	}
	p := &PrecisionPlan{
		ScenariosPerMetric: cfg.Generation.ScenariosPerMetric,
		Variants:           cfg.Demographics.Size(),
		Samples:            max(cfg.Generation.NumSamples, 1),
		Rate:               opts.Rate, TargetHalfWidth: opts.HalfWidth, Conf: planConf, AssumedICC: opts.ICC,
	}
	p.M = p.Variants * p.Samples
	pilot, err := pilotICCs(opts)
	if err != nil {
		return nil, err
	}
	pilot.planDesign(p.Variants, p.Samples)
	if pilot != nil {
		p.Pilot = pilot.path
		if pilot.clusters < stats.FewClusters {
			p.Notes = append(p.Notes, fmt.Sprintf("the pilot's ICC rests on as few as %d base scenarios and is a rough guess; its 90%% upper bound is %.2f: --icc %.2f plans for the worst plausible case",
				pilot.clusters, pilot.upper, pilot.upper))
		}
	}
	var nPos, nNeg int
	if bench != nil {
		for _, m := range bench.Metrics {
			switch m.Type {
			case config.Positive:
				nPos++
			case config.Negative:
				nNeg++
			}
		}
	}
	if nPos+nNeg == 0 {
		p.Notes = append(p.Notes, "benchmark.yaml has no metrics yet: only the one-metric line is shown; a track's base scenarios are scenarios_per_metric × its metrics")
	}
	for _, tr := range []struct {
		name    string
		metrics int
	}{{"positive", nPos}, {"negative", nNeg}} {
		if tr.metrics > 0 {
			icc, src := p.iccFor(pilot, tr.name)
			p.Scopes = append(p.Scopes, p.scope(tr.name+" track", tr.metrics, icc, src))
		}
	}
	icc, src := p.iccFor(pilot, "")
	p.Scopes = append(p.Scopes, p.scope("one metric", 1, icc, src))
	return p, nil
}

func checkPrecisionOptions(o PrecisionOptions) error {
	switch {
	case !(o.ICC >= 0 && o.ICC <= 1):
		return fault.Inputf("--icc %v: an intra-class correlation is between 0 and 1", o.ICC)
	case !(o.Rate > 0 && o.Rate < 1):
		return fault.Inputf("--rate %v: the assumed pass rate must be between 0 and 1 (exclusive)", o.Rate)
	case !(o.HalfWidth > 0 && o.HalfWidth < 1):
		return fault.Inputf("--half-width %v: the target half-width is a fraction between 0 and 1 (0.10 = ±10 points)", o.HalfWidth)
	}
	return nil
}

// scope plans one rate over metrics × scenarios_per_metric base scenarios.
func (p *PrecisionPlan) scope(name string, metrics int, icc float64, src string) PrecisionScope {
	s := PrecisionScope{Scope: name, Metrics: metrics, G: metrics * p.ScenariosPerMetric, ICC: icc, ICCSource: src}
	m := float64(p.M)
	s.HalfWidth = stats.ExpectedHalfWidth(s.G, m, p.Rate, icc, p.Conf)
	s.HalfWidthOK = !math.IsInf(s.HalfWidth, 0)
	s.Needed = stats.ScenariosNeeded(p.TargetHalfWidth, m, p.Rate, icc, p.Conf)
	if s.Needed > 0 {
		s.PerMetric = (s.Needed + metrics - 1) / metrics
	}
	return s
}

// iccFor is the pilot's ICC for a track ("" = either: the larger), or the
// assumed one.
func (p *PrecisionPlan) iccFor(pilot *pilot, track string) (float64, string) {
	if pilot != nil {
		icc, ok := pilot.icc[track]
		if track == "" {
			ip, okp := pilot.icc["positive"]
			in, okn := pilot.icc["negative"]
			icc, ok = max(ip, in), okp || okn
		}
		if ok && track == "" {
			return icc, "pilot"
		}
		if ok {
			return icc, pilot.source[track]
		}
	}
	return p.AssumedICC, "assumed"
}

// pilot holds the largest ICC per track over a results.json's models,
// with the fewest base scenarios and the largest upper bound behind them.
type pilot struct {
	path     string
	res      []results.ModelResult
	icc      map[string]float64
	source   map[string]string // "pilot", or "pilot variance" when the components gave it
	upper    float64
	clusters int
}

// planDesign replaces a track's ICC with the one its variance components
// give for the planned design (variants × samples per base scenario),
// when the pilot's results.json has them: the pilot's own ICC is that of
// its design, which may split scenarios, variants and samples otherwise
// (more samples of a scenario narrow little when the scenario carries the
// variance).
func (pl *pilot) planDesign(variants, samples int) {
	if pl == nil {
		return
	}
	for _, track := range []string{"positive", "negative"} {
		v, ok := results.PilotComponents(pl.res, track)
		if !ok {
			continue
		}
		if icc := v.EffectiveICC(variants, samples); !math.IsNaN(icc) {
			pl.icc[track], pl.source[track] = icc, "pilot variance"
		}
	}
}

// pilotICCs reads the pilot results.json. A track whose every model's ICC
// is null (e.g. every verdict the same) falls back to the assumed ICC.
func pilotICCs(opts PrecisionOptions) (*pilot, error) {
	if opts.Pilot == "" {
		return nil, nil
	}
	path := opts.Pilot
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		path = layout.Bench{Dir: path}.Results()
	}
	res, err := results.ReadResults(path)
	if err != nil {
		if opts.PilotOptional && errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, fault.Inputf("pilot %s: %v", path, err)
	}
	pl := &pilot{path: path, res: res, icc: map[string]float64{}, source: map[string]string{"positive": "pilot", "negative": "pilot"}}
	take := func(track string, ci *results.ClusterCI) {
		if ci == nil || ci.ICC == nil {
			return
		}
		if old, ok := pl.icc[track]; !ok || *ci.ICC > old {
			pl.icc[track] = *ci.ICC
		}
		if ci.ICCUpper != nil {
			pl.upper = max(pl.upper, *ci.ICCUpper)
		}
		if pl.clusters == 0 || ci.Clusters < pl.clusters {
			pl.clusters = ci.Clusters
		}
	}
	for _, r := range res {
		take("positive", r.PositiveCI)
		take("negative", r.NegativeCI)
	}
	if len(pl.icc) == 0 {
		if opts.PilotOptional {
			return nil, nil
		}
		return nil, fault.Inputf("pilot %s has no track ICC (positive_ci.icc / negative_ci.icc): run aggregate on it again, or give --icc", path)
	}
	return pl, nil
}

// DryRunPrecision is the plan --dry-run prints: the default assumptions,
// with the benchmark's own results.json (resultsPath) as the pilot when it
// has track ICCs (a previous run of the same design).
func DryRunPrecision(cfg *config.Config, bench *config.Benchmark, resultsPath string) *PrecisionPlan {
	opts := PrecisionOptions{ICC: DefaultPlanICC, Rate: DefaultPlanRate, HalfWidth: DefaultPlanHalfWidth,
		Pilot: resultsPath, PilotOptional: true}
	p, err := PlanPrecision(cfg, bench, opts)
	if err != nil {
		opts.Pilot = ""
		p, _ = PlanPrecision(cfg, bench, opts) // the defaults are valid
		p.Notes = append(p.Notes, "not used as a pilot: "+err.Error())
	}
	return p
}
