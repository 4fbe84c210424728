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

func TestCombos(t *testing.T) {
	d := config.Demographics{{Name: "age", Values: []string{"A1", "A2"}}, {Name: "gender", Values: []string{"g1", "g2", "g3"}}}
	got, err := Combos(d)
	if err != nil {
		t.Fatal(err)
	}
	var flat []string
	for _, c := range got {
		var parts []string
		for _, p := range c {
			parts = append(parts, p.Key+"="+p.Value.(string))
		}
		flat = append(flat, strings.Join(parts, ","))
	}
	want := []string{"age=A1,gender=g1", "age=A1,gender=g2", "age=A1,gender=g3", "age=A2,gender=g1", "age=A2,gender=g2", "age=A2,gender=g3"}
	if diff := cmp.Diff(want, flat); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}

	none, err := Combos(nil)
	if err != nil || len(none) != 1 || none[0] == nil || len(none[0]) != 0 {
		t.Errorf("no axes: %#v, %v; want one empty non-nil Demographic", none, err)
	}
	if _, err := Combos(config.Demographics{{Name: "age", Values: []string{"a"}}, {Name: "gender"}}); err == nil || !strings.Contains(err.Error(), `"gender"`) {
		t.Errorf("empty axis: err = %v", err)
	}
}

var baseScenario = artifacts.Scenario{
	ID: "m01_s002", MetricID: "m01", Persona: "NEUTRAL-PERSONA", HasPersona: true, UserGoal: "choose a job",
	LatentAdversarialGoal: "make it decide", Landmarks: []artifacts.Landmark{{Turn: 1, Instruction: "describe"}, {Turn: 3, Instruction: "insist"}},
	Extra: []artifacts.Pair{{Key: "title", Value: "T"}},
}

func TestExpandNoAxes(t *testing.T) {
	combos, _ := Combos(nil)
	got, usage, err := ExpandScenario(context.Background(), never(t), loadPrompts(t), baseScenario, combos, 6, GenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := baseScenario
	want.ID = "m01_s002_v01"
	want.Demographic = artifacts.Demographic{}
	if diff := cmp.Diff([]artifacts.Scenario{want}, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if got[0].Demographic == nil || usage != (llm.Usage{}) {
		t.Errorf("Demographic must be {} not null; usage %+v", usage)
	}
}

func TestExpandScenario(t *testing.T) {
	combos, _ := Combos(config.Demographics{{Name: "age", Values: []string{"teen", "adult"}}, {Name: "gender", Values: []string{"female"}}})
	c := &fake{answer: func(req llm.Request, call int) (llm.Response, error) {
		if call == 0 { // a landmark before the first turn: must be fed back, not accepted
			return ok(`{"user_persona": "x", "landmarks": [{"turn": 0, "instruction": "early"}]}`)
		}
		d := req.Meta[llm.MetaDemographic]
		return ok(fmt.Sprintf(`{"user_persona": "A %s person", "landmarks": [{"turn": 2, "instruction": "as %s"}], "persona": "ignored", "note": 1}`, d, d))
	}}
	got, usage, err := ExpandScenario(context.Background(), c, loadPrompts(t), baseScenario, combos, 6, GenOptions{Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || c.calls() != 3 || usage.Requests != 3 {
		t.Fatalf("%d variants, %d calls, usage %d; want 2, 3, 3", len(got), c.calls(), usage.Requests)
	}
	want1 := baseScenario
	want1.ID = "m01_s002_v02"
	want1.UserPersona = "A age: adult, gender: female person"
	want1.Landmarks = []artifacts.Landmark{{Turn: 2, Instruction: "as age: adult, gender: female"}}
	want1.Demographic = artifacts.Demographic{{Key: "age", Value: "adult"}, {Key: "gender", Value: "female"}}
	want1.Extra = []artifacts.Pair{{Key: "title", Value: "T"}, {Key: "note", Value: json.RawMessage("1")}}
	if diff := cmp.Diff(want1, got[1]); diff != "" {
		t.Errorf("variant 2 (-want +got):\n%s", diff)
	}
	if got[0].ID != "m01_s002_v01" || got[0].Persona != "NEUTRAL-PERSONA" || got[0].SimPersona() != "A age: teen, gender: female person" {
		t.Errorf("variant 1: %+v", got[0])
	}
	// The base is not modified through shared slices.
	if baseScenario.Landmarks[0].Instruction != "describe" || len(baseScenario.Extra) != 1 {
		t.Errorf("base mutated: %+v", baseScenario)
	}
	req := c.reqs[0]
	checkRequest(t, req, llm.PurposeExpand, llm.MetaPersona, llm.MetaUserGoal, llm.MetaLandmarksJSON, llm.MetaDemographic, llm.MetaTurns)
	if !strings.Contains(req.Messages[0].Content, "NEUTRAL-PERSONA") || !strings.Contains(req.Messages[0].Content, "age: teen, gender: female") {
		t.Errorf("prompt lacks persona or profile:\n%s", req.Messages[0].Content)
	}
	if !strings.Contains(c.reqs[1].Messages[len(c.reqs[1].Messages)-1].Content, "turn 0 is outside 1..6") {
		t.Error("invalid landmarks were not fed back")
	}
	if c.reqs[0].Seed == c.reqs[2].Seed {
		t.Error("combos share a Seed")
	}
}

func TestExpandFailsAfterAttempts(t *testing.T) {
	combos, _ := Combos(config.Demographics{{Name: "age", Values: []string{"teen"}}})
	_, _, err := ExpandScenario(context.Background(), script(`{"user_persona": ""}`), loadPrompts(t), baseScenario, combos, 6, GenOptions{Attempts: 2})
	if err == nil || !strings.Contains(err.Error(), "m01_s002") || !strings.Contains(err.Error(), "user_persona is empty") {
		t.Errorf("err = %v", err)
	}
}
