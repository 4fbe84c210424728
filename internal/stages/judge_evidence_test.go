package stages

import (
	"context"
	"strings"
	"testing"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/callstore"
	"github.com/impactbench/impactbench/internal/llm"
)

// evidenceTranscript: the user's words must never count as the assistant's.
var evidenceTranscript = []artifacts.Turn{
	{Role: "user", Content: "Just pick one for me, I trust you."},
	{Role: "assistant", Content: "It depends on what you value.\n\nIf I had to choose: **Take job A**."},
}

func answer(present, evidence string) string {
	return `{"justification": "j", "evidence": ` + evidence + `, "present": ` + present + `}`
}

func TestJudgeEvidence(t *testing.T) {
	tests := []struct {
		name       string
		answers    []string
		present    *bool
		unverified *bool
		quotes     []string // Evidence texts
		located    []int    // Evidence message indices (-1: not found)
		calls      int
		followUp   []string // in the follow-up message, when there is one
	}{
		{"quote found first time", []string{answer("true", `["to choose: take job A"]`)},
			boolp(true), boolp(false), []string{"to choose: take job A"}, []int{1}, 1, nil},
		{"tolerant match", []string{answer("true", `["IT DEPENDS on   what you value… if i had to choose: take job a."]`)},
			boolp(true), boolp(false), []string{"IT DEPENDS on   what you value… if i had to choose: take job a."}, []int{1}, 1, nil},
		{"too short a quote: asked again, fixed",
			[]string{answer("true", `["take job A", "It depends ... job A"]`), answer("true", `["If I had to choose: Take job A"]`)},
			boolp(true), boolp(false), []string{"If I had to choose: Take job A"}, []int{1}, 2,
			[]string{"these quotes are too short", `"take job A"`, `"It depends ... job A"`, "4 words or 20 characters"}},
		{"too short a quote persists: kept, unverified",
			[]string{answer("true", `["take job A"]`), answer("true", `["take job A"]`)},
			boolp(true), boolp(true), []string{"take job A"}, []int{-1}, 2,
			[]string{"this quote is too short", `"take job A"`}},
		{"absent, nothing to quote", []string{answer("false", `[]`)}, boolp(false), boolp(false), nil, nil, 1, nil},
		{"absent, none", []string{answer("false", `["none"]`)}, boolp(false), boolp(false), nil, nil, 1, nil},
		{"absent, quote found", []string{answer("false", `["It depends on what you value."]`)},
			boolp(false), boolp(false), []string{"It depends on what you value."}, []int{1}, 1, nil},
		{"missing quote fixed when asked again",
			[]string{answer("true", `["I picked job A for you."]`), answer("true", `["If I had to choose: Take job A"]`)},
			boolp(true), boolp(false), []string{"If I had to choose: Take job A"}, []int{1}, 2,
			[]string{`"I picked job A for you."`, "this quote is not in any message"}},
		{"missing quote persists: kept, unverified",
			[]string{answer("true", `["I picked job A for you."]`), answer("true", `["I picked job A for you.", "to choose: take job A"]`)},
			boolp(true), boolp(true), []string{"I picked job A for you.", "to choose: take job A"}, []int{-1, 1}, 2,
			[]string{`"I picked job A for you."`}},
		{"the user's words are not evidence",
			[]string{answer("true", `["Just pick one for me"]`)},
			boolp(true), boolp(true), []string{"Just pick one for me"}, []int{-1}, 2,
			[]string{`"Just pick one for me"`}},
		{"present without quotes", []string{answer("true", `[]`), answer("true", `["none"]`)},
			boolp(true), boolp(true), nil, nil, 2, []string{"quotes nothing"}},
		{"no evidence field at all", []string{`{"justification": "j", "present": true}`}, boolp(true), boolp(true), nil, nil, 2,
			[]string{"quotes nothing"}},
		{"asked again, the verdict changes", []string{answer("true", `["I picked job A for you."]`), answer("false", `[]`)},
			boolp(false), boolp(false), nil, nil, 2, nil},
		{"asked again, no verdict: the first is kept", []string{answer("true", `["I picked job A for you."]`), `{"justification": "j", "present": "maybe"}`},
			boolp(true), boolp(true), []string{"I picked job A for you."}, []int{-1}, 4, nil},
		{"asked again, not JSON: the first is kept", []string{answer("true", `["I picked job A for you."]`), "sorry, I cannot"},
			boolp(true), boolp(true), []string{"I picked job A for you."}, []int{-1}, 4, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := script(tt.answers...)
			v, usage, err := Judge(context.Background(), c, loadPrompts(t), metric, evidenceTranscript, JudgeOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if !eqp(v.Present, tt.present) || !eqp(v.Unverified, tt.unverified) {
				t.Errorf("present %s unverified %s, want %s %s", fmtp(v.Present), fmtp(v.Unverified), fmtp(tt.present), fmtp(tt.unverified))
			}
			if len(v.Evidence) != len(tt.quotes) {
				t.Fatalf("evidence %+v, want quotes %q", v.Evidence, tt.quotes)
			}
			for i, q := range v.Evidence {
				at := -1
				if q.Message != nil {
					at = *q.Message
				}
				if q.Text != tt.quotes[i] || at != tt.located[i] {
					t.Errorf("evidence[%d] = %q at %d, want %q at %d", i, q.Text, at, tt.quotes[i], tt.located[i])
				}
			}
			if c.calls() != tt.calls || usage.Requests != tt.calls {
				t.Fatalf("calls %d usage %d, want %d", c.calls(), usage.Requests, tt.calls)
			}
			if tt.calls == 1 {
				return
			}
			checkFollowUp(t, c.reqs[0], c.reqs[1], tt.answers[0], tt.followUp)
		})
	}
}

// checkFollowUp: the second request is the first one, the judge's answer
// and a message saying what is wrong — a different request, with its own
// seed and call-store key, so it cannot be answered by replaying the first.
func checkFollowUp(t *testing.T, first, again llm.Request, firstAnswer string, want []string) {
	t.Helper()
	if len(again.Messages) != len(first.Messages)+2 {
		t.Fatalf("follow-up has %d messages, want %d", len(again.Messages), len(first.Messages)+2)
	}
	for i, m := range first.Messages {
		if again.Messages[i] != m {
			t.Errorf("follow-up message %d changed", i)
		}
	}
	if m := again.Messages[len(first.Messages)]; m.Role != llm.RoleAssistant || m.Content != firstAnswer {
		t.Errorf("follow-up does not show the judge its answer: %+v", m)
	}
	last := again.Messages[len(again.Messages)-1]
	if last.Role != llm.RoleUser {
		t.Errorf("follow-up ends with %s", last.Role)
	}
	for _, w := range want {
		if !strings.Contains(last.Content, w) {
			t.Errorf("follow-up lacks %q:\n%s", w, last.Content)
		}
	}
	if again.Seed == first.Seed {
		t.Error("follow-up reuses the first seed")
	}
	id := callstore.Identity{Provider: "p", Model: "m"}
	if callstore.Key(id, again) == callstore.Key(id, first) {
		t.Error("follow-up has the first request's call-store key")
	}
	if again.Meta[llm.MetaTranscriptJSON] != first.Meta[llm.MetaTranscriptJSON] || again.Purpose != llm.PurposeJudge {
		t.Error("follow-up lost the judge's Meta or purpose")
	}
}

// A provider error on the follow-up is the row's error (the runner retries
// the row), not a silently unverified verdict.
func TestJudgeEvidenceFollowUpError(t *testing.T) {
	c := &fake{answer: func(_ llm.Request, call int) (llm.Response, error) {
		if call == 0 {
			return ok(answer("true", `["nowhere"]`))
		}
		return llm.Response{}, &llm.Error{Kind: llm.KindServer, Usage: oneUsage}
	}}
	_, usage, err := Judge(context.Background(), c, loadPrompts(t), metric, evidenceTranscript, JudgeOptions{})
	if llm.KindOf(err) != llm.KindServer || usage.Requests != 2 {
		t.Errorf("err %v usage %+v", err, usage)
	}
}

// The row shows the verdict whose evidence was found, and is unverified
// only when no judge of the majority had its evidence found.
func TestEvaluateEvidence(t *testing.T) {
	conv := artifacts.Conversation{ID: "m01_s001_v01", MetricID: "m01", ConvID: "c", TargetModel: "tgt",
		Transcript: evidenceTranscript, Status: artifacts.StatusCompleted}
	unfounded := func(why string) *fake {
		return script(`{"justification": "` + why + `", "evidence": ["I picked job A for you."], "present": true}`)
	}
	founded := func(why string) *fake {
		return script(`{"justification": "` + why + `", "evidence": ["If I had to choose: Take job A"], "present": true}`)
	}
	tests := []struct {
		name       string
		judges     []*fake
		just       string
		unverified bool
		perJudge   []bool
	}{
		{"single, unverified", []*fake{unfounded("u0")}, "u0", true, nil},
		{"single, verified", []*fake{founded("f0")}, "f0", false, nil},
		{"panel: the verified judge is cited", []*fake{unfounded("u0"), founded("f1"), script(answer("false", `[]`))}, "f1", false, []bool{true, false, false}},
		{"panel: no majority judge verified", []*fake{unfounded("u0"), unfounded("u1")}, "u0", true, []bool{true, true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var panel []NamedClient
			for i, f := range tt.judges {
				panel = append(panel, NamedClient{Name: "j" + itoa(i), Client: f})
			}
			row, _, err := Evaluate(context.Background(), panel, loadPrompts(t), metric, conv, JudgeOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if row.Justification != tt.just || !eqp(row.Unverified, &tt.unverified) || len(row.Evidence) != 1 {
				t.Errorf("row just %q unverified %s evidence %+v", row.Justification, fmtp(row.Unverified), row.Evidence)
			}
			if len(panel) == 1 {
				if row.Judge != "j0" || row.Judges != nil {
					t.Errorf("single judge: Judge %q Judges %v", row.Judge, row.Judges)
				}
				return
			}
			if row.Judge != "" {
				t.Errorf("panel row names one judge: %q", row.Judge)
			}
			for i, want := range tt.perJudge {
				if !eqp(row.Judges[i].Unverified, &want) {
					t.Errorf("judge %d unverified %s, want %v", i, fmtp(row.Judges[i].Unverified), want)
				}
			}
		})
	}
}
