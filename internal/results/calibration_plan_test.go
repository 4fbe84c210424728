package results

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/labels"
)

// planRows is one positive metric's rows for each target: present judge
// verdicts on the first nPresent of 48 rows (12 base scenarios × 4 variants).
func planRows(targets map[string]int) []ScoreRow {
	var out []ScoreRow
	for _, t := range []string{"a", "b"} {
		nPresent, ok := targets[t]
		if !ok {
			continue
		}
		for i := range 48 {
			id := fmt.Sprintf("m01_s%03d_v%02d", i/4+1, i%4+1)
			p := i < nPresent
			out = append(out, RowOf(artifacts.Score{ID: id, MetricID: "m01", TargetModel: t, Present: ptr(p), Passed: ptr(p), ConvID: artifacts.ConvID(id, t, 0)}))
		}
	}
	return out
}

// labelRows labels the rows of target t accepted by keep with human(i).
func labelRows(rows []ScoreRow, t string, keep func(i int, r ScoreRow) bool, human func(i int) bool) []labels.Label {
	var out []labels.Label
	i := -1
	for _, r := range rows {
		if r.TargetModel != t {
			continue
		}
		i++
		if keep(i, r) {
			out = append(out, labels.Label{ConvID: r.ConvID, MetricID: r.MetricID, Present: human(i), Labeler: "ana", At: time.Unix(0, 0)})
		}
	}
	return out
}

// TestPlanKeepsAskingUntilANumber: people have found the behaviour in none
// of the 10 labelled rows: there is no corrected rate, and instead of "0
// more" the plan asks for more of the rows the judge called present. Once
// every such row is labelled and still none is present, it says from the
// start that no number can be had, and why.
func TestPlanKeepsAskingUntilANumber(t *testing.T) {
	rows := planRows(map[string]int{"a": 12})
	none := func(int) bool { return false }
	first5 := labelRows(rows, "a", func(i int, r ScoreRow) bool { return (i < 12 && i < 5) || (i >= 12 && i < 17) }, none)
	p := PlanLabels(rows, first5, "judge", 0.9, 0.95)
	tp, _ := p.Metrics[0].Value.Targets.Get("a")
	if tp.Status != PlanNeedsLabels || tp.MorePresent < 5 || !strings.Contains(tp.Note, `no human "present" yet`) || p.More == 0 {
		t.Fatalf("no human present yet: plan %+v (more %d)", tp, p.More)
	}
	if len(p.Unreachable) != 0 {
		t.Errorf("unreachable %+v while present-verdict rows are left", p.Unreachable)
	}
	all := labelRows(rows, "a", func(i int, r ScoreRow) bool { return i < 17 }, none)
	p = PlanLabels(rows, all, "judge", 0.9, 0.95)
	tp, _ = p.Metrics[0].Value.Targets.Get("a")
	if tp.Status != PlanUnreachable || tp.MorePresent+tp.MoreAbsent != 0 || len(p.Unreachable) != 1 || !strings.Contains(p.Unreachable[0].Why, "too rare") {
		t.Errorf("every present-verdict row labelled, none present: plan %+v, unreachable %+v", tp, p.Unreachable)
	}
	// A human "present" among them: a number, and the plan says so.
	some := labelRows(rows, "a", func(i int, r ScoreRow) bool { return i < 17 }, func(i int) bool { return i < 9 })
	p = PlanLabels(rows, some, "judge", 0.9, 0.95)
	if tp, _ = p.Metrics[0].Value.Targets.Get("a"); tp.Status != PlanCorrected || p.Metrics[0].Value.Corrected != 1 {
		t.Errorf("labels with both answers: plan %+v", tp)
	}
}

// TestPlanNamesATargetWithoutLabels: labels on a only; b (added later, say)
// is named with how many of its rows to label, and a label changed after
// the reveal is left out and counted.
func TestPlanNamesATargetWithoutLabels(t *testing.T) {
	rows := planRows(map[string]int{"a": 20, "b": 20})
	ls := labelRows(rows, "a", func(int, ScoreRow) bool { return true }, func(i int) bool { return i < 18 || i == 30 })
	late := ls[0]
	late.Present, late.AfterReveal = false, true
	p := PlanLabels(rows, append(ls, late), "judge", 0.9, 0.95)
	mp := p.Metrics[0].Value
	tb, ok := mp.Targets.Get("b")
	if !ok || tb.LabelledPresent+tb.LabelledAbsent != 0 || tb.MorePresent < MinTargetLabelsPerClass || tb.MoreAbsent < MinTargetLabelsPerClass || tb.Status != PlanNeedsLabels {
		t.Errorf("b: %+v", tb)
	}
	if ta, _ := mp.Targets.Get("a"); ta.Status != PlanCorrected {
		t.Errorf("a, every row labelled: %+v", ta)
	}
	if mp.Corrected != 1 || !strings.Contains(mp.Note, "1 of 2 targets have no corrected rate") || p.AfterReveal != 1 {
		t.Errorf("metric plan %+v, after reveal %d", mp, p.AfterReveal)
	}
}
