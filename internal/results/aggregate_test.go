package results

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/layout"
)

var (
	T = ptr(true)
	F = ptr(false)
)

func score(id, mid string, passed *bool) artifacts.Score {
	return artifacts.Score{ID: id, MetricID: mid, TargetModel: "t", Passed: passed}
}

var metrics = []config.Metric{
	{ID: "m01", Type: config.Positive},
	{ID: "m02", Type: config.Negative},
}

// compact is the entry as one-line JSON (our key order, Python number forms).
func compact(t *testing.T, v any) string {
	t.Helper()
	b, err := artifacts.MarshalPy(v)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

func TestAggregate_Upstream(t *testing.T) {
	tests := []struct {
		name string
		rows []artifacts.Score
		want []string // compact JSON per model, in output order
	}{
		{
			name: "null passed counts in n_positive and n_total but not in rates",
			rows: []artifacts.Score{score("a_v01", "m01", T), score("b_v01", "m01", F), score("c_v01", "m01", nil)},
			want: []string{`{"target_model":"t","positive_pass_rate":0.5,"negative_pass_rate":null,"n_positive":3,"n_negative":0,"n_total":3,` +
				`"by_metric":{"m01":{"pass_rate":0.5,"n_passed":1,"n_total":2}},` +
				`"by_scenario":{"a_v01":{"pass_rate":1.0,"n_passed":1,"n_total":1},"b_v01":{"pass_rate":0.0,"n_passed":0,"n_total":1},"c_v01":{"pass_rate":null,"n_passed":0,"n_total":0}}}`},
		},
		{
			name: "unknown metric type counts only in n_total and by_*",
			rows: []artifacts.Score{score("x", "m09", T), score("y", "m02", F)},
			want: []string{`{"target_model":"t","positive_pass_rate":null,"negative_pass_rate":0.0,"n_positive":0,"n_negative":1,"n_total":2,` +
				`"by_metric":{"m02":{"pass_rate":0.0,"n_passed":0,"n_total":1},"m09":{"pass_rate":1.0,"n_passed":1,"n_total":1}},` +
				`"by_scenario":{"x":{"pass_rate":1.0,"n_passed":1,"n_total":1},"y":{"pass_rate":0.0,"n_passed":0,"n_total":1}}}`},
		},
		{
			name: "missing metric_id groups as unknown",
			rows: []artifacts.Score{score("x", "", T)},
			want: []string{`{"target_model":"t","positive_pass_rate":null,"negative_pass_rate":null,"n_positive":0,"n_negative":0,"n_total":1,` +
				`"by_metric":{"unknown":{"pass_rate":1.0,"n_passed":1,"n_total":1}},"by_scenario":{"x":{"pass_rate":1.0,"n_passed":1,"n_total":1}}}`},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, err := Aggregate(Input{Metrics: metrics, Scores: tc.rows}, Options{UpstreamOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, m := range res {
				got = append(got, compact(t, m))
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("(-want +got)\n%s", d)
			}
		})
	}
}

// TestAggregate_RoundHalfEven: k/32 are exact binary ties at the 5th
// decimal; Python's round(x, 4) goes to the even digit.
func TestAggregate_RoundHalfEven(t *testing.T) {
	tests := []struct {
		k, n int
		want float64
	}{
		{1, 32, 0.0312}, {3, 32, 0.0938}, {5, 32, 0.1562}, {7, 32, 0.2188}, {1, 3, 0.3333}, {2, 3, 0.6667}, {6667, 20000, 0.3333},
	}
	for _, tc := range tests {
		var rows []artifacts.Score
		for i := range tc.n {
			p := F
			if i < tc.k {
				p = T
			}
			rows = append(rows, score("s", "m01", p))
		}
		res, err := Aggregate(Input{Metrics: metrics, Scores: rows}, Options{UpstreamOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		if got := res[0].PositivePassRate; got == nil || *got != tc.want {
			t.Errorf("%d/%d → %s, want %v", tc.k, tc.n, fmtp(got), tc.want)
		}
	}
}

func TestAggregate_SortAndGrouping(t *testing.T) {
	mk := func(target, mid string, p *bool) artifacts.Score {
		s := score("s_v01", mid, p)
		s.TargetModel = target
		return s
	}
	// Run dirs in path order A, B, C, C, D; "A" has no positive rows (rate
	// null → 0); a row in run C naming model A joins A's group.
	scores := []artifacts.Score{mk("", "m02", T), mk("B", "m01", F), mk("C", "m01", T), mk("A", "m02", F), mk("", "m02", nil)}
	dirs := []string{"A", "B", "C", "C", "D"}
	res, err := Aggregate(Input{Metrics: metrics, Scores: scores, RunDirs: dirs}, Options{UpstreamOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, m := range res {
		order = append(order, m.TargetModel)
	}
	// C (1.0) first; then A (null), B (0.0), D (null) in first-appearance order.
	if d := cmp.Diff([]string{"C", "A", "B", "D"}, order); d != "" {
		t.Errorf("order (-want +got)\n%s", d)
	}
	if res[1].NTotal != 2 || res[1].NegativePassRate == nil || *res[1].NegativePassRate != 0.5 {
		t.Errorf("model A should pool rows from runs A and C: %s", compact(t, res[1]))
	}
	if got := SummaryLine(res[1]); got != "  A: pos=None neg=0.5 n=2" {
		t.Errorf("SummaryLine = %q", got)
	}
	if got := SummaryLine(res[0]); got != "  C: pos=1.0 neg=None n=1" {
		t.Errorf("SummaryLine = %q", got)
	}
}

func TestAggregate_OptionErrors(t *testing.T) {
	in := Input{Metrics: metrics, Scores: []artifacts.Score{score("a", "m01", T)}}
	for name, o := range map[string]Options{
		"conf above 1":            {Conf: 1.5},
		"negative reps":           {BootstrapReps: -1},
		"valid-only, no verdicts": {ValidOnly: true},
	} {
		if _, err := Aggregate(in, o); err == nil {
			t.Errorf("%s: want error", name)
		}
	}
	if _, err := Aggregate(Input{Scores: []artifacts.Score{{ID: "a"}}}, Options{}); err == nil {
		t.Error("row without target and run name: want error")
	}
	if _, err := Aggregate(Input{Scores: []artifacts.Score{{ID: "a"}}, RunDirs: []string{"x", "y"}}, Options{}); err == nil {
		t.Error("RunDirs length mismatch: want error")
	}
}

// TestAggregate_ExtendedKeepsUpstreamPrefix: with additions on, every
// upstream key keeps its position and value, so upstream readers still work.
func TestAggregate_ExtendedKeepsUpstreamPrefix(t *testing.T) {
	up, _ := artifacts.MarshalPy(humaneResults(t, Options{UpstreamOnly: true}))
	ext, _ := artifacts.MarshalPy(humaneResults(t, Options{Seed: 3}))
	var a, b []artifacts.Object
	if err := json.Unmarshal(up, &a); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(ext, &b); err != nil {
		t.Fatal(err)
	}
	for i := range a {
		for j, p := range a[i] {
			q := b[i][j]
			if q.Key != p.Key {
				t.Fatalf("key %d: %q, want upstream's %q", j, q.Key, p.Key)
			}
			if p.Key == "by_metric" || p.Key == "by_scenario" {
				var ra, rb artifacts.Object
				_ = json.Unmarshal(p.Value.(json.RawMessage), &ra)
				_ = json.Unmarshal(q.Value.(json.RawMessage), &rb)
				for k := range ra {
					var x, y artifacts.Object
					_ = json.Unmarshal(ra[k].Value.(json.RawMessage), &x)
					_ = json.Unmarshal(rb[k].Value.(json.RawMessage), &y)
					if d := cmp.Diff(x, y[:3]); d != "" {
						t.Errorf("%s[%s] upstream keys changed (-up +ext)\n%s", p.Key, ra[k].Key, d)
					}
					if y[3].Key != "ci_low" || y[4].Key != "ci_high" {
						t.Errorf("%s[%s] additions: %v", p.Key, ra[k].Key, y[3:])
					}
				}
				continue
			}
			if !bytes.Equal(p.Value.(json.RawMessage), q.Value.(json.RawMessage)) {
				t.Errorf("%s changed: %s → %s", p.Key, p.Value, q.Value)
			}
		}
	}
}

func TestAggregate_NoDemographics(t *testing.T) {
	in := Input{Metrics: metrics, Scores: []artifacts.Score{score("a_v01", "m01", T)},
		Scenarios: []artifacts.Scenario{{ID: "a_v01", Demographic: artifacts.Demographic{}}}}
	res, err := Aggregate(in, Options{})
	if err != nil {
		t.Fatal(err)
	}
	s := compact(t, res[0])
	for _, k := range []string{"by_demographic", "demographic_gaps", "agreement", "judges", "validity"} {
		if strings.Contains(s, `"`+k+`"`) {
			t.Errorf("%s present without data: %s", k, s)
		}
	}
	// One conversation in one cluster: ICC unknown → 1, so Wilson on 1
	// ([0.2065, 1]); one scenario cannot bound the rate of others, so the
	// betting part is [0, 1]. The cluster-score interval is the binomial
	// one for a single pass, with the exact Poisson lower limit for one
	// event: [0.0253, 1].
	if !strings.Contains(s, `"n_null":0`) || !strings.Contains(s, `"positive_ci":{"n":1,"n_passed":1,"estimate":1.0,"low":0.0253,"high":1.0,"method":"cluster-score","clusters":1,"conf":0.95,"df":0,`) ||
		!strings.Contains(s, `"wilson_low":0.2065,"wilson_high":1.0,"betting_low":0.0,"betting_high":1.0,"dispersion":1.0,`) {
		t.Errorf("model-level additions: %s", s)
	}
	if !strings.Contains(s, `"negative_ci":{"n":0,"n_passed":0,"estimate":null,"low":null,"high":null,"method":"cluster-score","clusters":0,"conf":0.95,"df":0,"icc":null,`) {
		t.Errorf("empty negative_ci: %s", s)
	}
}

func withSample(s artifacts.Score, sample int) artifacts.Score { s.Sample = sample; return s }

func TestAggregate_SampleAgreement(t *testing.T) {
	var rows []artifacts.Score
	add := func(id, mid string, ps ...*bool) {
		for i, p := range ps {
			s := withSample(score(id, mid, p), i)
			if p != nil { // present is passed for m01, its negation for m02
				s.Present = ptr(*p == (mid == "m01"))
			}
			rows = append(rows, s)
		}
	}
	add("s1_v01", "m01", T, T, T)
	add("s2_v01", "m01", T, F, T)
	add("s3_v01", "m01", F, F, F)
	add("s4_v01", "m02", T, T, nil)
	res, err := Aggregate(Input{Metrics: metrics, Scores: rows}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	// By hand: unanimous s1, s3, s4 of 4 groups; Fleiss over the three
	// 3-sample groups [3,0],[2,1],[0,3]: P̄ = 7/9, Pe = 41/81, κ = 22/40;
	// pass^3 = mean(1, 0, 0) over groups with ≥3 verdicts (s4 has 2).
	// On present, per metric: m01's units [1,1,1], [1,0,1], [0,0,0] give
	// n = 9 (n₁ = 5), D_o = 3 − 2·1/2 = 2, D_e = (81 − 25 − 16)/8 = 5 →
	// α = 0.6, κ as above; m02's one unit [0,0] has a single category:
	// α and κ undefined.
	want := `{"n_groups":4,"unanimous_share":0.75,"fleiss_kappa":0.55,` +
		`"by_scenario":{"s1_v01":{"n_samples":3,"n_passed":3,"unanimous":true},"s2_v01":{"n_samples":3,"n_passed":2,"unanimous":false},` +
		`"s3_v01":{"n_samples":3,"n_passed":0,"unanimous":true},"s4_v01":{"n_samples":2,"n_passed":2,"unanimous":true}},` +
		`"pass_k":{"k":3,"overall":0.3333,"by_metric":{"m01":0.3333}},` +
		`"by_metric":{"m01":{"n_units":3,"n_values":9,"alpha":0.6,"fleiss_kappa":0.55,"n_kappa_units":3},` +
		`"m02":{"n_units":1,"n_values":2,"alpha":null,"fleiss_kappa":null,"n_kappa_units":1}}}`
	if got := compact(t, res[0].Agreement); got != want {
		t.Errorf("agreement\n got %s\nwant %s", got, want)
	}
	if res[0].NNull != 1 {
		t.Errorf("n_null = %d, want 1", res[0].NNull)
	}
	// One sample per scenario: no agreement block.
	res, _ = Aggregate(Input{Metrics: metrics, Scores: rows[:1]}, Options{})
	if res[0].Agreement != nil {
		t.Error("agreement without repeated samples")
	}
}

func panelScore(mid string, votes ...*bool) artifacts.Score {
	s := score("x", mid, T)
	for i, v := range votes {
		s.Judges = append(s.Judges, artifacts.JudgeVerdict{Judge: "j" + string(rune('1'+i)), Present: v})
	}
	return s
}

func TestAggregate_Judges(t *testing.T) {
	tests := []struct {
		name string
		rows []artifacts.Score
		want string
	}{
		{
			// a=[1,1,0,0] b=[1,0,0,0]: raw 0.75, po .75, pe .5 → κ 0.5. The
			// row with a null vote is left out.
			name: "two judges: Cohen",
			rows: []artifacts.Score{panelScore("m01", T, T), panelScore("m01", T, F), panelScore("m01", F, F), panelScore("m02", F, F), panelScore("m01", T, nil)},
			// α on present over every row with ≥ 2 verdicts, by hand: m01
			// units {1,1},{1,0},{0,0} (the null vote's row has one value):
			// n = 6, D_o = 2, D_e = (36 − 9 − 9)/5 = 3.6 → α = 0.4444;
			// pooled with m02's {0,0}: n = 8, D_e = (64 − 9 − 25)/7 →
			// α = 1 − 2·7/30 = 0.5333.
			want: `{"judges":["j1","j2"],"raw_agreement":0.75,"kappa":0.5,"kappa_method":"cohen","n":4,` +
				`"by_metric":{"m01":{"raw_agreement":0.6667,"kappa":0.4,"n":3,"alpha":0.4444,"n_alpha":6},"m02":{"raw_agreement":1.0,"kappa":null,"n":1,"alpha":null,"n_alpha":2}},` +
				`"alpha":0.5333,"n_alpha":8}`,
		},
		{
			// counts [3,0],[2,1],[0,3] → κ 0.55 (as in the sample test); 2 of 3 unanimous.
			// α by hand: n = 9 (n₁ = 5, n₀ = 4), D_o = 2·(2·1)/2 = 2,
			// D_e = (81 − 25 − 16)/8 = 5 → α = 0.6.
			name: "three judges: Fleiss",
			rows: []artifacts.Score{panelScore("m01", T, T, T), panelScore("m01", T, T, F), panelScore("m01", F, F, F)},
			want: `{"judges":["j1","j2","j3"],"raw_agreement":0.6667,"kappa":0.55,"kappa_method":"fleiss","n":3,` +
				`"by_metric":{"m01":{"raw_agreement":0.6667,"kappa":0.55,"n":3,"alpha":0.6,"n_alpha":9}},"alpha":0.6,"n_alpha":9}`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, err := Aggregate(Input{Metrics: metrics, Scores: tc.rows}, Options{})
			if err != nil {
				t.Fatal(err)
			}
			ja := *res[0].Judges
			ja.Panel = nil // checked in TestAggregate_PanelKeepsSplitRows
			if got := compact(t, ja); got != tc.want {
				t.Errorf("\n got %s\nwant %s", got, tc.want)
			}
		})
	}
	res, _ := Aggregate(Input{Metrics: metrics, Scores: []artifacts.Score{panelScore("m01", T)}}, Options{})
	if res[0].Judges != nil {
		t.Error("judges block for a single-judge panel")
	}
}

// TestAggregate_DemographicGaps uses a full age × gender product: children
// pass, adults fail, gender makes no difference.
func TestAggregate_DemographicGaps(t *testing.T) {
	combos := [][2]string{{"child", "female"}, {"child", "male"}, {"adult", "female"}, {"adult", "male"}}
	var scen []artifacts.Scenario
	var rows []artifacts.Score
	for b := 1; b <= 8; b++ {
		for v, c := range combos {
			id := "m01_s00" + string(rune('0'+b)) + "_v0" + string(rune('1'+v))
			scen = append(scen, artifacts.Scenario{ID: id, MetricID: "m01", Demographic: artifacts.Demographic{{Key: "age", Value: c[0]}, {Key: "gender", Value: c[1]}}})
			p := F
			if c[0] == "child" {
				p = T
			}
			rows = append(rows, score(id, "m01", p))
		}
	}
	res, err := Aggregate(Input{Metrics: metrics, Scores: rows, Scenarios: scen}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	// Age: 8 bases × 2 genders = 16 pairs, all "child pass, adult fail":
	// McNemar b=16, c=0 → 2·0.5^16 = 3.052e-05 (kept as mcnemar_p). The
	// test is over the 8 base scenarios, each with d = 1: sign flip 2/2^8
	// = 0.0078125; the binomial floor (shrunk rates 2.5/3 and 0.5/3, n = 2
	// per arm → per-scenario variance 2·(5/36)/2 = 5/36, se = √(8·5/36)/8
	// = 0.13176, t = 7.59 on 7 df) gives 0.0001274; p is the larger, Holm
	// ×2 within gaps:t:m01 (BH: the same here). Interval: every subset mean
	// is 1, so the sign-flip part is [1, 1] and the floor's t₇·se = 0.3116
	// sets it: [0.6884, 1]. Gender: d = 0 everywhere → p = 1, interval
	// from the floor alone.
	gap := func(axis, a, b, rates, counts, p, rest string) string {
		return `{"metric_id":"m01","axis":"` + axis + `","value_a":"` + a + `","value_b":"` + b + `",` + rates + `,"n_pairs":16,` + counts + `,` + p + `,"n_clusters":8,` + rest +
			`,"warning":"only 8 base scenarios: the interval is wide and rests on few independent scenarios (10+ recommended)"`
	}
	want := `[` + gap("age", "child", "adult", `"rate_a":1.0,"rate_b":0.0,"diff":1.0`, `"b":16,"c":0`,
		`"p_value":0.007812,"p_adjusted":0.01562,"significant":true`, `"cluster_diff":1.0,"ci_low":0.6884,"ci_high":1.0,"test":"sign-flip-exact+binomial-floor","mcnemar_p":3.052e-05`) +
		`,"p_sign_flip":0.007812,"p_floor":0.0001274,"family":"gaps:t:m01","family_size":2,"q_value":0.01562},` +
		gap("gender", "female", "male", `"rate_a":0.5,"rate_b":0.5,"diff":0.0`, `"b":0,"c":0`,
			`"p_value":1.0,"p_adjusted":1.0,"significant":false`, `"cluster_diff":0.0,"ci_low":-0.418,"ci_high":0.418,"test":"sign-flip-exact+binomial-floor","mcnemar_p":1.0`) +
		`,"p_sign_flip":1.0,"p_floor":1.0,"family":"gaps:t:m01","family_size":2,"q_value":1.0}]`
	if got := compact(t, res[0].DemographicGaps); got != want {
		t.Errorf("\n got %s\nwant %s", got, want)
	}
	if got := compact(t, res[0].Multiplicity); got != `{"correction":"holm","family":"`+multiplicityRule+`","family_size":2,"alpha":0.05,"fdr":"benjamini-hochberg","families":{"gaps:t:m01":2}}` {
		t.Errorf("multiplicity %s", got)
	}
	age, _ := res[0].ByDemographic.Get("age")
	if d := cmp.Diff([]string{"child", "adult"}, age.Keys()); d != "" {
		t.Errorf("value order (-want +got)\n%s", d)
	}
	// 8 base scenarios, each 2/4 passed: the bootstrap gave [0.5, 0.5].
	// No spread between scenarios → t collapses, ICC bound 0 → Wilson 16/32,
	// which is also the cluster-score interval (design effect 1, normal
	// quantile); 8 scenarios cannot rule out unseen ones that differ, so
	// the betting part, the any-mix bound, is wider.
	lo, hi := wilson(16, 32, 0.95)
	if ci := res[0].PositiveCI; ci.Clusters != 8 || *ci.WilsonLow != *lo || *ci.WilsonHigh != *hi || *ci.TLow != 0.5 || ci.Warning == "" ||
		*ci.Low != *lo || *ci.High != *hi || !(*ci.BettingLow < *lo && *ci.BettingHigh > *hi) {
		t.Errorf("positive_ci = %s", compact(t, ci))
	}
}

func TestAggregate_Validity(t *testing.T) {
	a, b, c := score("a", "m01", T), score("b", "m01", F), score("c", "m01", F)
	a.Valid, b.Valid = T, F // c unchecked
	in := Input{Metrics: metrics, Scores: []artifacts.Score{a, b, c}}
	res, err := Aggregate(in, Options{})
	if err != nil {
		t.Fatal(err)
	}
	// b is invalid but was judged (the landmark check used to judge
	// invalid conversations too): it counts, and a warning says so.
	const want = `{"checked":2,"valid":1,"share":0.5,"n":3,"invalid":1,"unchecked":1,"by_metric":{"m01":{"n":3,"checked":2,"valid":1,"invalid":1,"share":0.5}},"warning":"1 invalid conversation(s) carry a verdict (judged before invalid conversations were left unjudged) and count in the pass rates; set validity.valid_only to leave them out"}`
	if got := compact(t, res[0].Validity); got != want {
		t.Errorf("validity = %s", got)
	}
	if *res[0].PositivePassRate != 0.3333 {
		t.Errorf("all rows: pos = %s", fmtp(res[0].PositivePassRate))
	}
	res, err = Aggregate(in, Options{ValidOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if res[0].NTotal != 1 || *res[0].PositivePassRate != 1 {
		t.Errorf("valid only: %s", compact(t, res[0]))
	}
	if got := compact(t, res[0].Validity); got != want {
		t.Errorf("validity must describe all rows: %s", got)
	}
}

func TestResults_WriteReadRoundTrip(t *testing.T) {
	fp := Fingerprint{Metrics: "m", Prompts: "p", Targets: map[string]string{"t": "x"}}
	for name, opts := range map[string]Options{"upstream": {UpstreamOnly: true, Fingerprint: fp}, "extended": {Seed: 9, Fingerprint: fp}} {
		t.Run(name, func(t *testing.T) {
			res := humaneResults(t, opts)
			// Add a sampled model so agreement/judges also round-trip, and
			// the checks of the simulated user (validity, break turns,
			// identical samples).
			broke := score("y", "m02", F)
			broke.Present, broke.Evidence, broke.Valid, broke.UserModel = T, []artifacts.Quote{quote(3)}, T, "u"
			same := func(i int) artifacts.Score {
				s := withSample(score("z", "m01", T), i)
				s.TranscriptHash = "sha256:0000000000000001"
				return s
			}
			extra, err := Aggregate(Input{Metrics: metrics, Scores: []artifacts.Score{
				withSample(panelScore("m01", T, F), 0), withSample(panelScore("m01", T, T), 1),
				broke, invalidScore("w", "m02", "u", artifacts.FailRole), same(0), same(1),
			}}, opts)
			if err != nil {
				t.Fatal(err)
			}
			res = append(res, extra...)
			p := filepath.Join(t.TempDir(), "results.json")
			if err := WriteResults(p, res); err != nil {
				t.Fatal(err)
			}
			back, err := ReadResults(p)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(res, back); d != "" {
				t.Errorf("(-written +read)\n%s", d)
			}
			first, _ := os.ReadFile(p)
			if err := WriteResults(p, back); err != nil {
				t.Fatal(err)
			}
			second, _ := os.ReadFile(p)
			if !bytes.Equal(first, second) {
				t.Errorf("rewrite not byte-stable:\n%s", diffAt(second, first))
			}
		})
	}
	back, err := ReadResults(filepath.Join(humaneDir, "results.json"))
	if err != nil || len(back) != 1 || back[0].Extended {
		t.Fatalf("upstream file: %v, %+v", err, back)
	}
	bad := filepath.Join(t.TempDir(), "results.json")
	_ = os.WriteFile(bad, []byte(`[{"target_model": 3}]`), 0o644)
	if _, err := ReadResults(bad); err == nil || !strings.Contains(err.Error(), "row 0") {
		t.Errorf("malformed results: %v", err)
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	paths := layout.Bench{Dir: dir}
	// Legacy rows without target_model take the run dir name.
	if err := os.MkdirAll(paths.RunDir("zeta"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(paths.Scores("zeta", nil, layout.Shard{}), []byte(`[{"id":"a","metric_id":"m01","passed":true,"score":1,"metric_type":"positive"}]`), 0o644); err != nil {
		t.Fatal(err)
	}
	in, err := Load(dir, metrics)
	if err != nil {
		t.Fatal(err)
	}
	if len(in.Scores) != 1 || len(in.RunDirs) != 1 || in.RunDirs[0] != "zeta" || in.Scenarios != nil {
		t.Fatalf("Load = %+v", in)
	}
	res, err := Aggregate(in, Options{UpstreamOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if res[0].TargetModel != "zeta" {
		t.Errorf("target = %q, want the run dir name", res[0].TargetModel)
	}
	if err := os.WriteFile(paths.Scenarios(), []byte(`[{"id": 1}]`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(dir, metrics); err == nil || !strings.Contains(err.Error(), "scenarios.json row 0") {
		t.Errorf("bad scenarios.json: %v", err)
	}
}

func TestFingerprint(t *testing.T) {
	f := Fingerprint{Metrics: "m1", Scenarios: "s1", Targets: map[string]string{"a": "ha", "b": "hb"}}
	a, b := f.For("a"), f.For("b")
	if !strings.HasPrefix(a, "sha256:") || len(a) != len("sha256:")+64 || a == b {
		t.Fatalf("For: %q %q", a, b)
	}
	if a != f.For("a") {
		t.Error("not deterministic")
	}
	g := f
	g.Targets = map[string]string{"a": "ha", "b": "changed"}
	if g.For("a") != a {
		t.Error("another target's config changed a's fingerprint")
	}
	g.Prompts = "p2"
	if g.For("a") == a {
		t.Error("a shared part did not change the fingerprint")
	}
	if (Fingerprint{}).For("a") != "" {
		t.Error("zero fingerprint must be empty")
	}
	res, err := Aggregate(Input{Metrics: metrics, Scores: []artifacts.Score{score("x", "m01", T)}}, Options{Fingerprint: f})
	if err != nil {
		t.Fatal(err)
	}
	if s := compact(t, res[0]); !strings.HasSuffix(s, `"fingerprint":"`+f.For("t")+`"}`) {
		t.Errorf("fingerprint not last: %s", s)
	}
	res, _ = Aggregate(Input{Metrics: metrics, Scores: []artifacts.Score{score("x", "m01", T)}}, Options{Fingerprint: f, UpstreamOnly: true})
	if strings.Contains(compact(t, res[0]), "fingerprint") {
		t.Error("fingerprint written in upstream-only mode")
	}
}

func TestReadResultsAcceptsNullObjects(t *testing.T) {
	path := filepath.Join(t.TempDir(), "results.json")
	body := `[{"target_model":"m","positive_pass_rate":null,"negative_pass_rate":null,"n_positive":0,"n_negative":0,"n_total":0,"by_metric":null,"by_scenario":{"s":null},"by_demographic":null}]`
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := ReadResults(path)
	if err != nil || len(res) != 1 || res[0].TargetModel != "m" {
		t.Fatalf("ReadResults: %+v, %v", res, err)
	}
}

// TestIntervalLine: the console line under upstream's names each track's
// interval, the score, the base scenarios and the method, and repeats the
// few-scenarios warning; an upstream-only entry has none.
func TestIntervalLine(t *testing.T) {
	f := func(x float64) *float64 { return &x }
	m := ModelResult{TargetModel: "gpt", NTotal: 16,
		PositiveCI:  &ClusterCI{Estimate: f(0.875), Low: f(0), High: f(1), Clusters: 2, Method: "cluster-t+wilson-eff", Warning: "only 2 base scenario(s)"},
		NegativeCI:  &ClusterCI{Estimate: f(0.75), Low: f(0.409), High: f(0.928), Clusters: 2, Method: "cluster-t+wilson-eff"},
		Leaderboard: &Leaderboard{Score: f(0.8125), CILow: f(0.205), CIHigh: f(0.964)},
	}
	want := "    positive 87.5% [0.0%, 100.0%] · negative 75.0% [40.9%, 92.8%] · score 81.2% [20.5%, 96.4%] · n=16, up to 2 base scenarios per track (cluster-t+wilson-eff)\n    ! only 2 base scenario(s)"
	if got := IntervalLine(m); got != want {
		t.Errorf("IntervalLine =\n%q\nwant\n%q", got, want)
	}
	if got := IntervalLine(ModelResult{TargetModel: "gpt"}); got != "" {
		t.Errorf("upstream-only entry: %q", got)
	}
}
