package benchharness

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/llm"
	"github.com/impactbench/impactbench/internal/llm/openai"
	"github.com/impactbench/impactbench/internal/llm/ratelimit/fakeprovider"
	"github.com/impactbench/impactbench/internal/prompts"
	"github.com/impactbench/impactbench/internal/stages"
)

func newGenFake(t *testing.T, metrics int) (*fakeServer, *httptest.Server) {
	t.Helper()
	f := newFakeServer([]modelSpec{{generatorModel, roleGenerator, DefaultTargetTokens}},
		fakeprovider.Config{Latency: time.Millisecond, OutputTokens: DefaultTargetTokens}, false)
	f.genMetrics = metrics
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, srv
}

// The fake generator's answers pass the tool's own generation steps on the
// first attempt, in both ways the tool asks: with a json_schema (OpenAI's
// dialect: the fake reads the schema) and with json_object only (what a
// local OpenAI-compatible server gets, the harness's case: the fake reads
// the prompt). One attempt and one round: a wrong answer is an error here,
// not a silent regeneration.
func TestFakeGeneratorAnswersTheStages(t *testing.T) {
	p, err := prompts.Load("")
	if err != nil {
		t.Fatal(err)
	}
	bench := &config.Benchmark{Name: "Harness", Description: "Synthetic load.",
		Scenario: config.BenchScenario{UserContext: "A help assistant."}}
	combos := []artifacts.Demographic{
		{{Key: "age", Value: "age 1"}, {Key: "region", Value: "region 1"}},
		{{Key: "age", Value: "age 2"}, {Key: "region", Value: "region 1"}},
	}
	for _, dialect := range []struct {
		name string
		d    openai.Dialect
	}{{"json_schema", openai.DialectOpenAI}, {"json_object", openai.DialectCompatible}} {
		t.Run(dialect.name, func(t *testing.T) {
			const metrics, n, turns = 3, 4, 5
			f, srv := newGenFake(t, metrics)
			c, err := openai.New(openai.Config{APIKey: "k", BaseURL: srv.URL + "/v1", Model: generatorModel,
				HTTPClient: srv.Client(), Dialect: dialect.d})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			opts := stages.GenOptions{Attempts: 1, MaxRounds: 1, Seed: 1,
				Logf: func(format string, args ...any) { t.Errorf("stage note: "+format, args...) }}
			ms, _, err := stages.GenMetrics(ctx, c, p, bench, opts)
			if err != nil || len(ms) != metrics {
				t.Fatalf("gen_metrics: %d metrics, %v; want %d", len(ms), err, metrics)
			}
			var bases []artifacts.Scenario
			for _, m := range ms[:2] {
				sc, _, err := stages.GenBaseScenarios(ctx, c, p, bench, m, n, turns, opts)
				if err != nil || len(sc) != n {
					t.Fatalf("gen_scenarios %s: %d scenarios, %v; want %d", m.ID, len(sc), err, n)
				}
				bases = append(bases, sc...)
			}
			vars, _, err := stages.ExpandScenario(ctx, c, p, bases[0], combos, turns, opts)
			if err != nil || len(vars) != len(combos) {
				t.Fatalf("expand: %d variants, %v; want %d", len(vars), err, len(combos))
			}
			for _, sc := range append(bases, vars...) {
				// A landmark past the last turn would be repaired, and noted.
				for _, kv := range sc.Extra {
					v, _ := json.Marshal(kv.Value)
					t.Errorf("%s: extra field %s = %s", sc.ID, kv.Key, v)
				}
				for _, l := range sc.Landmarks {
					if l.Turn < 1 || l.Turn > turns {
						t.Errorf("%s: landmark at turn %d of %d", sc.ID, l.Turn, turns)
					}
				}
			}
			if vars[0].UserPersona == "" || vars[0].UserPersona == vars[1].UserPersona {
				t.Errorf("rewritten personas %q, %q: want two different ones", vars[0].UserPersona, vars[1].UserPersona)
			}
			counts, unknown, _ := f.genCounts()
			want := map[string]int64{genMetrics: 1, genScenarios: 2, genRewrite: int64(len(combos))}
			for kind, w := range want {
				if c := counts[kind]; c.requests != w || c.corrections != 0 {
					t.Errorf("%s: %d requests, %d corrections; want %d, 0", kind, c.requests, c.corrections, w)
				}
			}
			if unknown != 0 {
				t.Errorf("%d unrecognised requests", unknown)
			}
			// The usage is the answer's length, not the fake's fixed reply.
			if out := f.Counts().OutputTokens; out <= 0 || out == int64(DefaultTargetTokens*(1+2+len(combos))) {
				t.Errorf("generator output tokens %d: want the answers' length", out)
			}
		})
	}
}

func TestParseGenRequest(t *testing.T) {
	msg := func(role, text string) map[string]any { return map[string]any{"role": role, "content": text} }
	body := func(schema map[string]any, msgs ...map[string]any) []byte {
		m := map[string]any{"model": generatorModel, "messages": msgs}
		if schema != nil {
			m["response_format"] = map[string]any{"type": "json_schema", "json_schema": schema}
		}
		b, _ := json.Marshal(m)
		return b
	}
	scenariosPrompt := "Write 7 scenarios that differ.\n- \"landmarks\": 1 to 5 steps, each {\"turn\": <a number from 1 to 6>, \"instruction\": \"...\"}\nReply with only this JSON object:\n{\"scenarios\": [{\"persona\": \"...\"}]}"
	turnEnum := map[string]any{"type": "array", "items": map[string]any{"properties": map[string]any{"turn": map[string]any{"enum": []any{1, 2, 3}}}}}
	for _, tc := range []struct {
		name    string
		body    []byte
		want    genRequest
		wantErr string
	}{
		{"metrics prompt", body(nil, msg("system", "x"), msg("user", "Propose.\nReply with only this JSON object:\n{\"metrics\": [{\"name\": \"...\"}]}")),
			genRequest{kind: genMetrics}, ""},
		{"scenarios prompt", body(nil, msg("user", scenariosPrompt)), genRequest{kind: genScenarios, n: 7, turns: 6}, ""},
		{"rewrite prompt", body(nil, msg("user", "- \"landmarks\": the same steps (same purpose, at most 5, turns between 1 and 4) reworded.\n{\"user_persona\": \"...\", \"landmarks\": []}")),
			genRequest{kind: genRewrite, turns: 4}, ""},
		{"correction", body(nil, msg("user", scenariosPrompt), msg("assistant", "{}"), msg("user", "That output was not valid")),
			genRequest{kind: genScenarios, n: 7, turns: 6, correction: true}, ""},
		{"scenarios schema", body(map[string]any{"name": "gen_scenarios", "schema": map[string]any{"properties": map[string]any{"scenarios": map[string]any{
			"minItems": 2, "maxItems": 2, "items": map[string]any{"properties": map[string]any{"landmarks": turnEnum}}}}}}, msg("user", "anything")),
			genRequest{kind: genScenarios, n: 2, turns: 3}, ""},
		{"rewrite schema", body(map[string]any{"name": "expand", "schema": map[string]any{"properties": map[string]any{"landmarks": turnEnum}}}, msg("user", "anything")),
			genRequest{kind: genRewrite, turns: 3}, ""},
		{"unknown schema", body(map[string]any{"name": "judge", "schema": map[string]any{}}, msg("user", "x")), genRequest{}, `unknown json_schema name "judge"`},
		{"schema without counts", body(map[string]any{"name": "gen_scenarios", "schema": map[string]any{}}, msg("user", "x")), genRequest{}, "without minItems"},
		{"no shape", body(nil, msg("user", "Write a poem.")), genRequest{}, "not the JSON object it asks for"},
		{"other shape", body(nil, msg("user", "Judge this.\n{\"present\": true}")), genRequest{}, "none of metrics"},
		{"scenarios without count", body(nil, msg("user", "Write some.\n{\"scenarios\": []}")), genRequest{}, "gen_scenarios prompt without"},
		{"no user message", body(nil, msg("system", "x")), genRequest{}, "no user message"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseGenRequest(tc.body)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got.prompt = ""
			if got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// A request the fake cannot tell gets a 400 that says so, which the tool
// does not retry, and no pool ever sees it.
func TestFakeGeneratorRejectsUnknownRequests(t *testing.T) {
	f, srv := newGenFake(t, 2)
	c, err := openai.New(openai.Config{APIKey: "k", BaseURL: srv.URL + "/v1", Model: generatorModel, HTTPClient: srv.Client()})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Complete(context.Background(), llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "Write a poem."}}})
	var le *llm.Error
	if !errors.As(err, &le) || le.StatusCode != http.StatusBadRequest || !strings.Contains(err.Error(), "cannot tell which generation step") {
		t.Fatalf("error %v, want a 400 naming the problem", err)
	}
	if _, unknown, msg := f.genCounts(); unknown != 1 || !strings.Contains(msg, "Write a poem.") {
		t.Errorf("unrecognised %d (%q), want 1 quoting the prompt", unknown, msg)
	}
	if n := f.Counts().Requests; n != 0 {
		t.Errorf("the pool saw %d requests, want 0", n)
	}
}
