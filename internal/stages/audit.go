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
// transcript makes no call and leaves Valid nil.
func AuditConversation(ctx context.Context, c llm.Client, p *prompts.Set, sc artifacts.Scenario, conv artifacts.Conversation, judgeName string) (artifacts.Validity, llm.Usage, error) {
	v := artifacts.Validity{Judge: judgeName}
	if len(conv.Transcript) == 0 {
		v.Reason = "empty transcript: nothing to check"
		return v, llm.Usage{}, nil
	}
	req, err := auditRequest(p, sc, conv)
	if err != nil {
		return v, llm.Usage{}, err
	}
	var out map[string]any
	resp, err := llm.CompleteJSON(ctx, c, req, &out, llm.JSONOptions{Validate: validateAudit})
	if err != nil {
		return v, resp.Usage, fmt.Errorf("audit %s: %w", conv.ConvID, err)
	}
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
		TranscriptJSON: prompts.EncodeTranscript(conv.Transcript),
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
		return errors.New(strings.Join(bad, "; "))
	}
	return nil
}

func optionalBool(v any) *bool {
	if b, ok := v.(bool); ok {
		return &b
	}
	return nil
}
