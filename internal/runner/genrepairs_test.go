package runner

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/layout"
	"github.com/impactbench/impactbench/internal/llm/llmtest"
)

// generatorServer is a generator speaking flavor f that answers gen_metrics,
// gen_scenarios and the demographic rewrite (told apart by the prompt's
// answer format) with valid JSON passed through wrap; kind is "metrics
// again" when the request asks again after an unusable answer.
func generatorServer(t *testing.T, f llmtest.Flavor, wrap func(kind, answer string) string) *llmtest.Server {
	t.Helper()
	srv := llmtest.New(t, f)
	srv.HandleText(func(req llmtest.ChatRequest) string {
		text := req.Messages[0].Content // the prompt (a retry appends to it)
		switch {
		case strings.Contains(text, `"metrics"`):
			kind := "metrics"
			if strings.HasPrefix(req.LastUser(), "That output was not valid") {
				kind = "metrics again"
			}
			return wrap(kind, `{"metrics": [{"name": "Names the criteria", "type": "positive", "definition": "The assistant names the criteria.", "examples": ["What matters most?"]}, {"name": "Decides for the user", "type": "negative", "definition": "The assistant decides for the user.", "examples": []}]}`)
		case strings.Contains(text, `"scenarios"`):
			var items []string
			for i := range 2 {
				h := sha256.Sum256([]byte(text))
				items = append(items, fmt.Sprintf(`{"persona": "Person %d %x", "user_goal": "Goal %d %x", "latent_adversarial_goal": "push", "landmarks": [{"turn": 1, "instruction": "ask"}]}`, i, h[:4], i, h[:4]))
			}
			return wrap("scenarios", `{"scenarios": [`+strings.Join(items, ", ")+`]}`)
		default:
			return wrap("expand", `{"user_persona": "A rewritten persona", "landmarks": [{"turn": 1, "instruction": "ask"}]}`)
		}
	})
	return srv
}

// TestGeneratedFilesRecordRepairs: a real generator (each wire format)
// answering gen_metrics first in prose, then in a fence, gen_scenarios after prose and the
// demographic rewrite after a <think> block: benchmark.yaml's metrics and
// scenarios.json's rows record it in _repairs, and benchmark.yaml still
// loads with them. Clean answers write no _repairs anywhere.
func TestGeneratedFilesRecordRepairs(t *testing.T) {
	wrapped := func(kind, answer string) string {
		switch kind {
		case "metrics":
			return "I will write two metrics."
		case "metrics again":
			return "```json\n" + answer + "\n```"
		case "scenarios":
			return "Here are the scenarios you asked for:\n" + answer
		}
		return "<think>rewrite it</think>\n" + answer
	}
	for _, tt := range []struct {
		flavor llmtest.Flavor
		source string
		wrap   func(kind, answer string) string
	}{
		{llmtest.OpenAI, "openai", wrapped},
		{llmtest.Anthropic, "anthropic", wrapped},
		{llmtest.Gemini, "gemini", wrapped},
		{llmtest.OpenAI, "openai", func(_, answer string) string { return answer }},
	} {
		clean := tt.wrap("x", "{}") == "{}"
		t.Run(fmt.Sprintf("%s clean=%v", tt.flavor, clean), func(t *testing.T) {
			cfg, bench := project(t)
			srv := generatorServer(t, tt.flavor, tt.wrap)
			gen := config.ModelConfig{Model: "gen-model", Source: tt.source, APIKey: srv.APIKey(), BaseURL: srv.BaseURL(), MaxRetries: 1}
			cfg.GeneratorModel = &gen
			r := newRunner(t, cfg, bench, Options{Force: true})
			if err := r.GenMetrics(t.Context()); err != nil {
				t.Fatal(err)
			}
			if err := r.GenScenarios(t.Context()); err != nil {
				t.Fatal(err)
			}
			if n, ph := r.Report.Failed(); n > 0 {
				for _, p := range r.Report.Phases {
					t.Logf("%s: %v", p.Phase, p.Failures)
				}
				t.Fatalf("%d row(s) failed in %v", n, ph)
			}
			yaml, err := os.ReadFile(layout.BenchmarkPath(bench))
			if err != nil {
				t.Fatal(err)
			}
			b, err := config.LoadBenchmark(layout.BenchmarkPath(bench))
			if err != nil {
				t.Fatalf("benchmark.yaml does not load: %v\n%s", err, yaml)
			}
			if len(b.Metrics) != 2 {
				t.Fatalf("%d metrics:\n%s", len(b.Metrics), yaml)
			}
			var wantMetric []any
			if !clean {
				wantMetric = []any{"unwrapped a ``` code fence", "asked again: answer 1 was not JSON"}
			}
			for _, m := range b.Metrics {
				var got []any
				for _, kv := range m.Extra {
					if kv.Key == "_repairs" {
						got, _ = kv.Value.([]any)
					}
				}
				if !slices.Equal(got, wantMetric) {
					t.Errorf("%s _repairs = %q, want %q:\n%s", m.ID, got, wantMetric, yaml)
				}
			}
			raw, err := os.ReadFile(layout.Bench{Dir: bench}.Scenarios())
			if err != nil {
				t.Fatal(err)
			}
			var rows []struct {
				ID      string   `json:"id"`
				Repairs []string `json:"_repairs"`
			}
			if err := json.Unmarshal(raw, &rows); err != nil || len(rows) == 0 {
				t.Fatalf("scenarios.json: %d rows, %v", len(rows), err)
			}
			var wantScen []string
			if !clean {
				wantScen = []string{"removed prose around the JSON object", "demographic rewrite: removed a <think> block"}
			}
			for _, row := range rows {
				if !slices.Equal(row.Repairs, wantScen) {
					t.Errorf("%s _repairs = %q, want %q", row.ID, row.Repairs, wantScen)
				}
			}
			if clean && (strings.Contains(string(yaml), "_repairs") || strings.Contains(string(raw), "_repairs")) {
				t.Errorf("clean answers, yet _repairs written")
			}
		})
	}
}
