package stages

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/llm/llmtest"
)

// judgeServer is an OpenAI-style server answering the judge's requests
// with answers in order (the last one again after that).
func judgeServer(t *testing.T, answers ...string) *llmtest.Server {
	t.Helper()
	return wireServer(t, llmtest.OpenAI, answers...)
}

// checkRepairs: what recorded repairs got, and v's JSON holds a _repairs
// key exactly when want is not nil.
func checkRepairs(t *testing.T, what string, v any, got, want []string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("%s _repairs %q, want %q", what, got, want)
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if has := strings.Contains(string(b), `"_repairs"`); has != (want != nil) {
		t.Errorf("%s JSON has _repairs: %v, want %v: %s", what, has, want != nil, b)
	}
}

// TestEvaluateRecordsJudgeRepairs: what it took to read the judge's verdict
// (a <think> block, a code fence, prose around the JSON, unusable answers
// asked again) is on the score row as _repairs, in fixed phrases; a clean
// first answer writes no _repairs key at all.
func TestEvaluateRecordsJudgeRepairs(t *testing.T) {
	const clean = `{"justification": "it decided", "evidence": ["Take job A."], "present": true}`
	tests := []struct {
		name    string
		answers []string
		want    []string
	}{
		{"clean", []string{clean}, nil},
		{"fence", []string{"```json\n" + clean + "\n```"}, []string{"unwrapped a ``` code fence"}},
		{"prose", []string{"Here is my verdict: " + clean + " Hope this helps."}, []string{"removed prose around the JSON object"}},
		{"think", []string{"<think>the user asked which job; it chose A</think>\n" + clean}, []string{"removed a <think> block"}},
		{"not JSON, then clean", []string{"I think the behaviour is present.", clean},
			[]string{"asked again: answer 1 was not JSON"}},
		{"string verdict, then fenced", []string{`{"justification": "j", "present": "true"}`, "```\n" + clean + "\n```"},
			[]string{"unwrapped a ``` code fence", "asked again: answer 1 had a non-boolean verdict"}},
		{"no present, null, then clean", []string{`{"justification": "j"}`, `{"present": null}`, clean},
			[]string{`asked again: answer 1 had no "present" field`, "asked again: answer 2 had a null verdict"}},
	}
	conv := artifacts.Conversation{ID: "m01_s001", MetricID: "m01", Sample: 0, Transcript: transcript, Status: artifacts.StatusCompleted}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := judgeServer(t, tt.answers...)
			judges := []NamedClient{{"j", wireClient(t, llmtest.OpenAI, srv, nil)}}
			row, _, err := Evaluate(context.Background(), judges, loadPrompts(t), metric, conv, JudgeOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if row.Present == nil || !*row.Present {
				t.Fatalf("verdict %v (%s), want present", row.Present, row.NullReason)
			}
			checkRepairs(t, "row", row, row.Repairs, tt.want)
			for _, r := range tt.want { // fixed phrases, never the judge's text
				if strings.Contains(r, "job") || strings.Contains(r, "helps") {
					t.Errorf("repair %q quotes the judge", r)
				}
			}
		})
	}
}

// TestEvaluatePanelRecordsRepairsPerJudge: with a panel each judge's
// repairs are on its entry in judges; the row itself has none.
func TestEvaluatePanelRecordsRepairsPerJudge(t *testing.T) {
	const clean = `{"justification": "it decided", "evidence": ["Take job A."], "present": true}`
	a := judgeServer(t, "```json\n"+clean+"\n```")
	b := judgeServer(t, clean)
	judges := []NamedClient{{"ja", wireClient(t, llmtest.OpenAI, a, nil)}, {"jb", wireClient(t, llmtest.OpenAI, b, nil)}}
	conv := artifacts.Conversation{ID: "m01_s001", MetricID: "m01", Transcript: transcript, Status: artifacts.StatusCompleted}
	row, _, err := Evaluate(context.Background(), judges, loadPrompts(t), metric, conv, JudgeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(row.Judges) != 2 {
		t.Fatalf("judges %+v", row.Judges)
	}
	if want := []string{"unwrapped a ``` code fence"}; !slices.Equal(row.Judges[0].Repairs, want) {
		t.Errorf("ja's _repairs %q, want %q", row.Judges[0].Repairs, want)
	}
	if row.Judges[1].Repairs != nil || row.Repairs != nil {
		t.Errorf("jb's _repairs %q, row's %q: want none", row.Judges[1].Repairs, row.Repairs)
	}
	out, err := json.Marshal(row)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(out), `"_repairs"`); n != 1 {
		t.Errorf("row JSON has %d _repairs keys, want 1 (ja's): %s", n, out)
	}
}
