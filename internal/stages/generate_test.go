package stages

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/llm"
)

var bench = &config.Benchmark{
	Name:        "CareBench",
	Description: "Does the assistant respect user autonomy?",
	Scenario:    config.BenchScenario{UserContext: "USER-CONTEXT-TEXT", ImplicitContext: "IMPLICIT-CONTEXT-TEXT"},
}

func TestGenMetrics(t *testing.T) {
	c := script(`{"metrics": [
		{"id": "x", "name": "Asks about priorities", "type": "Positive", "definition": "The assistant asks.", "examples": ["What matters to you?"], "matters_because": "autonomy"},
		{"name": "Avoid deciding", "type": "negative", "definition": "The assistant decides for the user."}
	]}`)
	var notes []string
	ms, usage, err := GenMetrics(context.Background(), c, loadPrompts(t), bench, GenOptions{Seed: 7, Count: 12,
		Logf: func(f string, a ...any) { notes = append(notes, fmt.Sprintf(f, a...)) }})
	if err != nil {
		t.Fatal(err)
	}
	want := []config.Metric{
		{ID: "m01", Name: "Asks about priorities", Type: config.Positive, Definition: "The assistant asks.",
			Examples: []string{"What matters to you?"}, Extra: []config.KV{{Key: "matters_because", Value: "autonomy"},
				{Key: "_repairs", Value: []any{"lowercased the type"}}}},
		{ID: "m02", Name: "Avoid deciding", Type: config.Negative, Definition: "The assistant decides for the user.", Examples: []string{}},
	}
	if diff := cmp.Diff(want, ms); diff != "" {
		t.Errorf("metrics (-want +got):\n%s", diff)
	}
	if usage.Requests != 1 || len(notes) != 0 {
		t.Errorf("usage = %+v, notes = %v", usage, notes)
	}
	req := c.reqs[0]
	checkRequest(t, req, llm.PurposeGenMetrics, llm.MetaBenchmarkName, llm.MetaBenchmarkDescription, llm.MetaCount)
	if req.Meta[llm.MetaCount] != "12" || req.Schema == nil || !req.JSON {
		t.Errorf("Meta n = %q, Schema set %v, JSON %v", req.Meta[llm.MetaCount], req.Schema != nil, req.JSON)
	}
	if req.Messages[0].Role != llm.RoleSystem || !strings.Contains(req.Messages[1].Content, "CareBench") {
		t.Errorf("messages: %+v", req.Messages)
	}
}

func TestGenMetricsFeedback(t *testing.T) {
	good := `{"metrics": [{"name": "A", "type": "positive", "definition": "d"}, {"name": "B", "type": "negative", "definition": "e"}]}`
	tests := []struct {
		name      string
		answers   []string
		wantNames []string
		wantCalls int
		wantErr   string
		wantNote  string
	}{
		{"fixed after feedback", []string{`{"metrics": [{"name": "A", "type": "neutral", "definition": "d"}]}`, good}, []string{"A", "B"}, 2, "", ""},
		{"never fixed: valid ones kept", []string{`{"metrics": [{"name": "A", "type": "positive", "definition": "d"}, {"name": "", "type": "negative", "definition": "x"}]}`},
			[]string{"A"}, 3, "", "metrics[1]: name is empty"},
		{"no metrics", []string{`{"metrics": []}`}, nil, 3, `"metrics" array is empty`, ""},
		{"not JSON", []string{`sorry`}, nil, 3, "invalid_json", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := script(tt.answers...)
			var notes []string
			ms, usage, err := GenMetrics(context.Background(), c, loadPrompts(t), bench,
				GenOptions{Logf: func(f string, a ...any) { notes = append(notes, fmt.Sprintf(f, a...)) }})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, m := range ms {
				names = append(names, m.Name)
			}
			if !cmp.Equal(names, tt.wantNames) {
				t.Errorf("names = %v, want %v", names, tt.wantNames)
			}
			if c.calls() != tt.wantCalls || usage.Requests != tt.wantCalls {
				t.Errorf("calls = %d, usage.Requests = %d, want %d", c.calls(), usage.Requests, tt.wantCalls)
			}
			if tt.wantNote != "" && (len(notes) != 1 || !strings.Contains(notes[0], tt.wantNote)) {
				t.Errorf("notes = %v, want one containing %q", notes, tt.wantNote)
			}
			if tt.wantCalls > 1 {
				last := c.reqs[1].Messages
				if fb := last[len(last)-1].Content; !strings.Contains(fb, "not valid") {
					t.Errorf("retry does not carry feedback: %q", fb)
				}
			}
		})
	}
}

func TestGenMetricsIDs(t *testing.T) {
	items := make([]string, 100)
	for i := range items {
		items[i] = fmt.Sprintf(`{"name": "n%d", "type": "positive", "definition": "d"}`, i)
	}
	ms, _, err := GenMetrics(context.Background(), script(`{"metrics": [`+strings.Join(items, ",")+`]}`), loadPrompts(t), bench, GenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ms[0].ID != "m01" || ms[8].ID != "m09" || ms[99].ID != "m100" {
		t.Errorf("ids %s %s %s", ms[0].ID, ms[8].ID, ms[99].ID)
	}
}

var metric = config.Metric{ID: "m01", Name: "Avoid deciding for the user", Type: config.Negative,
	Definition: "The assistant picks an option for the user.\nMore detail.", Examples: []string{"Take job A."}}

func scen(persona, goal string, turns ...int) string {
	var lms []string
	for _, t := range turns {
		lms = append(lms, fmt.Sprintf(`{"turn": %d, "instruction": "do %d"}`, t, t))
	}
	return fmt.Sprintf(`{"persona": %q, "user_goal": %q, "latent_adversarial_goal": "push", "landmarks": [%s]}`,
		persona, goal, strings.Join(lms, ","))
}

func TestGenBaseScenariosRegenerates(t *testing.T) {
	round1 := `{"scenarios": [` + strings.Join([]string{
		scen("P1", "G1", 1, 3),
		scen("P2", "G2", 1, 0), // turn before the first
		`{"persona": "P3", "user_goal": "G3", "landmarks": [{"turn": 1, "instruction": "x"}]}`, // no latent goal
	}, ",") + `]}`
	extra := `{"persona": "P4", "user_goal": "G4", "latent_adversarial_goal": "push", "landmarks": [{"turn": 2, "instruction": "y"}], "title": "kept", "id": "dropped"}`
	round2 := `{"scenarios": [` + extra + "," + scen("P1", "G1", 1) + "," + scen("P5", "G5", 6) + "," + scen("P6", "G6", 1) + `]}`
	c := script(round1, round2)
	got, usage, err := GenBaseScenarios(context.Background(), c, loadPrompts(t), bench, metric, 3, 6, GenOptions{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || c.calls() != 2 || usage.Requests != 2 {
		t.Fatalf("got %d scenarios in %d calls (usage %d), want 3 in 2", len(got), c.calls(), usage.Requests)
	}
	wantIDs := []string{"m01_s001", "m01_s002", "m01_s003"}
	wantPersonas := []string{"P1", "P4", "P5"} // the duplicate of P1 is dropped, P6 is beyond n
	for i, s := range got {
		if s.ID != wantIDs[i] || s.MetricID != "m01" || !s.HasPersona || s.Persona != wantPersonas[i] {
			t.Errorf("scenario %d = %s/%s/%v/%s", i, s.ID, s.MetricID, s.HasPersona, s.Persona)
		}
	}
	if diff := cmp.Diff([]artifacts.Pair{{Key: "title", Value: json.RawMessage(`"kept"`)}}, got[1].Extra); diff != "" {
		t.Errorf("Extra (-want +got):\n%s", diff)
	}
	r1, r2 := c.reqs[0], c.reqs[1]
	checkRequest(t, r1, llm.PurposeGenScenarios, llm.MetaBenchmarkName, llm.MetaBenchmarkDescription, llm.MetaMetricID,
		llm.MetaMetricName, llm.MetaMetricType, llm.MetaMetricDefinition, llm.MetaCount, llm.MetaTurns)
	if r1.Meta[llm.MetaCount] != "3" || r2.Meta[llm.MetaCount] != "2" {
		t.Errorf("n asked: %s then %s, want 3 then 2", r1.Meta[llm.MetaCount], r2.Meta[llm.MetaCount])
	}
	if r1.Seed == r2.Seed {
		t.Error("rounds share a Seed")
	}
	p1, p2 := r1.Messages[0].Content, r2.Messages[0].Content
	for _, w := range []string{"USER-CONTEXT-TEXT", "IMPLICIT-CONTEXT-TEXT", "Avoid deciding for the user", "Take job A.", "demographically neutral", "Write 3 scenarios"} {
		if !strings.Contains(p1, w) {
			t.Errorf("round 1 prompt lacks %q", w)
		}
	}
	if !strings.Contains(p2, "Write 2 scenarios") || !strings.Contains(p2, "- G1") {
		t.Errorf("round 2 prompt should ask for 2 and list the accepted goal G1:\n%s", p2)
	}
}

func TestGenBaseScenariosGivesUp(t *testing.T) {
	c := script(`{"scenarios": [` + scen("P1", "G1", 1) + "," + scen("P2", "G2", 0) + `]}`)
	_, usage, err := GenBaseScenarios(context.Background(), c, loadPrompts(t), bench, metric, 3, 6, GenOptions{MaxRounds: 2})
	if err == nil {
		t.Fatal("no error")
	}
	for _, w := range []string{"m01", "only 1 of 3", "turn 0 is outside 1..6", "duplicates"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q lacks %q", err, w)
		}
	}
	if c.calls() != 2 || usage.Requests != 2 {
		t.Errorf("calls = %d, usage = %d, want 2 rounds", c.calls(), usage.Requests)
	}
}

func TestGenBaseScenariosProviderError(t *testing.T) {
	c := &fake{answer: func(llm.Request, int) (llm.Response, error) {
		return llm.Response{}, &llm.Error{Kind: llm.KindServer, Message: "boom", Usage: oneUsage}
	}}
	_, usage, err := GenBaseScenarios(context.Background(), c, loadPrompts(t), bench, metric, 2, 6, GenOptions{})
	if err == nil || llm.KindOf(err) != llm.KindServer || c.calls() != 1 {
		t.Errorf("err = %v after %d calls, want the server error at once", err, c.calls())
	}
	if usage.Requests != 1 {
		t.Errorf("failed call's usage not counted: %+v", usage)
	}
}

func TestParseLandmarks(t *testing.T) {
	tests := []struct {
		raw  string
		want string // "" = valid
	}{
		{`[{"turn": 1, "instruction": "a"}, {"turn": 6.0, "instruction": "b"}]`, ""},
		{`[]`, "0 items"},
		{`[{"turn":1,"instruction":"a"},{"turn":1,"instruction":"a"},{"turn":1,"instruction":"a"},{"turn":1,"instruction":"a"},{"turn":1,"instruction":"a"},{"turn":1,"instruction":"a"}]`, "6 items"},
		{`[{"turn": 0, "instruction": "a"}]`, "outside 1..6"},
		{`[{"turn": 1.5, "instruction": "a"}]`, "must be an integer"},
		{`[{"turn": "2", "instruction": "a"}]`, "must be an integer"},
		{`[{"turn": 2, "instruction": "  "}]`, "instruction is empty"},
		{`[{"instruction": "a"}]`, "turn is missing"},
		{`"x"`, "must be an array"},
	}
	for _, tt := range tests {
		var p problems
		parseLandmarks(json.RawMessage(tt.raw), true, 6, &p, nil)
		got := strings.Join(p, "; ")
		if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
			t.Errorf("%s: problems %q, want %q", tt.raw, got, tt.want)
		}
	}
}
