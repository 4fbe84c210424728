package results

import (
	"slices"
	"testing"

	"github.com/impactbench/impactbench/internal/config"
)

func TestGroupByTargetKeepsFileOrderPerTarget(t *testing.T) {
	tests := []struct {
		name      string
		rows      []row
		runDirs   []string
		wantOrder []string
		wantIDs   map[string][]string
		wantErr   bool
	}{
		{
			name:      "interleaved targets",
			rows:      []row{{ID: "1", TargetModel: "b"}, {ID: "2", TargetModel: "a"}, {ID: "3", TargetModel: "b"}, {ID: "4", TargetModel: "a"}, {ID: "5", TargetModel: "b"}},
			wantOrder: []string{"b", "a"},
			wantIDs:   map[string][]string{"b": {"1", "3", "5"}, "a": {"2", "4"}},
		},
		{
			name:      "run directory names rows without a target",
			rows:      []row{{ID: "1"}, {ID: "2", TargetModel: "named"}, {ID: "3"}},
			runDirs:   []string{"dir-x", "dir-y", "dir-x"},
			wantOrder: []string{"dir-x", "named"},
			wantIDs:   map[string][]string{"dir-x": {"1", "3"}, "named": {"2"}},
		},
		{name: "no target at all", rows: []row{{ID: "1"}}, wantErr: true},
		{name: "run dirs do not match the rows", rows: []row{{ID: "1"}}, runDirs: []string{"x", "y"}, wantErr: true},
	}
	types := map[string]config.MetricType{"m": config.Negative}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for i := range tc.rows {
				tc.rows[i].MetricID = "m"
			}
			order, groups, _, err := groupByTarget(tc.rows, tc.runDirs, types)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if tc.wantErr {
				return
			}
			if !slices.Equal(order, tc.wantOrder) {
				t.Errorf("order = %v, want %v", order, tc.wantOrder)
			}
			for target, want := range tc.wantIDs {
				var got []string
				for _, r := range groups[target] {
					got = append(got, r.ID)
					if r.TargetModel != target || r.typ != config.Negative {
						t.Errorf("row %s: target %q type %q, want %q and negative", r.ID, r.TargetModel, r.typ, target)
					}
				}
				if !slices.Equal(got, want) {
					t.Errorf("%s rows = %v, want %v", target, got, want)
				}
			}
			// A group may not reach into the next one's rows when appended to.
			for _, g := range groups {
				if cap(g) != len(g) {
					t.Errorf("group of %d rows has capacity %d", len(g), cap(g))
				}
			}
		})
	}
}
