package study_test

import (
	"strings"
	"testing"

	"github.com/impactbench/impactbench/internal/study"
)

// TestSummaryExplainsTheThinMark: a leaderboard row marked "!" (a thin
// cell) comes with a line saying what the mark means; a board without one
// prints no such line.
func TestSummaryExplainsTheThinMark(t *testing.T) {
	row := func(model string, thin bool) study.LeaderRow {
		return study.LeaderRow{Age: "adult", Model: model, Score: 0.5, Lo: 0.1, Hi: 0.9, Rank: 1, RankLo: 1, RankHi: 2, Metrics: 2, Scenarios: 4, Thin: thin}
	}
	for _, tc := range []struct {
		name string
		rows []study.LeaderRow
		want bool
	}{
		{"a thin row", []study.LeaderRow{row("a", true), row("b", false)}, true},
		{"no thin row", []study.LeaderRow{row("a", false), row("b", false)}, false},
	} {
		var b strings.Builder
		if err := (study.Summary{File: "study.json", Leaderboard: tc.rows}).WriteText(&b); err != nil {
			t.Fatal(err)
		}
		out := b.String()
		if got := strings.Contains(out, "\n! thin: fewer than 10 base scenarios in the cell, or a metric on fewer than 3"); got != tc.want {
			t.Errorf("%s: legend printed %v, want %v:\n%s", tc.name, got, tc.want, out)
		}
		if marked := strings.Contains(out, "0.500 !"); marked != tc.want {
			t.Errorf("%s: row marked %v, want %v:\n%s", tc.name, marked, tc.want, out)
		}
	}
}
