package simulate_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io/fs"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/layout"
	"github.com/impactbench/impactbench/internal/llm/batch/fakebatch"
	"github.com/impactbench/impactbench/internal/llm/llmtest"
	"github.com/impactbench/impactbench/internal/runner"
	"github.com/impactbench/impactbench/internal/work"
)

// The batch waves of several targets share the simulated user's openings
// (one opening for every target, docs/design.md).

const waveTurns = 3

var waveTargets = []string{"t1", "t2", "t3"}

// waveUser answers from the request and its seed alone, like a model
// sampling with that seed.
func waveUser(req llmtest.ChatRequest) string {
	seed := int64(-1)
	if req.Seed != nil {
		seed = *req.Seed
	}
	return fmt.Sprintf("Thought: keep going.\nMessage: question %x", sha256.Sum256([]byte(fmt.Sprint(req.LastUser(), len(req.Messages), seed))))
}

// waveProject is the offline project with its scenarios generated, its
// simulated user batched on user (a fake OpenAI Batch API) and three
// real-time targets, each a fake answering in its own words.
func waveProject(t *testing.T, user *fakebatch.Server, independent bool) (*config.Config, string) {
	t.Helper()
	work.BatchPollInterval = 2 * time.Millisecond
	dir := t.TempDir()
	if _, err := config.Scaffold(dir, false); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(filepath.Join(dir, "config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	bench := filepath.Join(dir, "benchmarks", "example")
	r, err := runner.New(t.Context(), cfg, bench, runner.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.GenScenarios(t.Context()); err != nil {
		t.Fatal(err)
	}
	r.Close()
	cfg.Generation.Turns = waveTurns
	cfg.Generation.IndependentOpenings = independent
	gen := cfg.UserModel // the scenarios stay the offline model's
	cfg.GeneratorModel = &gen
	cfg.UserModel = config.ModelConfig{Model: "gpt-4o-mini", Source: "openai", APIKey: user.APIKey(), BaseURL: user.BaseURL(), Batch: true, MaxRetries: 1}
	cfg.Targets = nil
	for _, id := range waveTargets {
		srv := llmtest.NewOpenAI(t)
		srv.Handle(func(req llmtest.ChatRequest) llmtest.Reply {
			return llmtest.Text(fmt.Sprintf("%s says %x", id, sha256.Sum256([]byte(req.LastUser())))[:40], llmtest.Usage{Input: 800, Output: 200})
		})
		cfg.Targets = append(cfg.Targets, config.ModelConfig{ID: id, Model: "gpt-4o", Source: "openai", APIKey: srv.APIKey(), BaseURL: srv.BaseURL(), MaxRetries: 1})
	}
	return cfg, bench
}

func userFake(t *testing.T, opts fakebatch.Options) *fakebatch.Server {
	opts.Answer = func(_ string, req llmtest.ChatRequest) fakebatch.Outcome {
		return fakebatch.Outcome{Reply: llmtest.Text(waveUser(req), llmtest.Usage{Input: 1000, Output: 50})}
	}
	return fakebatch.NewOpenAI(t, opts)
}

// runAll runs every target at once, as `run all` does.
func runAll(ctx context.Context, t *testing.T, cfg *config.Config, bench string, opts runner.Options) error {
	t.Helper()
	r, err := runner.New(t.Context(), cfg, bench, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	return r.Run(ctx, r.Targets())
}

// waveConversations reads every target's conversations.
func waveConversations(t *testing.T, bench string) map[string][]artifacts.Conversation {
	t.Helper()
	out := map[string][]artifacts.Conversation{}
	for _, id := range waveTargets {
		convs, err := artifacts.ReadConversations(filepath.Join(bench, "runs", id, "conversations.json"))
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range convs {
			if c.Status != artifacts.StatusCompleted || len(c.Transcript) != 2*waveTurns {
				t.Fatalf("%s %s: status %s (%s), %d messages; want completed with %d", id, c.ConvID, c.Status, c.StatusReason, len(c.Transcript), 2*waveTurns)
			}
		}
		out[id] = convs
	}
	return out
}

// sameOpenings counts the rows whose first user message is the same for
// every target.
func sameOpenings(t *testing.T, convs map[string][]artifacts.Conversation) (same, rows int) {
	t.Helper()
	first := convs[waveTargets[0]]
	for i, c := range first {
		ok := true
		for _, id := range waveTargets[1:] {
			o := convs[id][i]
			if o.ID != c.ID || o.Sample != c.Sample {
				t.Fatalf("%s row %d is %s/%d, %s's is %s/%d", id, i, o.ID, o.Sample, waveTargets[0], c.ID, c.Sample)
			}
			ok = ok && o.Transcript[0].Content == c.Transcript[0].Content
		}
		if ok {
			same++
		}
	}
	return same, len(first)
}

// TestBatchWavesShareTheOpenings: three targets whose simulated user is
// batched run side by side; each row's opening is submitted once, in one
// batch every target's first wave waits for, instead of once per target:
// (targets − 1) × rows fewer user requests, nothing submitted twice, and
// every target's conversation of a row starts with the same message. With
// generation.independent_openings each target asks its own, as before.
func TestBatchWavesShareTheOpenings(t *testing.T) {
	for _, tc := range []struct {
		name        string
		independent bool
	}{{"shared", false}, {"independent", true}} {
		t.Run(tc.name, func(t *testing.T) {
			user := userFake(t, fakebatch.Options{PollsBeforeDone: 1})
			cfg, bench := waveProject(t, user, tc.independent)
			if err := runAll(t.Context(), t, cfg, bench, runner.Options{}); err != nil {
				t.Fatal(err)
			}
			convs := waveConversations(t, bench)
			same, rows := sameOpenings(t, convs)
			T := len(waveTargets)
			requests, batches := T*rows*waveTurns-(T-1)*rows, 1+T*(waveTurns-1)
			if tc.independent {
				requests, batches = T*rows*waveTurns, T*waveTurns
			}
			if re := user.Resubmitted(); len(re) > 0 {
				t.Errorf("%d user requests submitted twice", len(re))
			}
			if n := user.TotalSubmissions(); n != requests {
				t.Errorf("%d user requests submitted, want %d (%d targets × %d rows × %d turns, openings shared: %v)", n, requests, T, rows, waveTurns, !tc.independent)
			}
			if n := len(user.Batches()); n != batches {
				t.Errorf("%d user batches, want %d", n, batches)
			}
			if tc.independent && same != 0 || !tc.independent && same != rows {
				t.Errorf("%d of %d rows open with the same message for every target (shared: %v)", same, rows, !tc.independent)
			}
			if st := openingStates(t, bench); len(st) > 0 {
				t.Errorf("the openings' batch state outlives the stored answers: %v", st)
			}
		})
	}
}

// TestBatchWavesShareTheOpeningsResume: killed while the shared openings'
// batch runs, and resumed: nothing is submitted twice, and the run ends as
// an uninterrupted one would.
func TestBatchWavesShareTheOpeningsResume(t *testing.T) {
	user := userFake(t, fakebatch.Options{PollsBeforeDone: 6})
	cfg, bench := waveProject(t, user, false)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var stopped atomic.Bool
	go func() {
		for len(user.Batches()) < 1 {
			time.Sleep(time.Millisecond)
		}
		// Killed once the openings' batch is recorded and polled
		// (killing the create call itself can lose a batch).
		for polls(user) < 1 {
			time.Sleep(time.Millisecond)
		}
		stopped.Store(true)
		cancel()
	}()
	if err := runAll(ctx, t, cfg, bench, runner.Options{}); err == nil || !stopped.Load() {
		t.Fatalf("the run was not interrupted in the openings' batch (err %v)", err)
	}
	if n := len(user.Batches()); n != 1 {
		t.Fatalf("killed with %d user batches created, want 1 (the openings')", n)
	}
	if st := openingStates(t, bench); len(st) != 1 {
		t.Fatalf("killed with the openings' batch state files %v, want one", st)
	}
	if err := runAll(t.Context(), t, cfg, bench, runner.Options{}); err != nil {
		t.Fatal(err)
	}
	convs := waveConversations(t, bench)
	same, rows := sameOpenings(t, convs)
	T := len(waveTargets)
	if re := user.Resubmitted(); len(re) > 0 {
		t.Errorf("%d user requests submitted twice after the resume", len(re))
	}
	if n, want := user.TotalSubmissions(), T*rows*waveTurns-(T-1)*rows; n != want {
		t.Errorf("%d user requests submitted, want %d", n, want)
	}
	if same != rows {
		t.Errorf("%d of %d rows open with the same message for every target", same, rows)
	}
	if st := openingStates(t, bench); len(st) > 0 {
		t.Errorf("the openings' batch state outlives the stored answers: %v", st)
	}
}

// openingStates lists the openings' batch state files in bench's project.
func openingStates(t *testing.T, bench string) []string {
	t.Helper()
	var out []string
	want := filepath.FromSlash(layout.OpeningBatchState(layout.Shard{}))
	err := filepath.WalkDir(filepath.Dir(filepath.Dir(bench)), func(path string, _ fs.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(path, string(filepath.Separator)+want) {
			out = append(out, path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// polls counts the status requests a fake answered.
func polls(srv *fakebatch.Server) int {
	n := 0
	for _, r := range srv.Requests() {
		if r.Method == http.MethodGet && strings.HasPrefix(r.Path, "/v1/batches/") {
			n++
		}
	}
	return n
}
