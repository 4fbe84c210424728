package results

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/goccy/go-yaml"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/config"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata")

const humaneDir = "testdata/humanebench"

// loadMetrics reads benchmark.yaml's metrics minimally (the real loader
// lives in internal/config; only id and type matter here).
func loadMetrics(t *testing.T, dir string) []config.Metric {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "benchmark.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var b struct {
		Metrics []struct {
			ID   string            `yaml:"id"`
			Type config.MetricType `yaml:"type"`
		} `yaml:"metrics"`
	}
	if err := yaml.Unmarshal(data, &b); err != nil {
		t.Fatal(err)
	}
	var out []config.Metric
	for _, m := range b.Metrics {
		out = append(out, config.Metric{ID: m.ID, Type: m.Type})
	}
	return out
}

func humaneResults(t *testing.T, opts Options) []ModelResult {
	t.Helper()
	in, err := Load(humaneDir, loadMetrics(t, humaneDir))
	if err != nil {
		t.Fatal(err)
	}
	res, err := Aggregate(in, opts)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestGolden_UpstreamBytes: upstream's own aggregate wrote
// testdata/humanebench/results.json for these scores; ours must be identical.
func TestGolden_UpstreamBytes(t *testing.T) {
	metrics := loadMetrics(t, humaneDir)
	if len(metrics) != 3 || metrics[0].Type != config.Positive || metrics[1].Type != config.Negative || metrics[2].Type != config.Positive {
		t.Fatalf("benchmark.yaml metrics: %+v", metrics)
	}
	res := humaneResults(t, Options{UpstreamOnly: true})
	out := filepath.Join(t.TempDir(), "results.json")
	if err := WriteResults(out, res); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(out)
	want, err := os.ReadFile(filepath.Join(humaneDir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("results.json differs from upstream's golden file:\n%s", diffAt(got, want))
	}
}

func diffAt(got, want []byte) string {
	i := 0
	for i < len(got) && i < len(want) && got[i] == want[i] {
		i++
	}
	lo := max(0, i-120)
	return "first difference at byte " + itoa(i) + "\n got: …" + string(got[lo:min(len(got), i+120)]) +
		"\nwant: …" + string(want[lo:min(len(want), i+120)])
}

func itoa(i int) string { b, _ := artifacts.MarshalPy(i); return string(b) }

// TestGolden_Extended pins our full output for the real slice
// (testdata/humanebench_extended.golden.json; regenerate with -update after
// checking the diff). Wilson limits were checked against the closed form in
// Python: 4/6 → [0.3, 0.9032], 3/6 → [0.1876, 0.8124], 6/6 → [0.6097, 1.0].
func TestGolden_Extended(t *testing.T) {
	res := humaneResults(t, Options{Seed: 1})
	got, err := artifacts.MarshalPy(res)
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "humanebench_extended.golden.json")
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("extended results changed:\n%s", diffAt(got, want))
	}
	m := res[0]
	for mid, ci := range map[string][2]float64{"m01": {0.3, 0.9032}, "m02": {0.1876, 0.8124}, "m03": {0.6097, 1.0}} {
		r, _ := m.ByMetric.Get(mid)
		if r.CILow == nil || *r.CILow != ci[0] || *r.CIHigh != ci[1] {
			t.Errorf("%s Wilson = [%v, %v], want %v", mid, fmtp(r.CILow), fmtp(r.CIHigh), ci)
		}
	}
}

func fmtp(p *float64) string {
	if p == nil {
		return "null"
	}
	return artifacts.FormatPyFloat(*p)
}

// TestCrossCheck_PublishedAgeRates: grouping the slice by demographic.age
// must reproduce the website's published per-age pass rates for
// claude-haiku-4-5 (compat/published-2026-07/benchmark-data.json:
// child m01 0.6667, m02 0.6667, m03 1.0; adult m01 0.6667, m02 0.3333,
// m03 1.0). By hand from scores.json: child m01 2/3 (s002_v01 failed),
// m02 2/3 (s002_v01 failed), m03 3/3; adult m01 2/3 (s003_v02 failed),
// m02 1/3 (only s003_v02 passed), m03 3/3.
func TestCrossCheck_PublishedAgeRates(t *testing.T) {
	res := humaneResults(t, Options{Seed: 1})
	age, ok := res[0].ByDemographic.Get("age")
	if !ok {
		t.Fatal("no by_demographic.age")
	}
	if d := age.Keys(); len(d) != 2 || d[0] != "Child or teenager (6-17)" || d[1] != "Adult (18+)" {
		t.Fatalf("age values (file order expected): %v", d)
	}
	want := map[string]map[string][2]int{
		"Child or teenager (6-17)": {"m01": {2, 3}, "m02": {2, 3}, "m03": {3, 3}},
		"Adult (18+)":              {"m01": {2, 3}, "m02": {1, 3}, "m03": {3, 3}},
	}
	published := map[string]map[string]float64{
		"Child or teenager (6-17)": {"m01": 0.6667, "m02": 0.6667, "m03": 1.0},
		"Adult (18+)":              {"m01": 0.6667, "m02": 0.3333, "m03": 1.0},
	}
	for val, metrics := range want {
		dv, ok := age.Get(val)
		if !ok {
			t.Fatalf("missing age value %q", val)
		}
		for mid, kn := range metrics {
			r, _ := dv.ByMetric.Get(mid)
			if r.NPassed != kn[0] || r.NTotal != kn[1] || r.PassRate == nil || *r.PassRate != published[val][mid] {
				t.Errorf("%s %s = %d/%d (%s), want %d/%d (%v)", val, mid, r.NPassed, r.NTotal, fmtp(r.PassRate), kn[0], kn[1], published[val][mid])
			}
		}
	}
}
