package results

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/impactbench/impactbench/internal/artifacts"
)

func TestAggregate_Unverified(t *testing.T) {
	single := func(mid, judge string, passed, unverified *bool) artifacts.Score {
		s := score("s", mid, passed)
		s.Present, s.Judge, s.Unverified = passed, judge, unverified
		return s
	}
	panel := func(mid string, rowBad, a, b *bool) artifacts.Score {
		s := score("p", mid, T)
		s.Present, s.Unverified = T, rowBad
		s.Judges = []artifacts.JudgeVerdict{{Judge: "ja", Present: T, Unverified: a}, {Judge: "jb", Present: T, Unverified: b}}
		return s
	}
	rows := []artifacts.Score{
		single("m01", "J", T, F),
		single("m01", "J", F, T),
		single("m01", "J", nil, nil), // no verdict: nothing checked
		single("m02", "", T, T),      // single judge not named
		panel("m02", F, T, F),
		panel("m02", T, T, T),
	}
	res, err := Aggregate(Input{Metrics: metrics, Scores: rows}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	got := compact(t, res[0].Unverified)
	want := `{"n_checked":7,"n_unverified":5,"rows_unverified":3,` +
		`"by_metric":{"m01":{"n_checked":2,"n_unverified":1,"by_judge":{"J":{"n_checked":2,"n_unverified":1}}},` +
		`"m02":{"n_checked":5,"n_unverified":4,"by_judge":{"ja":{"n_checked":2,"n_unverified":2},"jb":{"n_checked":2,"n_unverified":1},"judge":{"n_checked":1,"n_unverified":1}}}},` +
		`"by_judge":{"J":{"n_checked":2,"n_unverified":1},"ja":{"n_checked":2,"n_unverified":2},"jb":{"n_checked":2,"n_unverified":1},"judge":{"n_checked":1,"n_unverified":1}}}`
	if got != want {
		t.Errorf("unverified =\n%s\nwant\n%s", got, want)
	}
	// Unverified verdicts stay in the rates: m01 has two verdicts, one passed.
	if r, _ := res[0].ByMetric.Get("m01"); r.NTotal != 2 || r.NPassed != 1 {
		t.Errorf("by_metric m01 = %+v", r)
	}
	// The entry round-trips, and rows without the check add no key.
	b, err := json.Marshal(res[0])
	if err != nil {
		t.Fatal(err)
	}
	var back ModelResult
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(res[0].Unverified, back.Unverified); d != "" {
		t.Errorf("round trip:\n%s", d)
	}
	res, _ = Aggregate(Input{Metrics: metrics, Scores: []artifacts.Score{score("a", "m01", T)}}, Options{})
	if res[0].Unverified != nil {
		t.Errorf("unchecked rows give %+v", res[0].Unverified)
	}
}
