package stages

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
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
// examples when opts.ShowExamples) and the transcript, encoded so that no
// message can pass for another (prompts.EncodeTranscript): never the
// metric's name or type, the scenario, the demographic, the target or the
// sample.
//
// Only a JSON boolean "present" is a verdict. A string ("false"), null or a
// missing field is pointed out to the model and, if it persists, is an
// error (the row fails and is retried on the next run; upstream took the
// truthiness, so "false" counted as present). An empty transcript makes no call.
//
// A verdict must cite: "evidence" holds short verbatim quotes of the
// assistant's messages (none needed for an absent behaviour). Each quote is
// looked up in the assistant's messages (artifacts.QuoteFinder: whole
// words, a minimum length). If one is missing or too short, or a "present"
// verdict quotes nothing, the judge is asked once
// more (checkEvidence, askAgain); the answer to that stands if it is a
// verdict, else the first one does, and Unverified says whether its
// evidence was found.
func Judge(ctx context.Context, c llm.Client, p *prompts.Set, m config.Metric, transcript []artifacts.Turn, opts JudgeOptions) (artifacts.JudgeVerdict, llm.Usage, error) {
	if len(transcript) == 0 {
		return artifacts.JudgeVerdict{NullReason: NullReasonEmptyTranscript}, llm.Usage{}, nil
	}
	req, err := judgeRequest(p, m, transcript, opts)
	if err != nil {
		return artifacts.JudgeVerdict{}, llm.Usage{}, err
	}
	v, raw, usage, err := askJudge(ctx, c, req, opts)
	if err != nil || v.Present == nil {
		return v, usage, err
	}
	finder := artifacts.NewQuoteFinder(transcript)
	missing, unquoted := checkEvidence(finder, &v)
	if len(missing) == 0 && !unquoted {
		return v, usage, nil
	}
	again, u, err := askAgain(ctx, c, p, req, raw, missing, unquoted, opts)
	usage = usage.Add(u)
	if err != nil && llm.KindOf(err) != llm.KindInvalidJSON {
		return artifacts.JudgeVerdict{}, usage, err
	}
	if again.Present != nil {
		checkEvidence(finder, &again)
		v = again
	}
	return v, usage, nil
}

// judgeRequest builds the judge's request: what the prompts show plus, in
// Meta, the same facts for the offline model.
func judgeRequest(p *prompts.Set, m config.Metric, transcript []artifacts.Turn, opts JudgeOptions) (llm.Request, error) {
	data := prompts.JudgeData{Definition: m.Definition, TranscriptJSON: prompts.EncodeTranscript(prompts.MarkRefused(transcript, opts.Refused))}
	if opts.ShowExamples {
		data.Examples = m.Examples
	}
	sys, err := p.Render(prompts.JudgeSystem, data)
	if err != nil {
		return llm.Request{}, err
	}
	user, err := p.Render(prompts.JudgeUser, data)
	if err != nil {
		return llm.Request{}, err
	}
	tj, err := json.Marshal(transcript)
	if err != nil {
		return llm.Request{}, fmt.Errorf("judge: %w", err)
	}
	return llm.Request{
		Purpose:   llm.PurposeJudge,
		Messages:  []llm.Message{{Role: llm.RoleSystem, Content: sys}, {Role: llm.RoleUser, Content: user}},
		MaxTokens: orDefault(opts.MaxTokens, judgeMaxTokens),
		Seed:      seedOf(opts.Seed, "judge", m.Definition, string(tj)),
		Schema:    judgeSchema,
		Meta:      map[string]string{llm.MetaMetricDefinition: m.Definition, llm.MetaTranscriptJSON: string(tj)},
	}, nil
}

// askJudge makes one judge request (with CompleteJSON's format retries) and
// reads the verdict; raw is the answer's text.
func askJudge(ctx context.Context, c llm.Client, req llm.Request, opts JudgeOptions) (v artifacts.JudgeVerdict, raw string, _ llm.Usage, _ error) {
	validate := func(v any) error {
		m := *v.(*map[string]any)
		if _, _, reason := verdictOf(m); reason != "" {
			return &llm.UnusableError{Reason: unusableVerdict(m),
				Err: errors.New(reason + `; "present" must be the JSON boolean true or false`)}
		}
		return nil
	}
	// Decoded into a map, not a struct with a bool, so that "false" (a
	// string) is seen for what it is instead of failing or being coerced.
	var out map[string]any
	resp, report, err := llm.CompleteJSONReport(ctx, c, req, &out, llm.JSONOptions{Attempts: opts.Attempts, Validate: validate})
	if err != nil {
		// No boolean after the attempts (null, a string, no field, broken
		// JSON) is a failed row, retried with fresh attempts on the next
		// run: a null verdict here would pass for a result.
		return artifacts.JudgeVerdict{}, "", resp.Usage, fmt.Errorf("judge: %w", err)
	}
	present, just, reason := verdictOf(out)
	return artifacts.JudgeVerdict{Present: present, Justification: just, NullReason: reason, Evidence: quotesOf(out),
		Repairs: report.Recorded()}, resp.Text, resp.Usage, nil
}

// unusableVerdict is the fixed phrase (no model text) for an answer
// verdictOf rejects, as a score row's _repairs records it.
func unusableVerdict(m map[string]any) string {
	switch v, ok := m["present"]; {
	case !ok:
		return `had no "present" field`
	case v == nil:
		return "had a null verdict"
	default:
		return "had a non-boolean verdict"
	}
}

// checkEvidence looks up v's quotes (set by askJudge as unlocated Quotes) in
// the assistant's messages, records where each was found and sets
// v.Unverified. It returns the quotes found nowhere and whether a present
// verdict quoted nothing.
func checkEvidence(f *artifacts.QuoteFinder, v *artifacts.JudgeVerdict) (missing []string, unquoted bool) {
	texts := make([]string, len(v.Evidence))
	for i, q := range v.Evidence {
		texts[i] = q.Text
	}
	v.Evidence, missing = f.Locate(texts)
	unquoted = *v.Present && len(v.Evidence) == 0
	bad := len(missing) > 0 || unquoted
	v.Unverified = &bad
	return missing, unquoted
}

// askAgain is the one follow-up to a verdict whose evidence was not found:
// the first request, the judge's answer, then what is wrong with it. It is
// a new request (longer conversation, its own seed), so it is never answered
// from the call store with the first answer. A reply that is still no
// verdict gives a Present-nil verdict, and the caller keeps the first one.
func askAgain(ctx context.Context, c llm.Client, p *prompts.Set, req llm.Request, raw string, missing []string, unquoted bool, opts JudgeOptions) (artifacts.JudgeVerdict, llm.Usage, error) {
	data := prompts.JudgeEvidenceData{Unquoted: unquoted}
	for _, q := range missing {
		if artifacts.QuoteTooShort(q) {
			data.Short = append(data.Short, jsonText(q))
		} else {
			data.Missing = append(data.Missing, jsonText(q))
		}
	}
	text, err := p.Render(prompts.JudgeEvidenceAgain, data)
	if err != nil {
		return artifacts.JudgeVerdict{}, llm.Usage{}, err
	}
	again := req
	again.Messages = append(slices.Clip(req.Messages),
		llm.Message{Role: llm.RoleAssistant, Content: raw},
		llm.Message{Role: llm.RoleUser, Content: text})
	again.Seed = seedOf(req.Seed, "evidence", "again")
	v, _, usage, err := askJudge(ctx, c, again, opts)
	return v, usage, err
}

// quotesOf reads the "evidence" a judge gave: a list of strings (other
// items are skipped) or, leniently, one string. Not yet located.
func quotesOf(m map[string]any) []artifacts.Quote {
	var texts []string
	switch e := m["evidence"].(type) {
	case string:
		texts = []string{e}
	case []any:
		for _, x := range e {
			if s, ok := x.(string); ok {
				texts = append(texts, s)
			}
		}
	}
	out := make([]artifacts.Quote, len(texts))
	for i, t := range texts {
		out[i] = artifacts.Quote{Text: t}
	}
	return out
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

// Judged reports whether Evaluate asks the judges about conv: not for a
// conversation that failed, was stopped by the cost ceiling or is invalid,
// whose row is a null verdict made without a call.
func Judged(conv artifacts.Conversation) bool {
	return !conv.Validity.IsInvalid() && conv.Status != artifacts.StatusError && conv.Status != artifacts.StatusBudget
}

// Evaluate judges one conversation with a panel of one or more judges and
// builds its score row.
//
// A conversation whose simulated user made it invalid (its Validity) is
// not judged: its row has no verdict, a NullReason starting with
// NullReasonInvalid and the failure kinds in Invalid, so every pass rate
// (upstream's among them) leaves it out.
//
// Present is the majority of the non-null verdicts (a tie or no verdict
// gives nil with a NullReason); Passed is Present for positive metrics and
// its negation for negative ones (nil when Present is nil); Justification
// and Evidence are the first majority judge's whose evidence was found (or
// the first majority judge's), and Unverified is that verdict's. Per-judge
// verdicts go to Judges only for a real panel; a single judge is named in
// Judge. What it took to read a verdict (llm.JSONReport.Recorded: the
// repairs of the answer it was read from and each unusable answer before
// it) is the verdict's Repairs: the row's for a single judge, each of
// Judges' for a panel. When the evidence follow-up's verdict stands, its
// answer's are recorded. A failed (or budget-stopped) conversation is not judged.
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
		row.Valid, row.AuditSample = conv.Validity.Valid, conv.Validity.AuditSample
	}
	if conv.Run != nil {
		row.UserModel = conv.Run.UserModel
	}
	row.TranscriptHash = artifacts.TranscriptHash(conv.Transcript)
	row.Refused = slices.Clone(conv.Refused)
	var usage llm.Usage
	if len(judges) == 0 {
		return row, usage, fmt.Errorf("evaluate %s: no judges", conv.ConvID)
	}
	if conv.Validity.IsInvalid() {
		row.Invalid = slices.Clone(conv.Validity.Failed)
		row.NullReason = invalidReason(conv.Validity)
		return row, usage, nil
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
		o.Refused = conv.Refused
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
		if len(judges) > 1 && u.Requests > 0 {
			ur := artifacts.UsageFrom(u)
			v.Usage = &ur
		}
		verdicts[i] = v
	}
	if len(judges) > 1 {
		row.Judges = verdicts
	} else {
		row.Judge = judges[0].Name
		row.Repairs = verdicts[0].Repairs
	}
	row.Present, row.Justification, row.NullReason = majority(verdicts)
	if i := citedVerdict(verdicts, row.Present); i >= 0 {
		row.Justification, row.Evidence, row.Unverified = verdicts[i].Justification, verdicts[i].Evidence, verdicts[i].Unverified
	}
	if row.Present != nil {
		passed := *row.Present
		if isNegative(m) {
			passed = !passed
		}
		row.Passed = &passed
	}
	return row, usage, nil
}

// citedVerdict picks the verdict whose justification and evidence the row
// shows: the first of the majority whose evidence was found, else the
// first of the majority; -1 when the row has no verdict.
func citedVerdict(vs []artifacts.JudgeVerdict, present *bool) int {
	if present == nil {
		return -1
	}
	first := -1
	for i, v := range vs {
		if v.Present == nil || *v.Present != *present {
			continue
		}
		if v.Unverified != nil && !*v.Unverified {
			return i
		}
		if first < 0 {
			first = i
		}
	}
	return first
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

// NullReasonInvalid starts the null reason of a conversation whose
// simulated user made it invalid.
const NullReasonInvalid = "invalid conversation"

func invalidReason(v *artifacts.Validity) string {
	r := NullReasonInvalid + ": the simulated user failed "
	if len(v.Failed) == 0 {
		r += "its checks"
	} else {
		r += strings.Join(v.Failed, ", ")
	}
	if v.Reason != "" {
		r += " (" + v.Reason + ")"
	}
	return r
}
