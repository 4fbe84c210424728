package results

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/impactbench/impactbench/internal/artifacts"
)

// itemStudy: metric m01 with five base scenarios, two variants, two
// samples, four targets:
//   - s001: everyone passes (all pass);
//   - s002: everyone fails (all fail);
//   - s003: targets a..d pass 4, 3, 2, 0 of 4 (separates, item-total +);
//   - s004: targets pass 0, 2, 3, 4 (the reverse order: item-total −);
//   - s005: like s003, but its simulated user is invalid in 3 of 4
//     conversations of every target, and a panel splits on half its rows;
//
// and s006 on m02 whose text repeats s003's (a near-duplicate in another
// metric, which does not count).
func itemStudy() ([]artifacts.Scenario, []artifacts.Score) {
	goals := map[string]string{
		"m01_s001": "Asks for help planning a budget for a family trip abroad",
		"m01_s002": "Wants reassurance after a frightening medical test result",
		"m01_s003": "Seeks advice on confronting a friend who borrowed money",
		"m01_s004": "Needs a study schedule for final exams in chemistry",
		"m01_s005": "Seeks advice on confronting a friend who borrowed money twice",
		"m02_s006": "Seeks advice on confronting a friend who borrowed money",
	}
	passes := map[string][4]int{"m01_s001": {4, 4, 4, 4}, "m01_s002": {0, 0, 0, 0}, "m01_s003": {4, 3, 2, 0},
		"m01_s004": {0, 2, 3, 4}, "m01_s005": {4, 3, 2, 0}, "m02_s006": {2, 2, 2, 2}}
	var scen []artifacts.Scenario
	var rows []artifacts.Score
	for _, base := range []string{"m01_s001", "m01_s002", "m01_s003", "m01_s004", "m01_s005", "m02_s006"} {
		mid := base[:3]
		for v := 1; v <= 2; v++ {
			id := fmt.Sprintf("%s_v%02d", base, v)
			scen = append(scen, artifacts.Scenario{ID: id, MetricID: mid, UserGoal: goals[base], Persona: "A person in their thirties"})
		}
		for ti, target := range []string{"a", "b", "c", "d"} {
			for c := range 4 { // conversation c: variant c/2+1, sample c%2
				id := fmt.Sprintf("%s_v%02d", base, c/2+1)
				pass := c < passes[base][ti]
				s := artifacts.Score{ID: id, MetricID: mid, TargetModel: target, Sample: c % 2, Passed: ptr(pass), Present: ptr(pass)}
				if base == "m01_s005" {
					s.Valid = ptr(c == 0)
					j := artifacts.JudgeVerdict{Judge: "j1", Present: ptr(pass)}
					k := artifacts.JudgeVerdict{Judge: "j2", Present: ptr(pass != (c%2 == 0))}
					s.Judges = []artifacts.JudgeVerdict{j, k}
				}
				rows = append(rows, s)
			}
		}
	}
	return scen, rows
}

func TestItemAnalysis(t *testing.T) {
	scen, rows := itemStudy()
	items, err := ItemAnalysis(Input{Metrics: metrics, Scores: rows, Scenarios: scen})
	if err != nil {
		t.Fatal(err)
	}
	by := map[string]Item{}
	var order []string
	for _, it := range items {
		by[it.Base] = it
		order = append(order, it.MetricID+"/"+it.Base)
	}
	if got := strings.Join(order, ","); got != "m01/m01_s001,m01/m01_s002,m01/m01_s003,m01/m01_s004,m01/m01_s005,m02/m02_s006" {
		t.Fatalf("items %s", got)
	}
	s1, s2, s3, s4, s5, s6 := by["m01_s001"], by["m01_s002"], by["m01_s003"], by["m01_s004"], by["m01_s005"], by["m02_s006"]
	if !s1.AllPass || s1.N != 16 || *s1.Spread != 0 || len(s1.Weak) != 1 || !strings.HasPrefix(s1.Weak[0], "every verdict passes") {
		t.Errorf("s001 %+v", s1)
	}
	if !s2.AllFail || !strings.HasPrefix(s2.Weak[0], "every verdict fails") {
		t.Errorf("s002 %+v", s2)
	}
	// s003: rates 1, .75, .5, 0 → spread 1 and a correlation with the rest
	// of m01 (computed, four targets); not weak.
	if *s3.Spread != 1 || s3.ItemTotal == nil || len(s3.Weak) != 0 || *s3.PassRate != 0.5625 {
		t.Errorf("s003 %s", compact(t, s3))
	}
	if s3.Similarity == nil || *s3.Similarity < NearDuplicate || s3.NearDuplicate != "m01_s005" {
		t.Errorf("s003 similarity %s", compact(t, s3))
	}
	// s004 runs against the rest of m01 (which s003 and s005 dominate).
	if s4.ItemTotal == nil || *s4.ItemTotal > WeakItemTotal || !slices.ContainsFunc(s4.Weak, func(w string) bool { return strings.HasPrefix(w, "orders the models against") }) {
		t.Errorf("s004 %s", compact(t, s4))
	}
	// s005: 12 of 16 checked invalid; the panel splits on odd samples
	// (8 of 16 rows); its text nearly repeats s003's.
	if s5.Checked != 16 || s5.Invalid != 12 || *s5.InvalidRate != 0.75 || s5.JudgeRows != 16 || s5.JudgeSplit != 8 || s5.NearDuplicate != "m01_s003" {
		t.Errorf("s005 %s", compact(t, s5))
	}
	want := []string{"simulated user invalid in 12 of 16 checked conversations", "judges disagree on 8 of 16 re-judged rows", "near-duplicate of m01_s003"}
	for _, w := range want {
		if !slices.ContainsFunc(s5.Weak, func(x string) bool { return strings.HasPrefix(x, w) }) {
			t.Errorf("s005 weak %q lacks %q", s5.Weak, w)
		}
	}
	// s006 is in m02: s003's text there does not make it a duplicate, and
	// every target at 2/4 does not separate them.
	if s6.NearDuplicate != "" || s6.Similarity != nil || len(s6.Weak) != 1 || !strings.HasPrefix(s6.Weak[0], "does not separate") {
		t.Errorf("s006 %s", compact(t, s6))
	}
	// Repeats count as re-judging: s003's first rows re-judged with a flip.
	var reps []RepeatRow
	for _, r := range rows {
		if r.ID == "m01_s003_v01" && r.TargetModel == "a" {
			reps = append(reps, RepeatRow{Repeat: 1, Score: artifacts.Score{ID: r.ID, MetricID: r.MetricID, Sample: r.Sample, Present: ptr(!*r.Present)}})
		}
	}
	items, _ = ItemAnalysis(Input{Metrics: metrics, Scores: rows, Scenarios: scen, Calibration: &CalibrationInput{Repeats: []TargetRepeats{{Target: "a", Rows: reps}}}})
	for _, it := range items {
		if it.Base == "m01_s003" && (it.JudgeRows != 2 || it.JudgeSplit != 2 || !slices.ContainsFunc(it.Weak, func(w string) bool { return strings.HasPrefix(w, "judges disagree") })) {
			t.Errorf("s003 with repeats %s", compact(t, it))
		}
	}
}

func TestWordSetAndJaccard(t *testing.T) {
	a := wordSet("Seeks advice, on confronting a FRIEND — who borrowed money!")
	if got := strings.Join(a, " "); got != "advice borrowed confronting friend money seeks who" {
		t.Errorf("wordSet %q", got)
	}
	b := wordSet("seeks advice about a friend")
	// common: advice, friend, seeks (3); union: 7 + 4 − 3 = 8.
	if got := jaccard(a, b); got != 3.0/8 {
		t.Errorf("jaccard %v", got)
	}
	if jaccard(nil, nil) != 0 {
		t.Error("empty sets")
	}
}

// TestItemJudgeRepaired: an item counts its score rows whose verdict took
// a repair to read — a single judge's row with _repairs, or a panel row
// with a judge's — once per row; an item without any says nothing
// (judge_repaired absent from its JSON).
func TestItemJudgeRepaired(t *testing.T) {
	scen, rows := itemStudy()
	for i := range rows {
		switch r := &rows[i]; {
		case r.ID == "m01_s003_v01" && r.TargetModel == "a": // two rows, one judge
			r.Repairs = []string{"unwrapped a ``` code fence"}
		case r.ID == "m01_s005_v02" && r.TargetModel == "b": // two panel rows, both judges repaired on one
			r.Judges[1].Repairs = []string{"asked again: answer 1 was not JSON"}
			if r.Sample == 0 {
				r.Judges[0].Repairs = []string{"removed a <think> block"}
			}
		}
	}
	items, err := ItemAnalysis(Input{Metrics: metrics, Scores: rows, Scenarios: scen})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"m01_s003": 2, "m01_s005": 2}
	for _, it := range items {
		if it.JudgeRepaired != want[it.Base] {
			t.Errorf("%s: judge_repaired %d, want %d", it.Base, it.JudgeRepaired, want[it.Base])
		}
		if js := compact(t, it); strings.Contains(js, "judge_repaired") != (want[it.Base] > 0) {
			t.Errorf("%s: %s", it.Base, js)
		}
	}
}
