package runner

import (
	"hash/fnv"
	"path/filepath"
	"testing"

	"github.com/impactbench/impactbench/internal/layout"
	"github.com/impactbench/impactbench/internal/llm/batch/fakebatch"
	"github.com/impactbench/impactbench/internal/llm/llmtest"
	"github.com/impactbench/impactbench/internal/merge"
)

// TestReplayOfBatchStudyKeepsFailedRows: workers whose user and target
// run in batch waves (`batch: true`) share a store; some target turns fail
// in the batch and again in real time, so their rows fail for good.
// merge --from-store (a replay, which sends no batch) must write those
// rows as the workers did, and give the files a merge of the shard files
// gives, paying nothing. (A replay runs no batch wave: work.NewEnv turns
// batch off, so its rows take the real-time path, which keeps a failed
// row; this test fails if either is undone.)
func TestReplayOfBatchStudyKeepsFailedRows(t *testing.T) {
	ctx := t.Context()
	cfg, bench := simProject(t)
	// A quarter of the target's turns fail, the same ones every time.
	bad := func(req llmtest.ChatRequest) bool {
		h := fnv.New32a()
		h.Write([]byte(req.LastUser()))
		return h.Sum32()%4 == 0
	}
	user := batchFake(t, fakeUser, userUsage, fakebatch.Options{})
	target := batchFake(t, nil, llmtest.Usage{}, fakebatch.Options{Answer: func(_ string, req llmtest.ChatRequest) fakebatch.Outcome {
		if bad(req) {
			return fakebatch.Outcome{Reply: llmtest.OpenAIError(400, "invalid_request_error", "", "scripted: not in a batch")}
		}
		return fakebatch.Outcome{Reply: llmtest.Text(fakeTarget(req), targetUsage)}
	}})
	rt := llmtest.NewOpenAI(t)
	rt.Handle(func(req llmtest.ChatRequest) llmtest.Reply {
		if bad(req) {
			return llmtest.OpenAIError(400, "invalid_request_error", "", "scripted: refused")
		}
		return llmtest.Text(fakeTarget(req), targetUsage)
	})
	gen := cfg.UserModel // scenarios.json was written by it: keep it
	cfg.GeneratorModel = &gen
	cfg.UserModel = openAIModel("gpt-4o-mini", user.APIKey(), user.BaseURL(), true)
	cfg.Targets[0] = openAIModel("gpt-4o", target.APIKey(), proxyBoth(t, target, rt), true)
	cfg.Targets[0].ID = "t1"
	tg := []string{"t1"}

	store := filepath.Join(t.TempDir(), "calls")
	failed := 0
	for i := range 2 {
		r := newRunner(t, cfg, bench, Options{Store: store, Shard: layout.Shard{Index: i, Count: 2}})
		if err := r.Run(ctx, tg); err != nil {
			t.Fatalf("shard %d: %v", i, err)
		}
		n, _ := r.Report.Failed()
		failed += n
		r.Close()
	}
	if failed == 0 {
		t.Fatalf("no row failed; the test fails none")
	}
	m := newRunner(t, cfg, bench, Options{})
	if _, err := merge.Run(ctx, m.Work(), tg); err != nil {
		t.Fatal(err)
	}
	m.Close()

	_, benchB := anotherMachine(t, bench)
	calls := user.Requests()
	rtCalls := rt.Calls()
	rB := newRunner(t, cfg, benchB, Options{Store: store, Replay: true})
	if err := rB.Run(ctx, tg); err != nil {
		t.Fatalf("merge --from-store of a batch study with failed rows: %v", err)
	}
	if len(user.Requests()) != len(calls) || rt.Calls() != rtCalls {
		t.Errorf("the replay called a provider")
	}
	var files []string
	for _, f := range []string{layout.ConversationsFile, layout.ScoresFile, layout.CostFile} {
		files = append(files, filepath.Join("runs", "t1", f))
	}
	sameAsMerged(t, bench, benchB, files)
}
