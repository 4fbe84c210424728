package adaptive

import (
	"errors"
	"fmt"
	"hash/fnv"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/impactbench/impactbench/internal/stats"
	"github.com/impactbench/impactbench/internal/study"
	"github.com/impactbench/impactbench/internal/study/studytest"
)

// small is the small study (3 models, 6 metrics) as a structure.
func small(t *testing.T) *study.Study {
	t.Helper()
	dir := t.TempDir()
	if err := studytest.WriteSmall(dir); err != nil {
		t.Fatal(err)
	}
	s, err := study.Load(filepath.Join(dir, "benchmarks"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// synthetic is n base scenarios per metric: model 0 passes each with
// probability 0.9, model 1 with 0.2, model 2 with 0.55 (from a hash, so
// reruns agree), one conversation per scenario and age.
func synthetic(s *study.Study, n int) Clusters {
	rates := []float64{0.9, 0.2, 0.55}
	return func(mi, ai, k int) []stats.ClusterSum {
		out := make([]stats.ClusterSum, n)
		for j := range out {
			h := fnv.New64a()
			h.Write([]byte{byte(mi), byte(ai), byte(k), byte(j)})
			pass := float64(h.Sum64()%1000)/1000 < rates[mi%len(rates)]
			out[j] = stats.Binary(map[bool]int{true: 1}[pass], 1)
		}
		return out
	}
}

// upTo is clusters with each metric cut to want[k] base scenarios.
func upTo(c Clusters, want []int) Clusters {
	return func(mi, ai, k int) []stats.ClusterSum {
		cs := c(mi, ai, k)
		return cs[:min(len(cs), want[k])]
	}
}

// TestLookReplaysItsLooks: run round by round — each round delivering what
// the last look asked for — the design reaches the same stop as one Look
// over all the rows (it replays its looks from the data), asks for the
// first round before any, never looks more than Looks times, and a stop
// has spent exactly Alpha.
func TestLookReplaysItsLooks(t *testing.T) {
	s := small(t)
	o := Options{Max: 6, Hope: 2, Seed: 7}
	all := synthetic(s, 6)
	want := make([]int, len(s.Metrics))
	first, err := Look(s, upTo(all, want), o)
	if err != nil {
		t.Fatal(err)
	}
	if first.Look != 0 || first.Stop || first.Targets[0].Want != DefaultStart {
		t.Fatalf("before any row: look %d, stop %v, want %d; want look 0 asking for %d", first.Look, first.Stop, first.Targets[0].Want, DefaultStart)
	}
	var last *Round
	for round := 0; ; round++ {
		if round > 10 {
			t.Fatal("no stop after 10 rounds")
		}
		r, err := Look(s, upTo(all, want), o)
		if err != nil {
			t.Fatal(err)
		}
		if r.Stop {
			last = r
			break
		}
		if r.Look != round && round > 0 {
			t.Errorf("round %d: look %d", round, r.Look)
		}
		want = wantOf(r.Targets)
	}
	once, err := Look(s, all, o)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(last, once) {
		t.Errorf("round by round:\n%+v\none look over every row:\n%+v", last, once)
	}
	if last.Look != last.Looks || last.Looks != 6 || last.Spent != DefaultAlpha {
		t.Errorf("stop at look %d of %d, spent %v; want every look, %v", last.Look, last.Looks, last.Spent, DefaultAlpha)
	}
	grew := 0
	for _, st := range last.Steps {
		grew += len(st.Growth)
	}
	if len(last.Steps) < 2 || grew == 0 || len(last.Decided) == 0 {
		t.Errorf("%d steps, %d growths, %d conclusions: the world does not exercise the rounds", len(last.Steps), grew, len(last.Decided))
	}
	t.Logf("%d looks, %d growths, %d conclusions, %d rows", len(last.Steps), grew, len(last.Decided), last.Conversations)
}

// TestOptionsAreChecked: zero options take the defaults; out-of-range
// ones are an *OptionError naming the field.
func TestOptionsAreChecked(t *testing.T) {
	o, err := Options{}.withDefaults()
	if err != nil || o.Alpha != 0.05 || o.Start != 1 || o.Max != 3 || o.Rho != 8 || o.Hope != 1 {
		t.Fatalf("defaults %+v, %v", o, err)
	}
	for _, c := range []struct {
		o     Options
		field string
	}{
		{Options{Alpha: 1}, "Alpha"}, {Options{Alpha: -0.1}, "Alpha"}, {Options{Start: -1}, "Start"},
		{Options{Start: 4, Max: 3}, "Max"}, {Options{Rho: -1}, "Rho"}, {Options{Hope: -2}, "Hope"},
	} {
		_, err := c.o.withDefaults()
		var oe *OptionError
		if !errors.As(err, &oe) || oe.Field != c.field {
			t.Errorf("%+v: %v, want an OptionError on %s", c.o, err, c.field)
		}
	}
}

// TestSpendingAddsUpToAlpha: the looks' rates sum to Alpha, grow look by
// look (ρ > 1) and spent(k) is their running sum.
func TestSpendingAddsUpToAlpha(t *testing.T) {
	for _, o := range []Options{{}, {Max: 10, Rho: 3}, {Start: 2, Max: 9, Alpha: 0.1, Rho: 1.5}} {
		o, _ = o.withDefaults()
		sum, prev := 0.0, 0.0
		for k := 1; k <= o.Looks(); k++ {
			a := o.spend(k)
			if a <= prev {
				t.Errorf("%+v: look %d spends %v after %v", o, k, a, prev)
			}
			sum += a
			prev = a
			if d := sum - o.spent(k); d > 1e-15 || d < -1e-15 {
				t.Errorf("%+v: spent(%d) = %v, sum %v", o, k, o.spent(k), sum)
			}
		}
		if d := sum - o.Alpha; d > 1e-15 || d < -1e-15 {
			t.Errorf("%+v: spends %v in all, want %v", o, sum, o.Alpha)
		}
	}
}

// TestConclusionsAreTheStudys: what the design states is what the study's
// own code states (study.WithClusters, AtLevel, site.CellGrade): redoing
// its looks by hand — each on the prefix its steps had grown to, at its
// spent level, and the remaining looks' last on the final rows — gives
// exactly its conclusions.
func TestConclusionsAreTheStudys(t *testing.T) {
	s := small(t)
	o, _ := Options{Max: 6, Hope: 2, Seed: 3}.withDefaults()
	all := synthetic(s, 6)
	r, err := Look(s, all, o)
	if err != nil {
		t.Fatal(err)
	}
	index := map[string]int{}
	for k, m := range s.Metrics {
		index[m.Key] = k
	}
	counts := make([]int, len(s.Metrics))
	for k := range counts {
		counts[k] = o.Start
	}
	d := newDesign(s, o)
	want := map[string]bool{}
	look := func(k int) {
		a := o.spend(k)
		for _, c := range conclusionsOf(d, s.WithClusters(upTo(all, counts)).AtLevel(1-a, a).Compute()) {
			want[c] = true
		}
	}
	for _, st := range r.Steps {
		look(st.Look)
		for _, g := range st.Growth {
			counts[index[g.Key]] = g.To
		}
	}
	if last := r.Steps[len(r.Steps)-1].Look; last < o.Looks() {
		look(o.Looks())
	}
	got := map[string]bool{}
	for _, c := range r.Decided {
		got[key(c)] = true
	}
	if len(want) == 0 || len(r.Steps) < 2 {
		t.Fatalf("%d conclusions over %d looks: the world is too weak", len(want), len(r.Steps))
	}
	if !reflect.DeepEqual(got, want) || len(r.Conflicts) > 0 {
		t.Errorf("the design states %d conclusions, redoing its looks gives %d (%d conflicts)", len(got), len(want), len(r.Conflicts))
	}
}

func key(c Conclusion) string {
	if c.Kind == KindDifferent {
		k, sign := pairKey(c)
		return fmt.Sprint(c.Kind, k, sign)
	}
	return fmt.Sprint(c.Kind, c.Node, c.Age, c.Model, c.Grade)
}

// conclusionsOf is one look's conclusions, as keys.
func conclusionsOf(d *design, res *study.Result) []string {
	var led ledger
	led.add(d, res, 1)
	var out []string
	for _, c := range led.decided {
		out = append(out, key(c))
	}
	return out
}

// ByBench lists only the metrics that grow, by benchmark, with a metric's
// nutritional-label copy growing beside it.
func TestRoundByBench(t *testing.T) {
	r := &Round{Targets: []Target{
		{Bench: "a", Metric: "m01", Have: 1, Want: 2},
		{Bench: "a", Metric: "m02", Have: 2, Want: 2},
		{Bench: "b", Metric: "m01", LabelMetric: "m07", Have: 1, Want: 3},
	}}
	want := map[string]map[string]int{"a": {"m01": 2}, "b": {"m01": 3}, study.LabelBenchmark: {"m07": 3}}
	if got := r.ByBench(); !reflect.DeepEqual(got, want) {
		t.Errorf("ByBench %v, want %v", got, want)
	}
	if got := (&Round{Stop: true}).ByBench(); len(got) != 0 {
		t.Errorf("a stop grows %v", got)
	}
}

// Under a budget, grant takes the requests serving the most open
// conclusions per conversation first: a family of ten close pairs asking
// for four metrics beats a lone grade asking for one, when only one fits.
func TestGrantServesTheMostPerConversation(t *testing.T) {
	d := &design{o: Options{Budget: 0.5, Start: 1, Max: 3}}
	counts := []int{1, 1, 1, 1, 1, 1}
	rows := []int{10, 10, 10, 10, 10, 10} // worst case 180 rows, budget 90, 60 used: 30 left
	lone := request{nd: need{demand: Demand{Node: "group"}}, sel: []int{5}}
	var fam []request
	for range 10 {
		fam = append(fam, request{nd: need{demand: Demand{Node: "overall"}}, sel: []int{0, 1, 2}})
	}
	reqs := append(served(fam), served([]request{lone})...)
	got := d.grant(reqs, counts, rows, 2)
	if len(got) != 10 || got[0].nd.demand.Node != "overall" || got[0].serves != 10 {
		t.Fatalf("granted %d requests, first %+v; want the ten pairs' (serving 10 each)", len(got), got[0])
	}
}
