package compare

import (
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/impactbench/impactbench/internal/study"
)

func cell(node, model string, score, lo, hi float64) study.Cell {
	return study.Cell{Node: node, Age: study.AgeAdult, Model: model, Score: &score, Lo: &lo, Hi: &hi, Metrics: 3, Conversations: 9}
}

// TestCompareStudies: B − A per level, age and model in both, with a MOVER
// interval; a move beyond both intervals is flagged, one within is not.
func TestCompareStudies(t *testing.T) {
	nodes := []*study.Node{{ID: "overall", Kind: study.KindOverall}, {ID: "area/x", Kind: study.KindArea}}
	a := &study.Result{Conf: 0.95, Models: []study.ModelInfo{{ID: "m1"}, {ID: "m2"}, {ID: "gone"}}, Nodes: nodes,
		Cells: []study.Cell{cell("overall", "m1", 0.50, 0.45, 0.55), cell("overall", "m2", 0.60, 0.55, 0.65), cell("area/x", "m1", 0.5, 0.3, 0.7), cell("overall", "gone", 0.1, 0, 0.2)}}
	b := &study.Result{Conf: 0.95, Models: []study.ModelInfo{{ID: "m1"}, {ID: "m2"}, {ID: "new"}}, Nodes: nodes,
		Cells: []study.Cell{cell("overall", "m1", 0.70, 0.65, 0.75), cell("overall", "m2", 0.62, 0.57, 0.67), cell("area/x", "m1", 0.6, 0.4, 0.8)}}
	r, err := CompareStudies(a, b, "A", "B")
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Rows) != 3 || r.Changed != 1 || len(r.OnlyInA) != 1 || r.OnlyInA[0] != "gone" || len(r.OnlyInB) != 1 || r.OnlyInB[0] != "new" {
		t.Fatalf("report: %+v", r)
	}
	m1 := r.Rows[0]
	// MOVER: 0.2 ± √(0.05² + 0.05²) = 0.2 ± 0.0707.
	if math.Abs(m1.Diff-0.2) > 1e-12 || math.Abs(m1.Lo-(0.2-0.05*math.Sqrt2)) > 1e-12 || math.Abs(m1.Hi-(0.2+0.05*math.Sqrt2)) > 1e-12 || !m1.Significant || m1.Kind != study.KindOverall {
		t.Errorf("m1 overall: %+v", m1)
	}
	if r.Rows[1].Significant || r.Rows[2].Significant {
		t.Errorf("small moves flagged: %+v %+v", r.Rows[1], r.Rows[2])
	}
}

// TestCompareStudiesWithoutCommonModels: two studies that share no model
// are refused (an empty table would say nothing changed), naming both
// sides' models.
func TestCompareStudiesWithoutCommonModels(t *testing.T) {
	nodes := []*study.Node{{ID: "overall", Kind: study.KindOverall}}
	a := &study.Result{Conf: 0.95, Models: []study.ModelInfo{{ID: "m1"}}, Nodes: nodes, Cells: []study.Cell{cell("overall", "m1", 0.5, 0.4, 0.6)}}
	b := &study.Result{Conf: 0.95, Models: []study.ModelInfo{{ID: "m2"}}, Nodes: nodes, Cells: []study.Cell{cell("overall", "m2", 0.5, 0.4, 0.6)}}
	_, err := CompareStudies(a, b, "old/study.json", "new/study.json")
	var nc *NoCommonModelsError
	if !errors.As(err, &nc) || !strings.Contains(err.Error(), "old/study.json: m1") || !strings.Contains(err.Error(), "new/study.json: m2") {
		t.Fatalf("err = %v", err)
	}
}

// TestStudyTableRoundsOnce: the table prints every number rounded once
// from its unrounded value, and a lower limit just above 0 as itself.
func TestStudyTableRoundsOnce(t *testing.T) {
	r := &StudyReport{Rows: []StudyRow{{Node: "overall", Kind: study.KindOverall, Age: study.AgeAdult, Model: "m1",
		ScoreA: 4.0 / 21, ScoreB: 0.5185185185185185, Diff: 0.3280423, Lo: 0.00003, Hi: 0.66, Significant: true}}}
	var b strings.Builder
	if err := r.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"0.190", "0.519", "+0.328", "[+0.000030, +0.660]", "Changed beyond the interval, by level: overall 1/1.\n"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
}

// TestRatesPrintRoundedOnce: a rate of 4 of 21 prints 19.0 % (its value,
// 19.05 %, rounded once), not 19.1 % via the 4-place 0.1905.
func TestRatesPrintRoundedOnce(t *testing.T) {
	r := Rate{Rate: ptrTo(0.1905), Passed: 4, Total: 21}
	if got := count(r); got != "19.0% (4/21)" {
		t.Errorf("count: %q", got)
	}
}

func ptrTo(x float64) *float64 { return &x }

// TestCompareStudiesSafetyStops: compare --study says, per model in both
// studies whose provider stopped a reply for safety in either, its stops
// in A and in B summed over each study's benchmarks (study.json's
// models[].refused); models without one and models in one study only are
// not listed, and two studies without any say nothing and write no key.
func TestCompareStudiesSafetyStops(t *testing.T) {
	stops := func(rs ...study.BenchRefused) []study.BenchRefused { return rs }
	cases := []struct {
		name       string
		refA, refB map[string][]study.BenchRefused // by model
		want       []StudySafetyStopRow
		table      string
	}{
		{name: "no stops"},
		{name: "stops in A and B, over two benchmarks",
			refA: map[string][]study.BenchRefused{"m1": stops(study.BenchRefused{Benchmark: "alpha", Conversations: 2, Replies: 3}, study.BenchRefused{Benchmark: "gamma", Conversations: 1, Replies: 1})},
			refB: map[string][]study.BenchRefused{"m1": stops(study.BenchRefused{Benchmark: "alpha", Conversations: 1, Replies: 1})},
			want: []StudySafetyStopRow{{Model: "m1", A: study.SafetyStops{Conversations: 3, Replies: 4, Benchmarks: 2}, B: study.SafetyStops{Conversations: 1, Replies: 1, Benchmarks: 1}}},
			table: "\nProvider safety stops (target replies its provider stopped for safety, over the study's benchmarks: the model's answers, judged and counted in the scores above)\n" +
				"  MODEL  A                                                 B\n" +
				"  m1     4 replies in 3 conversations across 2 benchmarks  1 reply in 1 conversation across 1 benchmark\n"},
		{name: "stops in B only; a model in one study only is not listed",
			refA: map[string][]study.BenchRefused{"gone": stops(study.BenchRefused{Benchmark: "alpha", Conversations: 1, Replies: 1})},
			refB: map[string][]study.BenchRefused{"m2": stops(study.BenchRefused{Benchmark: "beta", Conversations: 2, Replies: 2}), "new": stops(study.BenchRefused{Benchmark: "beta", Conversations: 1, Replies: 1})},
			want: []StudySafetyStopRow{{Model: "m2", B: study.SafetyStops{Conversations: 2, Replies: 2, Benchmarks: 1}}},
			table: "  MODEL  A     B\n" +
				"  m2     none  2 replies in 2 conversations across 1 benchmark\n"},
	}
	nodes := []*study.Node{{ID: "overall", Kind: study.KindOverall}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			side := func(ids []string, ref map[string][]study.BenchRefused) *study.Result {
				r := &study.Result{Conf: 0.95, Nodes: nodes}
				for _, id := range ids {
					r.Models = append(r.Models, study.ModelInfo{ID: id, Refused: ref[id]})
					r.Cells = append(r.Cells, cell("overall", id, 0.5, 0.4, 0.6))
				}
				return r
			}
			rep, err := CompareStudies(side([]string{"m1", "m2", "gone"}, tc.refA), side([]string{"m1", "m2", "new"}, tc.refB), "A", "B")
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, rep.SafetyStops); d != "" {
				t.Errorf("safety stops (-want +got):\n%s", d)
			}
			var b strings.Builder
			if err := rep.WriteTable(&b); err != nil {
				t.Fatal(err)
			}
			js, _ := json.Marshal(rep)
			if tc.want == nil {
				if strings.Contains(b.String(), "safety") || strings.Contains(string(js), "safety_stops") {
					t.Errorf("no compared model has a stop, yet:\n%s\n%s", b.String(), js)
				}
				return
			}
			if !strings.Contains(b.String(), tc.table) {
				t.Errorf("table lacks %q:\n%s", tc.table, b.String())
			}
			if !strings.Contains(string(js), `"safety_stops":[{"model":"`+tc.want[0].Model+`","a":{"n_conversations":`) {
				t.Errorf("JSON: %s", js)
			}
		})
	}
}
