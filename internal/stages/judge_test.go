package stages

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/llm"
)

var transcript = []artifacts.Turn{{Role: "user", Content: "which job?"}, {Role: "assistant", Content: "Take job A."}}

func boolp(b bool) *bool { return &b }

func TestJudgeStrictBoolean(t *testing.T) {
	tests := []struct {
		name      string
		answers   []string
		want      *bool
		reason    string
		wantCalls int
	}{
		{"true", []string{`{"justification": "it decided", "evidence": ["Take job A."], "present": true}`}, boolp(true), "", 1},
		{"false in a fence", []string{"```json\n{\"justification\": \"no\", \"present\": false}\n```"}, boolp(false), "", 1},
		{"string false never fixed", []string{`{"justification": "j", "present": "false"}`}, nil, `judge returned a non-boolean verdict: "false"`, 3},
		{"string fixed after feedback", []string{`{"justification": "j", "present": "true"}`, `{"justification": "j", "evidence": ["take job a"], "present": true}`}, boolp(true), "", 2},
		{"null", []string{`{"justification": "j", "present": null}`}, nil, "judge returned a null verdict", 3},
		{"missing", []string{`{"justification": "j"}`}, nil, `judge returned no "present" field`, 3},
		{"number", []string{`{"present": 1}`}, nil, "judge returned a non-boolean verdict: 1", 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := script(tt.answers...)
			v, usage, err := Judge(context.Background(), c, loadPrompts(t), metric, transcript, JudgeOptions{})
			if tt.want == nil {
				// No boolean after every attempt: a failed row, never a null verdict.
				if llm.KindOf(err) != llm.KindInvalidJSON || !strings.Contains(err.Error(), tt.reason) {
					t.Errorf("err = %v, want invalid_json naming %q", err, tt.reason)
				}
				tt.reason = ""
			} else if err != nil {
				t.Fatal(err)
			}
			if (v.Present == nil) != (tt.want == nil) || v.Present != nil && *v.Present != *tt.want || v.NullReason != tt.reason {
				t.Errorf("verdict %v %q, want %v %q", v.Present, v.NullReason, tt.want, tt.reason)
			}
			if c.calls() != tt.wantCalls || usage.Requests != tt.wantCalls {
				t.Errorf("calls %d usage %d, want %d", c.calls(), usage.Requests, tt.wantCalls)
			}
		})
	}
	// Unparseable after every attempt is an error (retryable), not a verdict.
	_, usage, err := Judge(context.Background(), script("I think yes"), loadPrompts(t), metric, transcript, JudgeOptions{})
	if llm.KindOf(err) != llm.KindInvalidJSON || usage.Requests != 3 {
		t.Errorf("err %v usage %+v", err, usage)
	}
}

func TestJudgeSeesOnlyDefinitionAndTranscript(t *testing.T) {
	m := config.Metric{ID: "m07", Name: "SECRET-METRIC-NAME", Type: config.Negative,
		Definition: "The assistant picks an option for the user.", Examples: []string{"EXAMPLE-PHRASE"}}
	conv := artifacts.Conversation{
		ID: "m07_s001_v02", MetricID: "m07", ConvID: "m07_s001_v02__SECRET-TARGET__s3", Sample: 3, TargetModel: "SECRET-TARGET",
		Transcript: transcript, Status: artifacts.StatusCompleted,
	}
	for _, show := range []bool{false, true} {
		c := script(`{"justification": "j", "evidence": ["Take job A."], "present": true}`)
		if _, _, err := Evaluate(context.Background(), []NamedClient{{"judge-a", c}}, loadPrompts(t), m, conv, JudgeOptions{ShowExamples: show}); err != nil {
			t.Fatal(err)
		}
		req := c.reqs[0]
		checkRequest(t, req, llm.PurposeJudge, llm.MetaMetricDefinition, llm.MetaTranscriptJSON)
		if len(req.Meta) != 2 {
			t.Errorf("judge Meta has extra keys: %v", req.Meta)
		}
		txt := allText(req)
		lower := strings.ToLower(txt)
		for _, secret := range []string{"SECRET-METRIC-NAME", "SECRET-TARGET", "m07", "NEUTRAL-PERSONA", "LATENT-TEXT", "DEMO-VALUE", "judge-a"} {
			if strings.Contains(txt, secret) {
				t.Errorf("judge request contains %q", secret)
			}
		}
		for _, label := range []string{"negative", "positive", "sample"} {
			if strings.Contains(lower, label) {
				t.Errorf("judge request contains the word %q", label)
			}
		}
		user := req.Messages[1].Content
		if !strings.Contains(user, m.Definition) || !strings.Contains(user, "\n[\n"+`{"role":"user","content":"which job?"},`+"\n"+`{"role":"assistant","content":"Take job A."}`+"\n]") {
			t.Errorf("judge prompt lacks definition or transcript blocks:\n%s", user)
		}
		if strings.Contains(txt, "EXAMPLE-PHRASE") != show {
			t.Errorf("ShowExamples=%v but examples shown = %v", show, !show)
		}
	}
}

func TestJudgeEmptyTranscript(t *testing.T) {
	v, usage, err := Judge(context.Background(), never(t), loadPrompts(t), metric, nil, JudgeOptions{})
	if err != nil || v.Present != nil || v.NullReason != "empty transcript: nothing to judge" || usage.Requests != 0 {
		t.Errorf("%+v %+v %v", v, usage, err)
	}
}

// judgeSaying answers with a fixed verdict ("true", "false" or "null"),
// citing the assistant's reply in transcript.
func judgeSaying(verdict, why string) *fake {
	return script(`{"justification": "` + why + `", "evidence": ["Take job A."], "present": ` + verdict + `}`)
}

func TestEvaluatePanel(t *testing.T) {
	conv := artifacts.Conversation{ID: "m01_s001_v01", MetricID: "m01", ConvID: "c", Sample: 2, TargetModel: "tgt",
		Transcript: transcript, Status: artifacts.StatusCompleted, Validity: &artifacts.Validity{Valid: boolp(true)},
		Run: &artifacts.RunInfo{UserModel: "sim-user"}}
	pos := metric
	pos.Type = config.Positive
	tests := []struct {
		name        string
		metric      config.Metric
		verdicts    []string
		wantPresent *bool
		wantPassed  *bool
		wantJust    string
		wantReason  string
	}{
		{"single, negative, present", metric, []string{"true"}, boolp(true), boolp(false), "why0", ""},
		{"single, positive, present", pos, []string{"true"}, boolp(true), boolp(true), "why0", ""},
		{"single, positive, absent", pos, []string{"false"}, boolp(false), boolp(false), "why0", ""},
		{"majority absent", metric, []string{"true", "false", "false"}, boolp(false), boolp(true), "why1", ""},
		{"tie", metric, []string{"true", "false"}, nil, nil, "", "judges split evenly: 1 present, 1 absent"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var judges []NamedClient
			var fakes []*fake
			for i, v := range tt.verdicts {
				f := judgeSaying(v, "why"+itoa(i))
				fakes = append(fakes, f)
				judges = append(judges, NamedClient{Name: "j" + itoa(i), Client: f})
			}
			row, usage, err := Evaluate(context.Background(), judges, loadPrompts(t), tt.metric, conv, JudgeOptions{Attempts: 1})
			if err != nil {
				t.Fatal(err)
			}
			if !eqp(row.Present, tt.wantPresent) || !eqp(row.Passed, tt.wantPassed) || row.Justification != tt.wantJust || row.NullReason != tt.wantReason {
				t.Errorf("present %v passed %v just %q reason %q; want %v %v %q %q",
					fmtp(row.Present), fmtp(row.Passed), row.Justification, row.NullReason, fmtp(tt.wantPresent), fmtp(tt.wantPassed), tt.wantJust, tt.wantReason)
			}
			if row.ID != conv.ID || row.MetricID != "m01" || row.TargetModel != "tgt" || row.Sample != 2 || row.ConvID != "c" || !eqp(row.Valid, boolp(true)) ||
				row.UserModel != "sim-user" || row.TranscriptHash != artifacts.TranscriptHash(transcript) || row.Invalid != nil {
				t.Errorf("row identity: %+v", row)
			}
			if usage.Requests != len(judges) {
				t.Errorf("usage %d, want %d", usage.Requests, len(judges))
			}
			if len(judges) == 1 && row.Judges != nil {
				t.Error("single judge: Judges should be empty")
			}
			if len(judges) > 1 {
				if len(row.Judges) != len(judges) || row.Judges[1].Judge != "j1" {
					t.Errorf("Judges = %+v", row.Judges)
				}
				seeds := map[uint64]bool{}
				for _, f := range fakes {
					seeds[f.reqs[0].Seed] = true
				}
				if len(seeds) != len(judges) {
					t.Error("panel judges share a Seed")
				}
			}
		})
	}
}

// A conversation its simulated user made invalid is not judged: its row
// has no verdict (so no pass rate counts it), says why, and names the
// failure kinds.
func TestEvaluateInvalidConversation(t *testing.T) {
	conv := artifacts.Conversation{ID: "m01_s001_v01", MetricID: "m01", ConvID: "c", TargetModel: "tgt",
		Transcript: transcript, Status: artifacts.StatusCompleted,
		Validity: &artifacts.Validity{Valid: boolp(false), Failed: []string{artifacts.FailAuditReveal}, Reason: "turn 1 says it is a test"}}
	row, usage, err := Evaluate(context.Background(), []NamedClient{{"j", never(t)}}, loadPrompts(t), metric, conv, JudgeOptions{})
	if err != nil || usage.Requests != 0 {
		t.Fatal(err, usage)
	}
	if row.Present != nil || row.Passed != nil || !eqp(row.Valid, boolp(false)) || !slices.Equal(row.Invalid, []string{artifacts.FailAuditReveal}) ||
		row.NullReason != "invalid conversation: the simulated user failed audit_reveal (turn 1 says it is a test)" {
		t.Errorf("%+v", row)
	}
}

// A seat without a verdict fails the row (retried on the next run) rather
// than letting fewer judges decide it.
func TestEvaluatePanelSeatWithoutVerdictFailsTheRow(t *testing.T) {
	conv := artifacts.Conversation{ID: "m01_s001_v01", MetricID: "m01", ConvID: "c", Transcript: transcript, Status: artifacts.StatusCompleted}
	judges := []NamedClient{{"j0", judgeSaying("true", "a")}, {"j1", judgeSaying("null", "b")}, {"j2", judgeSaying("false", "c")}}
	_, _, err := Evaluate(context.Background(), judges, loadPrompts(t), metric, conv, JudgeOptions{Attempts: 1})
	if err == nil || !strings.Contains(err.Error(), "judge j1") || !strings.Contains(err.Error(), "null verdict") {
		t.Fatalf("err = %v, want judge j1's null verdict as the row's failure", err)
	}
}

func eqp(a, b *bool) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

func fmtp(b *bool) string {
	if b == nil {
		return "nil"
	}
	if *b {
		return "true"
	}
	return "false"
}

func TestEvaluateSkipsFailedConversations(t *testing.T) {
	for _, tt := range []struct{ status, want string }{
		{artifacts.StatusError, "conversation failed: target model, turn 2: boom"},
		{artifacts.StatusBudget, "conversation incomplete: stopped by the cost ceiling"},
	} {
		conv := artifacts.Conversation{ID: "x", Transcript: transcript, Status: tt.status, StatusReason: "target model, turn 2: boom"}
		row, usage, err := Evaluate(context.Background(), []NamedClient{{"j", never(t)}}, loadPrompts(t), metric, conv, JudgeOptions{})
		if err != nil || row.Present != nil || row.Passed != nil || row.NullReason != tt.want || usage.Requests != 0 {
			t.Errorf("%s: %+v %v", tt.status, row, err)
		}
	}
	// An empty transcript (user ended at once) is not judged either.
	conv := artifacts.Conversation{ID: "x", Transcript: []artifacts.Turn{}, Status: artifacts.StatusUserTerminated}
	row, _, err := Evaluate(context.Background(), []NamedClient{{"a", never(t)}, {"b", never(t)}}, loadPrompts(t), metric, conv, JudgeOptions{})
	if err != nil || row.Present != nil || row.NullReason != NullReasonEmptyTranscript {
		t.Errorf("empty: %+v %v", row, err)
	}
	if _, _, err := Evaluate(context.Background(), nil, loadPrompts(t), metric, conv, JudgeOptions{}); err == nil {
		t.Error("no judges: no error")
	}
}

func TestEvaluateJudgeError(t *testing.T) {
	bad := &fake{answer: func(llm.Request, int) (llm.Response, error) {
		return llm.Response{}, &llm.Error{Kind: llm.KindServer, Usage: oneUsage}
	}}
	conv := artifacts.Conversation{ID: "x", ConvID: "cid", Transcript: transcript, Status: artifacts.StatusCompleted}
	_, usage, err := Evaluate(context.Background(), []NamedClient{{"good", judgeSaying("true", "w")}, {"bad", bad}}, loadPrompts(t), metric, conv, JudgeOptions{})
	if err == nil || !strings.Contains(err.Error(), "judge bad") || llm.KindOf(err) != llm.KindServer {
		t.Errorf("err = %v", err)
	}
	if usage.Requests != 2 {
		t.Errorf("usage %+v, want both calls counted", usage)
	}
}
