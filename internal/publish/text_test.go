package publish

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/layout"
	"github.com/impactbench/impactbench/internal/study/studytest"
)

// TestModelTextIsData: hostile model, user and judge text goes into the
// published files as JSON string data, byte for byte, and publish writes
// nothing but JSON.
func TestModelTextIsData(t *testing.T) {
	dir := t.TempDir()
	if err := studytest.WriteSmall(dir); err != nil {
		t.Fatal(err)
	}
	hostile := "</script><script>alert(1)</script><img src=x onerror=alert(2)> \"quoted\" \\ \u2028 line\u2029 \x01 ünïcode 🙂 {{7*7}}"
	bench := filepath.Join(dir, "benchmarks", "alpha")
	convPath := filepath.Join(bench, "runs", "model-a", "conversations.json")
	convs, err := artifacts.ReadConversations(convPath)
	if err != nil {
		t.Fatal(err)
	}
	convs[0].Transcript[1].Content = hostile
	if err := artifacts.WriteConversations(convPath, convs); err != nil {
		t.Fatal(err)
	}
	scPath := filepath.Join(bench, "runs", "model-a", "scores.json")
	scores, _ := artifacts.ReadScores(scPath)
	scores[0].Justification = hostile
	if err := artifacts.WriteScores(scPath, scores); err != nil {
		t.Fatal(err)
	}
	scenPath := filepath.Join(bench, "scenarios.json")
	scen, _ := artifacts.ReadScenarios(scenPath)
	scen[0].UserGoal, scen[0].Persona = hostile, hostile
	if err := artifacts.WriteScenarios(scenPath, scen); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "site")
	publishDir(t, dir, out, false)

	var f map[string]any
	readJSON(t, filepath.Join(out, "scenarios", "alpha", "model-a", convs[0].ID+".json"), &f)
	tr := f["transcript"].([]any)
	if tr[1].(map[string]any)["content"] != hostile || f["justification"] != hostile || f["persona"] != hostile || f["user_goal"] != hostile {
		t.Errorf("hostile text did not survive as data: %v", f)
	}
	var index map[string][]map[string]any
	readJSON(t, filepath.Join(out, "data", layout.PublishedScenarioIndexFile), &index)
	if index["alpha__m01"][0]["title"] != hostile {
		t.Errorf("title %q", index["alpha__m01"][0]["title"])
	}
	err = filepath.WalkDir(out, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && !strings.HasSuffix(p, ".json") {
			t.Errorf("publish wrote %s, not JSON", p)
		}
		if err == nil && !d.IsDir() {
			b, _ := os.ReadFile(p)
			if !json.Valid(b) {
				t.Errorf("%s is not valid JSON", p)
			}
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}
