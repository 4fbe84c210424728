package compare

import (
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
	r := CompareStudies(a, b, "A", "B")
	if len(r.Rows) != 3 || r.Changed != 1 || len(r.OnlyInA) != 1 || r.OnlyInA[0] != "gone" || len(r.OnlyInB) != 1 || r.OnlyInB[0] != "new" {
		t.Fatalf("report: %+v", r)
	}
	m1 := r.Rows[0]
	// MOVER: 0.2 ± √(0.05² + 0.05²) = 0.2 ± 0.0707.
	if m1.Diff != 0.2 || m1.Lo != 0.1293 || m1.Hi != 0.2707 || !m1.Significant || m1.Kind != study.KindOverall {
		t.Errorf("m1 overall: %+v", m1)
	}
	if r.Rows[1].Significant || r.Rows[2].Significant {
		t.Errorf("small moves flagged: %+v %+v", r.Rows[1], r.Rows[2])
	}
}
