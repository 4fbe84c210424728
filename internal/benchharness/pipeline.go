package benchharness

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/impactbench/impactbench/internal/layout"
)

// The pipeline preset measures a whole `run`: gen_metrics, gen_scenarios
// (base scenarios, then one demographic rewrite per variant), simulate,
// evaluate and aggregate, against issue 15's acceptance bound
//
//	max(critical path of generation + conversation + judge, calls × L / K)
//
// where the critical path is the longest chain of calls that wait on each
// other: gen_metrics → the metric's base scenarios → one rewrite (variants
// of one base do not depend on each other) → the conversation's 2T calls →
// its judge call. Nothing else is on the chain with the fake's answers:
// landmark checks are off by default, the user's replies are never empty
// (no re-asks), the judge's evidence is in the transcript (no second
// verdict), and every generator answer is valid (no regeneration).
//
// calls × L / K counts every call of the workload, generation and judging
// included, as if all ran K at a time. K is the conversations in flight
// (run.concurrency.simulate × targets), the only configured cap: the
// generation phases and evaluate keep the tool's default (auto), which
// admits at least K calls, so a pipeline that streams can reach the bound;
// a smaller cap on them (upstream's 10/20) would put the bound out of
// reach and make the ratio say nothing about the pipeline's shape. The
// same default lets those calls run beyond K, so a run can come in under
// calls × L / K by at most (generation + judge calls) × L / K; the floor
// no run can beat is the conversation calls alone at K in flight, after
// the first scenario's three generation calls and before the last judge
// call (pipelineBound.Floor, printed for reference). When simulate caps
// the conversations in flight at K (the preset's 64), conversations are
// whole jobs of 2T calls in a row: K of them at a time take
// ceil(conversations / K) rounds, so no run can beat the three generation
// calls, those rounds and the last judge call (pipelineBound.Rounds). That
// is the physical minimum the preset's ratio is taken against; calls × L
// / K, which no schedule under that cap can reach, is printed beside it.

// Defaults of the pipeline preset's shape.
const (
	DefaultMetrics            = 6
	DefaultScenariosPerMetric = 9
)

// DefaultDemographics is values per demographic axis: 2 × 2 = 4 variants.
var DefaultDemographics = []int{2, 2}

func (o Options) pipelineDefaults() Options {
	if o.Metrics <= 0 {
		o.Metrics = DefaultMetrics
	}
	if o.ScenariosPerMetric <= 0 {
		o.ScenariosPerMetric = DefaultScenariosPerMetric
	}
	if len(o.Demographics) == 0 {
		o.Demographics = append([]int(nil), DefaultDemographics...)
	}
	o.Conversations = o.shape().conversations()
	return o
}

func (o Options) checkPipeline() error {
	switch {
	case !o.Pipeline:
		return nil
	case o.Offline:
		return errors.New("benchharness: Pipeline needs the HTTP fake (its generator), not Offline")
	case o.SharedPool:
		return errors.New("benchharness: Pipeline needs one limit pool per model, not SharedPool")
	}
	for i, v := range o.Demographics {
		if v < 1 {
			return fmt.Errorf("benchharness: demographic axis %d has %d values, want at least 1", i+1, v)
		}
	}
	if n := o.shape().variants(); n > 99 {
		// Variant ids stay _vNN; the tool refuses more combinations anyway.
		return fmt.Errorf("benchharness: %d demographic variants per base scenario, want at most 99", n)
	}
	return nil
}

// pipelineShape is the pipeline preset's workload.
type pipelineShape struct {
	Metrics, PerMetric int
	Axes               []int // values per demographic axis
	Turns              int
	Samples, Targets   int
}

func (o Options) shape() pipelineShape {
	return pipelineShape{Metrics: o.Metrics, PerMetric: o.ScenariosPerMetric, Axes: o.Demographics,
		Turns: o.Turns, Samples: max(o.Samples, 1), Targets: max(o.Targets, 1)}
}

func (s pipelineShape) variants() int {
	n := 1
	for _, v := range s.Axes {
		n *= v
	}
	return n
}

func (s pipelineShape) bases() int { return s.Metrics * s.PerMetric }

// scenarios is the rows of scenarios.json.
func (s pipelineShape) scenarios() int { return s.bases() * s.variants() }

func (s pipelineShape) conversations() int { return s.scenarios() * s.Samples * s.Targets }

// genCalls is the generator calls when every answer is valid: one
// gen_metrics, one gen_scenarios per metric, one rewrite per variant.
func (s pipelineShape) genCalls() map[string]int {
	return map[string]int{genMetrics: 1, genScenarios: s.Metrics, genRewrite: s.scenarios()}
}

// pipelineLatency is the duration of one call per role.
type pipelineLatency struct {
	Gen, User, Target, Judge time.Duration
}

// pipelineBound is the two terms of the acceptance bound.
type pipelineBound struct {
	GenCalls, ConvCalls, JudgeCalls int
	ChainCalls                      int           // calls on the critical path
	CriticalPath                    time.Duration // their latencies in a row
	CallBound                       time.Duration // Σ calls × latency / K
	// Floor: 3 generation calls, the conversation calls K at a time, one
	// judge call.
	Floor time.Duration
	// Rounds: 3 generation calls, ceil(conversations / K) whole
	// conversations in a row, one judge call.
	Rounds time.Duration
}

// bound computes the critical path and calls × L / K for K calls in flight.
func (s pipelineShape) bound(lat pipelineLatency, k int) pipelineBound {
	var b pipelineBound
	for _, n := range s.genCalls() {
		b.GenCalls += n
	}
	conv := s.conversations()
	b.ConvCalls, b.JudgeCalls = conv*2*s.Turns, conv
	b.ChainCalls = 3 + 2*s.Turns + 1
	b.CriticalPath = 3*lat.Gen + time.Duration(s.Turns)*(lat.User+lat.Target) + lat.Judge
	if k > 0 {
		work := time.Duration(b.GenCalls)*lat.Gen + time.Duration(conv*s.Turns)*(lat.User+lat.Target) + time.Duration(conv)*lat.Judge
		b.CallBound = work / time.Duration(k)
		b.Floor = 3*lat.Gen + time.Duration(conv*s.Turns)*(lat.User+lat.Target)/time.Duration(k) + lat.Judge
		rounds := (conv + k - 1) / k
		b.Rounds = 3*lat.Gen + time.Duration(rounds*s.Turns)*(lat.User+lat.Target) + lat.Judge
	}
	return b
}

// PipelineResult is what the pipeline preset adds to a Result.
type PipelineResult struct {
	Metrics            int   `json:"metrics"`
	ScenariosPerMetric int   `json:"scenarios_per_metric"`
	Demographics       []int `json:"demographics"`
	Variants           int   `json:"variants"`
	// InFlight is K, the conversations in flight (simulate × targets).
	InFlight int `json:"in_flight"`
	// Calls is the workload's calls: generation, conversation and judge.
	Calls      int     `json:"calls"`
	GenCalls   int     `json:"generation_calls"`
	ChainCalls int     `json:"critical_path_calls"`
	CallBound  float64 `json:"call_bound_s"` // calls × L / K
	// Floor is what no run can beat (see pipeline.go); it is below
	// CallBound because generation and judge calls are not capped at K.
	Floor float64 `json:"floor_s"`
	// Rounds is the floor for whole conversations (see pipeline.go): part
	// of T_min when simulate caps the conversations in flight.
	Rounds float64 `json:"rounds_floor_s"`
	// CallBoundRatio is wall ÷ calls × L / K, beside the ratio to T_min.
	CallBoundRatio float64 `json:"call_bound_ratio,omitempty"`
	// Generator is each generation step as the fake saw it.
	Generator []GenStep `json:"generator"`
	// Unrecognised counts generator requests the fake answered 400 (the
	// last one's message in UnrecognisedError): the run cannot be right.
	Unrecognised      int64  `json:"unrecognised"`
	UnrecognisedError string `json:"unrecognised_error,omitempty"`
}

// GenStep is one kind of generator request: how many the workload needs,
// how many came, how many of them retried an invalid answer, and the
// window (seconds since the fake started) in which they arrived.
type GenStep struct {
	Kind         string  `json:"kind"`
	Expected     int     `json:"expected"`
	Requests     int64   `json:"requests"`
	Corrections  int64   `json:"corrections"`
	FirstRequest float64 `json:"first_request_s"`
	LastRequest  float64 `json:"last_request_s"`
}

// fillPipeline puts the pipeline's bound into res (after fillFromFake, whose
// per-pool bounds still count) and the generator's counters.
func fillPipeline(res *Result, f *fakeServer, o Options) {
	s := o.shape()
	// A target's worker pool holds at most its own rows; auto (0) takes
	// every row, up to the tool's worker ceiling.
	perTarget := s.scenarios() * s.Samples
	k := o.Targets * min(perTarget, 2*limiterDefaultCap)
	if res.SimulateConcurrency > 0 {
		k = o.Targets * min(perTarget, res.SimulateConcurrency)
	}
	lat := pipelineLatency{Gen: roleLatency(o, o.TargetTokens), User: roleLatency(o, o.UserTokens),
		Target: roleLatency(o, o.TargetTokens), Judge: roleLatency(o, o.JudgeTokens)}
	b := s.bound(lat, k)
	p := &PipelineResult{
		Metrics: o.Metrics, ScenariosPerMetric: o.ScenariosPerMetric, Demographics: o.Demographics,
		Variants: s.variants(), InFlight: k,
		Calls: b.GenCalls + b.ConvCalls + b.JudgeCalls, GenCalls: b.GenCalls, ChainCalls: b.ChainCalls,
		CallBound: b.CallBound.Seconds(), Floor: b.Floor.Seconds(), Rounds: b.Rounds.Seconds(),
	}
	if p.CallBound > 0 {
		p.CallBoundRatio = res.Wall / p.CallBound
	}
	counts, unknown, lastErr := f.genCounts()
	p.Unrecognised, p.UnrecognisedError = unknown, lastErr
	want := s.genCalls()
	for _, kind := range genKinds {
		c := counts[kind]
		p.Generator = append(p.Generator, GenStep{Kind: kind, Expected: want[kind], Requests: c.requests,
			Corrections: c.corrections, FirstRequest: c.first.Seconds(), LastRequest: c.last.Seconds()})
	}
	res.Pipeline = p
	// The critical path of a whole run replaces the conversation's alone.
	res.CriticalPath = b.CriticalPath.Seconds()
	if res.Binding == "critical path" || res.TMin < res.CriticalPath {
		res.TMin, res.Binding = res.CriticalPath, "critical path"
	}
	if p.CallBound > res.TMin {
		res.TMin, res.Binding = p.CallBound, "calls × L / K"
	}
	if res.SimulateConcurrency > 0 && p.Rounds > res.TMin {
		res.TMin, res.Binding = p.Rounds, "whole conversations, K at a time"
	}
}

// writePipelineProject creates config.yaml with a generator model and
// demographics, and a benchmark.yaml without metrics; no scenarios.json.
func writePipelineProject(dir string, o Options, pm projectModels) error {
	bdir := layout.BenchDir(dir, benchName)
	if err := os.MkdirAll(bdir, 0o755); err != nil {
		return err
	}
	lay := sizing{scenarios: o.shape().bases(), metrics: o.Metrics}
	cfg := configYAML(o, lay, pm) + pipelineConfigYAML(o, pm)
	if err := os.WriteFile(layout.ConfigPath(dir), []byte(cfg), 0o644); err != nil {
		return err
	}
	return os.WriteFile(layout.BenchmarkPath(bdir), []byte(benchmarkHead("metrics are generated by the run")), 0o644)
}

// pipelineConfigYAML is the generator model and the demographic axes.
func pipelineConfigYAML(o Options, pm projectModels) string {
	var b strings.Builder
	b.WriteString("generator_model:\n")
	writeModel(&b, pm, "  ", generatorModel)
	b.WriteString("demographics:\n")
	for i, n := range o.Demographics {
		name := fmt.Sprintf("axis_%d", i+1)
		if i < len(axisNames) {
			name = axisNames[i]
		}
		vals := make([]string, n)
		for j := range vals {
			vals[j] = fmt.Sprintf("%q", fmt.Sprintf("%s %d", name, j+1))
		}
		fmt.Fprintf(&b, "  %s: [%s]\n", name, strings.Join(vals, ", "))
	}
	return b.String()
}

var axisNames = []string{"age", "region", "occupation", "income", "education"}

// writePipelineText prints the pipeline's lines of the result table.
func (r *Result) writePipelineText(b *bytes.Buffer) {
	p := r.Pipeline
	o := r.Options
	fmt.Fprintf(b, "pipeline      %d metrics × %d base scenarios × %d variants (axes %v) = %d scenarios; %d generation + %d conversation and judge calls = %d\n",
		p.Metrics, p.ScenariosPerMetric, p.Variants, p.Demographics, p.Metrics*p.ScenariosPerMetric*p.Variants,
		p.GenCalls, p.Calls-p.GenCalls, p.Calls)
	fmt.Fprintf(b, "bounds        critical path %s (%d calls in a row); calls × L / K = %d × %s / %d = %s (wall ÷ it %.3f); floor %s (only conversations capped at K); whole conversations K at a time %s\n",
		secs(r.CriticalPath), p.ChainCalls, p.Calls, o.Latency, p.InFlight, secs(p.CallBound), p.CallBoundRatio, secs(p.Floor), secs(p.Rounds))
	var steps []string
	for _, g := range p.Generator {
		steps = append(steps, fmt.Sprintf("%s %d of %d (%d corrections) %s–%s", g.Kind, g.Requests, g.Expected, g.Corrections,
			secs(g.FirstRequest), secs(g.LastRequest)))
	}
	if p.Unrecognised > 0 {
		steps = append(steps, fmt.Sprintf("%d unrecognised: %s", p.Unrecognised, p.UnrecognisedError))
	}
	fmt.Fprintf(b, "generator     %s\n", strings.Join(steps, "; "))
}
