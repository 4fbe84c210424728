package compare

import (
	"errors"
	"math"
	"strings"
	"testing"

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
	for _, want := range []string{"0.190", "0.519", "+0.328", "[+0.000030, +0.660]"} {
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
