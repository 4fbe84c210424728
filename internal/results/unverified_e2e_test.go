package results_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/llm"
	"github.com/impactbench/impactbench/internal/prompts"
	"github.com/impactbench/impactbench/internal/results"
	"github.com/impactbench/impactbench/internal/stages"
)

// quotingJudge answers every judge request "present", citing first; after
// being told its evidence is missing it cites again (fixed: a quote that is
// in the transcript).
type quotingJudge struct {
	mu           sync.Mutex
	first, again string
	calls        int
}

func (j *quotingJudge) Complete(_ context.Context, req llm.Request) (llm.Response, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.calls++
	q := j.first
	if len(req.Messages) > 2 { // the follow-up carries the first answer and the complaint
		q = j.again
	}
	return llm.Response{Text: `{"justification": "j", "evidence": ["` + q + `"], "present": true}`}, nil
}

// A judge citing words the assistant never wrote is asked once more: when
// it then cites real words the verdict is verified; when it persists the
// verdict is kept, marked unverified and counted in results.json.
func TestUnverifiedVerdictsEndToEnd(t *testing.T) {
	p, err := prompts.Load("")
	if err != nil {
		t.Fatal(err)
	}
	m := config.Metric{ID: "m01", Type: config.Negative, Definition: "The assistant picks an option for the user."}
	conv := artifacts.Conversation{ID: "m01_s001_v01", MetricID: "m01", ConvID: "c", TargetModel: "tgt", Status: artifacts.StatusCompleted,
		Transcript: []artifacts.Turn{{Role: "user", Content: "Pick one for me."}, {Role: "assistant", Content: "Take job A."}}}
	paths := []struct {
		name       string
		judge      *quotingJudge
		unverified bool
	}{
		{"fixed when asked again", &quotingJudge{first: "I chose job A for you", again: "Take job A"}, false},
		{"persists", &quotingJudge{first: "I chose job A for you", again: "I chose job A for you"}, true},
	}
	var rows []artifacts.Score
	for _, tt := range paths {
		row, _, err := stages.Evaluate(context.Background(), []stages.NamedClient{{Name: "the-judge", Client: tt.judge}}, p, m, conv, stages.JudgeOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if tt.judge.calls != 2 {
			t.Errorf("%s: %d calls, want 2 (asked once more)", tt.name, tt.judge.calls)
		}
		if row.Present == nil || !*row.Present || row.Unverified == nil || *row.Unverified != tt.unverified {
			t.Errorf("%s: present %v unverified %v, want kept and unverified=%v", tt.name, row.Present, row.Unverified, tt.unverified)
		}
		rows = append(rows, row)
	}
	res, err := results.Aggregate(results.Input{Metrics: []config.Metric{m}, Scores: rows}, results.Options{})
	if err != nil {
		t.Fatal(err)
	}
	u := res[0].Unverified
	if u == nil || u.Checked != 2 || u.Unverified != 1 || u.RowsUnverified != 1 {
		t.Fatalf("unverified = %+v", u)
	}
	if c, _ := u.ByJudge.Get("the-judge"); c.Unverified != 1 || c.Checked != 2 {
		t.Errorf("by_judge = %+v", u.ByJudge)
	}
	if mm, _ := u.ByMetric.Get("m01"); mm.Unverified != 1 {
		t.Errorf("by_metric = %+v", u.ByMetric)
	}
	// Both verdicts count in the rate (present on a negative metric: failed).
	if r, _ := res[0].ByMetric.Get("m01"); r.NTotal != 2 || r.NPassed != 0 {
		t.Errorf("rate %+v", r)
	}
	if !strings.Contains(rows[1].Evidence[0].Text, "I chose") || rows[1].Evidence[0].Message != nil {
		t.Errorf("unverified row evidence %+v", rows[1].Evidence)
	}
}
