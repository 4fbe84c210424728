package compare

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/stats"
)

var testOpts = Options{Seed: 7, Reps: 2000}

func mustCompare(t *testing.T, a, b Run, opts Options) *Report {
	t.Helper()
	r, err := Compare(a, b, opts)
	if err != nil {
		t.Fatalf("Compare: %v", err)
	}
	return r
}

func TestCompareIdenticalRuns(t *testing.T) {
	a, b := closeSpec().run("A"), closeSpec().run("B")
	r := mustCompare(t, a, b, testOpts)

	if want := []string{"alpha", "beta", "gamma"}; !slices.Equal(r.Models, want) {
		t.Errorf("Models = %v, want %v", r.Models, want)
	}
	// 4 base scenarios per metric.
	if r.Clusters != 8 {
		t.Errorf("Clusters = %d, want 8", r.Clusters)
	}
	// Hand counts (see closeSpec).
	wantRates := []struct {
		model, track  string
		passed, total int
	}{
		{"alpha", TrackPositive, 7, 8}, {"alpha", TrackNegative, 7, 8}, {"alpha", TrackAll, 14, 16},
		{"beta", TrackPositive, 6, 8}, {"beta", TrackNegative, 6, 8}, {"beta", TrackAll, 12, 16},
		{"gamma", TrackPositive, 2, 8}, {"gamma", TrackNegative, 2, 8}, {"gamma", TrackAll, 4, 16},
	}
	if len(r.Rates) != len(wantRates) {
		t.Fatalf("%d rates, want %d", len(r.Rates), len(wantRates))
	}
	for i, w := range wantRates {
		m := r.Rates[i]
		if m.Model != w.model || m.Track != w.track {
			t.Fatalf("rate %d is %s/%s, want %s/%s (models sorted, tracks in order)", i, m.Model, m.Track, w.model, w.track)
		}
		if !cmp.Equal(m.A, m.B) || f(m.A.Rate) != artifacts.Round(float64(w.passed)/float64(w.total), 4) ||
			m.A.Passed != w.passed || m.A.Total != w.total || !(f(m.A.Lo) < f(m.A.Rate) && f(m.A.Rate) <= f(m.A.Hi)) {
			t.Errorf("%s/%s: A %+v, B %+v, want both %d/%d with an interval around the rate", w.model, w.track, m.A, m.B, w.passed, w.total)
		}
		// Was: 0 [0, 0], because a bootstrap of identical outcomes on the
		// same resamples has no spread. Two runs of 4–8 base scenarios
		// cannot pin a difference down to 0, so the honest interval is
		// symmetric around 0 and wide (MOVER from each run's interval).
		if f(m.Diff.Value) != 0 || f(m.Diff.Lo) != -f(m.Diff.Hi) || !(f(m.Diff.Hi) > 0.2) || m.Diff.Significant || m.Diff.Warning == "" {
			t.Errorf("%s/%s: diff %+v, want 0 [−x, x] with x > 20 points, not significant, with a few-scenarios warning", w.model, w.track, m.Diff)
		}
	}
	for _, ra := range r.RankAgreement {
		// Identical rate vectors correlate perfectly in every replicate
		// where they are defined.
		for name, c := range map[string]Correlation{"spearman": ra.Spearman, "kendall": ra.KendallTauB} {
			if f(c.Value) != 1 || f(c.Lo) != 1 || f(c.Hi) != 1 || c.Replicates == 0 {
				t.Errorf("%s %s = %+v, want 1 [1, 1]", ra.Track, name, c)
			}
		}
	}
	if len(r.OrderChanges) != 0 {
		t.Errorf("OrderChanges = %+v, want none", r.OrderChanges)
	}
	if len(r.MetricDiffs) != 6 {
		t.Errorf("%d metric diffs, want 3 models × 2 metrics", len(r.MetricDiffs))
	}
	for _, m := range r.MetricDiffs {
		if f(m.Diff.Value) != 0 || f(m.Diff.Lo) != -f(m.Diff.Hi) || f(m.Diff.Hi) <= 0 || m.Clusters != 4 || m.A.Clusters != 4 {
			t.Errorf("%s/%s: %+v, want diff 0 [−x, x] over 4 scenarios", m.Model, m.MetricID, m)
		}
	}
}

// TestCompareCloseSwap: alpha and beta swap places in B, but alpha's lead
// in A rests on one base scenario per metric. The order change must be
// reported, and must not count as beyond uncertainty.
func TestCompareCloseSwap(t *testing.T) {
	a := closeSpec().run("A")
	b := closeSpec().swapModels("alpha", "beta").run("B")
	r := mustCompare(t, a, b, testOpts)

	for _, ra := range r.RankAgreement {
		// Ranks A (alpha 3, beta 2, gamma 1), B (2, 3, 1): Σd² = 2, so
		// ρ = 1 − 6·2/(3·8) = 0.5; pairs: 2 concordant, 1 discordant, τ = 1/3.
		if got := f(ra.Spearman.Value); got != 0.5 {
			t.Errorf("%s: Spearman = %v, want 0.5", ra.Track, got)
		}
		if got := f(ra.KendallTauB.Value); got != artifacts.Round(1.0/3, 4) {
			t.Errorf("%s: Kendall τ-b = %v, want 0.3333", ra.Track, got)
		}
		if !(f(ra.KendallTauB.Lo) <= f(ra.KendallTauB.Value) && f(ra.KendallTauB.Value) <= f(ra.KendallTauB.Hi)) {
			t.Errorf("%s: τ interval %+v does not contain the estimate", ra.Track, ra.KendallTauB)
		}
	}

	if len(r.OrderChanges) != 3 {
		t.Fatalf("OrderChanges = %+v, want alpha/beta on each of 3 tracks", r.OrderChanges)
	}
	for i, o := range r.OrderChanges {
		if o.Track != Tracks()[i] || o.ModelX != "alpha" || o.ModelY != "beta" {
			t.Errorf("order change %d = %s %s/%s, want %s alpha/beta", i, o.Track, o.ModelX, o.ModelY, Tracks()[i])
		}
		if f(o.GapA.Value) <= 0 || f(o.GapB.Value) >= 0 {
			t.Errorf("%s: gaps A %v, B %v, want positive then negative", o.Track, f(o.GapA.Value), f(o.GapB.Value))
		}
		// alpha's lead rests on one base scenario per metric: both gaps'
		// intervals contain 0. (The bootstrap gave [0, …]: resamples
		// without that scenario tie exactly; it never went below 0.)
		if !(f(o.GapA.Lo) < 0 && f(o.GapA.Hi) > 0) || !(f(o.GapB.Lo) < 0 && f(o.GapB.Hi) > 0) {
			t.Errorf("%s: A gap %+v, B gap %+v, want both intervals to contain 0", o.Track, o.GapA, o.GapB)
		}
		if o.BeyondUncertainty {
			t.Errorf("%s: a one-scenario lead flagged beyond uncertainty", o.Track)
		}
	}

	// alpha: 7/8 → 6/8 on positive, a difference of −0.125 resting on s003
	// alone: not significant. The bootstrap's [−0.375, 0] stopped exactly
	// at 0; the honest interval reaches well past it.
	m := findRate(r, "alpha", TrackPositive)
	if f(m.Diff.Value) != -0.125 || f(m.Diff.Hi) <= 0 || f(m.Diff.Lo) >= -0.125 || m.Diff.Significant {
		t.Errorf("alpha positive diff = %+v, want −0.125 [<−0.125, >0], not significant", m.Diff)
	}
	// Per metric: m01's own 4 base scenarios, the same numbers (the
	// positive track is m01 alone).
	for _, md := range r.MetricDiffs {
		if md.Model == "alpha" && md.MetricID == "m01" {
			if f(md.Diff.Value) != -0.125 || !cmp.Equal(md.Diff, m.Diff) || md.Clusters != 4 || md.A.Passed != 7 || md.B.Passed != 6 {
				t.Errorf("alpha m01 = %+v, want 7/8 → 6/8, −0.125 over 4 scenarios as on the positive track %+v", md, m.Diff)
			}
		}
	}
	if g := findRate(r, "gamma", TrackAll); f(g.Diff.Value) != 0 || f(g.Diff.Lo) != -f(g.Diff.Hi) || g.Diff.Significant {
		t.Errorf("gamma did not change, diff = %+v", g.Diff)
	}
}

// TestCompareFarSwap: the same swap, but alpha leads beta by the same
// margin in every base scenario, so each run is certain of its order.
func TestCompareFarSwap(t *testing.T) {
	a := farSpec().run("A")
	b := farSpec().swapModels("alpha", "beta").run("B")
	r := mustCompare(t, a, b, testOpts)

	if len(r.OrderChanges) != 3 {
		t.Fatalf("OrderChanges = %+v, want alpha/beta on each track", r.OrderChanges)
	}
	// Every base scenario: alpha 2/2, beta 1/2, a gap of +0.5. The
	// bootstrap called that +0.5 [+0.5, +0.5] — certain, zero width — from
	// 4 scenarios. The intervals now have width; and since the
	// cluster-score interval is sized for 95 % rather than the ~99.9 % of
	// the betting hull before it (which left 4 scenarios "not sure"),
	// alpha's 8 passes of 8 over 4 scenarios ([65, 100] %) against beta's
	// 4 of 8 ([22, 78] %) separate on every track, one metric of 4
	// scenarios included, with the few-scenarios warning beside them.
	for _, o := range r.OrderChanges {
		if f(o.GapA.Value) != 0.5 || f(o.GapB.Value) != -0.5 || !(f(o.GapA.Lo) < 0.5 && f(o.GapA.Hi) > 0.5) {
			t.Errorf("%s: gaps A %+v, B %+v, want +0.5 and −0.5 with intervals of some width", o.Track, o.GapA, o.GapB)
		}
		if !o.BeyondUncertainty || !o.GapA.Significant || !o.GapB.Significant || (o.Track != TrackAll && o.GapA.Warning == "") {
			t.Errorf("%s: %+v, want beyond uncertainty, with the few-scenarios warning on one track", o.Track, o)
		}
	}
	m := findRate(r, "alpha", TrackAll)
	if f(m.Diff.Value) != -0.5 || !(f(m.Diff.Hi) < 0) || !m.Diff.Significant {
		t.Errorf("alpha all diff = %+v, want −0.5 [<0, <0] significant", m.Diff)
	}
	for _, md := range r.MetricDiffs {
		if md.Model == "alpha" && (f(md.Diff.Value) != -0.5 || !md.Diff.Significant || md.Diff.Warning == "") {
			t.Errorf("alpha %s diff = %+v, want −0.5, significant over 4 scenarios, with a warning", md.MetricID, md.Diff)
		}
	}
	if ra := findRank(r, TrackAll); f(ra.KendallTauB.Value) != 0.3333 || f(ra.Spearman.Value) != 0.5 {
		t.Errorf("all: ρ %v τ %v, want 0.5 and 0.3333", f(ra.Spearman.Value), f(ra.KendallTauB.Value))
	}
}

// TestCompareIntervalsIndependently checks the rate intervals against an
// independent computation: stats.ClusterRate over alpha's positive rows
// grouped by base scenario, straight from the score rows, and the
// difference against moverDiff of those two.
func TestCompareIntervalsIndependently(t *testing.T) {
	a := closeSpec().run("A")
	b := closeSpec().swapModels("alpha", "gamma").run("B")
	r := mustCompare(t, a, b, testOpts)

	var rates [2]stats.RateInterval
	for run, x := range []Run{a, b} {
		byBase := map[string]*stats.ClusterSum{}
		var bases []string
		for _, s := range x.Scores {
			if s.TargetModel != "alpha" || s.MetricID != "m01" || s.Passed == nil {
				continue
			}
			base := artifacts.BaseIDOf(s.ID)
			if byBase[base] == nil {
				byBase[base] = &stats.ClusterSum{}
				bases = append(bases, base)
			}
			c := byBase[base]
			c.N++
			if *s.Passed {
				c.Sum++
				c.SumSq++
			}
		}
		var cs []stats.ClusterSum
		for _, base := range bases {
			cs = append(cs, *byBase[base])
		}
		rates[run] = stats.ClusterRate(cs, DefaultConf)
	}
	m := findRate(r, "alpha", TrackPositive)
	for run, got := range []Rate{m.A, m.B} {
		want := rates[run]
		if f(got.Lo) != artifacts.Round(want.Lo, 4) || f(got.Hi) != artifacts.Round(want.Hi, 4) || got.Clusters != want.Clusters || got.Warning != want.Warning {
			t.Errorf("run %d: alpha positive %+v, ClusterRate [%v, %v] over %d", run, got, want.Lo, want.Hi, want.Clusters)
		}
	}
	est, lo, hi := moverDiff(rates[1], rates[0])
	if f(m.Diff.Value) != artifacts.Round(est, 4) || f(m.Diff.Lo) != artifacts.Round(lo, 4) || f(m.Diff.Hi) != artifacts.Round(hi, 4) {
		t.Errorf("alpha positive diff %+v, MOVER %v [%v, %v]", m.Diff, est, lo, hi)
	}
	if lo == hi {
		t.Errorf("degenerate check: the interval [%v, %v] should have width", lo, hi)
	}
}

func TestCompareDeterministic(t *testing.T) {
	a := closeSpec().run("A")
	b := closeSpec().swapModels("alpha", "gamma").run("B")
	r1 := mustCompare(t, a, b, testOpts)
	r2 := mustCompare(t, a, b, testOpts)
	if diff := cmp.Diff(r1, r2); diff != "" {
		t.Errorf("same seed, different reports (-first +second):\n%s", diff)
	}

	// Another seed must change the draws. Interval limits of a discrete
	// statistic can coincide by chance, so compare the replicates.
	d, err := prepare(a, b)
	if err != nil {
		t.Fatal(err)
	}
	o7, err := testOpts.normalize()
	if err != nil {
		t.Fatal(err)
	}
	o8 := o7
	o8.Seed = 8
	v7, v8 := d.replicates(o7).v, d.replicates(o8).v
	nanEq := func(x, y float64) bool { return x == y || (math.IsNaN(x) && math.IsNaN(y)) }
	if slices.EqualFunc(v7, v8, nanEq) {
		t.Error("seeds 7 and 8 gave identical replicates; is the seed used?")
	}
	if !slices.EqualFunc(v7, d.replicates(o7).v, nanEq) {
		t.Error("seed 7 gave different replicates on two calls")
	}
}

// TestCompareTwoModels: with 2 models a rank correlation is ±1 or
// undefined and says nothing, so it is null, and the JSON has no NaN.
func TestCompareTwoModels(t *testing.T) {
	s := closeSpec()
	delete(s, "gamma")
	a, b := s.run("A"), s.swapModels("alpha", "beta").run("B")
	r := mustCompare(t, a, b, testOpts)
	for _, ra := range r.RankAgreement {
		if ra.Spearman.Value != nil || ra.KendallTauB.Value != nil || ra.Spearman.Lo != nil || ra.KendallTauB.Hi != nil {
			t.Errorf("%s: correlations %+v %+v, want null", ra.Track, ra.Spearman, ra.KendallTauB)
		}
		if !strings.Contains(ra.Note, "at least 3") || len(ra.Models) != 2 {
			t.Errorf("%s: note %q, models %v; want a note about needing 3 models", ra.Track, ra.Note, ra.Models)
		}
	}
	if len(r.OrderChanges) != 3 {
		t.Errorf("order changes = %d, want alpha/beta on 3 tracks (pairs need no third model)", len(r.OrderChanges))
	}

	path := filepath.Join(t.TempDir(), "compare.json")
	if err := WriteJSON(path, r); err != nil {
		t.Fatalf("WriteJSON: %v", err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var back struct {
		RankAgreement []map[string]json.RawMessage `json:"rank_agreement"`
	}
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatalf("report JSON does not parse: %v", err)
	}
	var sp map[string]json.RawMessage
	if err := json.Unmarshal(back.RankAgreement[0]["spearman"], &sp); err != nil {
		t.Fatal(err)
	}
	if string(sp["value"]) != "null" || string(sp["lo"]) != "null" {
		t.Errorf("spearman in JSON = %s, want value and lo null", back.RankAgreement[0]["spearman"])
	}
	var table strings.Builder
	if err := r.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(table.String(), "n/a") {
		t.Errorf("table does not show the null correlation as n/a:\n%s", table.String())
	}
}

func TestCompareTiedRates(t *testing.T) {
	// Every model passes half of everything in A: no order to compare.
	half := []string{"10", "01", "10", "01"}
	a := spec{
		"alpha": {"m01": half, "m02": half},
		"beta":  {"m01": half, "m02": half},
		"gamma": {"m01": half, "m02": half},
	}.run("A")
	b := closeSpec().run("B")
	r := mustCompare(t, a, b, testOpts)
	for _, ra := range r.RankAgreement {
		if ra.Spearman.Value != nil || !strings.Contains(ra.Note, "same rate") {
			t.Errorf("%s: %+v, want null with a note about ties", ra.Track, ra)
		}
	}
	if len(r.OrderChanges) != 0 {
		t.Errorf("a tie becoming an order is not a reversal; got %+v", r.OrderChanges)
	}
}

func TestCompareNullsAndModelSets(t *testing.T) {
	s := closeSpec()
	s["delta"] = map[string][]string{"m01": {"11"}}
	a := s.run("A")
	sb := closeSpec()
	sb["epsilon"] = map[string][]string{"m01": {"11"}}
	// beta's negative verdicts are all null in B (e.g. the judge failed).
	sb["beta"] = map[string][]string{"m01": sb["beta"]["m01"], "m02": {"--", "--", "--", "--"}}
	b := sb.run("B")
	// A row of a metric A does not define.
	b.Scores = append(b.Scores, artifacts.Score{ID: "m09_s001_v01", MetricID: "m09", TargetModel: "alpha", Passed: ptr(true)})

	r := mustCompare(t, a, b, testOpts)
	if !slices.Equal(r.OnlyInA, []string{"delta"}) || !slices.Equal(r.OnlyInB, []string{"epsilon"}) {
		t.Errorf("only in A %v, only in B %v; want [delta] and [epsilon]", r.OnlyInA, r.OnlyInB)
	}
	if !slices.Equal(r.Models, []string{"alpha", "beta", "gamma"}) {
		t.Errorf("Models = %v", r.Models)
	}
	m := findRate(r, "beta", TrackNegative)
	if m.B.Rate != nil || m.B.Total != 0 || m.Diff.Value != nil || m.Diff.Lo != nil {
		t.Errorf("beta negative in B has no verdict: got %+v", m)
	}
	if all := findRate(r, "beta", TrackAll); all.B.Passed != 6 || all.B.Total != 8 {
		t.Errorf("beta all in B = %+v, want 6/8 (positive rows only)", all.B)
	}
	if ra := findRank(r, TrackNegative); len(ra.Models) != 2 || ra.Spearman.Value != nil {
		t.Errorf("negative track rank agreement = %+v, want 2 models (beta left out) and null", ra)
	}
	notes := strings.Join(r.Notes, "\n")
	for _, want := range []string{"B: 1 rows with metric ids not in A's benchmark.yaml (m09)", "B: 8 of 49 rows", "passed is null"} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes lack %q:\n%s", want, notes)
		}
	}
	if r.B.Rows != 49 || r.B.Verdicts != 40 {
		t.Errorf("B rows %d verdicts %d, want 49 and 40", r.B.Rows, r.B.Verdicts)
	}
}

func TestCompareErrors(t *testing.T) {
	a := closeSpec().run("A")
	other := spec{"zeta": {"m01": {"11"}}}.run("B")
	if _, err := Compare(a, other, testOpts); err == nil || !strings.Contains(err.Error(), "no target model is in both runs") {
		t.Errorf("disjoint models: err = %v", err)
	}
	if _, err := Compare(a, a, Options{Reps: -1}); err == nil {
		t.Error("negative reps accepted")
	}
	if _, err := Compare(a, a, Options{Conf: 1.5}); err == nil {
		t.Error("confidence 1.5 accepted")
	}
	noTarget := closeSpec().run("B")
	noTarget.Scores[0].TargetModel = ""
	if _, err := Compare(a, noTarget, testOpts); err == nil || !strings.Contains(err.Error(), "no target_model") {
		t.Errorf("row without target: err = %v", err)
	}
	// The run directory name stands in for a missing target_model.
	noTarget.RunDirs = make([]string, len(noTarget.Scores))
	for i, s := range noTarget.Scores {
		noTarget.RunDirs[i] = s.TargetModel
	}
	noTarget.RunDirs[0] = "alpha"
	if _, err := Compare(a, noTarget, testOpts); err != nil {
		t.Errorf("run directory fallback: %v", err)
	}
}

func TestCompareRefusesUnlessForced(t *testing.T) {
	a, b := closeSpec().run("A"), closeSpec().run("B")
	a.Manifest, b.Manifest = testManifest(), testManifest()
	b.Manifest.Judges = "other-judges"

	_, err := Compare(a, b, testOpts)
	if !IsNotComparable(err) || !strings.Contains(err.Error(), "judges") {
		t.Fatalf("err = %v, want a NotComparableError naming judges", err)
	}
	opts := testOpts
	opts.Allow = []string{CompJudges}
	r := mustCompare(t, a, b, opts)
	if !r.Comparability.Comparable || r.Forced {
		t.Errorf("allowed judges: comparable %v forced %v", r.Comparability.Comparable, r.Forced)
	}
	opts = testOpts
	opts.Force = true
	r = mustCompare(t, a, b, opts)
	if r.Comparability.Comparable || !r.Forced {
		t.Errorf("forced: comparable %v forced %v, want false true", r.Comparability.Comparable, r.Forced)
	}
}

func TestPercentile(t *testing.T) {
	nan := math.NaN()
	tests := []struct {
		name         string
		vals         []float64
		conf         float64
		lo, hi       float64
		n            int
		wantNaNLimit bool
	}{
		// Type 7: h = (n−1)p. n=5, p=0.25 → h=1 → 2; p=0.75 → h=3 → 4.
		{"five values, 50%", []float64{5, 1, 4, 2, 3}, 0.5, 2, 4, 5, false},
		// n=4, p=0.05 → h=0.15 → 1+0.15·1 = 1.15; p=0.95 → h=2.85 → 3.85.
		{"interpolated, NaN skipped", []float64{4, nan, 1, 3, 2}, 0.9, 1.15, 3.85, 4, false},
		{"one value", []float64{0.25}, 0.95, 0.25, 0.25, 1, false},
		{"all NaN", []float64{nan, nan}, 0.95, 0, 0, 0, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			lo, hi, n := percentile(tc.vals, tc.conf)
			if n != tc.n {
				t.Errorf("n = %d, want %d", n, tc.n)
			}
			if tc.wantNaNLimit {
				if !math.IsNaN(lo) || !math.IsNaN(hi) {
					t.Errorf("limits %v %v, want NaN", lo, hi)
				}
				return
			}
			if math.Abs(lo-tc.lo) > 1e-12 || math.Abs(hi-tc.hi) > 1e-12 {
				t.Errorf("[%v, %v], want [%v, %v]", lo, hi, tc.lo, tc.hi)
			}
		})
	}
}

func TestCompareSameLabels(t *testing.T) {
	s := closeSpec()
	a := s.run("example")
	b := s.run("example")
	b.Metrics = b.Metrics[:1]
	opts := testOpts
	opts.Force = true
	r := mustCompare(t, a, b, opts)
	if r.A.Label != "example (A)" || r.B.Label != "example (B)" {
		t.Errorf("labels %q, %q; want them told apart", r.A.Label, r.B.Label)
	}
	if lines := strings.Join(r.Comparability.Lines(), "\n"); !strings.Contains(lines, "metrics only in example (A): m02") {
		t.Errorf("lines do not use the distinct labels:\n%s", lines)
	}
}
