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

// GenMetrics asks the generator model for the benchmark's metrics (one JSON
// call, Purpose gen_metrics) and returns them validated, with ids m01, m02, …
// (m100 for the 100th). Invalid items are described back to the model so it
// can fix them; if they are still invalid after the last attempt they are
// dropped (reported through opts.Logf). No valid metric at all is an error.
// What it took to read the answer (what was removed around its JSON, each
// unusable answer asked again, a metric's own repaired fields) is each
// metric's _repairs key, in fixed phrases; a clean answer adds none.
func GenMetrics(ctx context.Context, c llm.Client, p *prompts.Set, b *config.Benchmark, opts GenOptions) ([]config.Metric, llm.Usage, error) {
	req, err := genMetricsRequest(p, b, opts)
	if err != nil {
		return nil, llm.Usage{}, err
	}
	// lastValid remembers the valid part of the latest answer that decoded,
	// to fall back on when the model never gets every item right; answers
	// holds every answer's text, so the fallback's repairs are its own.
	var lastValid []config.Metric
	var lastFixes [][]string
	var lastProblems []string
	var answers []string
	lastAnswer := 0
	counted := llm.ClientFunc(func(ctx context.Context, req llm.Request) (llm.Response, error) {
		resp, err := c.Complete(ctx, req)
		if err == nil {
			answers = append(answers, resp.Text)
		}
		return resp, err
	})
	validate := func(v any) error {
		raw, err := json.Marshal(*v.(*map[string]any))
		if err != nil {
			return err
		}
		lastValid, lastFixes, lastProblems = parseMetrics(raw)
		lastAnswer = len(answers)
		if len(lastProblems) > 0 {
			return &llm.UnusableError{Reason: "had an invalid metric", Err: errors.New(strings.Join(lastProblems, "; "))}
		}
		return nil
	}
	var out map[string]any
	resp, report, err := llm.CompleteJSONReport(ctx, counted, req, &out, llm.JSONOptions{Attempts: opts.Attempts, Validate: validate})
	var metrics []config.Metric
	var fixes [][]string
	var answer []string // what it took to read the answer the metrics come from
	switch {
	case err == nil:
		// Parse the text itself rather than the decoded map: unknown keys keep their order.
		metrics, fixes, _ = parseMetrics([]byte(llm.CleanJSONText(resp.Text)))
		answer = report.Recorded()
	case llm.KindOf(err) == llm.KindInvalidJSON && len(lastValid) > 0:
		opts.logf("gen_metrics: dropped invalid metrics the model did not fix: %s", strings.Join(lastProblems, "; "))
		metrics, fixes = lastValid, lastFixes
		answer = fallbackRepairs(answers[lastAnswer-1], lastAnswer, report)
	default:
		return nil, resp.Usage, fmt.Errorf("gen_metrics for %q: %w", b.Name, err)
	}
	if len(metrics) == 0 {
		return nil, resp.Usage, fmt.Errorf("gen_metrics for %q: the model returned no valid metric", b.Name)
	}
	for i := range metrics {
		metrics[i].ID = fmt.Sprintf("m%02d", i+1)
		metrics[i].Extra = withMetricRepairs(metrics[i].Extra, append(slices.Clone(answer), fixes[i]...))
	}
	return metrics, resp.Usage, nil
}

// genMetricsRequest is the gen_metrics call for benchmark b: the rendered
// prompts, the benchmark's name and description (and the count asked for)
// as metadata, and a seed of its own.
func genMetricsRequest(p *prompts.Set, b *config.Benchmark, opts GenOptions) (llm.Request, error) {
	data := prompts.GenMetricsData{
		BenchmarkName:   b.Name,
		Description:     b.Description,
		UserContext:     b.Scenario.UserContext,
		ImplicitContext: b.Scenario.ImplicitContext,
		Count:           opts.Count,
	}
	sys, err := p.Render(prompts.GenMetricsSystem, data)
	if err != nil {
		return llm.Request{}, err
	}
	user, err := p.Render(prompts.GenMetricsUser, data)
	if err != nil {
		return llm.Request{}, err
	}
	meta := map[string]string{llm.MetaBenchmarkName: b.Name, llm.MetaBenchmarkDescription: b.Description}
	if opts.Count > 0 {
		meta[llm.MetaCount] = itoa(opts.Count)
	}
	return llm.Request{
		Purpose:   llm.PurposeGenMetrics,
		Messages:  []llm.Message{{Role: llm.RoleSystem, Content: sys}, {Role: llm.RoleUser, Content: user}},
		MaxTokens: opts.maxTokens(metricsMaxTokens),
		Seed:      seedOf(opts.Seed, "gen_metrics", b.Name, b.Description, itoa(opts.Count)),
		Schema:    metricsSchema,
		Meta:      meta,
	}, nil
}

// fallbackRepairs is what it took to read metrics kept from answer k (1-based)
// of a gen_metrics call that never got every metric right: what was removed
// around answer k's JSON, each answer before the last asked again, and the
// dropping of the invalid metrics.
func fallbackRepairs(text string, k int, report llm.JSONReport) []string {
	_, out := llm.CleanJSON(text)
	asked := report.Recorded()
	out = append(out, asked[:max(len(asked)-1, 0)]...)
	return append(out, fmt.Sprintf("kept the valid metrics of answer %d and dropped the invalid ones the model did not fix", k))
}

// withMetricRepairs sets a metric's _repairs key (benchmark.yaml, like a
// scenario's in scenarios.json), replacing one a model wrote; no repairs, no key.
func withMetricRepairs(extra []config.KV, repairs []string) []config.KV {
	extra = slices.DeleteFunc(extra, func(kv config.KV) bool { return kv.Key == repairsKey })
	if len(repairs) == 0 {
		return extra
	}
	list := make([]any, len(repairs))
	for i, r := range repairs {
		list[i] = r
	}
	return append(extra, config.KV{Key: repairsKey, Value: list})
}

var metricKeys = map[string]bool{"id": true, "name": true, "type": true, "definition": true, "examples": true, repairsKey: true}

// parseMetrics returns the valid metrics of a {"metrics": […]} answer, what
// was repaired in each (fixed phrases) and a description of every problem found.
func parseMetrics(raw []byte) ([]config.Metric, [][]string, []string) {
	items, err := arrayItems(raw, "metrics")
	if err != nil {
		return nil, nil, []string{err.Error()}
	}
	if len(items) == 0 {
		return nil, nil, []string{`the "metrics" array is empty`}
	}
	var out []config.Metric
	var fixes [][]string
	var all []string
	for i, it := range items {
		m, f, p := parseMetric(it)
		for _, s := range p {
			all = append(all, fmt.Sprintf("metrics[%d]: %s", i, s))
		}
		if len(p) == 0 {
			out = append(out, m)
			fixes = append(fixes, f)
		}
	}
	return out, fixes, all
}

// parseMetric reads one metric; fixes are what was repaired in it (a type
// in other letter case, a lone example string), in fixed phrases.
func parseMetric(raw json.RawMessage) (config.Metric, []string, problems) {
	var p problems
	var fixes []string
	fs, err := objectFields(raw)
	if err != nil {
		p.addf("must be an object")
		return config.Metric{}, nil, p
	}
	m := config.Metric{
		Name:       requiredString(fs, "name", &p),
		Definition: requiredString(fs, "definition", &p),
		Examples:   []string{},
	}
	given := requiredString(fs, "type", &p)
	typ := strings.ToLower(given)
	switch config.MetricType(typ) {
	case config.Positive, config.Negative:
		m.Type = config.MetricType(typ)
		if given != typ {
			fixes = append(fixes, "lowercased the type")
		}
	case "":
	default:
		p.addf(`type must be "positive" or "negative", got %q`, typ)
	}
	if ex, ok := lookup(fs, "examples"); ok && !isNull(ex) {
		var one string
		var list []any
		switch {
		case json.Unmarshal(ex, &one) == nil: // a lone string is one example
			if one = strings.TrimSpace(one); one != "" {
				m.Examples = append(m.Examples, one)
				fixes = append(fixes, "read a lone examples string as a list of one")
			}
		case json.Unmarshal(ex, &list) == nil:
			for j, e := range list {
				s, ok := e.(string)
				if !ok {
					p.addf("examples[%d] must be a string", j)
					continue
				}
				if s = strings.TrimSpace(s); s != "" {
					m.Examples = append(m.Examples, s)
				}
			}
		default:
			p.addf("examples must be an array of strings")
		}
	}
	for _, f := range fs {
		if metricKeys[f.key] {
			continue
		}
		var v any
		if json.Unmarshal(f.raw, &v) == nil {
			m.Extra = append(m.Extra, config.KV{Key: f.key, Value: v})
		}
	}
	return m, fixes, p
}

// GenBaseScenarios writes n demographic-neutral base scenarios for metric
// m, with ids <metric id>_s001, … . Each answer is checked item by item:
// what can be repaired without guessing (a landmark past the last turn,
// JSON wrapped in a fence, a think block or prose) is repaired and recorded
// in the scenario's _repairs field, with each unusable answer asked again; other malformed items are dropped and only the
// shortfall is asked for again in a new round (new seed, with the accepted
// scenarios' goals listed so the new ones differ). Items beyond n are dropped.
//
// opts.MaxRounds bounds the rounds paid for in this invocation. Rounds
// replayed from the call store do not count: a rerun replays them (same
// scenarios, same ids) and continues with fresh rounds for what is missing.
// When fewer than n are valid at the end, the valid ones are returned with a
// *ShortfallError, so the run can proceed with them.
func GenBaseScenarios(ctx context.Context, c llm.Client, p *prompts.Set, b *config.Benchmark, m config.Metric, n, turns int, opts GenOptions) ([]artifacts.Scenario, llm.Usage, error) {
	var usage llm.Usage
	if n <= 0 || turns <= 0 {
		return nil, usage, fmt.Errorf("gen_scenarios %s: need n > 0 and turns > 0, got n=%d turns=%d", m.ID, n, turns)
	}
	rounds := opts.MaxRounds
	if rounds <= 0 {
		rounds = defaultMaxRounds
	}
	budget := llm.Attempts{Max: rounds}
	accepted := slices.Clone(opts.Existing)
	var trouble []string
	var stopErr error
	round := 0
	for len(accepted) < n {
		round++
		need := n - len(accepted)
		req, err := scenariosRequest(p, b, m, accepted, need, n, turns, round+topUpRound(opts), opts)
		if err != nil {
			return nil, usage, err
		}
		// Only the envelope is checked inside CompleteJSON: re-asking for the
		// whole list to fix one item would cost more than asking for the
		// missing ones in the next round.
		validate := func(v any) error {
			items, ok := (*v.(*map[string]any))["scenarios"].([]any)
			if !ok {
				return &llm.UnusableError{Reason: `had no "scenarios" array`, Err: errors.New(`the answer needs a "scenarios" array`)}
			}
			if len(items) == 0 {
				return &llm.UnusableError{Reason: `had an empty "scenarios" array`, Err: fmt.Errorf(`the "scenarios" array is empty; write %d`, need)}
			}
			return nil
		}
		var out map[string]any
		resp, report, err := llm.CompleteJSONReport(ctx, c, req, &out, llm.JSONOptions{Attempts: opts.Attempts, Validate: validate})
		usage = usage.Add(resp.Usage)
		if err != nil && llm.KindOf(err) != llm.KindInvalidJSON {
			stopErr = err
			break
		}
		if err != nil {
			trouble = append(trouble, fmt.Sprintf("round %d: %v", round, err))
		} else {
			accepted, trouble = acceptScenarios(resp.Text, report.Recorded(), turns, round, accepted, trouble)
		}
		if len(accepted) < n && !budget.Another(resp) {
			break
		}
	}
	if len(trouble) > 0 {
		opts.logf("gen_scenarios %s: needed %d round(s); dropped: %s", m.ID, round, strings.Join(trouble, "; "))
	}
	accepted = accepted[:min(n, len(accepted))]
	next := max(opts.NextID, len(opts.Existing)+1)
	for i := len(opts.Existing); i < len(accepted); i++ {
		accepted[i].ID = fmt.Sprintf("%s_s%03d", m.ID, next+i-len(opts.Existing))
		accepted[i].MetricID = m.ID
	}
	if len(opts.Existing) == 0 {
		for i := range accepted {
			accepted[i].ID = fmt.Sprintf("%s_s%03d", m.ID, i+1)
		}
	}
	if len(accepted) < n {
		return accepted, usage, &ShortfallError{MetricID: m.ID, MetricName: m.Name, Got: len(accepted), Want: n,
			Rounds: round, Trouble: trouble, Err: stopErr}
	}
	return accepted, usage, nil
}

// topUpRound numbers the rounds of a top-up after every id the metric has
// used, so their seeds differ from the first generation's rounds.
func topUpRound(opts GenOptions) int {
	if len(opts.Existing) == 0 {
		return 0
	}
	return 100 * max(opts.NextID, len(opts.Existing)+1)
}

// scenariosRequest is the request of one gen_scenarios round.
func scenariosRequest(p *prompts.Set, b *config.Benchmark, m config.Metric, accepted []artifacts.Scenario, need, n, turns, round int, opts GenOptions) (llm.Request, error) {
	data := prompts.GenScenariosData{
		BenchmarkName:        b.Name,
		BenchmarkDescription: b.Description,
		UserContext:          b.Scenario.UserContext,
		ImplicitContext:      b.Scenario.ImplicitContext,
		Metric:               metricData(m),
		N:                    need,
		Turns:                turns,
		MaxLandmarks:         maxLandmarks,
	}
	for _, s := range accepted {
		data.Existing = append(data.Existing, s.UserGoal)
	}
	text, err := p.Render(prompts.GenScenarios, data)
	if err != nil {
		return llm.Request{}, err
	}
	return llm.Request{
		Purpose:   llm.PurposeGenScenarios,
		Messages:  []llm.Message{{Role: llm.RoleUser, Content: text}},
		MaxTokens: opts.maxTokens(max(defaultMaxTokens, 1024+perScenarioTokens*need)),
		Seed:      seedOf(opts.Seed, "gen_scenarios", m.ID, m.Definition, itoa(n), itoa(turns), itoa(round)),
		Schema:    scenariosSchema(need, turns),
		Meta: map[string]string{
			llm.MetaBenchmarkName:        b.Name,
			llm.MetaBenchmarkDescription: b.Description,
			llm.MetaMetricID:             m.ID,
			llm.MetaMetricName:           m.Name,
			llm.MetaMetricType:           string(m.Type),
			llm.MetaMetricDefinition:     m.Definition,
			llm.MetaCount:                itoa(need),
			llm.MetaTurns:                itoa(turns),
		},
	}, nil
}

// acceptScenarios adds the valid (or repaired) items of one answer to
// accepted and describes the others in trouble. answer is what it took to
// read the answer (llm.JSONReport.Recorded), recorded on each of its items.
func acceptScenarios(text string, answer []string, turns, round int, accepted []artifacts.Scenario, trouble []string) ([]artifacts.Scenario, []string) {
	clean := llm.CleanJSONText(text)
	items, err := arrayItems([]byte(clean), "scenarios")
	if err != nil {
		return accepted, append(trouble, fmt.Sprintf("round %d: %v", round, err))
	}
	for i, it := range items {
		sc, fixes, probs := parseScenario(it, turns)
		if len(probs) == 0 && duplicate(accepted, sc) {
			probs.addf("duplicates an earlier scenario")
		}
		if len(probs) > 0 {
			trouble = append(trouble, fmt.Sprintf("round %d: scenarios[%d]: %s", round, i, strings.Join(probs, ", ")))
			continue
		}
		sc.Extra = withRepairs(sc.Extra, append(slices.Clone(answer), fixes...))
		accepted = append(accepted, sc)
	}
	return accepted, trouble
}

// ShortfallError says a metric got fewer valid scenarios than asked for.
// The valid ones come with it: the run proceeds with them, reports the
// shortfall, and a rerun tops the metric up.
type ShortfallError struct {
	MetricID, MetricName string
	Got, Want            int
	Rounds               int
	Trouble              []string // what was wrong with the dropped items
	Err                  error    // the provider error that ended the rounds, if one did
}

func (e *ShortfallError) Error() string {
	s := fmt.Sprintf("gen_scenarios %s (%s): only %d of %d scenarios valid after %d round(s)", e.MetricID, e.MetricName, e.Got, e.Want, e.Rounds)
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	if len(e.Trouble) > 0 {
		s += ": " + strings.Join(e.Trouble, "; ")
	}
	return s
}

func (e *ShortfallError) Unwrap() error { return e.Err }

func metricData(m config.Metric) prompts.MetricData {
	return prompts.MetricData{
		ID:         m.ID,
		Name:       m.Name,
		Type:       string(m.Type),
		Negative:   isNegative(m),
		Definition: m.Definition,
		Examples:   m.Examples,
	}
}

// isNegative: anything but "positive" scores as negative, as upstream does
// (config validation rejects other values before they get here).
func isNegative(m config.Metric) bool {
	return !strings.EqualFold(string(m.Type), string(config.Positive))
}

// scenarioKeys are fields the pipeline owns or types; other keys a model
// returns go to Extra. A generated target_system_prompt is not trusted: only
// hand-written scenarios may set the target's system prompt.
var scenarioKeys = map[string]bool{
	"id": true, "metric_id": true, "persona": true, "user_persona": true, "user_goal": true,
	"latent_adversarial_goal": true, "landmarks": true, "demographic": true, "target_system_prompt": true,
	repairsKey: true,
}

func parseScenario(raw json.RawMessage, turns int) (artifacts.Scenario, []string, problems) {
	var p problems
	var fixes []string
	fs, err := objectFields(raw)
	if err != nil {
		p.addf("must be an object")
		return artifacts.Scenario{}, nil, p
	}
	lm, ok := lookup(fs, "landmarks")
	sc := artifacts.Scenario{
		Persona:               requiredString(fs, "persona", &p),
		HasPersona:            true,
		UserGoal:              requiredString(fs, "user_goal", &p),
		LatentAdversarialGoal: requiredString(fs, "latent_adversarial_goal", &p),
		Landmarks:             parseLandmarks(lm, ok, turns, &p, &fixes),
		Extra:                 extraPairs(fs, scenarioKeys),
	}
	return sc, fixes, p
}

func duplicate(list []artifacts.Scenario, sc artifacts.Scenario) bool {
	for _, s := range list {
		if strings.EqualFold(s.Persona, sc.Persona) && strings.EqualFold(s.UserGoal, sc.UserGoal) {
			return true
		}
	}
	return false
}
