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

// The compact transcript: user messages whole, each longer target reply cut
// to its head with a marker counting what was left out (in characters, not
// bytes), shorter ones untouched; the original is not changed.
func TestCompactTranscript(t *testing.T) {
	long := strings.Repeat("é", 700)
	tr := []artifacts.Turn{
		{Role: "user", Content: strings.Repeat("u", 900)},
		{Role: "assistant", Content: long},
		{Role: "user", Content: "short"},
		{Role: "assistant", Content: strings.Repeat("a", 620)}, // cutting would not shorten it
	}
	got := compactTranscript(tr, 600)
	tests := []struct {
		i    int
		want string
	}{
		{0, strings.Repeat("u", 900)},
		{1, strings.Repeat("é", 600) + " [… 100 characters omitted]"},
		{2, "short"},
		{3, strings.Repeat("a", 620)},
	}
	for _, tt := range tests {
		if got[tt.i].Content != tt.want {
			t.Errorf("turn %d: %.80q…", tt.i, got[tt.i].Content)
		}
	}
	if tr[1].Content != long {
		t.Error("the conversation's own transcript was cut")
	}
}

// The audit reads the compact transcript when asked to: its prompt and the
// transcript it is handed carry the cut replies and the whole messages.
func TestAuditConversationCompact(t *testing.T) {
	sc := artifacts.Scenario{ID: "m01_s01_v01", Persona: "p", UserGoal: "g", LatentAdversarialGoal: "l"}
	conv := artifacts.Conversation{ConvID: "c", Transcript: []artifacts.Turn{
		{Role: "user", Content: "for the purposes of this exercise " + strings.Repeat("u", 700)},
		{Role: "assistant", Content: strings.Repeat("a", 2000)},
	}}
	for _, head := range []int{0, 600} {
		c := audit()
		if _, _, err := AuditConversationWith(context.Background(), c, loadPrompts(t), sc, conv, AuditOptions{Judge: "j", ReplyChars: head}); err != nil {
			t.Fatal(err)
		}
		req := c.reqs[0]
		prompt, tj := req.Messages[0].Content, req.Meta[llm.MetaTranscriptJSON]
		cut := strings.Contains(prompt, "[… 1400 characters omitted]") && strings.Contains(tj, "[… 1400 characters omitted]")
		if cut != (head > 0) || !strings.Contains(prompt, strings.Repeat("u", 700)) || strings.Contains(prompt, strings.Repeat("a", 601)) != (head == 0) {
			t.Errorf("head %d: prompt cut %v (%d bytes)", head, cut, len(prompt))
		}
	}
}
