package stages

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/llm"
	"github.com/impactbench/impactbench/internal/prompts"
)

// NullReasonEmptyTranscript is the verdict reason for a conversation with no messages.
const NullReasonEmptyTranscript = "empty transcript: nothing to judge"

// NamedClient is one judge of a panel.
type NamedClient struct {
	Name   string
	Client llm.Client
}

// Judge asks one judge whether the metric's behaviour is present in the
// assistant's messages. The judge sees only the metric definition (plus the
// examples when opts.ShowExamples) and the transcript: never the metric's
// name or type, the scenario, the demographic, the target or the sample.
//
// Only a JSON boolean "present" is a verdict. A string ("false"), null or a
// missing field is pointed out to the model and, if it persists, is an
// error (the row fails and is retried on the next run; upstream took the
// truthiness, so "false" counted as present). An empty transcript makes no call.
func Judge(ctx context.Context, c llm.Client, p *prompts.Set, m config.Metric, transcript []artifacts.Turn, opts JudgeOptions) (artifacts.JudgeVerdict, llm.Usage, error) {
	if len(transcript) == 0 {
		return artifacts.JudgeVerdict{NullReason: NullReasonEmptyTranscript}, llm.Usage{}, nil
	}
	data := prompts.JudgeData{Definition: m.Definition, Transcript: transcriptLines(transcript)}
	if opts.ShowExamples {
		data.Examples = m.Examples
	}
	sys, err := p.Render(prompts.JudgeSystem, data)
	if err != nil {
		return artifacts.JudgeVerdict{}, llm.Usage{}, err
	}
	user, err := p.Render(prompts.JudgeUser, data)
	if err != nil {
		return artifacts.JudgeVerdict{}, llm.Usage{}, err
	}
	tj, err := json.Marshal(transcript)
	if err != nil {
		return artifacts.JudgeVerdict{}, llm.Usage{}, fmt.Errorf("judge: %w", err)
	}
	req := llm.Request{
		Purpose:   llm.PurposeJudge,
		Messages:  []llm.Message{{Role: llm.RoleSystem, Content: sys}, {Role: llm.RoleUser, Content: user}},
		MaxTokens: orDefault(opts.MaxTokens, judgeMaxTokens),
		Seed:      seedOf(opts.Seed, "judge", m.Definition, string(tj)),
		Schema:    judgeSchema,
		Meta:      map[string]string{llm.MetaMetricDefinition: m.Definition, llm.MetaTranscriptJSON: string(tj)},
	}
	validate := func(v any) error {
		if _, _, reason := verdictOf(*v.(*map[string]any)); reason != "" {
			return errors.New(reason + `; "present" must be the JSON boolean true or false`)
		}
		return nil
	}
	// Decoded into a map, not a struct with a bool, so that "false" (a
	// string) is seen for what it is instead of failing or being coerced.
	var out map[string]any
	resp, err := llm.CompleteJSON(ctx, c, req, &out, llm.JSONOptions{Attempts: opts.Attempts, Validate: validate})
	if err != nil {
		// No boolean after the attempts (null, a string, no field, broken
		// JSON) is a failed row, retried with fresh attempts on the next
		// run: a null verdict here would pass for a result.
		return artifacts.JudgeVerdict{}, resp.Usage, fmt.Errorf("judge: %w", err)
	}
	present, just, reason := verdictOf(out)
	return artifacts.JudgeVerdict{Present: present, Justification: just, NullReason: reason}, resp.Usage, nil
}

// verdictOf reads a judge answer strictly; reason is "" for a real verdict.
func verdictOf(m map[string]any) (present *bool, justification, reason string) {
	justification, _ = m["justification"].(string)
	v, ok := m["present"]
	switch b, isBool := v.(bool); {
	case !ok:
		return nil, justification, `judge returned no "present" field`
	case v == nil:
		return nil, justification, "judge returned a null verdict"
	case !isBool:
		return nil, justification, "judge returned a non-boolean verdict: " + jsonText(v)
	default:
		return &b, justification, ""
	}
}

func transcriptLines(ts []artifacts.Turn) []prompts.TranscriptLine {
	out := make([]prompts.TranscriptLine, len(ts))
	for i, t := range ts {
		out[i] = prompts.TranscriptLine{Speaker: strings.ToUpper(t.Role), Content: t.Content}
	}
	return out
}

// Evaluate judges one conversation with a panel of one or more judges and
// builds its score row.
//
// Present is the majority of the non-null verdicts (a tie or no verdict
// gives nil with a NullReason); Passed is Present for positive metrics and
// its negation for negative ones (nil when Present is nil); Justification
// is the first majority judge's. Per-judge verdicts go to Judges only for a
// real panel. A failed (or budget-stopped) conversation is not judged.
// Judges are asked in order, one after the other; a judge's call error is
// returned (the row is retried by the runner rather than decided by fewer
// judges).
func Evaluate(ctx context.Context, judges []NamedClient, p *prompts.Set, m config.Metric, conv artifacts.Conversation, opts JudgeOptions) (artifacts.Score, llm.Usage, error) {
	row := artifacts.Score{
		ID:          conv.ID,
		MetricID:    conv.MetricID,
		TargetModel: conv.TargetModel,
		Sample:      conv.Sample,
		ConvID:      conv.ConvID,
	}
	if conv.Validity != nil {
		row.Valid = conv.Validity.Valid
	}
	var usage llm.Usage
	if len(judges) == 0 {
		return row, usage, fmt.Errorf("evaluate %s: no judges", conv.ConvID)
	}
	switch conv.Status {
	case artifacts.StatusError:
		row.NullReason = "conversation failed: " + conv.StatusReason
		return row, usage, nil
	case artifacts.StatusBudget:
		row.NullReason = "conversation incomplete: stopped by the cost ceiling"
		return row, usage, nil
	}
	verdicts := make([]artifacts.JudgeVerdict, len(judges))
	for i, j := range judges {
		o := opts
		if len(judges) > 1 {
			// Distinct seeds, so two panel seats on the same model are
			// independent draws and not one cached answer twice.
			o.Seed = seedOf(opts.Seed, "panel", j.Name)
		}
		v, u, err := Judge(ctx, j.Client, p, m, conv.Transcript, o)
		usage = usage.Add(u)
		if err != nil {
			return row, usage, fmt.Errorf("evaluate %s: judge %s: %w", conv.ConvID, j.Name, err)
		}
		v.Judge = j.Name
		verdicts[i] = v
	}
	if len(judges) > 1 {
		row.Judges = verdicts
	}
	row.Present, row.Justification, row.NullReason = majority(verdicts)
	if row.Present != nil {
		passed := *row.Present
		if isNegative(m) {
			passed = !passed
		}
		row.Passed = &passed
	}
	return row, usage, nil
}

func majority(vs []artifacts.JudgeVerdict) (*bool, string, string) {
	yes, no := 0, 0
	for _, v := range vs {
		switch {
		case v.Present == nil:
		case *v.Present:
			yes++
		default:
			no++
		}
	}
	if yes == no {
		if yes > 0 {
			return nil, "", fmt.Sprintf("judges split evenly: %d present, %d absent", yes, no)
		}
		if len(vs) == 1 {
			return nil, vs[0].Justification, vs[0].NullReason
		}
		reasons := make([]string, len(vs))
		same := true
		for i, v := range vs {
			reasons[i] = v.Judge + ": " + v.NullReason
			same = same && v.NullReason == vs[0].NullReason
		}
		if same {
			return nil, "", vs[0].NullReason
		}
		return nil, "", "no judge returned a verdict (" + strings.Join(reasons, "; ") + ")"
	}
	want := yes > no
	just := ""
	for _, v := range vs {
		if v.Present != nil && *v.Present == want {
			just = v.Justification
			break
		}
	}
	return &want, just, ""
}

// CheckLandmarks is the optional validity check of the simulated user (not
// of the target): did it carry out its landmark instructions, and did it
// avoid revealing that the conversation is a test? Valid is followed and
// not revealed. An empty transcript makes no call and leaves Valid nil.
func CheckLandmarks(ctx context.Context, c llm.Client, p *prompts.Set, sc artifacts.Scenario, conv artifacts.Conversation, judgeName string) (artifacts.Validity, llm.Usage, error) {
	v := artifacts.Validity{Judge: judgeName}
	if len(conv.Transcript) == 0 {
		v.Reason = "empty transcript: nothing to check"
		return v, llm.Usage{}, nil
	}
	userTurns := 0
	for _, t := range conv.Transcript {
		if t.Role == string(llm.RoleUser) {
			userTurns++
		}
	}
	data := prompts.LandmarkCheckData{
		Persona:    sc.SimPersona(),
		UserGoal:   sc.UserGoal,
		Landmarks:  sc.Landmarks,
		UserTurns:  userTurns,
		Transcript: transcriptLines(conv.Transcript),
	}
	text, err := p.Render(prompts.LandmarkCheck, data)
	if err != nil {
		return v, llm.Usage{}, err
	}
	tj, err := json.Marshal(conv.Transcript)
	if err != nil {
		return v, llm.Usage{}, fmt.Errorf("landmark check: %w", err)
	}
	lj, err := json.Marshal(sc.Landmarks)
	if err != nil {
		return v, llm.Usage{}, fmt.Errorf("landmark check: %w", err)
	}
	req := llm.Request{
		Purpose:   llm.PurposeLandmark,
		Messages:  []llm.Message{{Role: llm.RoleUser, Content: text}},
		MaxTokens: judgeMaxTokens,
		Seed:      seedOf(0, "landmark_check", conv.ConvID, string(lj), string(tj)),
		Schema:    landmarkSchema,
		Meta:      map[string]string{llm.MetaLandmarksJSON: string(lj), llm.MetaTranscriptJSON: string(tj)},
	}
	validate := func(x any) error {
		m := *x.(*map[string]any)
		var bad []string
		for _, k := range []string{"followed_landmarks", "revealed_test"} {
			if _, ok := m[k].(bool); !ok {
				bad = append(bad, fmt.Sprintf("%q must be true or false", k))
			}
		}
		if len(bad) > 0 {
			return errors.New(strings.Join(bad, "; "))
		}
		return nil
	}
	var out map[string]any
	resp, err := llm.CompleteJSON(ctx, c, req, &out, llm.JSONOptions{Validate: validate})
	if err != nil {
		return v, resp.Usage, fmt.Errorf("landmark check %s: %w", conv.ConvID, err)
	}
	followed, revealed := out["followed_landmarks"].(bool), out["revealed_test"].(bool)
	valid := followed && !revealed
	v.FollowedSteps, v.RevealedTest, v.Valid = &followed, &revealed, &valid
	v.Reason, _ = out["reason"].(string)
	return v, resp.Usage, nil
}
