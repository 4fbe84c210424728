package viewer

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/impactbench/impactbench/internal/layout"
	"github.com/impactbench/impactbench/internal/results"
)

// TestSummaryServesSafetyStops: the summary the run page's leaderboard is
// drawn from lists each model whose provider stopped some of its replies
// for safety — recounted from scores.json for a provisional row, from
// results.json's refused once there is one — with the conversations
// holding a stop out of all its conversations and the replies stopped; a
// model without one is not listed, and a benchmark without any has no
// safety_stops key. A reviewer's link does not reach the summary.
func TestSummaryServesSafetyStops(t *testing.T) {
	project := filepath.Join(t.TempDir(), "project")
	// In "live" and "done", alpha's first conversation has replies 1 and 3
	// stopped (Marks), beta's none; "done" has a results.json, whose
	// refused counts instead. "calm" has no stop at all.
	spec := SynthSpec{Metrics: 2, ScensPerMetric: 2, Targets: []string{"alpha", "beta"}, Samples: 2, Msgs: 4, MsgLen: 80, Judges: 2, Marks: true}
	for _, name := range []string{"live", "done", "calm"} {
		spec.Name, spec.Marks = name, name != "calm"
		dir, _ := WriteSynth(t, project, spec)
		if name == "done" {
			must(t, results.WriteResults(layout.Bench{Dir: dir}.Results(), []results.ModelResult{
				{TargetModel: "alpha", NTotal: 8, Extended: true},
				{TargetModel: "beta", NTotal: 6, Extended: true, Validity: &results.ValidityStats{N: 8}, Refused: &results.RefusedStats{Conversations: 2, Replies: 3}},
			}))
		}
	}
	s, base := StartForTest(t, Options{ProjectDir: project, Reviewers: []string{"ana-reviewer"}})
	research := map[string]string{"X-IB-Token": tokenOf(t, s, "")}
	stops := func(bench string) (string, string) {
		t.Helper()
		code, body := do(t, base, req{"GET", "/api/b/" + bench + "/summary", "", research})
		if code != http.StatusOK {
			t.Fatalf("%s summary: %d %s", bench, code, body)
		}
		var sum struct {
			Stops json.RawMessage `json:"safety_stops"`
		}
		decodeInto(t, body, &sum)
		return string(sum.Stops), body
	}

	if got, want := first(stops("live")), `[{"model":"alpha","n_conversations":1,"n_replies":2,"of":8,"provisional":true}]`; got != want {
		t.Errorf("provisional safety_stops %s, want %s", got, want)
	}
	if got, body := stops("calm"); got != "" || strings.Contains(body, "safety_stops") {
		t.Errorf("a benchmark without safety stops serves %q", got)
	}
	if got, want := first(stops("done")), `[{"model":"beta","n_conversations":2,"n_replies":3,"of":8}]`; got != want {
		t.Errorf("safety_stops from results.json %s, want %s", got, want)
	}

	// A reviewer's link never reaches the leaderboard's data.
	code, body := do(t, base, req{"GET", "/api/b/done/summary", "", map[string]string{"X-IB-Token": tokenOf(t, s, "ana-reviewer")}})
	if code != http.StatusForbidden || strings.Contains(body, "safety_stops") || strings.Contains(body, "beta") {
		t.Errorf("reviewer's summary: %d %.200s", code, body)
	}
}

func first(a, _ string) string { return a }
