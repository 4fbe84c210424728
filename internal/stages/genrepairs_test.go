package stages

import (
	"context"
	"slices"
	"testing"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/llm/llmtest"
)

// The generator's answers, read over each provider's wire format: what it
// took to read them (a removed think block, fence or prose, an unusable
// answer asked again, a repaired field) is recorded on what they made, in
// fixed phrases; a clean first answer records nothing.

var wireFlavors = []llmtest.Flavor{llmtest.OpenAI, llmtest.Anthropic, llmtest.Gemini}

// flavorOf spreads a table's cases over the three wire formats.
func flavorOf(i int) llmtest.Flavor { return wireFlavors[i%len(wireFlavors)] }

// wireServer is an llmtest server of flavor f answering with answers in
// order (the last one again after that).
func wireServer(t *testing.T, f llmtest.Flavor, answers ...string) *llmtest.Server {
	t.Helper()
	srv := llmtest.New(t, f)
	n := 0
	srv.HandleText(func(llmtest.ChatRequest) string {
		a := answers[min(n, len(answers)-1)]
		n++
		return a
	})
	return srv
}

// TestGenMetricsRecordsRepairs: every metric of an answer records what it
// took to read it as _repairs (written to benchmark.yaml), its own field
// repairs after; a clean first answer gives metrics without the key.
func TestGenMetricsRecordsRepairs(t *testing.T) {
	const clean = `{"metrics": [{"name": "A", "type": "positive", "definition": "d", "examples": ["e"]}, {"name": "B", "type": "negative", "definition": "f", "examples": []}]}`
	const oneBad = `{"metrics": [{"name": "A", "type": "positive", "definition": "d"}, {"name": "", "type": "negative", "definition": "f"}]}`
	const fixes = `{"metrics": [{"name": "A", "type": "POSITIVE", "definition": "d", "examples": "e"}, {"name": "B", "type": "negative", "definition": "f"}]}`
	tests := []struct {
		name    string
		answers []string
		want    [][]string // per metric
	}{
		{"clean", []string{clean}, [][]string{nil, nil}},
		{"fence", []string{"```json\n" + clean + "\n```"}, [][]string{{"unwrapped a ``` code fence"}, {"unwrapped a ``` code fence"}}},
		{"prose", []string{"Here are the metrics:\n" + clean + "\nLet me know."},
			[][]string{{"removed prose around the JSON object"}, {"removed prose around the JSON object"}}},
		{"think", []string{"<think>two metrics</think>\n" + clean}, [][]string{{"removed a <think> block"}, {"removed a <think> block"}}},
		{"not JSON, then clean", []string{"I will write two metrics.", clean},
			[][]string{{"asked again: answer 1 was not JSON"}, {"asked again: answer 1 was not JSON"}}},
		{"invalid metric, then fenced", []string{oneBad, "```\n" + clean + "\n```"},
			[][]string{{"unwrapped a ``` code fence", "asked again: answer 1 had an invalid metric"}, {"unwrapped a ``` code fence", "asked again: answer 1 had an invalid metric"}}},
		{"field repairs", []string{fixes}, [][]string{{"lowercased the type", "read a lone examples string as a list of one"}, nil}},
		{"never fixed: the valid ones kept", []string{"Sure: " + oneBad},
			[][]string{{"removed prose around the JSON object", "asked again: answer 1 had an invalid metric", "asked again: answer 2 had an invalid metric",
				"kept the valid metrics of answer 3 and dropped the invalid ones the model did not fix"}}},
	}
	for i, tt := range tests {
		f := flavorOf(i)
		t.Run(tt.name+"/"+string(f), func(t *testing.T) {
			srv := wireServer(t, f, tt.answers...)
			ms, _, err := GenMetrics(context.Background(), wireClient(t, f, srv, nil), loadPrompts(t), bench, GenOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if len(ms) != len(tt.want) {
				t.Fatalf("%d metrics, want %d: %+v", len(ms), len(tt.want), ms)
			}
			for j, m := range ms {
				if got := metricRepairs(t, m); !slices.Equal(got, tt.want[j]) {
					t.Errorf("%s _repairs = %q, want %q", m.ID, got, tt.want[j])
				}
				if m.Name == "" || m.Definition != "d" && m.Definition != "f" {
					t.Errorf("metric %+v", m)
				}
			}
		})
	}
}

// metricRepairs is m's _repairs (nil without the key), failing on another shape.
func metricRepairs(t *testing.T, m config.Metric) []string {
	t.Helper()
	var out []string
	for _, kv := range m.Extra {
		if kv.Key != "_repairs" {
			continue
		}
		list, ok := kv.Value.([]any)
		if !ok || out != nil {
			t.Fatalf("%s: _repairs %#v", m.ID, kv.Value)
		}
		for _, v := range list {
			out = append(out, v.(string))
		}
	}
	return out
}

// TestGenScenariosRecordAnswerRepairs: the scenarios of an answer record
// what it took to read it — fence, prose, an unusable answer asked again —
// before their own landmark repairs; a clean answer's have no _repairs.
func TestGenScenariosRecordAnswerRepairs(t *testing.T) {
	answer := `{"scenarios": [` + scen("P1", "G1", 1) + "," + scen("P2", "G2", 2, 7) + `]}`
	tests := []struct {
		name    string
		answers []string
		want    [][]string
	}{
		{"clean", []string{answer}, [][]string{nil, {"landmark turn 7 > turns 4: moved to turn 4"}}},
		{"fence", []string{"```json\n" + answer + "\n```"},
			[][]string{{"unwrapped a ``` code fence"}, {"unwrapped a ``` code fence", "landmark turn 7 > turns 4: moved to turn 4"}}},
		{"prose", []string{"Here you go: " + answer + " Enjoy."},
			[][]string{{"removed prose around the JSON object"}, {"removed prose around the JSON object", "landmark turn 7 > turns 4: moved to turn 4"}}},
		{"no array, empty array, then clean", []string{`{"items": []}`, `{"scenarios": []}`, answer},
			[][]string{{`asked again: answer 1 had no "scenarios" array`, `asked again: answer 2 had an empty "scenarios" array`},
				{`asked again: answer 1 had no "scenarios" array`, `asked again: answer 2 had an empty "scenarios" array`, "landmark turn 7 > turns 4: moved to turn 4"}}},
		{"not JSON, then prose", []string{"Sorry, I can't.", "Sure! " + answer},
			[][]string{{"removed prose around the JSON object", "asked again: answer 1 was not JSON"},
				{"removed prose around the JSON object", "asked again: answer 1 was not JSON", "landmark turn 7 > turns 4: moved to turn 4"}}},
	}
	for i, tt := range tests {
		f := flavorOf(i)
		t.Run(tt.name+"/"+string(f), func(t *testing.T) {
			srv := wireServer(t, f, tt.answers...)
			got, _, err := GenBaseScenarios(context.Background(), wireClient(t, f, srv, nil), loadPrompts(t), bench, metric, 2, 4, GenOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 2 {
				t.Fatalf("%d scenarios", len(got))
			}
			for j, sc := range got {
				if r := repairsOf(t, sc); !slices.Equal(r, tt.want[j]) {
					t.Errorf("%s _repairs = %q, want %q", sc.ID, r, tt.want[j])
				}
			}
		})
	}
}

// TestExpansionRecordsAnswerRepairs: a demographic rewrite read from a
// fence, from prose or after an unusable answer says so in the variant's
// _repairs (after the base scenario's own); a clean rewrite adds nothing.
func TestExpansionRecordsAnswerRepairs(t *testing.T) {
	combos, _ := Combos(config.Demographics{{Name: "age", Values: []string{"teen"}}})
	const rewrite = `{"user_persona": "A teen", "landmarks": [{"turn": 2, "instruction": "a"}]}`
	base := cloneScenario(baseScenario)
	base.Extra = withRepairs(base.Extra, []string{"unwrapped a ``` code fence"})
	tests := []struct {
		name    string
		base    artifacts.Scenario
		answers []string
		want    []string
	}{
		{"clean", baseScenario, []string{rewrite}, nil},
		{"clean rewrite of a repaired base", base, []string{rewrite}, []string{"unwrapped a ``` code fence"}},
		{"fence", baseScenario, []string{"```json\n" + rewrite + "\n```"}, []string{"demographic rewrite: unwrapped a ``` code fence"}},
		{"prose", base, []string{"Rewritten: " + rewrite},
			[]string{"unwrapped a ``` code fence", "demographic rewrite: removed prose around the JSON object"}},
		{"no persona, then clean", baseScenario, []string{`{"landmarks": [{"turn": 2, "instruction": "a"}]}`, rewrite},
			[]string{"demographic rewrite: asked again: answer 1 had a missing or invalid persona or landmarks"}},
	}
	for i, tt := range tests {
		f := flavorOf(i)
		t.Run(tt.name+"/"+string(f), func(t *testing.T) {
			srv := wireServer(t, f, tt.answers...)
			got, _, err := ExpandScenario(context.Background(), wireClient(t, f, srv, nil), loadPrompts(t), tt.base, combos, 6, GenOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got[0].UserPersona != "A teen" {
				t.Errorf("user_persona %q", got[0].UserPersona)
			}
			if r := repairsOf(t, got[0]); !slices.Equal(r, tt.want) {
				t.Errorf("_repairs = %q, want %q", r, tt.want)
			}
		})
	}
}

// TestAuditRecordsRepairs: the audit of the simulated user read from a
// fence, from prose or after an unusable answer says so in the verdict's
// _repairs (conversations.json's validity); a clean answer records nothing.
func TestAuditRecordsRepairs(t *testing.T) {
	const clean = `{"in_persona": true, "pursued_goal": true, "followed_landmarks": true, "revealed_test": false, "reason": "fine"}`
	tests := []struct {
		name    string
		answers []string
		want    []string
	}{
		{"clean", []string{clean}, nil},
		{"fence", []string{"```json\n" + clean + "\n```"}, []string{"unwrapped a ``` code fence"}},
		{"prose", []string{"My audit: " + clean}, []string{"removed prose around the JSON object"}},
		{"string boolean, then think", []string{`{"followed_landmarks": "yes", "revealed_test": false, "reason": "r"}`, "<think>check</think>" + clean},
			[]string{"removed a <think> block", "asked again: answer 1 had a missing or non-boolean answer"}},
	}
	sc := simSpec().Scenario
	conv := artifacts.Conversation{ConvID: "cid", Transcript: transcript}
	for i, tt := range tests {
		f := flavorOf(i)
		t.Run(tt.name+"/"+string(f), func(t *testing.T) {
			srv := wireServer(t, f, tt.answers...)
			v, _, err := AuditConversation(context.Background(), wireClient(t, f, srv, nil), loadPrompts(t), sc, conv, "j")
			if err != nil {
				t.Fatal(err)
			}
			if v.Valid == nil || !*v.Valid || !slices.Equal(v.Repairs, tt.want) {
				t.Errorf("valid %v, _repairs %q, want valid and %q", v.Valid, v.Repairs, tt.want)
			}
		})
	}
}
