package report

import (
	"encoding/json"
	"time"
)

// viewerSummary is what the viewer's summary API serves: the report's
// summary plus the Provider safety stops note's rows (safety_stops, absent
// when no model has one), which report.html renders from its page
// template and so never embeds in its data.
type viewerSummary struct {
	summary
	SafetyStops []safetyStop `json:"safety_stops,omitempty"`
}

// SummaryJSON is the report's summary (leaderboard, heatmap, demographic
// view, cost, settings, and the models whose provider stopped replies for
// safety) as JSON, for `impactbench view`, which shows the same numbers
// live instead of computing them a second way.
func SummaryJSON(in *Input, now time.Time) ([]byte, error) {
	s := buildSummary(in, now)
	return json.Marshal(viewerSummary{summary: s, SafetyStops: s.SafetyStops})
}
