package simulate

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/impactbench/impactbench/internal/llm"
	"github.com/impactbench/impactbench/internal/llm/batch"
	"github.com/impactbench/impactbench/internal/llm/batch/fakebatch"
	"github.com/impactbench/impactbench/internal/llm/llmtest"
)

// TestOpeningBatchSurvivesItsSender: two waves ask for overlapping
// openings; the wave that sends the shared batch is stopped while it runs,
// and the other wave, still waiting, sends the queue itself: the batch
// already submitted is polled, not submitted again, only the opening
// nobody had sent yet is, and every opening the second wave asked for is
// answered.
func TestOpeningBatchSurvivesItsSender(t *testing.T) {
	fake := fakebatch.NewOpenAI(t, fakebatch.Options{PollsBeforeDone: 4,
		Answer: func(_ string, req llmtest.ChatRequest) fakebatch.Outcome {
			return fakebatch.Outcome{Reply: llmtest.Text("Message: hello "+req.LastUser(), llmtest.Usage{Input: 10, Output: 5})}
		}})
	prov, err := batch.NewOpenAI(batch.OpenAIConfig{APIKey: fake.APIKey(), BaseURL: fake.BaseURL(), Model: "gpt-4o-mini", HTTPClient: fake.Client()})
	if err != nil {
		t.Fatal(err)
	}
	ob := &openingBatch{path: filepath.Join(t.TempDir(), "user.json"), prov: prov, turn: make(chan struct{}, 1), flights: map[string]*openingFlight{}}
	items := make([]batch.Item, 4)
	for i := range items {
		req := llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: fmt.Sprint("row ", i)}}, MaxTokens: 50, Meta: map[string]string{llm.MetaTurn: "1"}}
		items[i] = batch.Item{CustomID: fmt.Sprintf("k%d", i), Req: req}
	}
	opts := batch.Options{PollInterval: time.Millisecond}

	ctxA, cancelA := context.WithCancel(t.Context())
	defer cancelA()
	allA, mineA := ob.ask(items[:3])
	errA := make(chan error, 1)
	go func() { errA <- ob.wait(ctxA, allA, opts) }()
	// Stopped once the batch is recorded and polled (stopping the create
	// call itself can lose a batch: the provider made it, the answer never
	// came).
	for !polled(fake) {
		time.Sleep(time.Millisecond)
	}
	allB, mineB := ob.ask(items[1:])
	if len(mineA) != 3 || len(mineB) != 1 {
		t.Fatalf("wave A queued %d openings, wave B %d; want 3 and 1 (B's others are A's)", len(mineA), len(mineB))
	}
	cancelA()
	if err := <-errA; !errors.Is(err, context.Canceled) {
		t.Fatalf("the stopped sender's wait: %v", err)
	}
	if err := ob.wait(t.Context(), allB, opts); err != nil {
		t.Fatal(err)
	}
	for _, f := range allB {
		if f.err != nil || f.res.Err != nil || f.res.Resp.Text != "Message: hello "+f.item.Req.Messages[0].Content {
			t.Errorf("%s: %q, %v / %v", f.item.CustomID, f.res.Resp.Text, f.err, f.res.Err)
		}
	}
	if re := fake.Resubmitted(); len(re) > 0 {
		t.Errorf("submitted twice: %v", re)
	}
	if n := fake.TotalSubmissions(); n != 4 {
		t.Errorf("%d openings submitted, want 4", n)
	}
	if len(ob.flights) != 0 || len(ob.queue) != 0 {
		t.Errorf("%d flights and %d queued left after every answer", len(ob.flights), len(ob.queue))
	}
}

func polled(fake *fakebatch.Server) bool {
	for _, r := range fake.Requests() {
		if r.Method == http.MethodGet && strings.HasPrefix(r.Path, "/v1/batches/") {
			return true
		}
	}
	return false
}
