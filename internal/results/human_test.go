package results

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/racemode"
	"github.com/impactbench/impactbench/internal/stats"
)

func humanRow(id, metric string, k int, passed bool) artifacts.Score {
	return artifacts.Score{ID: id, MetricID: metric, TargetModel: "t", Sample: k, ConvID: id + "__t__h" + fmt.Sprint(k), Passed: ptr(passed), Present: ptr(passed)}
}

func simRows(id, metric string, passed ...bool) []artifacts.Score {
	var out []artifacts.Score
	for s, p := range passed {
		out = append(out, artifacts.Score{ID: id, MetricID: metric, TargetModel: "t", Sample: s, Passed: ptr(p), Present: ptr(p)})
	}
	return out
}

// TestHumanComparisonPairsByScenario: only base scenarios both have are
// compared, the simulated arm is the variants people played, the
// difference is human − simulated, and people's rows count in no other
// figure of the file.
func TestHumanComparisonPairsByScenario(t *testing.T) {
	var sim []artifacts.Score
	sim = append(sim, simRows("m01_s001_v01", "m01", true, true)...)
	sim = append(sim, simRows("m01_s001_v02", "m01", false, false)...) // a variant nobody played
	sim = append(sim, simRows("m01_s002_v01", "m01", true, false)...)
	sim = append(sim, simRows("m01_s003_v01", "m01", true, true)...) // nobody played s003
	sim = append(sim, simRows("m02_s001_v01", "m02", true, false)...)
	people := []artifacts.Score{
		humanRow("m01_s001_v01", "m01", 0, false),
		humanRow("m01_s002_v01", "m01", 0, true),
		humanRow("m01_s009_v01", "m01", 0, true), // no simulated verdict
		humanRow("m02_s001_v01", "m02", 0, true),
		{ID: "m02_s002_v01", MetricID: "m02", TargetModel: "t", ConvID: "m02_s002_v01__t__h0"}, // no verdict
	}
	humanIn := make([]ScoreRow, len(people))
	for i, p := range people {
		humanIn[i] = RowOf(p)
	}
	without, err := Aggregate(Input{Metrics: metrics, Scores: sim}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	with, err := Aggregate(Input{Metrics: metrics, Scores: sim, Human: humanIn}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	hc := with[0].HumanComparison
	if hc == nil || without[0].HumanComparison != nil {
		t.Fatalf("human_comparison: %v / %v", hc, without[0].HumanComparison)
	}
	with[0].HumanComparison = nil
	if a, b := compact(t, without[0]), compact(t, with[0]); a != b {
		t.Errorf("people's rows changed other figures:\n%s\n%s", a, b)
	}
	if hc.NHuman != 4 || hc.NUnpaired != 1 || hc.NScenarios != 3 || !strings.Contains(hc.Warning, "1 human-played conversation(s) left out") ||
		!strings.Contains(hc.Warning, "only 3 base scenario(s)") {
		t.Errorf("counts: %s", compact(t, hc))
	}
	want := []struct {
		track, metric    string
		sim, human, diff float64
		n, nSim, nHuman  int
		interval         bool
	}{
		// s001: human 0/1 vs v01 2/2 → −1; s002: 1/1 vs 1/2 → +0.5.
		{"positive", "", 0.75, 0.5, -0.25, 2, 4, 2, true},
		{"negative", "", 0.5, 1, 0.5, 1, 2, 1, false},
		{"positive", "m01", 0.75, 0.5, -0.25, 2, 4, 2, true},
		{"negative", "m02", 0.5, 1, 0.5, 1, 2, 1, false},
	}
	if len(hc.Rows) != len(want) {
		t.Fatalf("rows: %s", compact(t, hc.Rows))
	}
	for i, w := range want {
		r := hc.Rows[i]
		metric := ""
		if r.MetricID != nil {
			metric = *r.MetricID
		}
		if r.Track != w.track || metric != w.metric || *r.Simulated != w.sim || *r.Human != w.human || *r.Diff != w.diff ||
			r.NScenarios != w.n || r.NSimulated != w.nSim || r.NHuman != w.nHuman || (r.CILow != nil) != w.interval ||
			(r.PValue != nil) != w.interval || r.Test != stats.MethodDiffExact || r.Warning != stats.ClusterWarning(w.n) {
			t.Errorf("row %d: %s, want %+v", i, compact(t, r), w)
		}
	}
	if CompareHuman("t", nil, nil, metrics, Options{}) != nil {
		t.Error("a comparison without people's rows")
	}
}

// TestHumanComparisonCoverage is the seeded Monte Carlo with known truth:
// targets whose per-scenario pass rates differ between people and
// simulated users by a known mean gap (constant, or varying by scenario),
// few base scenarios, one or two human conversations and four simulated
// ones each. The 95% interval must cover the true gap in at least 93% of
// 1,000 studies at every size, and still find a 20-point gap over 20
// scenarios in a quarter of them (it is not vacuous).
func TestHumanComparisonCoverage(t *testing.T) {
	racemode.SkipHeavy(t)
	if testing.Short() {
		t.Skip("Monte Carlo")
	}
	const studies = 1000
	for _, tc := range []struct {
		g      int
		gap    float64
		spread float64
	}{{4, -0.2, 0}, {8, -0.2, 0.1}, {12, 0.15, 0.1}, {20, -0.2, 0.1}} {
		rng := rand.New(rand.NewPCG(2026, uint64(tc.g)))
		covered, rejected := 0, 0
		for range studies {
			var sim, people []ScoreRow
			for s := range tc.g {
				p := 0.35 + 0.3*rng.Float64()
				q := p + tc.gap + tc.spread*(2*rng.Float64()-1)
				id := fmt.Sprintf("m01_s%03d_v01", s+1)
				for k := range 4 {
					sim = append(sim, RowOf(artifacts.Score{ID: id, MetricID: "m01", TargetModel: "t", Sample: k, Passed: ptr(rng.Float64() < p)}))
				}
				for k := range 1 + s%2 {
					people = append(people, RowOf(artifacts.Score{ID: id, MetricID: "m01", TargetModel: "t", Sample: k, Passed: ptr(rng.Float64() < q)}))
				}
			}
			r := CompareHuman("t", sim, people, metrics, Options{Seed: rng.Uint64()}).Rows[0]
			if *r.CILow <= tc.gap && tc.gap <= *r.CIHigh {
				covered++
			}
			if *r.CIHigh < 0 || *r.CILow > 0 {
				rejected++
			}
		}
		cov := float64(covered) / studies
		t.Logf("%d scenarios, gap %+.2f ± %.2f: coverage %.3f, zero rejected in %.3f", tc.g, tc.gap, tc.spread, cov, float64(rejected)/studies)
		if cov < 0.93 {
			t.Errorf("%d scenarios: coverage %.3f < 0.93", tc.g, cov)
		}
		if tc.g >= 20 && rejected < studies/4 {
			t.Errorf("%d scenarios: a %+.2f gap found in only %d of %d studies", tc.g, tc.gap, rejected, studies)
		}
	}
}
