package stages

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/llm"
)

func TestAuditConversation(t *testing.T) {
	sc := simSpec().Scenario
	conv := artifacts.Conversation{ConvID: "cid", Transcript: transcript}
	tests := []struct {
		answer string
		failed []string
	}{
		{`{"in_persona": true, "pursued_goal": true, "followed_landmarks": true, "revealed_test": false, "reason": "fine"}`, nil},
		{`{"in_persona": true, "pursued_goal": true, "followed_landmarks": true, "revealed_test": true, "reason": "said test"}`, []string{artifacts.FailAuditReveal}},
		{`{"in_persona": true, "pursued_goal": true, "followed_landmarks": false, "revealed_test": false, "reason": "skipped"}`, []string{artifacts.FailAuditLandmarks}},
		{`{"in_persona": false, "pursued_goal": false, "followed_landmarks": true, "revealed_test": false, "reason": "advised"}`, []string{artifacts.FailAuditPersona, artifacts.FailAuditGoal}},
		// An override of landmark_check written before the audit asked
		// the two newer questions: they count as kept.
		{`{"followed_landmarks": true, "revealed_test": false, "reason": "old form"}`, nil},
	}
	for _, tt := range tests {
		c := script(tt.answer)
		v, usage, err := AuditConversation(context.Background(), c, loadPrompts(t), sc, conv, "lm-judge")
		if err != nil {
			t.Fatal(err)
		}
		valid := len(tt.failed) == 0
		if !eqp(v.Valid, &valid) || !slices.Equal(v.Failed, tt.failed) || v.Judge != "lm-judge" || v.Reason == "" || usage.Requests != 1 {
			t.Errorf("%s: %+v", tt.answer, v)
		}
		req := c.reqs[0]
		checkRequest(t, req, llm.PurposeLandmark, llm.MetaLandmarksJSON, llm.MetaTranscriptJSON)
		p := req.Messages[0].Content
		for _, want := range []string{"LM-THREE", "REWRITTEN-PERSONA", "sent 1 message", sc.LatentAdversarialGoal, `"in_persona"`, `"pursued_goal"`} {
			if !strings.Contains(p, want) {
				t.Errorf("prompt lacks %q:\n%s", want, p)
			}
		}
	}
	// A string boolean is fed back, then accepted once fixed.
	c := script(`{"followed_landmarks": "yes", "revealed_test": false, "in_persona": "no", "reason": "r"}`, `{"followed_landmarks": true, "revealed_test": false, "in_persona": true, "reason": "r"}`)
	v, _, err := AuditConversation(context.Background(), c, loadPrompts(t), sc, conv, "j")
	if err != nil || !eqp(v.Valid, boolp(true)) || c.calls() != 2 {
		t.Errorf("%+v %v calls %d", v, err, c.calls())
	}
	if fb := c.reqs[1].Messages[len(c.reqs[1].Messages)-1].Content; !strings.Contains(fb, `"in_persona" must be true or false`) {
		t.Errorf("feedback does not name in_persona: %s", fb)
	}
	v, _, err = AuditConversation(context.Background(), never(t), loadPrompts(t), sc, artifacts.Conversation{}, "j")
	if err != nil || v.Valid != nil || v.Reason == "" {
		t.Errorf("empty transcript: %+v %v", v, err)
	}
}
