package runner

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/llm/batch/fakebatch"
	"github.com/impactbench/impactbench/internal/llm/llmtest"
	"github.com/impactbench/impactbench/internal/prompts"
	"github.com/impactbench/impactbench/internal/work"
)

// A batch judge: evaluate collects every judge call, submits it as one
// provider batch at half price, and — when the process is killed while the
// batch runs — the next run resumes polling the same batch instead of
// submitting (and paying for) it again.
func TestBatchJudgeResumesWithoutResubmitting(t *testing.T) {
	work.BatchPollInterval = 5 * time.Millisecond
	ctx := t.Context()
	cfg, bench := project(t)
	r := newRunner(t, cfg, bench, Options{})
	if err := r.GenScenarios(ctx); err != nil {
		t.Fatal(err)
	}
	if err := r.Simulate(ctx, "offline-careful"); err != nil {
		t.Fatal(err)
	}
	r.Close()

	srv := fakebatch.NewOpenAI(t, fakebatch.Options{
		PollsBeforeDone: 50,
		Answer: func(id string, req llmtest.ChatRequest) fakebatch.Outcome {
			present := strings.Contains(req.LastUser(), "I")
			text := `{"justification": "batch verdict", "present": false}`
			if present {
				// A present verdict must cite the assistant, or it is asked again in real time.
				text = `{"justification": "batch verdict", "evidence": [` + firstAssistantWords(req.LastUser()) + `], "present": true}`
			}
			return fakebatch.Outcome{Reply: llmtest.Text(text, llmtest.Usage{Input: 1000, Output: 20})}
		},
	})
	judge := config.ModelConfig{Model: "gpt-4o-mini", Source: "openai", APIKey: srv.APIKey(), BaseURL: srv.BaseURL(), Batch: true, MaxRetries: 2}
	cfg.EvaluatorModels = []config.ModelConfig{judge}

	// First run: killed (context cancelled) while the batch is in progress.
	kctx, cancel := context.WithCancel(ctx)
	go func() {
		for srv.TotalSubmissions() == 0 {
			time.Sleep(time.Millisecond)
		}
		time.Sleep(20 * time.Millisecond)
		cancel()
	}()
	r1 := newRunner(t, cfg, bench, Options{})
	if err := r1.Evaluate(kctx, "offline-careful"); err == nil {
		t.Fatal("evaluate finished although it was interrupted mid-batch")
	}
	r1.Close()
	submitted := srv.TotalSubmissions()
	if submitted != 16 {
		t.Fatalf("first run submitted %d judge requests, want 16 (one per conversation)", submitted)
	}

	// Second run: resumes the same batch.
	r2 := newRunner(t, cfg, bench, Options{})
	if err := r2.Evaluate(ctx, "offline-careful"); err != nil {
		t.Fatal(err)
	}
	r2.Close()
	if srv.TotalSubmissions() != submitted || len(srv.Resubmitted()) != 0 {
		t.Fatalf("resume resubmitted: %d submissions, resubmitted %v", srv.TotalSubmissions(), srv.Resubmitted())
	}
	if n := len(srv.Inner().Requests()); n != 16 {
		t.Errorf("%d judge requests executed, want 16 (no real-time duplicates)", n)
	}
	scores, err := artifacts.ReadScores(filepath.Join(bench, "runs", "offline-careful", "scores.json"))
	if err != nil || len(scores) != 16 {
		t.Fatalf("scores: %d, %v", len(scores), err)
	}
	var cost float64
	for _, s := range scores {
		if s.Present == nil || s.Justification != "batch verdict" {
			t.Errorf("%s: verdict %v %q not from the batch", s.ID, s.Present, s.Justification)
		}
		cost += s.Usage.Cost
	}
	// gpt-4o-mini: $0.15 in / $0.60 out per 1M; batch halves it.
	want := 16 * (1000*0.15 + 20*0.60) / 1e6 / 2
	if cost < want*0.99 || cost > want*1.01 {
		t.Errorf("recorded judge cost $%.6f, want the batch price $%.6f", cost, want)
	}
	// A third run replays everything from the call store: no new batch.
	r3 := newRunner(t, cfg, bench, Options{Force: false})
	if err := r3.Evaluate(ctx, "offline-careful"); err != nil {
		t.Fatal(err)
	}
	if srv.TotalSubmissions() != submitted {
		t.Errorf("an up-to-date evaluate submitted again")
	}
}

// firstAssistantWords is the first assistant message of a judge prompt's
// transcript, cut to a few words, as a JSON string.
func firstAssistantWords(prompt string) string {
	for _, l := range strings.Split(prompt, "\n") {
		t, err := prompts.DecodeMessage(strings.TrimSuffix(l, ","))
		if err != nil || t.Role != "assistant" {
			continue
		}
		words := strings.Fields(t.Content)
		b, _ := json.Marshal(strings.Join(words[:min(6, len(words))], " "))
		return string(b)
	}
	return ""
}
