package export

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/human"
	"github.com/impactbench/impactbench/internal/llm"
)

// playedFixture is the fixture with two conversations people played
// against t1: one ended and judged, one still being played (a draft).
func playedFixture(t *testing.T) Source {
	t.Helper()
	src := fixture(t)
	dir := filepath.Join(t.TempDir(), "fx")
	if err := os.CopyFS(dir, os.DirFS(src.Dir)); err != nil {
		t.Fatal(err)
	}
	src.Dir = dir
	st := human.Open(dir)
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	sc := artifacts.Scenario{ID: "m01_s001_v01", MetricID: "m01"}
	run := artifacts.RunInfo{TargetModel: "t1", Turns: 2}
	user, reply := artifacts.Turn{Role: "user", Content: "=cmd|' /C calc'!A0"}, artifacts.Turn{Role: "assistant", Content: "ok"}
	done, err := st.Start("t1", sc, "ana", run, now)
	must(t, err)
	_, err = st.Reply("t1", done.ConvID, 0, user, reply, false, llm.Usage{}, 2, now)
	must(t, err)
	_, err = st.End("t1", done.ConvID, 2, now)
	must(t, err)
	yes := true
	must(t, st.SetScore("t1", human.Score{Score: artifacts.Score{ID: sc.ID, MetricID: "m01", TargetModel: "t1", Sample: done.Sample, ConvID: done.ConvID,
		Present: &yes, Passed: &yes}, User: human.User, Player: "ana", JudgedAt: now}))
	draft, err := st.Start("t1", sc, "bo", run, now)
	must(t, err)
	_, err = st.Reply("t1", draft.ConvID, 0, artifacts.Turn{Role: "user", Content: "half"}, reply, false, llm.Usage{}, 2, now)
	must(t, err)
	return src
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestExportIncludesPeoplesConversations: a judged conversation a person
// played is exported with its verdicts (source human, its player), a draft
// with a null verdict and status playing — neither dropped — and both
// tables hold their messages.
func TestExportIncludesPeoplesConversations(t *testing.T) {
	src := playedFixture(t)
	j, err := OpenJudged(src)
	must(t, err)
	cols := names(j.Columns())
	at := func(name string) int {
		for i, c := range cols {
			if c == name {
				return i
			}
		}
		t.Fatalf("no column %s", name)
		return -1
	}
	var human [][]any
	for _, r := range collect(t, j) {
		if r[at("source")] == SourceHuman {
			human = append(human, r)
		} else if r[at("source")] != SourceSimulated || r[at("player")] != nil {
			t.Errorf("simulated row %v", r)
		}
	}
	// The judged one (a verdict without per-judge ones: one row); the draft.
	if len(human) != 2 {
		t.Fatalf("%d human rows: %v", len(human), human)
	}
	if r := human[0]; r[at("player")] != "ana" || r[at("present")] != true || r[at("scores_file")] != "human/scores.json" || r[at("conv_id")] != "m01_s001_v01__t1__h0" || r[at("status")] != "user_terminated" {
		t.Errorf("judged human row %v", r)
	}
	if r := human[1]; r[at("player")] != "bo" || r[at("present")] != nil || r[at("status")] != "playing" || r[at("null_reason")] != "not judged yet: still being played (a draft)" {
		t.Errorf("draft row %v", r)
	}
	m, err := OpenMessages(src)
	must(t, err)
	n := 0
	for _, r := range collect(t, m) {
		if r[3] == SourceHuman {
			n++
		}
	}
	if n != 4 {
		t.Errorf("%d human messages exported, want 4 (2 per conversation, the draft's included)", n)
	}
}
