package compare

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/human"
	"github.com/impactbench/impactbench/internal/llm"
)

// TestCompareListsPeoplesConversations: the conversations people played in
// run A (two judged on the positive track, one a draft) are listed beside
// the rates — with their rate, count and draft — and left out of them.
func TestCompareListsPeoplesConversations(t *testing.T) {
	root := t.TempDir()
	a, b := filepath.Join(root, "a"), filepath.Join(root, "b")
	writeBench(t, a, closeSpec())
	writeBench(t, b, closeSpec())
	st := human.Open(a)
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	run := artifacts.RunInfo{TargetModel: "alpha", Turns: 2}
	for i, pass := range []bool{true, false, true} {
		sc := artifacts.Scenario{ID: "m01_s001_v01", MetricID: "m01"}
		c, err := st.Start("alpha", sc, "ana", run, now)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.Reply("alpha", c.ConvID, 0, artifacts.Turn{Role: "user", Content: "hi"}, artifacts.Turn{Role: "assistant", Content: "ok"}, false, llm.Usage{}, 2, now); err != nil {
			t.Fatal(err)
		}
		if i == 2 {
			break // a draft
		}
		if _, err := st.End("alpha", c.ConvID, 2, now); err != nil {
			t.Fatal(err)
		}
		if err := st.SetScore("alpha", human.Score{Score: artifacts.Score{ID: sc.ID, MetricID: "m01", TargetModel: "alpha", Sample: c.Sample, ConvID: c.ConvID,
			Present: ptr(pass), Passed: ptr(pass)}, User: human.User, Player: "ana", JudgedAt: now}); err != nil {
			t.Fatal(err)
		}
	}
	ra, err := LoadRun(a, "A")
	if err != nil {
		t.Fatal(err)
	}
	rb, err := LoadRun(b, "B")
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Compare(ra, rb, Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.People) != 2 {
		t.Fatalf("people rows %+v", rep.People)
	}
	pos := rep.People[0]
	if pos.Model != "alpha" || pos.Track != "positive" || pos.A == nil || pos.A.Total != 2 || pos.A.Passed != 1 || pos.B != nil || pos.ConversationsA != 3 || pos.DraftsA != 1 {
		t.Errorf("positive row %+v (a %+v)", pos, pos.A)
	}
	// The rates are the simulated users' alone: the same in A and B.
	for _, r := range rep.Rates {
		if r.Model == "alpha" && (r.A.Total != r.B.Total || r.A.Passed != r.B.Passed) {
			t.Errorf("people's verdicts counted in the rates: %+v", r)
		}
	}
	var buf bytes.Buffer
	if err := rep.WriteTable(&buf); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "Played by people") || !strings.Contains(buf.String(), "3 (1, 0)") {
		t.Errorf("table:\n%s", buf.String())
	}
}
