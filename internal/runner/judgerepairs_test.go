package runner

import (
	"crypto/sha256"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/layout"
	"github.com/impactbench/impactbench/internal/llm/llmtest"
)

// TestScoresRecordJudgeRepairs: a real judge (an OpenAI-style server)
// answering in a code fence, after prose, after a <think> block or cleanly;
// every row of scores.json records what it took to read its verdict in
// _repairs, and a clean answer's row has no _repairs key.
func TestScoresRecordJudgeRepairs(t *testing.T) {
	cfg, bench := simProject(t)
	const verdict = `{"justification": "it did not", "evidence": [], "present": false}`
	wraps := []struct{ answer, repair string }{
		{"```json\n" + verdict + "\n```", "unwrapped a ``` code fence"},
		{"My verdict follows. " + verdict, "removed prose around the JSON object"},
		{"<think>nothing decided</think>\n" + verdict, "removed a <think> block"},
		{verdict, ""},
	}
	var mu sync.Mutex
	want := map[string]int{} // repair ("" none) → judge answers given with it
	judge := llmtest.NewOpenAI(t)
	judge.HandleText(func(req llmtest.ChatRequest) string {
		if !strings.HasPrefix(req.System, "Judge whether a behaviour") {
			t.Logf("not a verdict request: %.200s", req.LastUser())
			return "ok" // a probe of the key
		}
		h := sha256.Sum256([]byte(req.LastUser()))
		w := wraps[int(h[0])%len(wraps)]
		mu.Lock()
		want[w.repair]++
		mu.Unlock()
		return w.answer
	})
	cfg.EvaluatorModels = []config.ModelConfig{openAIModel("gpt-4o-mini", judge.APIKey(), judge.BaseURL(), false)}
	r := newRunner(t, cfg, bench, Options{})
	if err := r.Simulate(t.Context(), "t1"); err != nil {
		t.Fatal(err)
	}
	if err := r.Evaluate(t.Context(), "t1"); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(bench, layout.RunsDirName, "t1", layout.ScoresFile))
	if err != nil {
		t.Fatal(err)
	}
	var rows []map[string]json.RawMessage
	if err := json.Unmarshal(b, &rows); err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for i, row := range rows {
		raw, ok := row["_repairs"]
		if !ok {
			got[""]++
			continue
		}
		var rep []string
		if err := json.Unmarshal(raw, &rep); err != nil || len(rep) != 1 {
			t.Errorf("row %d: _repairs %s, want one repair", i, raw)
			continue
		}
		got[rep[0]]++
	}
	if total := want[""] + want[wraps[0].repair] + want[wraps[1].repair] + want[wraps[2].repair]; len(rows) != total || len(want) < 2 {
		t.Fatalf("%d rows, %d verdict answers %v: want one answer per row and more than one kind", len(rows), total, want)
	}
	for k, n := range want {
		if got[k] != n {
			t.Errorf("rows with _repairs %q: %d, want %d (all: %v)", k, got[k], n, got)
		}
	}
	if !slices.ContainsFunc(strings.Split(string(b), "\n"), func(l string) bool { return strings.Contains(l, `"_repairs"`) }) {
		t.Errorf("no _repairs in scores.json:\n%s", b)
	}
}
