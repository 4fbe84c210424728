package compare

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestSafetyStops: compare says, per compared model whose provider stopped
// a reply for safety in either run, how many of its conversations hold one
// in A and in B (its answers, in the rates); models without one and models
// in one run only are not listed, and a comparison without any says
// nothing and writes no key.
func TestSafetyStops(t *testing.T) {
	opts := Options{Seed: 7, Reps: 200}
	a, b := closeSpec().run("A"), closeSpec().run("B")
	b.Scores = append(b.Scores, scoreRows("delta", "m01", []string{"11"})...)
	b.Scores[len(b.Scores)-1].Refused = []int{1} // delta is in B only: not compared

	none := mustCompare(t, a, b, opts)
	var buf bytes.Buffer
	if err := none.WriteTable(&buf); err != nil {
		t.Fatal(err)
	}
	js, _ := json.Marshal(none)
	if none.SafetyStops != nil || strings.Contains(buf.String(), "safety") || strings.Contains(string(js), "safety_stops") {
		t.Errorf("no compared model has a stop, yet: %+v\n%s", none.SafetyStops, buf.String())
	}

	// alpha: two rows of A with stopped replies (one index repeated), one of B.
	n := 0
	for i := range a.Scores {
		if a.Scores[i].TargetModel == "alpha" && n < 2 {
			a.Scores[i].Refused = [][]int{{1, 3, 3}, {1}}[n]
			n++
		}
	}
	for i := range b.Scores {
		if b.Scores[i].TargetModel == "alpha" {
			b.Scores[i].Refused = []int{3}
			break
		}
	}
	rep := mustCompare(t, a, b, opts)
	want := []SafetyStopRow{{Model: "alpha", A: SafetyStops{Conversations: 2, Replies: 3, Rows: 16}, B: SafetyStops{Conversations: 1, Replies: 1, Rows: 16}}}
	if d := cmp.Diff(want, rep.SafetyStops); d != "" {
		t.Errorf("safety stops (-want +got):\n%s", d)
	}
	if d := cmp.Diff(none.Rates, rep.Rates); d != "" {
		t.Errorf("the stops changed the rates:\n%s", d)
	}
	buf.Reset()
	if err := rep.WriteTable(&buf); err != nil {
		t.Fatal(err)
	}
	table := buf.String()
	for _, w := range []string{
		"\nProvider safety stops (target replies its provider stopped for safety: the model's answers, judged and counted in the rates above)\n" +
			"  MODEL  A                                  B\n" +
			"  alpha  2 of 16 conversations (3 replies)  1 of 16 conversations (1 reply)\n" +
			"\nRank agreement", // beta and gamma, without a stop, are not listed
	} {
		if !strings.Contains(table, w) {
			t.Errorf("table lacks %q:\n%s", w, table)
		}
	}
	js, _ = json.Marshal(rep)
	if !strings.Contains(string(js), `"safety_stops":[{"model":"alpha","a":{"n_conversations":2,"n_replies":3,"n_rows":16},"b":{"n_conversations":1,"n_replies":1,"n_rows":16}}]`) {
		t.Errorf("JSON: %s", js)
	}
}
