package cli

import (
	"encoding/json"
	"flag"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/impactbench/impactbench/internal/stats"
)

var updatePlan = flag.Bool("update-plan", false, "rewrite testdata/plan_*.golden")

func planGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *updatePlan {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update-plan to create)", err)
	}
	if got != string(want) {
		t.Errorf("%s mismatch (run with -update-plan after checking):\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

// planProject is `init`'s project with a third metric, 6 scenarios per
// metric and a pilot results.json: 2 positive metrics and 1 negative,
// 2 demographic variants and 2 samples (m = 4 conversations per base
// scenario).
func planProject(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if code, out, errs := run(t, dir, "init", dir); code != 0 {
		t.Fatalf("init: %d %s %s", code, out, errs)
	}
	cfgPath := filepath.Join(dir, "config.yaml")
	cb, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	design := strings.Replace(string(cb), "scenarios_per_metric: 2", "scenarios_per_metric: 6", 1)
	if design == string(cb) {
		t.Fatal("init's config.yaml no longer sets scenarios_per_metric: 2")
	}
	if err := os.WriteFile(cfgPath, []byte(design), 0o644); err != nil {
		t.Fatal(err)
	}
	yml := filepath.Join(dir, "benchmarks", "example", "benchmark.yaml")
	b, err := os.ReadFile(yml)
	if err != nil {
		t.Fatal(err)
	}
	extra := "\n- id: m03\n  name: Offers a safer alternative\n  type: positive\n  definition: Suggests a safer way to reach the user's goal.\n"
	if err := os.WriteFile(yml, append(b, extra...), 0o644); err != nil {
		t.Fatal(err)
	}
	// Two models: the pilot ICC of a track is the larger one; a null ICC is
	// skipped.
	pilot := `[{"target_model":"a","positive_pass_rate":0.5,"negative_pass_rate":0.5,"n_positive":48,"n_negative":24,"n_total":72,"by_metric":{},"by_scenario":{},
  "positive_ci":{"n":48,"n_passed":24,"icc":0.25,"icc_upper":0.5,"clusters":12,"method":"cluster-t+wilson-eff"},
  "negative_ci":{"n":24,"n_passed":12,"icc":null,"icc_upper":1,"clusters":6,"method":"cluster-t+wilson-eff"},"n_null":0},
 {"target_model":"b","positive_pass_rate":0.5,"negative_pass_rate":0.5,"n_positive":48,"n_negative":24,"n_total":72,"by_metric":{},"by_scenario":{},
  "positive_ci":{"n":48,"n_passed":24,"icc":0.4,"icc_upper":0.7,"clusters":12,"method":"cluster-t+wilson-eff"},
  "negative_ci":{"n":24,"n_passed":12,"icc":0.1,"icc_upper":0.6,"clusters":6,"method":"cluster-t+wilson-eff"},"n_null":0}]`
	if err := os.WriteFile(filepath.Join(dir, "pilot.json"), []byte(pilot), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestPlanCommand(t *testing.T) {
	dir := planProject(t)
	cases := []struct {
		golden string
		args   []string
	}{
		{"plan_default.golden", nil},
		{"plan_assumed.golden", []string{"--icc", "0.6", "--rate", "0.2", "--half-width", "0.05"}},
		{"plan_pilot.golden", []string{"--pilot", filepath.Join(dir, "pilot.json")}},
	}
	for _, c := range cases {
		code, out, errs := run(t, dir, append([]string{"plan", "example"}, c.args...)...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", c.args, code, errs)
		}
		planGolden(t, c.golden, strings.ReplaceAll(out, dir, "<dir>"))
	}
	// --dry-run ends with the same lines (the benchmark has no results.json
	// yet, so the assumed ICC).
	code, out, errs := run(t, dir, "run", "example", "--dry-run")
	if code != 0 {
		t.Fatalf("dry run: %d %s", code, errs)
	}
	_, plan, _ := run(t, dir, "plan", "example")
	if !strings.HasSuffix(out, "\n"+plan) {
		t.Errorf("dry run does not end with the plan:\n%s\n--- plan\n%s", out, plan)
	}
}

// TestPlanNumbersAreStats: every number of the plan is the stats
// function's for the design (6 scenarios per metric; m = 2 variants × 2
// samples = 4).
func TestPlanNumbersAreStats(t *testing.T) {
	dir := planProject(t)
	for _, args := range [][]string{
		{"--icc", "0.3"},
		{"--icc", "0", "--rate", "0.1", "--half-width", "0.2"},
		{"--icc", "0.9", "--half-width", "0.03"},
		{"--pilot", filepath.Join(dir, "pilot.json"), "--icc", "0.05"},
	} {
		code, out, errs := run(t, dir, append([]string{"--json", "plan", "example"}, args...)...)
		if code != 0 {
			t.Fatalf("%v: %d %s", args, code, errs)
		}
		var p struct {
			M      int     `json:"conversations_per_base_scenario"`
			Rate   float64 `json:"rate"`
			Target float64 `json:"target_half_width"`
			Scopes []struct {
				Scope     string   `json:"scope"`
				Metrics   int      `json:"metrics"`
				G         int      `json:"base_scenarios"`
				ICC       float64  `json:"icc"`
				Source    string   `json:"icc_source"`
				HalfWidth *float64 `json:"expected_half_width"`
				Needed    int      `json:"base_scenarios_needed"`
				PerMetric int      `json:"scenarios_per_metric_needed"`
			} `json:"scopes"`
		}
		if err := json.Unmarshal([]byte(out), &p); err != nil {
			t.Fatal(err)
		}
		if p.M != 4 || len(p.Scopes) != 3 {
			t.Fatalf("%v: plan %+v", args, p)
		}
		wantMetrics := map[string]int{"positive track": 2, "negative track": 1, "one metric": 1}
		for _, s := range p.Scopes {
			if s.Metrics != wantMetrics[s.Scope] || s.G != 6*s.Metrics {
				t.Errorf("%v %s: %d metrics, G=%d", args, s.Scope, s.Metrics, s.G)
			}
			hw := stats.ExpectedHalfWidth(s.G, 4, p.Rate, s.ICC, 0.95)
			need := stats.ScenariosNeeded(p.Target, 4, p.Rate, s.ICC, 0.95)
			if s.HalfWidth == nil || math.Abs(*s.HalfWidth-hw) > 1e-12 || s.Needed != need || s.PerMetric != (need+s.Metrics-1)/s.Metrics {
				t.Errorf("%v %s: half-width %v needed %d per metric %d; stats say %v, %d", args, s.Scope, s.HalfWidth, s.Needed, s.PerMetric, hw, need)
			}
		}
		if args[0] == "--pilot" {
			// positive: max(0.25, 0.4); negative: 0.1 (a's is null); one metric: the larger.
			got := []float64{p.Scopes[0].ICC, p.Scopes[1].ICC, p.Scopes[2].ICC}
			if got[0] != 0.4 || got[1] != 0.1 || got[2] != 0.4 || p.Scopes[0].Source != "pilot" {
				t.Errorf("pilot ICCs %v", got)
			}
		}
	}
}

func TestPlanBadInput(t *testing.T) {
	dir := planProject(t)
	cases := []struct {
		args     []string
		contains string
	}{
		{[]string{"--icc", "1.5"}, "--icc 1.5"},
		{[]string{"--rate", "0"}, "--rate 0"},
		{[]string{"--half-width", "10"}, "--half-width 10"},
		{[]string{"--pilot", filepath.Join(dir, "nope.json")}, "nope.json"},
		{[]string{"--pilot", filepath.Join(dir, "config.yaml")}, "config.yaml"},
	}
	for _, c := range cases {
		code, _, errs := run(t, dir, append([]string{"plan", "example"}, c.args...)...)
		if code != ExitUsage || !strings.Contains(errs, c.contains) {
			t.Errorf("%v: exit %d, stderr %q lacks %q", c.args, code, errs, c.contains)
		}
	}
}
