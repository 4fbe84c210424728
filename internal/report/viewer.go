package report

import (
	"encoding/json"
	"time"
)

// SummaryJSON is the report's summary (leaderboard, heatmap, demographic
// view, cost, settings) as JSON, for `impactbench view`, which shows the
// same numbers live instead of computing them a second way.
func SummaryJSON(in *Input, now time.Time) ([]byte, error) {
	return json.Marshal(buildSummary(in, now))
}
