package stages

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/llm"
)

// The upstream docs' own example writes landmarks at turns 1, 3, 5. With
// turns: 4 that is repairable without guessing (the last one moves to the
// last turn, order kept): accepted in one call, the repair recorded.
func TestLandmarkPastLastTurnIsRepairedAndRecorded(t *testing.T) {
	c := script(`{"scenarios": [` + scen("P1", "G1", 1, 3, 5) + "," + scen("P2", "G2", 2) + `]}`)
	got, usage, err := GenBaseScenarios(context.Background(), c, loadPrompts(t), bench, metric, 2, 4, GenOptions{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if c.calls() != 1 || usage.Requests != 1 || len(got) != 2 {
		t.Fatalf("%d scenarios in %d calls, want 2 in 1", len(got), c.calls())
	}
	var turns []int
	for _, l := range got[0].Landmarks {
		turns = append(turns, l.Turn)
	}
	if !slicesEqual(turns, []int{1, 3, 4}) || got[0].Landmarks[2].Instruction != "do 5" {
		t.Errorf("landmarks = %+v, want turns 1, 3, 4 with the last one's instruction kept", got[0].Landmarks)
	}
	if r := repairsOf(t, got[0]); len(r) != 1 || r[0] != "landmark turn 5 > turns 4: moved to turn 4" {
		t.Errorf("_repairs = %q", r)
	}
	if r := repairsOf(t, got[1]); r != nil {
		t.Errorf("untouched scenario has _repairs %q", r)
	}
}

// Wrapped JSON (think block, fence) is unwrapped and the unwrapping recorded.
func TestWrappedScenarioAnswerIsRecorded(t *testing.T) {
	c := script("<think>plan</think>\n```json\n{\"scenarios\": [" + scen("P1", "G1", 1) + "]}\n```")
	got, _, err := GenBaseScenarios(context.Background(), c, loadPrompts(t), bench, metric, 1, 4, GenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r := strings.Join(repairsOf(t, got[0]), "; ")
	if !strings.Contains(r, "<think>") || !strings.Contains(r, "code fence") {
		t.Errorf("_repairs = %q, want the think block and the fence named", r)
	}
}

func repairsOf(t *testing.T, s artifacts.Scenario) []string {
	t.Helper()
	for _, p := range s.Extra {
		if p.Key == "_repairs" {
			raw, _ := json.Marshal(p.Value)
			var out []string
			if err := json.Unmarshal(raw, &out); err != nil {
				t.Fatalf("_repairs = %s: %v", raw, err)
			}
			return out
		}
	}
	return nil
}

func slicesEqual(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// What cannot be repaired is regenerated, not the whole batch; what stays
// missing after the rounds is a shortfall, returned with the valid ones.
func TestShortfallKeepsTheValidScenarios(t *testing.T) {
	bad := `{"persona": "PX", "user_goal": "", "latent_adversarial_goal": "push", "landmarks": [{"turn": 1, "instruction": "x"}]}`
	c := script(`{"scenarios": [`+scen("P1", "G1", 1)+","+bad+`]}`, `{"scenarios": [`+bad+`]}`)
	got, _, err := GenBaseScenarios(context.Background(), c, loadPrompts(t), bench, metric, 2, 4, GenOptions{MaxRounds: 2})
	var sf *ShortfallError
	if !errors.As(err, &sf) || sf.Got != 1 || sf.Want != 2 || sf.MetricID != "m01" {
		t.Fatalf("err = %v, want a shortfall of 1 of 2 for m01", err)
	}
	if len(got) != 1 || got[0].ID != "m01_s001" || got[0].Persona != "P1" {
		t.Fatalf("valid scenarios = %+v, want P1 as m01_s001", got)
	}
	if n := c.reqs[1].Meta[llm.MetaCount]; n != "1" {
		t.Errorf("round 2 asked for %s scenarios, want only the missing 1", n)
	}
}

// The schema sent is derived from the configuration, so providers with
// strict structured output cannot write a landmark past the last turn.
func TestScenarioSchemaFollowsTheConfig(t *testing.T) {
	c := script(`{"scenarios": [` + scen("P1", "G1", 1) + "," + scen("P2", "G2", 1) + "," + scen("P3", "G3", 1) + `]}`)
	if _, _, err := GenBaseScenarios(context.Background(), c, loadPrompts(t), bench, metric, 3, 4, GenOptions{}); err != nil {
		t.Fatal(err)
	}
	s := c.reqs[0].Schema
	arr := s["properties"].(map[string]any)["scenarios"].(map[string]any)
	if arr["minItems"] != 3 || arr["maxItems"] != 3 {
		t.Errorf("scenarios count: minItems %v maxItems %v, want 3", arr["minItems"], arr["maxItems"])
	}
	lms := arr["items"].(map[string]any)["properties"].(map[string]any)["landmarks"].(map[string]any)
	if lms["minItems"] != 1 || lms["maxItems"] != maxLandmarks {
		t.Errorf("landmark count: %v..%v", lms["minItems"], lms["maxItems"])
	}
	turn := lms["items"].(map[string]any)["properties"].(map[string]any)["turn"].(map[string]any)
	if b, _ := json.Marshal(turn["enum"]); string(b) != "[1,2,3,4]" {
		t.Errorf("turn schema = %v, want enum 1..4", turn)
	}
}

// A judge that never gives a boolean verdict is a failed row (retried on the
// next run), never a silent null.
func TestNullVerdictIsAFailure(t *testing.T) {
	c := script(`{"justification": "hard to say"}`)
	_, _, err := Judge(context.Background(), c, loadPrompts(t), metric, []artifacts.Turn{{Role: "user", Content: "hi"}, {Role: "assistant", Content: "yo"}}, JudgeOptions{})
	if err == nil || !strings.Contains(err.Error(), `no "present" field`) {
		t.Fatalf("err = %v, want a failure naming the missing verdict", err)
	}
}

// A demographic rewrite's landmark past the last turn is repaired too; the
// variant's _repairs says it came from the rewrite.
func TestExpansionLandmarkPastLastTurnIsRepaired(t *testing.T) {
	combos, _ := Combos(config.Demographics{{Name: "age", Values: []string{"teen"}}})
	c := script(`{"user_persona": "A teen", "landmarks": [{"turn": 2, "instruction": "a"}, {"turn": 8, "instruction": "late"}]}`)
	got, _, err := ExpandScenario(context.Background(), c, loadPrompts(t), baseScenario, combos, 6, GenOptions{})
	if err != nil || c.calls() != 1 {
		t.Fatalf("err %v after %d calls, want success in 1", err, c.calls())
	}
	if l := got[0].Landmarks; len(l) != 2 || l[1].Turn != 6 || l[1].Instruction != "late" {
		t.Errorf("landmarks = %+v", l)
	}
	if r := repairsOf(t, got[0]); len(r) != 1 || r[0] != "demographic rewrite: landmark turn 8 > turns 6: moved to turn 6" {
		t.Errorf("_repairs = %q", r)
	}
}

// Empty target replies stored by earlier runs are skipped, not replayed as
// the answer: each run makes up to 2 fresh attempts before the row fails.
func TestStoredEmptyTargetReplyIsNotFinal(t *testing.T) {
	for _, tc := range []struct {
		name      string
		fresh     string // what the provider answers now
		wantFresh int
		wantErr   bool
	}{
		{"still empty", "  ", 2, true},
		{"healthy now", "a real reply", 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fresh := 0
			c := &fake{answer: func(_ llm.Request, call int) (llm.Response, error) {
				if call < 3 { // three empty replies stored by earlier runs
					return llm.Response{Text: " ", Cached: true}, nil
				}
				fresh++
				return ok(tc.fresh)
			}}
			resp, _, err := targetTurn(context.Background(), c, SimSpec{}, []llm.Message{{Role: llm.RoleUser, Content: "hi"}}, 1, 9, &seedLog{})
			if (err != nil) != tc.wantErr || fresh != tc.wantFresh {
				t.Fatalf("err %v after %d fresh calls, want error %v after %d", err, fresh, tc.wantErr, tc.wantFresh)
			}
			if !tc.wantErr && resp.Text != tc.fresh {
				t.Errorf("reply %q", resp.Text)
			}
			seeds := map[uint64]bool{}
			for _, r := range c.reqs {
				seeds[r.Seed] = true
			}
			if len(seeds) != len(c.reqs) {
				t.Error("attempts share a seed: the store would replay the empty reply")
			}
		})
	}
}
