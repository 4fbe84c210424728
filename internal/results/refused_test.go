package results

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/impactbench/impactbench/internal/artifacts"
)

// TestAggregate_Refused: results.json counts, per model and per metric,
// the rows whose conversation had a target reply its provider stopped for
// safety, and the replies; rows without one add no key.
func TestAggregate_Refused(t *testing.T) {
	refused := func(id, mid string, passed *bool, idx ...int) artifacts.Score {
		s := score(id, mid, passed)
		s.Refused = idx
		return s
	}
	rows := []artifacts.Score{
		refused("a", "m01", T, 1, 3),
		refused("b", "m01", nil, 1, 1), // no verdict still counts; a repeated index once
		refused("c", "m02", F, 5),
		refused("d", "m02", T),
		refused("e", "m01", F),
	}
	for _, upstream := range []bool{false, true} {
		res, err := Aggregate(Input{Metrics: metrics, Scores: rows}, Options{UpstreamOnly: upstream})
		if err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(res[0])
		if err != nil {
			t.Fatal(err)
		}
		if upstream {
			if strings.Contains(string(b), `"refused"`) {
				t.Errorf("--upstream-only entry carries refused: %s", b)
			}
			continue
		}
		got := compact(t, res[0].Refused)
		want := `{"n_conversations":3,"n_replies":4,"by_metric":{"m01":{"n_conversations":2,"n_replies":3},"m02":{"n_conversations":1,"n_replies":1}}}`
		if got != want {
			t.Errorf("refused =\n%s\nwant\n%s", got, want)
		}
		if !strings.Contains(string(b), `"refused":{"n_conversations":3,`) {
			t.Error("the marshalled entry has no refused block")
		}
		// The rates are unchanged by it: m01 has two verdicts, one passed.
		if r, _ := res[0].ByMetric.Get("m01"); r.NTotal != 2 || r.NPassed != 1 {
			t.Errorf("by_metric m01 = %+v", r)
		}
		var back ModelResult
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(res[0].Refused, back.Refused); d != "" {
			t.Errorf("round trip:\n%s", d)
		}
	}
	// Without a refused reply the entry is byte for byte what it was.
	for i := range rows {
		rows[i].Refused = nil
	}
	res, err := Aggregate(Input{Metrics: metrics, Scores: rows}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(res[0])
	if res[0].Refused != nil || strings.Contains(string(b), "refused") {
		t.Errorf("rows without a refused reply give %+v: %s", res[0].Refused, b)
	}
}

// TestRefusedLine: the run's summary says under a model's lines how many
// of its replies its provider stopped for safety, out of all its
// conversations (those left out as invalid too); nothing without one.
func TestRefusedLine(t *testing.T) {
	cases := []struct {
		name string
		m    ModelResult
		want string
	}{
		{"none", ModelResult{NTotal: 16}, ""},
		{"upstream-only", ModelResult{NTotal: 16, Refused: nil}, ""},
		{"one", ModelResult{NTotal: 16, Refused: &RefusedStats{Conversations: 1, Replies: 1}},
			"    provider safety stops: 1 target reply in 1 of 16 conversations, the target's answers (judged and counted in the rates above)"},
		{"several", ModelResult{NTotal: 16, Refused: &RefusedStats{Conversations: 2, Replies: 3}},
			"    provider safety stops: 3 target replies in 2 of 16 conversations, the target's answers (judged and counted in the rates above)"},
		// valid_only: the rates rest on 12 rows, the counts on all 20.
		{"valid only", ModelResult{NTotal: 12, Validity: &ValidityStats{N: 20}, Refused: &RefusedStats{Conversations: 2, Replies: 2}},
			"    provider safety stops: 2 target replies in 2 of 20 conversations, the target's answers (judged and counted in the rates above)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := RefusedLine(c.m); got != c.want {
				t.Errorf("RefusedLine =\n%q\nwant\n%q", got, c.want)
			}
		})
	}
	// From Aggregate: every row of the model is counted, invalid ones too.
	valid, invalid := true, false
	rows := []artifacts.Score{score("a", "m01", T), score("b", "m01", F), score("c", "m02", nil)}
	rows[0].Refused = []int{1}
	for i := range rows {
		rows[i].Valid = &valid
	}
	rows[2].Valid = &invalid
	rows[2].Refused = []int{1, 3}
	res, err := Aggregate(Input{Metrics: metrics, Scores: rows}, Options{ValidOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	want := "    provider safety stops: 3 target replies in 2 of 3 conversations, the target's answers (judged and counted in the rates above)"
	if got := RefusedLine(res[0]); got != want {
		t.Errorf("RefusedLine(aggregated) =\n%q\nwant\n%q", got, want)
	}
}
