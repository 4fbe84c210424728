package adaptive

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// GoalOf holds each part of the goal per replay: a grade the full
// study withholds counts against (a), as a word the full data does not
// give; (b) wants 90 % of its different-calls and grades.
func TestGoalOf(t *testing.T) {
	base := ReplayRun{Conversations: 50, Full: 100, DifferentFull: 90, GradesFull: 10, DifferentKept: 81, GradesKept: 9}
	for _, c := range []struct {
		name string
		edit func(*ReplayRun)
		want Goal
	}{
		{"all three", func(*ReplayRun) {}, Goal{true, true, true, true}},
		{"one conversation over half", func(r *ReplayRun) { r.Conversations = 51 }, Goal{false, true, true, false}},
		{"a difference the other way", func(r *ReplayRun) { r.DiffAgainst = 1 }, Goal{true, false, true, false}},
		{"a grade the full study withholds", func(r *ReplayRun) { r.GradeBeyond = 1 }, Goal{true, false, true, false}},
		{"a rank interval without the full rank", func(r *ReplayRun) { r.RankAgainst = 1 }, Goal{true, false, true, false}},
		{"89 % stated", func(r *ReplayRun) { r.DifferentKept = 80 }, Goal{true, true, false, false}},
	} {
		r := base
		c.edit(&r)
		if got := GoalOf(r); got != c.want {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
}

// NewReport meets the goal only when the mean share is at most half and
// (a) and (b) each hold in ≥ 95 % of the replays; its text names every
// replay and the counts.
func TestReportGoal(t *testing.T) {
	good := ReplayRun{Conversations: 40, Full: 100, DifferentFull: 10, DifferentKept: 10, Different: 10, Cost: map[string]float64{"overall different": 3}}
	bad := good
	bad.GradeAgainst = 1
	runs := make([]ReplayRun, 20)
	for i := range runs {
		runs[i] = good
		runs[i].Index = i
	}
	if r := NewReport(runs, Options{}, 1); !r.GoalMet || r.MeetAll != 20 {
		t.Errorf("20 good replays: goal %v, all %d", r.GoalMet, r.MeetAll)
	}
	runs[3] = bad // 19 of 20: 95 %
	if r := NewReport(runs, Options{}, 1); !r.GoalMet || r.MeetA != 19 {
		t.Errorf("19 of 20 with (a): goal %v, (a) %d; want met", r.GoalMet, r.MeetA)
	}
	runs[4] = bad
	r := NewReport(runs, Options{}, 1)
	if r.GoalMet {
		t.Error("18 of 20 with (a): goal met")
	}
	var b strings.Builder
	if err := r.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"20 replays, seed 1", "median 40.0 %", "(a) nothing against the full study (strict):          18 of 20",
		"goal met: no", "overall different 100 %", "misses (a)", "    19  "} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, b.String())
		}
	}
}

// Replay reports each replay done and stops on a cancelled context with
// its error.
func TestReplayProgressAndCancel(t *testing.T) {
	s := small(t)
	var seen []int
	runs, err := Replay(t.Context(), s, ReplayOptions{Replays: 3, Seed: 1, Workers: 2, Progress: func(done, total int) {
		if total != 3 {
			t.Errorf("total %d", total)
		}
		seen = append(seen, done)
	}})
	if err != nil || len(runs) != 3 || len(seen) != 3 || seen[2] != 3 {
		t.Fatalf("runs %d, progress %v, err %v", len(runs), seen, err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := Replay(ctx, s, ReplayOptions{Replays: 50, Workers: 1}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v, want context.Canceled", err)
	}
}

// The report's JSON carries docs/json.md's field names.
func TestReportJSONNames(t *testing.T) {
	b, err := json.Marshal(NewReport([]ReplayRun{{Conversations: 1, Full: 2, Cost: map[string]float64{}, Bases: []int{0, 1}}}, Options{}, 3))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"method":`, `"design":{"alpha":0.05,"start":1,"max":3,"rho":8,"hope":1,"budget":1,"seed":0}`, `"seed":3`,
		`"share":{"mean":0.5,"min":0.5,"p5":0.5,"p50":0.5,"p95":0.5,"max":0.5}`, `"no_beyond":`, `"kept_90":`, `"per_conclusion":`,
		`"meet_half":1`, `"meet_a":1`, `"meet_b":1`, `"meet_all":1`, `"goal_met":true`,
		`"runs":[{"index":0,"conversations":1,"full":2,"looks":0,"different":0,"different_kept":0,"different_full":0,"grades":0,"grades_kept":0,"grades_full":0,"diff_against":0,"grade_against":0,"rank_against":0,"grade_beyond":0,"conflicts":0,"cost":{},"bases":[0,1]}]`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("JSON lacks %s:\n%s", want, b)
		}
	}
}
