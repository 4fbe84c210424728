package runner

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/compare"
	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/results"
	"github.com/impactbench/impactbench/internal/stats"
	"github.com/impactbench/impactbench/internal/validation"
)

// The issue-4 acceptance run: num_samples 3, a two-judge panel, two
// demographic values, then `validate --swap user=…`; every reported number
// must be consistent with the score rows it summarises.
func TestPublishableNumbersOnOfflineRun(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	if _, err := config.Scaffold(dir, false); err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(dir, "config.yaml")
	b, _ := os.ReadFile(cfgPath)
	text := strings.Replace(string(b), "num_samples: 2", "num_samples: 3", 1)
	text = strings.Replace(text, "evaluator_model:\n  model: offline-judge\n  source: offline\n",
		"evaluator_model:\n  - model: offline-judge-a\n    source: offline\n  - model: offline-judge-b\n    source: offline\n", 1)
	if !strings.Contains(text, "offline-judge-b") || !strings.Contains(text, "num_samples: 3") || !strings.Contains(text, "audit: true") {
		t.Fatal("scaffold changed; update the test's config edits")
	}
	if err := os.WriteFile(cfgPath, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	bench := filepath.Join(dir, "benchmarks", "example")
	r := newRunner(t, cfg, bench, Options{})
	if err := r.Run(ctx, r.Targets()); err != nil {
		t.Fatal(err)
	}
	r.Close()

	res, err := results.ReadResults(filepath.Join(bench, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	bench2, err := config.LoadBenchmark(bench)
	if err != nil {
		t.Fatal(err)
	}
	types := map[string]config.MetricType{}
	for _, m := range bench2.Metrics {
		types[m.ID] = m.Type
	}
	scs, err := artifacts.ReadScenarios(filepath.Join(bench, "scenarios.json"))
	if err != nil {
		t.Fatal(err)
	}
	demo := map[string]string{}
	for _, s := range scs {
		v, _ := s.Demographic.Get("age")
		demo[s.ID] = artifacts.ValueString(v)
	}
	if len(res) != 2 {
		t.Fatalf("results for %d models", len(res))
	}
	for _, m := range res {
		scores, err := artifacts.ReadScores(filepath.Join(bench, "runs", m.TargetModel, "scores.json"))
		if err != nil {
			t.Fatal(err)
		}
		if len(scores) != 8*3 {
			t.Fatalf("%s: %d scores, want 24 (8 variants × 3 samples)", m.TargetModel, len(scores))
		}
		// Recount from the rows.
		var posPass, posN, nullN int
		byAge := map[string][2]int{}
		groups := map[string][]bool{}
		agreeA, bothJudged := 0, 0
		for _, s := range scores {
			if len(s.Judges) != 2 {
				t.Fatalf("%s %s: %d judge verdicts, want 2", m.TargetModel, s.ID, len(s.Judges))
			}
			if s.Judges[0].Present != nil && s.Judges[1].Present != nil {
				bothJudged++
				if *s.Judges[0].Present == *s.Judges[1].Present {
					agreeA++
				}
			}
			if s.Valid == nil {
				t.Errorf("%s %s: no landmark-adherence verdict", m.TargetModel, s.ID)
			}
			if s.Passed == nil {
				nullN++
				if s.NullReason == "" {
					t.Errorf("%s %s: null verdict without a reason", m.TargetModel, s.ID)
				}
				continue
			}
			if types[s.MetricID] == config.Positive {
				posN++
				if *s.Passed {
					posPass++
				}
			}
			a := byAge[demo[s.ID]]
			a[1]++
			if *s.Passed {
				a[0]++
			}
			byAge[demo[s.ID]] = a
			groups[s.ID] = append(groups[s.ID], *s.Passed)
		}
		if m.NNull != nullN {
			t.Errorf("%s: n_null %d, rows say %d", m.TargetModel, m.NNull, nullN)
		}
		if posN > 0 {
			want := artifacts.Round(float64(posPass)/float64(posN), 4)
			if m.PositivePassRate == nil || *m.PositivePassRate != want {
				t.Errorf("%s: positive_pass_rate %v, rows say %v", m.TargetModel, m.PositivePassRate, want)
			}
			ci := m.PositiveCI
			if ci == nil || ci.Low == nil || ci.High == nil || *ci.Low > want+1e-9 || *ci.High < want-1e-9 || ci.Clusters != 2 {
				t.Errorf("%s: positive_ci %+v does not bracket %v over the 2 base scenarios of the positive metric", m.TargetModel, ci, want)
			}
		}
		ages, ok := m.ByDemographic.Get("age")
		if !ok || len(ages) != 2 {
			t.Fatalf("%s: by_demographic.age = %+v", m.TargetModel, ages)
		}
		for _, e := range ages {
			want := byAge[e.Key]
			if e.Value.NPassed != want[0] || e.Value.NTotal != want[1] {
				t.Errorf("%s age %s: %d/%d, rows say %d/%d", m.TargetModel, e.Key, e.Value.NPassed, e.Value.NTotal, want[0], want[1])
			}
			lo, hi := stats.Wilson(want[0], want[1], 0.95)
			if e.Value.CILow == nil || math.Abs(*e.Value.CILow-artifacts.Round(lo, 4)) > 1e-9 || math.Abs(*e.Value.CIHigh-artifacts.Round(hi, 4)) > 1e-9 {
				t.Errorf("%s age %s: interval [%v, %v], Wilson says [%.4f, %.4f]", m.TargetModel, e.Key, e.Value.CILow, e.Value.CIHigh, lo, hi)
			}
		}
		if m.Agreement == nil || m.Agreement.PassK.K != 3 {
			t.Fatalf("%s: agreement %+v, want pass^k with k=3", m.TargetModel, m.Agreement)
		}
		unanimous, full := 0, 0
		for _, g := range groups {
			if len(g) < 2 {
				continue
			}
			full++
			same := true
			for _, v := range g[1:] {
				same = same && v == g[0]
			}
			if same {
				unanimous++
			}
		}
		if m.Agreement.NGroups != full || m.Agreement.UnanimousShare == nil ||
			math.Abs(*m.Agreement.UnanimousShare-artifacts.Round(float64(unanimous)/float64(full), 4)) > 1e-9 {
			t.Errorf("%s: agreement %d groups share %v; rows say %d/%d", m.TargetModel, m.Agreement.NGroups, m.Agreement.UnanimousShare, unanimous, full)
		}
		if m.Judges == nil || m.Judges.KappaMethod != "cohen" || m.Judges.N != bothJudged || m.Judges.RawAgreement == nil ||
			math.Abs(*m.Judges.RawAgreement-artifacts.Round(float64(agreeA)/float64(bothJudged), 4)) > 1e-9 {
			t.Errorf("%s: judges %+v; rows say %d/%d agree", m.TargetModel, m.Judges, agreeA, bothJudged)
		}
		if m.Validity == nil || m.Validity.Checked != len(scores) {
			t.Errorf("%s: validity %+v", m.TargetModel, m.Validity)
		}
		if m.DemographicGaps == nil {
			t.Errorf("%s: no demographic_gaps", m.TargetModel)
		}
		for _, g := range m.DemographicGaps {
			if g.PAdjusted < g.PValue || g.NPairs == 0 || g.B+g.C > g.NPairs {
				t.Errorf("%s: inconsistent gap %+v", m.TargetModel, g)
			}
		}
		if !strings.HasPrefix(m.Fingerprint, "sha256:") {
			t.Errorf("%s: fingerprint %q", m.TargetModel, m.Fingerprint)
		}
	}

	// Validation run: a different simulated user, same scenarios, own directory.
	swap, err := validation.ParseSwap("user=offline/offline-user-b")
	if err != nil {
		t.Fatal(err)
	}
	mainResults, _ := os.ReadFile(filepath.Join(bench, "results.json"))
	vcfg, out, err := validation.PrepareValidation(cfg, bench, swap)
	if err != nil {
		t.Fatal(err)
	}
	v := newRunner(t, vcfg, bench, Options{OutDir: out})
	if err := v.Run(ctx, v.Targets()); err != nil {
		t.Fatal(err)
	}
	v.Close()
	after, _ := os.ReadFile(filepath.Join(bench, "results.json"))
	if string(after) != string(mainResults) {
		t.Fatal("the validation run changed the main run's results.json")
	}
	vs, _ := os.ReadFile(filepath.Join(out, "scenarios.json"))
	ms, _ := os.ReadFile(filepath.Join(bench, "scenarios.json"))
	if string(vs) != string(ms) {
		t.Error("a user swap must keep the scenarios")
	}
	a, err := compare.LoadRun(bench, "main")
	if err != nil {
		t.Fatal(err)
	}
	bRun, err := compare.LoadRun(out, "user swap")
	if err != nil {
		t.Fatal(err)
	}
	rep, err := compare.Compare(a, bRun, compare.Options{Allow: swap.AllowedDiffs()})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Comparability.Comparable || len(rep.Models) != 2 || len(rep.RankAgreement) == 0 {
		t.Fatalf("comparison: comparable=%v models=%v rank=%v", rep.Comparability.Comparable, rep.Models, rep.RankAgreement)
	}
	noted := false
	for _, d := range rep.Comparability.Differences {
		if d.Component == compare.CompUserModel {
			noted = true
		}
		if d.Component == compare.CompGenerator {
			t.Errorf("a user swap reported a generator difference: %+v", d)
		}
	}
	if !noted {
		t.Error("the swapped user model is not named among the differences")
	}
}
