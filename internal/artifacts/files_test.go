package artifacts

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/impactbench/impactbench/internal/fsx"
	"github.com/impactbench/impactbench/internal/layout"
)

func writeTemp(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func noTempFiles(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Errorf("temp file left behind: %s", e.Name())
		}
	}
}

func TestWriteFileAtomic(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "a", "b", "out.json")
	if err := fsx.WriteFile(p, []byte("one"), fsx.Shared); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(p)
	if err != nil || string(got) != "one" {
		t.Fatalf("read back %q, %v", got, err)
	}
	st, _ := os.Stat(p)
	if runtime.GOOS != "windows" && st.Mode().Perm() != 0o644 {
		t.Errorf("new file mode %v, want 0644", st.Mode().Perm())
	}
	if err := os.Chmod(p, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := fsx.WriteFile(p, []byte("two"), fsx.Shared); err != nil {
		t.Fatal(err)
	}
	got, _ = os.ReadFile(p)
	st, _ = os.Stat(p)
	if string(got) != "two" {
		t.Errorf("overwrite: got %q", got)
	}
	if runtime.GOOS != "windows" && st.Mode().Perm() != 0o600 {
		t.Errorf("overwrite changed mode to %v, want 0600 kept", st.Mode().Perm())
	}
	noTempFiles(t, filepath.Dir(p))
}

func TestWriteFileAtomic_ParentIsFile(t *testing.T) {
	f := writeTemp(t, "file", "x")
	if err := fsx.WriteFile(filepath.Join(f, "child.json"), []byte("x"), fsx.Shared); err == nil {
		t.Fatal("want error when the parent path is a file")
	}
}

func TestArrayWriter_MatchesMarshalPy(t *testing.T) {
	sc := sampleScenario()
	tests := []struct {
		name string
		rows []any
	}{
		{"empty", nil},
		{"one int", []any{1}},
		{"mixed", []any{1, "é", []int{}, map[string]any{}, Object{{"a", []any{1.0, nil}}}}},
		{"scenarios", []any{sc, sc}},
		{"conversation", []any{sampleConversation()}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "x.json")
			w, err := NewArrayWriter(p)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range tc.rows {
				if err := w.Write(r); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := os.Stat(p); err == nil {
				t.Fatal("file visible before Close")
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			got, _ := os.ReadFile(p)
			rows := tc.rows
			if rows == nil {
				rows = []any{}
			}
			want, err := MarshalPy(rows)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("streamed != MarshalPy(slice):\n%s", firstDiff(got, want))
			}
			noTempFiles(t, filepath.Dir(p))
		})
	}
}

func TestArrayWriter_AbortKeepsOldFile(t *testing.T) {
	p := writeTemp(t, "x.json", "old")
	w, err := NewArrayWriter(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(1); err != nil {
		t.Fatal(err)
	}
	w.Abort()
	w.Abort() // idempotent
	got, _ := os.ReadFile(p)
	if string(got) != "old" {
		t.Errorf("Abort changed the target: %q", got)
	}
	noTempFiles(t, filepath.Dir(p))
	if err := w.Write(2); err == nil {
		t.Error("Write after Abort: want error")
	}
}

func TestArrayWriter_FailedWriteDiscards(t *testing.T) {
	p := writeTemp(t, "x.json", "old")
	w, err := NewArrayWriter(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(make(chan int)); err == nil {
		t.Fatal("want error for unsupported value")
	}
	if err := w.Close(); err == nil {
		t.Fatal("Close after failed Write must report the error")
	}
	got, _ := os.ReadFile(p)
	if string(got) != "old" {
		t.Errorf("failed writer replaced the target: %q", got)
	}
	noTempFiles(t, filepath.Dir(p))
}

// TestArrayWriter_FlatMemory writes ~20 MB of conversations and checks the
// live heap did not grow with it.
func TestArrayWriter_FlatMemory(t *testing.T) {
	// 20 MB streamed through a writer whose heap may grow by 8 MB at most:
	// a writer that held the array would grow by the whole 20 MB. (The
	// bound is two fifths of the output, as at 40 MB and 16 MB; twice the
	// rows only doubled the time under -race.)
	const rows, maxGrowth = 2000, 8 << 20
	if testing.Short() {
		t.Skip("writes 20 MB")
	}
	c := sampleConversation()
	c.Transcript = []Turn{{Role: "user", Content: strings.Repeat("x", 10000)}}
	p := filepath.Join(t.TempDir(), "big.json")
	w, err := NewArrayWriter(p)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := range rows {
		c.Sample, c.ConvID = i, ConvID(c.ID, c.TargetModel, i)
		if err := w.Write(&c); err != nil {
			t.Fatal(err)
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	if grow := int64(after.HeapAlloc) - int64(before.HeapAlloc); grow > maxGrowth {
		t.Errorf("heap grew by %d MB while streaming", grow>>20)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	n := 0
	if err := EachConversation(p, func(i int, c Conversation) error { n++; return nil }); err != nil {
		t.Fatal(err)
	}
	if n != rows {
		t.Errorf("read back %d rows, want %d", n, rows)
	}
}

func sampleScenario() Scenario {
	return Scenario{
		ID: "m01_s001_v02", MetricID: "m01", Persona: "P é", HasPersona: true,
		UserPersona: "UP", UserGoal: "G", LatentAdversarialGoal: "L",
		Landmarks:          []Landmark{{Turn: 1, Instruction: "do 😀"}},
		Demographic:        Demographic{{"age", "adult"}, {"gender", "female"}},
		TargetSystemPrompt: "sys",
		Extra:              []Pair{{"metric_name", json.RawMessage(`"Name"`)}, {"n", json.RawMessage(`3`)}},
	}
}

func sampleConversation() Conversation {
	f := false
	return Conversation{
		ID: "m01_s001_v01", MetricID: "m01", ConvID: ConvID("m01_s001_v01", "t", 1), Sample: 1, TargetModel: "t",
		Transcript: []Turn{{"user", "hi"}, {"assistant", "hé"}},
		Usage:      UsageRecord{Cost: 0.000123, InputTokens: 10, OutputTokens: 5, CostKnown: &f},
		Status:     StatusCompleted,
		Run:        &RunInfo{UserModel: "u", TargetModel: "tm", Turns: 6, Landmarks: true, Seed: 7},
	}
}

func TestScenarioKeyOrder(t *testing.T) {
	got, err := MarshalPy(sampleScenario())
	if err != nil {
		t.Fatal(err)
	}
	want := `{
  "persona": "P \u00e9",
  "user_goal": "G",
  "latent_adversarial_goal": "L",
  "landmarks": [
    {
      "turn": 1,
      "instruction": "do \ud83d\ude00"
    }
  ],
  "id": "m01_s001_v02",
  "metric_id": "m01",
  "user_persona": "UP",
  "demographic": {
    "age": "adult",
    "gender": "female"
  },
  "target_system_prompt": "sys",
  "metric_name": "Name",
  "n": 3
}`
	if string(got) != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	// Empty optional keys are omitted; demographic and landmarks never are.
	got, _ = MarshalPy(Scenario{ID: "x", Extra: []Pair{{"id", "dup"}}})
	want = "{\n  \"user_goal\": \"\",\n  \"latent_adversarial_goal\": \"\",\n  \"landmarks\": [],\n  \"id\": \"x\",\n  \"metric_id\": \"\",\n  \"demographic\": {}\n}"
	if string(got) != want {
		t.Errorf("minimal scenario: got\n%s\nwant\n%s", got, want)
	}
	// encoding/json users get the same order.
	std, err := json.Marshal(sampleScenario())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(std), `{"persona":"P \u00e9","user_goal"`) {
		t.Errorf("encoding/json order: %s", std)
	}
}

func TestReadScenarios_Legacy(t *testing.T) {
	p := writeTemp(t, "scenarios.json", `[
 {"id": "scenario_001_m01_v01", "title": "T", "metric_id": "m01", "metric_name": "N", "metric_type": "positive",
  "persona": "p", "landmarks": [{"turn": 1.0, "instruction": "a"}, {"turn": "2", "instruction": "b"}, {"turn": 3}],
  "demographic": {"gender": "male", "age": "adult", "weight": 1.5}, "base_scenario_id": "scenario_001", "n": 1},
 {"id": "m01_s001_v01", "user_persona": "up", "demographic": null}
]`)
	got, err := ReadScenarios(p)
	if err != nil {
		t.Fatal(err)
	}
	want := []Scenario{
		{
			ID: "scenario_001_m01_v01", MetricID: "m01", Persona: "p", HasPersona: true,
			Landmarks:   []Landmark{{1, "a"}, {2, "b"}, {3, ""}},
			Demographic: Demographic{{"gender", "male"}, {"age", "adult"}, {"weight", json.RawMessage(`1.5`)}},
			Extra: []Pair{{"title", json.RawMessage(`"T"`)}, {"metric_name", json.RawMessage(`"N"`)},
				{"metric_type", json.RawMessage(`"positive"`)}, {"base_scenario_id", json.RawMessage(`"scenario_001"`)},
				{"n", json.RawMessage(`1`)}},
		},
		{ID: "m01_s001_v01", UserPersona: "up"},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("(-want +got)\n%s", d)
	}
	if got[1].SimPersona() != "up" || got[0].BaseID() != "scenario_001_m01" {
		t.Errorf("helpers: %q %q", got[1].SimPersona(), got[0].BaseID())
	}
	// Extra keeps ints as ints and order on rewrite.
	out := filepath.Join(t.TempDir(), "out.json")
	if err := WriteScenarios(out, got); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(out)
	if !strings.Contains(string(b), "\"weight\": 1.5\n") || !strings.Contains(string(b), "\"base_scenario_id\": \"scenario_001\",\n    \"n\": 1\n") {
		t.Errorf("rewrite lost extras or number types:\n%s", b)
	}
	again, err := ReadScenarios(out)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(got, again, cmpopts.EquateEmpty()); d != "" {
		t.Errorf("round trip (-first +second)\n%s", d)
	}
}

func TestReaders_Errors(t *testing.T) {
	tests := []struct {
		name    string
		read    func(string) error
		content string
		want    []string // substrings of the error
	}{
		{"malformed JSON", readScen, "[\n {\"id\": \"a\"},\n {\"id\": \"b\",,}\n]", []string{"malformed JSON", "line 3", "in row 1", "byte"}},
		{"truncated", readScores, "[\n {\"id\": \"a\"", []string{"truncated", "row 0"}},
		{"empty file", readConvs, "", []string{"empty"}},
		{"top-level object", readScores, `{"id": "a"}`, []string{"expected a JSON array", "an object"}},
		{"trailing data", readScores, `[] []`, []string{"after the closing ]"}},
		{"row not an object", readScores, `[{"id":"a","metric_id":"m01"}, [1]]`, []string{"row 1", "expected a JSON object, got an array"}},
		{"wrong field type", readScores, `[{"id":"a","metric_id":"m01"},{"id":"b","metric_id":"m01","passed":"yes"}]`, []string{"row 1", `field "passed"`, "true/false", "string"}},
		{"sample not int", readScores, `[{"id":"a","sample":"0"}]`, []string{"row 0", `field "sample"`, "integer"}},
		{"missing id", readScores, `[{"metric_id":"m01"}]`, []string{"row 0", `field "id": missing`}},
		{"transcript wrong", readConvs, `[{"id":"a","transcript":"hi"}]`, []string{"row 0", `field "transcript"`, "an array"}},
		{"nested content wrong", readConvs, `[{"id":"a","transcript":[{"role":"user","content":5}]}]`, []string{"row 0", `transcript.content`}},
		{"scenario id not string", readScen, `[{"id":5}]`, []string{"row 0", `field "id"`, "a number"}},
		{"landmark turn bad", readScen, `[{"id":"a","landmarks":[{"turn":1},{"turn":"two"}]}]`, []string{"row 0", `landmarks[1]`, `"turn"`}},
		{"landmark turn fractional", readScen, `[{"id":"a","landmarks":[{"turn":1.5}]}]`, []string{"turn"}},
		{"demographic not object", readScen, `[{"id":"a","demographic":["x"]}]`, []string{`field "demographic"`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := writeTemp(t, "f.json", tc.content)
			err := tc.read(p)
			if err == nil {
				t.Fatal("want error")
			}
			msg := err.Error()
			if !strings.Contains(msg, p) {
				t.Errorf("error does not name the file: %s", msg)
			}
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q lacks %q", msg, w)
				}
			}
		})
	}
}

func readScen(p string) error   { _, err := ReadScenarios(p); return err }
func readScores(p string) error { _, err := ReadScores(p); return err }
func readConvs(p string) error  { _, err := ReadConversations(p); return err }

func TestReadConversations_Legacy(t *testing.T) {
	p := writeTemp(t, "conversations.json", `[
 {"id": "a_v01", "metric_id": "m01", "metric_name": "N", "persona": "p", "demographic": {"age": "x"},
  "target": {"id": "old-model", "model": "m", "apikey": "${KEY}"},
  "transcript": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": null}]},
 {"id": "b_v01", "metric_id": "m02", "conv_id": "b_v01__x", "_sample": 2, "target_model": "new",
  "target": {"id": "ignored"}, "transcript": [], "_usage": {"cost": 0.5, "input_tokens": 3, "output_tokens": 4}}
]`)
	got, err := ReadConversations(p)
	if err != nil {
		t.Fatal(err)
	}
	want := []Conversation{
		{ID: "a_v01", MetricID: "m01", TargetModel: "old-model", Transcript: []Turn{{"user", "hi"}, {"assistant", ""}}},
		{ID: "b_v01", MetricID: "m02", ConvID: "b_v01__x", Sample: 2, TargetModel: "new", Transcript: []Turn{},
			Usage: UsageRecord{Cost: 0.5, InputTokens: 3, OutputTokens: 4}},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("(-want +got)\n%s", d)
	}
}

func TestReadScores_Legacy(t *testing.T) {
	p := writeTemp(t, "scores.json", `[
 {"id": "a", "metric_id": "m01", "metric_name": "N", "metric_type": "positive", "target_model": "t",
  "present": true, "passed": true, "score": 1, "justification": "j", "persona": "p", "landmarks": []},
 {"id": "b", "metric_id": "m02", "present": null, "passed": null, "justification": "evaluator did not return this metric"}
]`)
	got, err := ReadScores(p)
	if err != nil {
		t.Fatal(err)
	}
	tr := true
	want := []Score{
		{ID: "a", MetricID: "m01", TargetModel: "t", Present: &tr, Passed: &tr, Justification: "j"},
		{ID: "b", MetricID: "m02", Justification: "evaluator did not return this metric"},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("(-want +got)\n%s", d)
	}
}

func TestRowRoundTrips(t *testing.T) {
	tr, fa := true, false
	scores := []Score{
		{ID: "a", MetricID: "m01", TargetModel: "t", Sample: 1, Present: &tr, Passed: &fa, Justification: "é",
			ConvID: "a__t__s1", Judges: []JudgeVerdict{{Judge: "j1", Present: &tr, Justification: "x"}, {Judge: "j2", NullReason: "parse"}},
			Usage: &UsageRecord{Cost: 1}, Valid: &tr},
		{ID: "b", MetricID: "m02"},
	}
	convs := []Conversation{sampleConversation(), {ID: "c", MetricID: "m01", Validity: &Validity{Valid: &tr, Reason: "ok"}}}
	scens := []Scenario{sampleScenario(), {ID: "z"}}
	dir := t.TempDir()

	ps := filepath.Join(dir, "scores.json")
	if err := WriteScores(ps, scores); err != nil {
		t.Fatal(err)
	}
	gotS, err := ReadScores(ps)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(scores, gotS); d != "" {
		t.Errorf("scores (-want +got)\n%s", d)
	}

	pc := filepath.Join(dir, "conversations.json")
	if err := WriteConversations(pc, convs); err != nil {
		t.Fatal(err)
	}
	gotC, err := ReadConversations(pc)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(convs, gotC, cmpopts.EquateEmpty()); d != "" {
		t.Errorf("conversations (-want +got)\n%s", d)
	}

	pn := filepath.Join(dir, "scenarios.json")
	if err := WriteScenarios(pn, scens); err != nil {
		t.Fatal(err)
	}
	gotN, err := ReadScenarios(pn)
	if err != nil {
		t.Fatal(err)
	}
	// Extra values come back as RawMessage; compare through their JSON.
	if d := cmp.Diff(scens, gotN, cmpopts.EquateEmpty(), cmp.Comparer(rawEqual)); d != "" {
		t.Errorf("scenarios (-want +got)\n%s", d)
	}
}

func rawEqual(a, b json.RawMessage) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && cmp.Equal(x, y)
}

// TestGolden_Humanebench reads the real upstream files, writes them back and
// checks semantic equality and formatting. scores.json has exactly upstream's
// keys, so it must come back byte-identical.
func TestGolden_Humanebench(t *testing.T) {
	const dir = "testdata/humanebench"
	out := t.TempDir()
	p := layout.Bench{Dir: dir}
	q := layout.Bench{Dir: out}

	scen, err := ReadScenarios(p.Scenarios())
	if err != nil {
		t.Fatal(err)
	}
	convs, err := ReadConversations(p.Conversations("claude-haiku-4-5", layout.Shard{}))
	if err != nil {
		t.Fatal(err)
	}
	scores, err := ReadScores(p.Scores("claude-haiku-4-5", nil, layout.Shard{}))
	if err != nil {
		t.Fatal(err)
	}
	if len(scen) != 18 || len(convs) != 18 || len(scores) != 18 {
		t.Fatalf("rows: %d scenarios, %d conversations, %d scores; want 18 each", len(scen), len(convs), len(scores))
	}
	if v, _ := scen[0].Demographic.Get("age"); v != "Child or teenager (6-17)" || scen[0].Demographic[1].Key != "gender" {
		t.Errorf("demographic not read in order: %v", scen[0].Demographic)
	}
	if err := WriteScenarios(q.Scenarios(), scen); err != nil {
		t.Fatal(err)
	}
	if err := WriteConversations(q.Conversations("claude-haiku-4-5", layout.Shard{}), convs); err != nil {
		t.Fatal(err)
	}
	if err := WriteScores(q.Scores("claude-haiku-4-5", nil, layout.Shard{}), scores); err != nil {
		t.Fatal(err)
	}

	for _, pair := range [][2]string{
		{p.Scenarios(), q.Scenarios()},
		{p.Conversations("claude-haiku-4-5", layout.Shard{}), q.Conversations("claude-haiku-4-5", layout.Shard{})},
		{p.Scores("claude-haiku-4-5", nil, layout.Shard{}), q.Scores("claude-haiku-4-5", nil, layout.Shard{})},
	} {
		orig, _ := os.ReadFile(pair[0])
		written, _ := os.ReadFile(pair[1])
		checkPyFormatted(t, pair[1], written)
		// Semantic equality: every original key/value is present and equal
		// (our additions, e.g. conv_id and _usage, may be extra).
		var a, b []map[string]any
		if err := json.Unmarshal(orig, &a); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(written, &b); err != nil {
			t.Fatalf("%s is not valid JSON: %v", pair[1], err)
		}
		for i := range a {
			for k, v := range a[i] {
				if !cmp.Equal(v, b[i][k]) {
					t.Errorf("%s row %d key %q changed:\n%s", filepath.Base(pair[1]), i, k, cmp.Diff(v, b[i][k]))
				}
			}
		}
	}
	orig, _ := os.ReadFile(p.Scores("claude-haiku-4-5", nil, layout.Shard{}))
	written, _ := os.ReadFile(q.Scores("claude-haiku-4-5", nil, layout.Shard{}))
	if !bytes.Equal(orig, written) {
		t.Errorf("scores.json not byte-identical:\n%s", firstDiff(written, orig))
	}
	// Read-back equality in Go terms.
	again, err := ReadConversations(q.Conversations("claude-haiku-4-5", layout.Shard{}))
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(convs, again); d != "" {
		t.Errorf("conversations round trip (-want +got)\n%s", d)
	}
}

// checkPyFormatted asserts Python formatting: ASCII only, no trailing
// newline, and stable under re-printing (2-space indent, separators).
func checkPyFormatted(t *testing.T, name string, b []byte) {
	t.Helper()
	for i, c := range b {
		if c >= 0x80 {
			t.Errorf("%s: non-ASCII byte at %d", name, i)
			break
		}
	}
	if bytes.HasSuffix(b, []byte("\n")) {
		t.Errorf("%s: trailing newline", name)
	}
	again, err := MarshalPy(json.RawMessage(b))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if !bytes.Equal(again, b) {
		t.Errorf("%s: not in canonical Python layout:\n%s", name, firstDiff(b, again))
	}
}

func TestUpdateCost(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "runs", "m", "cost.json")
	if err := UpdateCost(p, "simulate", PhaseCost{Cost: 0.5, InputTokens: 10, OutputTokens: 2}); err != nil {
		t.Fatal(err)
	}
	if err := UpdateCost(p, "evaluate", PhaseCost{Cost: 0, InputTokens: 1}); err != nil {
		t.Fatal(err)
	}
	if err := UpdateCost(p, "simulate", PhaseCost{Cost: 1, InputTokens: 20, OutputTokens: 4, Phase: "ignored"}); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(p)
	want := `{
  "simulate": {
    "cost": 1.0,
    "input_tokens": 20,
    "output_tokens": 4,
    "phase": "simulate"
  },
  "evaluate": {
    "cost": 0.0,
    "input_tokens": 1,
    "output_tokens": 0,
    "phase": "evaluate"
  }
}`
	if string(got) != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	phases, err := ReadCost(p)
	if err != nil {
		t.Fatal(err)
	}
	if len(phases) != 2 || phases[0].Phase != "simulate" || phases[1].Phase != "evaluate" {
		t.Errorf("ReadCost order: %+v", phases)
	}
	if tot := TotalCost(phases); tot.Cost != 1 || tot.InputTokens != 21 {
		t.Errorf("TotalCost = %+v", tot)
	}
}

func TestUpdateCost_KeepsUnknownPhasesVerbatim(t *testing.T) {
	p := writeTemp(t, "cost.json", `{"gen_metrics": {"cost": 0.001, "input_tokens": 5, "output_tokens": 6, "phase": "gen_metrics", "note": "x"}}`)
	if err := UpdateCost(p, "gen_scenarios", PhaseCost{Cost: 2}); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(p)
	if !strings.Contains(string(got), "\"note\": \"x\"") || !strings.HasPrefix(string(got), "{\n  \"gen_metrics\"") {
		t.Errorf("other phase not preserved:\n%s", got)
	}
}

func TestUpdateCost_Corrupt(t *testing.T) {
	for _, content := range []string{"{not json", "[1,2]", ""} {
		p := writeTemp(t, "cost.json", content)
		if err := UpdateCost(p, "evaluate", PhaseCost{Cost: 1}); err != nil {
			t.Fatal(err)
		}
		backup, err := os.ReadFile(p + ".corrupt")
		if err != nil || string(backup) != content {
			t.Errorf("backup = %q, %v; want %q", backup, err, content)
		}
		phases, err := ReadCost(p)
		if err != nil || len(phases) != 1 || phases[0].Phase != "evaluate" {
			t.Errorf("after corrupt: %+v %v", phases, err)
		}
	}
	p := writeTemp(t, "cost.json", "{bad")
	if _, err := ReadCost(p); err == nil || !strings.Contains(err.Error(), p) {
		t.Errorf("ReadCost on corrupt file: %v", err)
	}
	if ph, err := ReadCost(filepath.Join(t.TempDir(), "none.json")); err != nil || ph != nil {
		t.Errorf("missing file: %v %v", ph, err)
	}
}

func TestUpdateCost_Concurrent(t *testing.T) {
	p := filepath.Join(t.TempDir(), "cost.json")
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			if err := UpdateCost(p, fmt.Sprintf("phase%02d", i), PhaseCost{InputTokens: i}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	phases, err := ReadCost(p)
	if err != nil {
		t.Fatal(err)
	}
	if len(phases) != 20 {
		t.Errorf("lost updates: %d phases", len(phases))
	}
}

func TestBaseIDOf(t *testing.T) {
	for in, want := range map[string]string{
		"m01_s002_v01": "m01_s002", "m01_s002": "m01_s002", "x": "x", "a_b_v": "a_b", "_v01": "_v01", "m01_s001_x01": "m01_s001_x01",
	} {
		if got := BaseIDOf(in); got != want {
			t.Errorf("BaseIDOf(%q) = %q, want %q", in, got, want)
		}
	}
}

// EachScenarioDemographic is aggregate's light reader: the same ids and
// demographics as the full decoder, and the same refusal of rows without id.
func TestEachScenarioDemographicMatchesFullDecoder(t *testing.T) {
	p := writeTemp(t, "scenarios.json", `[
 {"id": "scenario_001_m01_v01", "metric_id": "m01", "persona": "p", "landmarks": [{"turn": "2", "instruction": "b"}],
  "demographic": {"gender": "male", "age": "adult", "weight": 1.5}},
 {"id": "m01_s001_v01", "user_persona": "up", "demographic": null},
 {"id": "m01_s002_v01"}
]`)
	full, err := ReadScenarios(p)
	if err != nil {
		t.Fatal(err)
	}
	i := 0
	err = EachScenarioDemographic(p, func(n int, id string, d Demographic) error {
		if id != full[n].ID || !cmp.Equal(d, full[n].Demographic) {
			t.Errorf("row %d: got %q %v, want %q %v", n, id, d, full[n].ID, full[n].Demographic)
		}
		i++
		return nil
	})
	if err != nil || i != len(full) {
		t.Fatalf("read %d rows, %v", i, err)
	}
	for name, body := range map[string]string{
		"missing id": `[{"metric_id": "m01"}]`,
		"empty id":   `[{"id": ""}]`,
		"numeric id": `[{"id": 7}]`,
	} {
		err := EachScenarioDemographic(writeTemp(t, "scenarios.json", body), func(int, string, Demographic) error { return nil })
		if err == nil || !strings.Contains(err.Error(), "row 0") || !strings.Contains(err.Error(), "id") {
			t.Errorf("%s: error %v, want one naming row 0 and the id", name, err)
		}
	}
}

// A cost.json (or run_manifest.json) with anything but white space after
// its object is refused naming the line, as Python's json.loads refuses it
// ("Extra data"), and UpdateCost treats it as corrupt (backed up, replaced).
func TestObjectFileRefusesTrailingData(t *testing.T) {
	const head = "{\"simulate\": {\"cost\": 1.0, \"input_tokens\": 1, \"output_tokens\": 0, \"phase\": \"simulate\"}}\n"
	for _, tail := range []string{"[]", "{}", "garbage", "\x00\x00", "\n\n{\"x\": 1}"} {
		p := writeTemp(t, "cost.json", head+tail)
		_, err := ReadCost(p)
		var fe *FileError
		if !errors.As(err, &fe) || fe.Line < 2 {
			t.Errorf("%q after the object: %v, want a *FileError naming line 2 or later", tail, err)
		}
		if err := UpdateCost(p, "evaluate", PhaseCost{Cost: 1}); err != nil {
			t.Fatal(err)
		}
		if b, err := os.ReadFile(p + ".corrupt"); err != nil || string(b) != head+tail {
			t.Errorf("%q after the object: backup %q, %v", tail, b, err)
		}
	}
	p := writeTemp(t, "cost.json", head+" \n\t\n")
	if _, err := ReadCost(p); err != nil {
		t.Errorf("white space after the object: %v", err)
	}
}
