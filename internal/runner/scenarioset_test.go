package runner

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/llm"
	"github.com/impactbench/impactbench/internal/phase"
	"github.com/impactbench/impactbench/internal/scenarioset"
)

// gen-scenarios --replace weak: the weak base scenarios are replaced by
// new ones with ids never used, every other scenario row stays byte for
// byte (so its conversations and verdicts replay for free), the old set's
// files are kept under sets/v1, the lineage is recorded, and the next run
// pays only for the new scenarios' rows and says which set it rests on.
func TestReplaceWeakKeepsTheRestAndRecordsTheLineage(t *testing.T) {
	ctx := t.Context()
	cfg, bench := project(t)
	var first callLog
	r := newRunner(t, cfg, bench, Options{Clients: first.clients(nil)})
	if err := r.Run(ctx, r.Targets()); err != nil {
		t.Fatal(err)
	}
	r.Close()
	before := scenarioRows(t, bench)

	var gen callLog
	r2 := newRunner(t, cfg, bench, Options{Clients: gen.clients(nil)})
	weak := []scenarioset.ReplacedItem{{ID: "m01_s002", Reasons: []string{"does not separate the models"}}}
	if err := scenarioset.ReplaceWeak(ctx, r2.Work(), weak); err != nil {
		t.Fatal(err)
	}
	r2.Close()
	after := scenarioRows(t, bench)
	if len(after) != len(before) {
		t.Fatalf("the new set has %d rows, the old %d", len(after), len(before))
	}
	for id, raw := range before {
		switch {
		case strings.HasPrefix(id, "m01_s002"):
			if _, ok := after[id]; ok {
				t.Errorf("replaced scenario %s is still in the set", id)
			}
		case string(after[id]) != string(raw):
			t.Errorf("kept scenario %s changed", id)
		}
	}
	if _, ok := after["m01_s003_v01"]; !ok {
		t.Errorf("no new scenario m01_s003 (ids are never reused): %v", keys(after))
	}
	if n := gen.count(llm.PurposeGenScenarios); n != 1 {
		t.Errorf("%d gen_scenarios calls, want one for the missing scenario of m01", n)
	}
	vs, err := scenarioset.ItemSet(bench)
	if err != nil || len(vs) != 2 || vs[1].Version != 2 || !reflect.DeepEqual(vs[1].Added, []string{"m01_s003"}) || vs[1].Replaced[0].ID != "m01_s002" {
		t.Fatalf("lineage %+v (%v)", vs, err)
	}
	for _, f := range []string{"scenarios.json", "results.json", "runs/offline-careful/conversations.json", "runs/offline-careful/scores.json"} {
		if _, err := os.Stat(filepath.Join(bench, "sets", "v1", f)); err != nil {
			t.Errorf("v1's %s not kept: %v", f, err)
		}
	}

	var rerun callLog
	r3 := newRunner(t, cfg, bench, Options{Clients: rerun.clients(nil)})
	if err := r3.Run(ctx, r3.Targets()); err != nil {
		t.Fatal(err)
	}
	r3.Close()
	// m01_s002 is one of four base scenarios: its replacement's rows are a
	// quarter of each target's 16 conversations and verdicts; every other
	// row is reused, nothing paid again.
	for _, p := range r3.Report.Phases {
		if (p.Phase == phase.StageSimulate || p.Phase == phase.StageEvaluate) && (p.Rows != 16 || p.Reused != 12) {
			t.Errorf("%s %s after the replacement: %d rows, %d reused; want 16 and 12", p.Phase, p.Target, p.Rows, p.Reused)
		}
	}
	if n := rerun.count(llm.PurposeJudge); n < 8 || n > 16 {
		t.Errorf("%d judge calls after the replacement, want one (or two, to verify evidence) per new conversation: 8", n)
	}
	var m struct {
		ItemSet int `json:"item_set"`
	}
	b, _ := os.ReadFile(filepath.Join(bench, "run_manifest.json"))
	if json.Unmarshal(b, &m); m.ItemSet != 2 {
		t.Errorf("run_manifest.json item_set %d, want 2", m.ItemSet)
	}
}

func scenarioRows(t *testing.T, bench string) map[string]json.RawMessage {
	t.Helper()
	out := map[string]json.RawMessage{}
	err := artifacts.EachRawRow(filepath.Join(bench, "scenarios.json"), func(_ int, raw json.RawMessage) error {
		var s struct {
			ID string `json:"id"`
		}
		if err := json.Unmarshal(raw, &s); err != nil {
			return err
		}
		out[s.ID] = raw
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func keys(m map[string]json.RawMessage) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
