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

// Combos is the cartesian product of the demographic axes in YAML order,
// the first axis varying slowest (age[A1,A2] × gender[g1,g2,g3] → (A1,g1),
// (A1,g2), (A1,g3), (A2,g1), …). No axes give one empty Demographic. An
// axis without values is an error: upstream silently produced zero rows.
func Combos(d config.Demographics) ([]artifacts.Demographic, error) {
	out := []artifacts.Demographic{{}}
	for _, axis := range d {
		if len(axis.Values) == 0 {
			return nil, fmt.Errorf("demographics: axis %q has no values", axis.Name)
		}
		next := make([]artifacts.Demographic, 0, len(out)*len(axis.Values))
		for _, prefix := range out {
			for _, v := range axis.Values {
				next = append(next, append(slices.Clip(prefix), artifacts.Pair{Key: axis.Name, Value: v}))
			}
		}
		out = next
	}
	return out, nil
}

// ExpandScenario makes one variant of base per demographic combination,
// with ids <base id>_v01, _v02, … . A single empty combination (no axes)
// gives one _v01 copy with an empty demographic and no model call.
// Otherwise each combination costs one JSON call (Purpose expand) that
// rewrites the persona (stored as UserPersona, which the simulator plays)
// and the landmarks; invalid answers are fed back to the model. What it
// took to read the rewrite is added to the variant's _repairs, each
// phrase starting "demographic rewrite: ".
func ExpandScenario(ctx context.Context, c llm.Client, p *prompts.Set, base artifacts.Scenario, combos []artifacts.Demographic, turns int, opts GenOptions) ([]artifacts.Scenario, llm.Usage, error) {
	var usage llm.Usage
	if len(combos) == 0 {
		return nil, usage, fmt.Errorf("expand %s: no demographic combinations", base.ID)
	}
	out := make([]artifacts.Scenario, 0, len(combos))
	for i := range combos {
		v, u, err := ExpandVariant(ctx, c, p, base, combos, i, turns, opts)
		usage = usage.Add(u)
		if err != nil {
			return nil, usage, err
		}
		out = append(out, v)
	}
	return out, usage, nil
}

// ExpandVariant rewrites base for combos[i] only: variant i of
// ExpandScenario, so a caller can rewrite a base scenario's variants in
// parallel. combos must hold at least one non-empty combination.
func ExpandVariant(ctx context.Context, c llm.Client, p *prompts.Set, base artifacts.Scenario, combos []artifacts.Demographic, i, turns int, opts GenOptions) (artifacts.Scenario, llm.Usage, error) {
	var usage llm.Usage
	if len(combos) == 1 && len(combos[0]) == 0 {
		v := cloneScenario(base)
		v.ID = variantID(base.ID, 0)
		v.Demographic = artifacts.Demographic{}
		return v, usage, nil
	}
	if turns <= 0 {
		return artifacts.Scenario{}, usage, fmt.Errorf("expand %s: turns must be > 0, got %d", base.ID, turns)
	}
	combo := combos[i]
	if len(combo) == 0 {
		return artifacts.Scenario{}, usage, fmt.Errorf("expand %s: combination %d is empty", base.ID, i+1)
	}
	landmarksJSON, err := json.Marshal(base.Landmarks)
	if err != nil {
		return artifacts.Scenario{}, usage, fmt.Errorf("expand %s: %w", base.ID, err)
	}
	attrs, text := describe(combo)
	data := prompts.ExpandData{
		Persona:         base.SimPersona(),
		UserGoal:        base.UserGoal,
		LatentGoal:      base.LatentAdversarialGoal,
		Landmarks:       base.Landmarks,
		Demographic:     attrs,
		DemographicText: text,
		Turns:           turns,
		MaxLandmarks:    maxLandmarks,
	}
	prompt, err := p.Render(prompts.ExpandDemographic, data)
	if err != nil {
		return artifacts.Scenario{}, usage, err
	}
	req := llm.Request{
		Purpose:   llm.PurposeExpand,
		Messages:  []llm.Message{{Role: llm.RoleUser, Content: prompt}},
		MaxTokens: opts.maxTokens(defaultMaxTokens),
		Seed:      seedOf(opts.Seed, "expand", base.ID, text, itoa(turns)),
		Schema:    expandSchema(turns),
		Meta: map[string]string{
			llm.MetaPersona:       base.SimPersona(),
			llm.MetaUserGoal:      base.UserGoal,
			llm.MetaLandmarksJSON: string(landmarksJSON),
			llm.MetaDemographic:   text,
			llm.MetaTurns:         itoa(turns),
		},
	}
	validate := func(v any) error {
		raw, err := json.Marshal(*v.(*map[string]any))
		if err != nil {
			return err
		}
		if _, _, _, _, probs := parseExpansion(raw, turns); len(probs) > 0 {
			return &llm.UnusableError{Reason: "had a missing or invalid persona or landmarks", Err: errors.New(strings.Join(probs, "; "))}
		}
		return nil
	}
	var res map[string]any
	resp, report, err := llm.CompleteJSONReport(ctx, c, req, &res, llm.JSONOptions{Attempts: opts.Attempts, Validate: validate})
	usage = usage.Add(resp.Usage)
	if err != nil {
		return artifacts.Scenario{}, usage, fmt.Errorf("expand %s for %s: %w", base.ID, text, err)
	}
	persona, landmarks, extra, fixes, _ := parseExpansion([]byte(llm.CleanJSONText(resp.Text)), turns)
	// Merge order: base fields, then the rewrite, then id and demographic last.
	v := cloneScenario(base)
	v.UserPersona = persona
	v.Landmarks = landmarks
	v.Extra = mergePairs(v.Extra, extra)
	repairs := repairsIn(base.Extra)
	for _, f := range append(report.Recorded(), fixes...) {
		repairs = append(repairs, "demographic rewrite: "+f)
	}
	v.Extra = withRepairs(v.Extra, repairs)
	v.ID = variantID(base.ID, i)
	v.Demographic = slices.Clone(combo)
	return v, usage, nil
}

// variantID formats the i-th (0-based) variant id; like upstream, two
// digits that simply grow past 99 (_v100).
func variantID(baseID string, i int) string { return fmt.Sprintf("%s_v%02d", baseID, i+1) }

func describe(combo artifacts.Demographic) ([]prompts.Attr, string) {
	attrs := make([]prompts.Attr, len(combo))
	parts := make([]string, len(combo))
	for i, kv := range combo {
		attrs[i] = prompts.Attr{Axis: kv.Key, Value: artifacts.ValueString(kv.Value)}
		parts[i] = kv.Key + ": " + attrs[i].Value
	}
	return attrs, strings.Join(parts, ", ")
}

// expansionKeys are consumed or owned by the pipeline; a returned "persona"
// is ignored so the neutral base persona is never overwritten.
var expansionKeys = map[string]bool{
	"user_persona": true, "landmarks": true, "persona": true, "id": true, "metric_id": true,
	"demographic": true, "target_system_prompt": true, repairsKey: true,
}

func parseExpansion(raw []byte, turns int) (string, []artifacts.Landmark, []artifacts.Pair, []string, problems) {
	var p problems
	fs, err := objectFields(raw)
	if err != nil {
		p.addf("the answer must be a JSON object")
		return "", nil, nil, nil, p
	}
	persona := requiredString(fs, "user_persona", &p)
	lm, ok := lookup(fs, "landmarks")
	var fixes []string
	landmarks := parseLandmarks(lm, ok, turns, &p, &fixes)
	return persona, landmarks, extraPairs(fs, expansionKeys), fixes, p
}

// repairsIn reads a scenario's _repairs field (nil when absent or malformed).
func repairsIn(extra []artifacts.Pair) []string {
	for _, kv := range extra {
		if kv.Key != repairsKey {
			continue
		}
		b, err := json.Marshal(kv.Value)
		var out []string
		if err == nil && json.Unmarshal(b, &out) == nil {
			return out
		}
	}
	return nil
}

func cloneScenario(s artifacts.Scenario) artifacts.Scenario {
	s.Landmarks = slices.Clone(s.Landmarks)
	s.Demographic = slices.Clone(s.Demographic)
	s.Extra = slices.Clone(s.Extra)
	return s
}

// mergePairs overwrites same-key pairs in place and appends new ones.
func mergePairs(base, over []artifacts.Pair) []artifacts.Pair {
	for _, o := range over {
		i := slices.IndexFunc(base, func(b artifacts.Pair) bool { return b.Key == o.Key })
		if i >= 0 {
			base[i] = o
		} else {
			base = append(base, o)
		}
	}
	return base
}
