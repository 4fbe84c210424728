package runner

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/llm/batch/fakebatch"
	"github.com/impactbench/impactbench/internal/llm/llmtest"
	"github.com/impactbench/impactbench/internal/phase"
	"github.com/impactbench/impactbench/internal/progress"
	"github.com/impactbench/impactbench/internal/summary"
	"github.com/impactbench/impactbench/internal/work"
)

const simTurns = 3

// Usage every fake answer reports, per role.
var (
	userUsage   = llmtest.Usage{Input: 1000, Output: 50}
	targetUsage = llmtest.Usage{Input: 800, Output: 200}
)

// fakeUser and fakeTarget answer from the request alone, so the batch and
// the real-time fakes give the same conversation the same answers.
func fakeUser(req llmtest.ChatRequest) string {
	return fmt.Sprintf("Thought: keep going.\nMessage: question %x", sha256.Sum256([]byte(req.LastUser()+fmt.Sprint(len(req.Messages)))))
}

func fakeTarget(req llmtest.ChatRequest) string {
	return fmt.Sprintf("Reply %x", sha256.Sum256([]byte(req.LastUser()+fmt.Sprint(len(req.Messages)))))[:24]
}

func batchFake(t *testing.T, answer func(llmtest.ChatRequest) string, u llmtest.Usage, opts fakebatch.Options) *fakebatch.Server {
	if opts.Answer == nil {
		opts.Answer = func(_ string, req llmtest.ChatRequest) fakebatch.Outcome {
			return fakebatch.Outcome{Reply: llmtest.Text(answer(req), u)}
		}
	}
	return fakebatch.NewOpenAI(t, opts)
}

func realtimeFake(t *testing.T, answer func(llmtest.ChatRequest) string, u llmtest.Usage) *llmtest.Server {
	srv := llmtest.NewOpenAI(t)
	srv.Handle(func(req llmtest.ChatRequest) llmtest.Reply { return llmtest.Text(answer(req), u) })
	return srv
}

// openAIModel is a model block for a fake at baseURL.
func openAIModel(model, key, baseURL string, batched bool) config.ModelConfig {
	return config.ModelConfig{Model: model, Source: "openai", APIKey: key, BaseURL: baseURL, Batch: batched, MaxRetries: 1}
}

// simProject is the offline project with its scenarios generated, ready to
// simulate target "t1" (the first target) in simTurns turns.
func simProject(t *testing.T) (*config.Config, string) {
	t.Helper()
	work.BatchPollInterval = 2 * time.Millisecond
	cfg, bench := project(t)
	r := newRunner(t, cfg, bench, Options{})
	if err := r.GenScenarios(t.Context()); err != nil {
		t.Fatal(err)
	}
	r.Close()
	cfg.Generation.Turns = simTurns
	cfg.Targets[0].ID = "t1"
	return cfg, bench
}

func conversations(t *testing.T, bench string) []artifacts.Conversation {
	t.Helper()
	convs, err := artifacts.ReadConversations(filepath.Join(bench, "runs", "t1", "conversations.json"))
	if err != nil {
		t.Fatal(err)
	}
	return convs
}

func simulateCost(t *testing.T, bench string) artifacts.PhaseCost {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(bench, "runs", "t1", "cost.json"))
	if err != nil {
		t.Fatal(err)
	}
	var costs map[string]artifacts.PhaseCost
	if err := json.Unmarshal(b, &costs); err != nil {
		t.Fatalf("cost.json: %v\n%s", err, b)
	}
	c, ok := costs["simulate"]
	if !ok {
		t.Fatalf("cost.json has no simulate entry:\n%s", b)
	}
	return c
}

// checkComplete checks every conversation ran all turns.
func checkComplete(t *testing.T, convs []artifacts.Conversation, rows int) {
	t.Helper()
	if len(convs) != rows {
		t.Fatalf("%d conversations, want %d", len(convs), rows)
	}
	for _, c := range convs {
		if c.Status != artifacts.StatusCompleted || len(c.Transcript) != 2*simTurns {
			t.Errorf("%s: status %s (%s), %d messages; want completed with %d", c.ConvID, c.Status, c.StatusReason, len(c.Transcript), 2*simTurns)
		}
	}
}

// checkNotPaidTwice checks a fake got every request in exactly one batch.
func checkNotPaidTwice(t *testing.T, name string, srv *fakebatch.Server, requests, batches int) {
	t.Helper()
	if re := srv.Resubmitted(); len(re) > 0 {
		t.Errorf("%s: %d requests submitted twice", name, len(re))
	}
	if n := srv.TotalSubmissions(); n != requests {
		t.Errorf("%s: %d requests submitted, want %d", name, n, requests)
	}
	if n := len(srv.Batches()); n != batches {
		t.Errorf("%s: %d batches created, want %d (one per wave)", name, n, batches)
	}
}

// TestBatchWavesMatchRealTime: simulating through batch waves (user and
// target batched) writes the conversations a real-time run writes against
// the same answers, field for field, at half the price, in one batch per
// wave (turns × 2).
func TestBatchWavesMatchRealTime(t *testing.T) {
	ctx := t.Context()

	rtCfg, rtBench := simProject(t)
	rtUser, rtTarget := realtimeFake(t, fakeUser, userUsage), realtimeFake(t, fakeTarget, targetUsage)
	rtCfg.UserModel = openAIModel("gpt-4o-mini", rtUser.APIKey(), rtUser.BaseURL(), false)
	rtCfg.Targets[0] = openAIModel("gpt-4o", rtTarget.APIKey(), rtTarget.BaseURL(), false)
	rtCfg.Targets[0].ID = "t1"
	if err := newRunner(t, rtCfg, rtBench, Options{}).Simulate(ctx, "t1"); err != nil {
		t.Fatal(err)
	}
	want := conversations(t, rtBench)
	rows := len(want)

	cfg, bench := simProject(t)
	user, target := batchFake(t, fakeUser, userUsage, fakebatch.Options{PollsBeforeDone: 1}), batchFake(t, fakeTarget, targetUsage, fakebatch.Options{PollsBeforeDone: 1})
	cfg.UserModel = openAIModel("gpt-4o-mini", user.APIKey(), user.BaseURL(), true)
	cfg.Targets[0] = openAIModel("gpt-4o", target.APIKey(), target.BaseURL(), true)
	cfg.Targets[0].ID = "t1"
	r := newRunner(t, cfg, bench, Options{})
	if err := r.Simulate(ctx, "t1"); err != nil {
		t.Fatal(err)
	}
	got := conversations(t, bench)
	checkComplete(t, got, rows)
	checkNotPaidTwice(t, "user", user, rows*simTurns, simTurns)
	checkNotPaidTwice(t, "target", target, rows*simTurns, simTurns)

	// Identical but for the price.
	var wantCost, gotCost float64
	for i := range want {
		wantCost += want[i].Usage.Cost
		gotCost += got[i].Usage.Cost
		w, g := want[i], got[i]
		w.Usage.Cost, g.Usage.Cost = 0, 0
		if w.UserUsage != nil && g.UserUsage != nil {
			wu, gu := *w.UserUsage, *g.UserUsage
			wu.Cost, gu.Cost = 0, 0
			w.UserUsage, g.UserUsage = &wu, &gu
		}
		if d := cmp.Diff(w, g, cmp.AllowUnexported(artifacts.Seeds{})); d != "" {
			t.Fatalf("row %d differs from real time (-realtime +batch):\n%s", i, d)
		}
	}
	if seeds, _ := got[0].Run.UserSeeds.Sent(); len(seeds) != simTurns || seeds[0] == nil {
		t.Errorf("user seeds %v: want the %d seeds sent", seeds, simTurns)
	}

	// gpt-4o-mini $0.15/$0.60 and gpt-4o $2.50/$10 per 1M tokens; batch halves them.
	perRow := simTurns * (1000*0.15 + 50*0.60 + 800*2.50 + 200*10.0) / 1e6
	near := func(a, b float64) bool { return math.Abs(a-b) <= 1e-9+1e-6*math.Abs(b) }
	if !near(wantCost, float64(rows)*perRow) || !near(gotCost, wantCost/2) {
		t.Errorf("conversation costs: real time $%.6f (want $%.6f), batch $%.6f (want half)", wantCost, float64(rows)*perRow, gotCost)
	}
	rtEntry, entry := simulateCost(t, rtBench), simulateCost(t, bench)
	if !near(entry.Cost, rtEntry.Cost/2) || entry.Cost == 0 || entry.InputTokens != rtEntry.InputTokens || entry.OutputTokens != rtEntry.OutputTokens || entry.Requests != rtEntry.Requests {
		t.Errorf("cost.json simulate: batch %+v, real time %+v: want the same usage at half the cost", entry, rtEntry)
	}
	// The invocation paid for the waves, and each row's audit (in real
	// time, by the offline judge); nothing was reused.
	ph := phaseOf(r, phase.StageSimulate)
	if ph.Status != phase.StatusRan || ph.Calls != 2*rows*simTurns+rows || !near(ph.Spent.Cost, gotCost) || r.Report.Reused.Requests != 0 || ph.Reused != 0 {
		t.Errorf("simulate report: %s, %d calls, spent $%.6f (want %d calls, $%.6f), reused %+v / %d rows", ph.Status, ph.Calls, ph.Spent.Cost, 2*rows*simTurns+rows, gotCost, r.Report.Reused, ph.Reused)
	}
	if _, err := os.Stat(filepath.Join(r.b.Store.Dir(), "t1", "sim-batch", "user.json")); !os.IsNotExist(err) {
		t.Errorf("the batch state outlives the stored answers: %v", err)
	}

	// Up to date: a rerun submits nothing.
	r.Close()
	r2 := newRunner(t, cfg, bench, Options{})
	if err := r2.Simulate(ctx, "t1"); err != nil {
		t.Fatal(err)
	}
	r2.Close()
	if len(user.Batches())+len(target.Batches()) != 2*simTurns {
		t.Errorf("an up-to-date simulate submitted batches")
	}

	// --force ignores the stored answers once: the waves run again, and the
	// real-time pass replays what they stored instead of paying a third time.
	if err := newRunner(t, cfg, bench, Options{Force: true}).Simulate(ctx, "t1"); err != nil {
		t.Fatal(err)
	}
	if n := len(user.Batches()) + len(target.Batches()); n != 4*simTurns {
		t.Errorf("--force: %d batches in all, want %d", n, 4*simTurns)
	}
	if d := cmp.Diff(got, conversations(t, bench), cmp.AllowUnexported(artifacts.Seeds{})); d != "" {
		t.Errorf("--force rerun differs:\n%s", d)
	}
}

// TestBatchWavesMixed: a target without a batch API (offline, batch: true
// notwithstanding) is simulated in real time inside the waves; only the
// user turns are batched, one wave per turn.
func TestBatchWavesMixed(t *testing.T) {
	cfg, bench := simProject(t)
	user := batchFake(t, fakeUser, userUsage, fakebatch.Options{PollsBeforeDone: 1})
	cfg.UserModel = openAIModel("gpt-4o-mini", user.APIKey(), user.BaseURL(), true)
	cfg.Targets[0].Batch = true
	var log bytes.Buffer
	tr := progress.New(&syncWriter{w: &log}, progress.Lines, time.Hour)
	defer tr.Close()
	r := newRunner(t, cfg, bench, Options{Progress: tr})
	if err := r.Simulate(t.Context(), "t1"); err != nil {
		t.Fatal(err)
	}
	convs := conversations(t, bench)
	checkComplete(t, convs, len(convs))
	checkNotPaidTwice(t, "user", user, len(convs)*simTurns, simTurns)
	if !strings.Contains(log.String(), "batch not supported for source offline") || !strings.Contains(log.String(), "wave 3/3 (user turn 3)") {
		t.Errorf("log does not say the target runs in real time, or has no wave lines:\n%s", log.String())
	}
}

// syncWriter is a writer safe for the tracker and a watching test.
type syncWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
	on func(line string)
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.on != nil {
		s.on(string(p))
	}
	return s.w.Write(p)
}

// TestBatchWavesResumeWithoutResubmitting: a process killed between two
// waves, or while a wave's batch runs, resumes: every conversation
// completes and no batch is created twice (batches = waves).
func TestBatchWavesResumeWithoutResubmitting(t *testing.T) {
	for _, tc := range []struct {
		name    string
		kill    func(user, target *fakebatch.Server, cancel context.CancelFunc) func(line string)
		created int // batches created when killed
	}{
		{"between waves", func(_, _ *fakebatch.Server, cancel context.CancelFunc) func(string) {
			// Wave 3 is logged once wave 2's answers are stored and
			// before its batch is created.
			return func(line string) {
				if strings.Contains(line, "wave 3/6") {
					cancel()
				}
			}
		}, 2},
		{"during a batch", func(user, _ *fakebatch.Server, cancel context.CancelFunc) func(string) {
			go func() {
				for len(user.Batches()) < 2 {
					time.Sleep(time.Millisecond)
				}
				// Killed once wave 3's batch is recorded and polled
				// (killing the create call itself can lose a batch:
				// the provider made it, the answer never came).
				polls := countPolls(user)
				for countPolls(user) == polls {
					time.Sleep(time.Millisecond)
				}
				cancel()
			}()
			return nil
		}, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, bench := simProject(t)
			opts := fakebatch.Options{PollsBeforeDone: 6}
			user, target := batchFake(t, fakeUser, userUsage, opts), batchFake(t, fakeTarget, targetUsage, opts)
			cfg.UserModel = openAIModel("gpt-4o-mini", user.APIKey(), user.BaseURL(), true)
			cfg.Targets[0] = openAIModel("gpt-4o", target.APIKey(), target.BaseURL(), true)
			cfg.Targets[0].ID = "t1"

			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			w := &syncWriter{w: &bytes.Buffer{}, on: tc.kill(user, target, cancel)}
			tr := progress.New(w, progress.Lines, time.Hour)
			defer tr.Close()
			r1 := newRunner(t, cfg, bench, Options{Progress: tr})
			if err := r1.Simulate(ctx, "t1"); err == nil {
				t.Fatal("simulate finished although it was interrupted")
			}
			r1.Close()
			if ph := phaseOf(r1, phase.StageSimulate); ph.Status != phase.StatusStopped || ph.Calls == 0 {
				t.Errorf("interrupted simulate reported %q with %d calls paid", ph.Status, ph.Calls)
			}
			if n := len(user.Batches()) + len(target.Batches()); n != tc.created {
				t.Fatalf("killed with %d batches created, want %d", n, tc.created)
			}

			r2 := newRunner(t, cfg, bench, Options{})
			if err := r2.Simulate(t.Context(), "t1"); err != nil {
				t.Fatal(err)
			}
			convs := conversations(t, bench)
			checkComplete(t, convs, len(convs))
			checkNotPaidTwice(t, "user", user, len(convs)*simTurns, simTurns)
			checkNotPaidTwice(t, "target", target, len(convs)*simTurns, simTurns)
		})
	}
}

// countPolls counts the status requests a fake answered.
func countPolls(srv *fakebatch.Server) int {
	n := 0
	for _, r := range srv.Requests() {
		if r.Method == http.MethodGet && strings.HasPrefix(r.Path, "/v1/batches/") {
			n++
		}
	}
	return n
}

// proxyBoth serves one base URL for a batch fake and a real-time fake of the
// same provider, as the real API does.
func proxyBoth(t *testing.T, b *fakebatch.Server, rt *llmtest.Server) string {
	bu, _ := url.Parse(b.URL())
	ru, _ := url.Parse(rt.URL())
	toBatch, toRT := httputil.NewSingleHostReverseProxy(bu), httputil.NewSingleHostReverseProxy(ru)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/chat/completions") {
			toRT.ServeHTTP(w, r)
			return
		}
		toBatch.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/v1"
}

// TestBatchWavesRetryFailedItems: a batch item that fails is tried again —
// in a new batch when the failure is transient (an expired request), in
// real time when batching cannot help (an invalid request) — and its
// conversation completes.
func TestBatchWavesRetryFailedItems(t *testing.T) {
	cfg, bench := simProject(t)
	var mu sync.Mutex
	failed := map[string]string{} // custom_id -> how it failed
	answer := func(id string, req llmtest.ChatRequest) fakebatch.Outcome {
		mu.Lock()
		defer mu.Unlock()
		turn2 := len(req.Messages) == 3 // the target's turn 2: user, assistant, user
		switch {
		case turn2 && len(failed) == 0:
			failed[id] = "expired"
			return fakebatch.Outcome{Expire: true}
		case turn2 && len(failed) == 1 && failed[id] == "":
			failed[id] = "invalid"
			return fakebatch.Outcome{Reply: llmtest.OpenAIError(400, "invalid_request_error", "", "scripted: not in a batch")}
		}
		return fakebatch.Outcome{Reply: llmtest.Text(fakeTarget(req), targetUsage)}
	}
	user := batchFake(t, fakeUser, userUsage, fakebatch.Options{})
	target := batchFake(t, nil, llmtest.Usage{}, fakebatch.Options{Answer: answer})
	rt := realtimeFake(t, fakeTarget, targetUsage)
	cfg.UserModel = openAIModel("gpt-4o-mini", user.APIKey(), user.BaseURL(), true)
	cfg.Targets[0] = openAIModel("gpt-4o", target.APIKey(), proxyBoth(t, target, rt), true)
	cfg.Targets[0].ID = "t1"
	if err := newRunner(t, cfg, bench, Options{}).Simulate(t.Context(), "t1"); err != nil {
		t.Fatal(err)
	}
	convs := conversations(t, bench)
	checkComplete(t, convs, len(convs))
	var expired, invalid string
	for id, how := range failed {
		if how == "expired" {
			expired = id
		} else {
			invalid = id
		}
	}
	if expired == "" || invalid == "" {
		t.Fatalf("the fake failed %v: want one expired and one invalid item", failed)
	}
	if n := target.Submissions(expired); n != 2 {
		t.Errorf("the expired item was submitted %d times, want 2 (again in a new batch)", n)
	}
	if n := target.Submissions(invalid); n != 1 || rt.Calls() != 1 {
		t.Errorf("the invalid item: %d submissions, %d real-time calls; want 1 and 1", n, rt.Calls())
	}
}

// TestBatchWavesDryRunPlan: --dry-run prices batched simulate calls at half
// the real-time estimate and says how many waves they take, what they save
// and how long they may take.
func TestBatchWavesDryRunPlan(t *testing.T) {
	dryRun := func(batched bool) *summary.Summary {
		cfg, bench := project(t)
		cfg.Generation.Turns = simTurns
		cfg.UserModel = openAIModel("gpt-4o-mini", "k", "", batched)
		cfg.Targets[0] = openAIModel("gpt-4o", "k", "", batched)
		cfg.Targets[0].ID = "t1"
		r := newRunner(t, cfg, bench, Options{DryRun: true})
		if err := r.Simulate(t.Context(), "t1"); err != nil {
			t.Fatal(err)
		}
		return r.Report
	}
	rt := dryRun(false)
	bt := dryRun(true)
	if len(rt.Plan) != 2 || len(bt.Plan) != 2 {
		t.Fatalf("plans: %+v / %+v", rt.Plan, bt.Plan)
	}
	var saving float64
	for i, p := range bt.Plan {
		want := rt.Plan[i]
		if p.Batch == nil || p.Batch.Waves != 2*simTurns || p.Calls != want.Calls || math.Abs(p.Cost-want.Cost/2) > 1e-12 ||
			math.Abs(p.Batch.SavingUSD-want.Cost/2) > 1e-12 || p.Batch.ElapsedMaxHours != 24*2*simTurns || p.Batch.ElapsedTypicalHours != 2*simTurns {
			t.Errorf("batched plan row %+v %+v; real-time row %+v", p, p.Batch, want)
		}
		if !strings.HasSuffix(p.Phase, ", batch)") {
			t.Errorf("phase %q does not say batch", p.Phase)
		}
		saving += p.Batch.SavingUSD
	}
	// The printed line is checked by cli's TestDryRunBillPrintsWaves.
	_ = saving
}
