package stages

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/llm"
	"github.com/impactbench/impactbench/internal/prompts"
)

// AuditConversation is the audit of a conversation's simulated user (not
// of the target), the landmark check grown into a fidelity check: did the
// user stay in its persona, pursue its goal, carry out its landmark
// instructions and keep the test hidden? Valid is all four; Failed names
// the audit's failure kinds (artifacts.FailAudit*). in_persona and
// pursued_goal may be missing from the answer (a landmark_check override
// written before they were asked): they then count as kept. An empty
// transcript makes no call and leaves Valid nil. What it took to read the
// audit's answer is the verdict's Repairs.
func AuditConversation(ctx context.Context, c llm.Client, p *prompts.Set, sc artifacts.Scenario, conv artifacts.Conversation, judgeName string) (artifacts.Validity, llm.Usage, error) {
	return AuditConversationWith(ctx, c, p, sc, conv, AuditOptions{Judge: judgeName})
}

// AuditOptions say who audits and what it reads.
type AuditOptions struct {
	// Judge is the audit model's label, recorded on the verdict.
	Judge string
	// ReplyChars, when positive, has the audit read only the first
	// ReplyChars characters of each target reply (compactTranscript); 0
	// reads every reply whole.
	ReplyChars int
}

// AuditConversationWith is AuditConversation reading the transcript as o
// says.
func AuditConversationWith(ctx context.Context, c llm.Client, p *prompts.Set, sc artifacts.Scenario, conv artifacts.Conversation, o AuditOptions) (artifacts.Validity, llm.Usage, error) {
	v := artifacts.Validity{Judge: o.Judge}
	if len(conv.Transcript) == 0 {
		v.Reason = "empty transcript: nothing to check"
		return v, llm.Usage{}, nil
	}
	if o.ReplyChars > 0 {
		conv.Transcript = compactTranscript(conv.Transcript, o.ReplyChars)
	}
	req, err := auditRequest(p, sc, conv)
	if err != nil {
		return v, llm.Usage{}, err
	}
	var out map[string]any
	resp, report, err := llm.CompleteJSONReport(ctx, c, req, &out, llm.JSONOptions{Validate: validateAudit})
	if err != nil {
		return v, resp.Usage, fmt.Errorf("audit %s: %w", conv.ConvID, err)
	}
	v.Repairs = report.Recorded()
	followed, revealed := out["followed_landmarks"].(bool), out["revealed_test"].(bool)
	v.FollowedSteps, v.RevealedTest = &followed, &revealed
	v.InPersona, v.PursuedGoal = optionalBool(out["in_persona"]), optionalBool(out["pursued_goal"])
	for _, f := range []struct {
		bad  bool
		kind string
	}{
		{v.InPersona != nil && !*v.InPersona, artifacts.FailAuditPersona},
		{v.PursuedGoal != nil && !*v.PursuedGoal, artifacts.FailAuditGoal},
		{!followed, artifacts.FailAuditLandmarks},
		{revealed, artifacts.FailAuditReveal},
	} {
		if f.bad {
			v.Failed = append(v.Failed, f.kind)
		}
	}
	valid := len(v.Failed) == 0
	v.Valid = &valid
	v.Reason, _ = out["reason"].(string)
	return v, resp.Usage, nil
}

// compactTranscript is the transcript the audit reads when it samples:
// the simulated user's messages whole (they are what it checks), each
// target reply cut to its first head characters and a marker saying how
// many were left out, so that a larger random share costs what a smaller
// one did with whole transcripts. The marker is in the reply's text,
// which the prompt carries as JSON data like the rest.
func compactTranscript(tr []artifacts.Turn, head int) []artifacts.Turn {
	out := make([]artifacts.Turn, len(tr))
	for i, t := range tr {
		out[i] = t
		if t.Role == string(llm.RoleUser) {
			continue
		}
		if r := []rune(t.Content); len(r) > head+len([]rune(omittedMarker(len(r)-head))) {
			out[i].Content = string(r[:head]) + omittedMarker(len(r)-head)
		}
	}
	return out
}

// omittedMarker ends a reply the audit reads cut.
func omittedMarker(n int) string { return " [… " + itoa(n) + " characters omitted]" }

// auditRequest renders the audit's prompt and request.
func auditRequest(p *prompts.Set, sc artifacts.Scenario, conv artifacts.Conversation) (llm.Request, error) {
	userTurns := 0
	for _, t := range conv.Transcript {
		if t.Role == string(llm.RoleUser) {
			userTurns++
		}
	}
	text, err := p.Render(prompts.LandmarkCheck, prompts.LandmarkCheckData{
		Persona:        sc.SimPersona(),
		UserGoal:       sc.UserGoal,
		LatentGoal:     sc.LatentAdversarialGoal,
		Landmarks:      sc.Landmarks,
		UserTurns:      userTurns,
		TranscriptJSON: prompts.EncodeTranscript(prompts.MarkRefused(conv.Transcript, conv.Refused)),
	})
	if err != nil {
		return llm.Request{}, err
	}
	tj, err := json.Marshal(conv.Transcript)
	if err != nil {
		return llm.Request{}, fmt.Errorf("audit: %w", err)
	}
	lj, err := json.Marshal(sc.Landmarks)
	if err != nil {
		return llm.Request{}, fmt.Errorf("audit: %w", err)
	}
	return llm.Request{
		Purpose:   llm.PurposeLandmark,
		Messages:  []llm.Message{{Role: llm.RoleUser, Content: text}},
		MaxTokens: judgeMaxTokens,
		Seed:      seedOf(0, "landmark_check", conv.ConvID, string(lj), string(tj)),
		Schema:    auditSchema,
		Meta: map[string]string{llm.MetaLandmarksJSON: string(lj), llm.MetaTranscriptJSON: string(tj),
			llm.MetaPersona: sc.SimPersona(), llm.MetaUserGoal: sc.UserGoal, llm.MetaLatentGoal: sc.LatentAdversarialGoal},
	}, nil
}

// validateAudit wants the two landmark-check answers as booleans, and the
// two newer ones as booleans when they are there.
func validateAudit(x any) error {
	m := *x.(*map[string]any)
	var bad []string
	for _, k := range []string{"followed_landmarks", "revealed_test"} {
		if _, ok := m[k].(bool); !ok {
			bad = append(bad, fmt.Sprintf("%q must be true or false", k))
		}
	}
	for _, k := range []string{"in_persona", "pursued_goal"} {
		if v, ok := m[k]; ok {
			if _, isBool := v.(bool); !isBool {
				bad = append(bad, fmt.Sprintf("%q must be true or false", k))
			}
		}
	}
	if len(bad) > 0 {
		return &llm.UnusableError{Reason: "had a missing or non-boolean answer", Err: errors.New(strings.Join(bad, "; "))}
	}
	return nil
}

func optionalBool(v any) *bool {
	if b, ok := v.(bool); ok {
		return &b
	}
	return nil
}
