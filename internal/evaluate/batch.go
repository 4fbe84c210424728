package evaluate

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/callstore"
	"github.com/impactbench/impactbench/internal/clientset"
	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/layout"
	"github.com/impactbench/impactbench/internal/llm"
	"github.com/impactbench/impactbench/internal/llm/batch"
	"github.com/impactbench/impactbench/internal/stages"
	"github.com/impactbench/impactbench/internal/work"
)

// judgeBatches holds, per panel seat, the batch answers to replay (nil for
// seats judged in real time) and the state files to delete once every row
// is saved.
type judgeBatches struct {
	results [][]batch.Result
	keys    []func(llm.Request) string
	states  []string
}

// runJudgeBatches sends the judge calls of every row not yet judged through
// the providers' batch APIs (50 % price) for judges with `batch: true`:
// a batch is how those verdict rows' calls are sent.
//
// It runs the evaluate stage once with collecting clients, so exactly the
// requests the real pass will make are batched; the real pass then replays
// the answers through the call store, which saves them like real-time ones.
// Batch ids are persisted as soon as a batch is created, so a killed process
// resumes polling instead of resubmitting. Requests the batch did not answer
// (failed items, a validation retry) go to the real-time client.
func runJudgeBatches(ctx context.Context, b *work.Bench, j *Target, convPath string) (*judgeBatches, error) {
	jb := &judgeBatches{results: make([][]batch.Result, len(j.judges)), keys: make([]func(llm.Request) string, len(j.judges)), states: make([]string, len(j.judges))}
	collectors := make([]*batch.Collector, len(j.judges))
	any := false
	for k, jm := range j.judges {
		id := clientset.Identity(jm)
		jb.keys[k] = func(req llm.Request) string { return callstore.Key(id, req) }
		if jm.Batch {
			collectors[k] = batch.NewCollector(jb.keys[k], judgePlaceholder)
			any = true
		}
	}
	if !any {
		return jb, nil
	}
	if err := collectJudgeCalls(ctx, b, j, convPath, collectors); err != nil {
		return nil, err
	}
	for k, jm := range j.judges {
		if collectors[k] == nil {
			continue
		}
		jb.states[k] = filepath.Join(b.Files.Calls(), filepath.FromSlash(layout.BatchState(j.target, j.unitDir, work.JudgeLabel(jm), b.Opts.Shard)))
		res, err := sendJudgeBatch(ctx, b, j.target, jm, jb.states[k], collectors[k].Items())
		if err != nil {
			return nil, err
		}
		jb.results[k] = res
	}
	return jb, nil
}

// judgePlaceholder answers collected judge calls so the stage goes on to
// the next one (its verdict is never stored).
const judgePlaceholder = `{"justification": "", "present": false}`

// collectJudgeCalls runs the judges over every conversation not judged yet
// with the batch judges' collectors, recording the calls they make.
func collectJudgeCalls(ctx context.Context, b *work.Bench, j *Target, convPath string, collectors []*batch.Collector) error {
	fixed := llm.ClientFunc(func(context.Context, llm.Request) (llm.Response, error) {
		return llm.Response{Text: judgePlaceholder}, nil
	})
	return artifacts.EachConversation(convPath, func(i int, conv artifacts.Conversation) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if conv.ConvID == "" {
			conv.ConvID = artifacts.ConvID(conv.ID, j.target, conv.Sample)
		}
		var done artifacts.Score
		if key, ok := b.Store.ReadResult(j.unitName(conv.ID, conv.Sample), &done); ok && key == j.rowKey(&conv) && !b.Opts.Force {
			return nil
		}
		panel := make([]stages.NamedClient, len(j.judges))
		for k, jm := range j.judges {
			panel[k] = stages.NamedClient{Name: work.JudgeLabel(jm), Client: fixed}
			if collectors[k] != nil {
				panel[k].Client = collectors[k]
			}
		}
		m, _ := b.Spec.MetricByID(conv.MetricID)
		_, _, err := stages.Evaluate(ctx, panel, b.Prompts, m, conv, stages.JudgeOptions{ShowExamples: b.Cfg.Judge.ShowExamples, Seed: b.Cfg.Seed})
		return err
	})
}

// sendJudgeBatch sends one judge's collected calls as a provider batch and
// waits for the answers (nil: none to send, or they go in real time).
func sendJudgeBatch(ctx context.Context, b *work.Bench, targetID string, jm config.ModelConfig, state string, items []batch.Item) ([]batch.Result, error) {
	if b.Opts.Force {
		if err := batch.Remove(state); err != nil {
			return nil, err
		}
	}
	if len(items) == 0 {
		return nil, nil
	}
	p, err := batch.ForModel(jm, b.Models.ProviderOptions("evaluator_model"))
	if err != nil {
		b.Logf("evaluate %s: judge %s: %v — judging in real time instead", targetID, work.JudgeLabel(jm), err)
		return nil, nil
	}
	release := func(float64) {}
	if b.Models.Budget() != nil {
		// A batch commits its whole cost at once: reserve it up front.
		est, price := 0.0, b.Models.EstimateCost(jm)
		for _, it := range items {
			est += price(it.Req) / 2
		}
		if release, err = b.Models.Budget().Reserve(est); err != nil {
			b.Logf("evaluate %s: the batch of %d judge calls (≈$%.4f) would pass the cost ceiling; judging in real time up to the ceiling", targetID, len(items), est)
			return nil, nil
		}
	}
	b.Logf("evaluate %s: %d judge calls for %s sent as a provider batch (50%% price; results can take up to 24 h; safe to interrupt and rerun)", targetID, len(items), work.JudgeLabel(jm))
	last := time.Time{}
	res, err := batch.Run(ctx, p, state, items, batch.Options{
		PollInterval: work.BatchPollInterval,
		Logger:       b.Log,
		OnProgress: func(pr batch.Progress) {
			if time.Since(last) > time.Minute || pr.Succeeded+pr.Failed == pr.Items {
				last = time.Now()
				b.Logf("evaluate %s batch: %d/%d answered, %d failed, %d in %d running batch(es)", targetID, pr.Succeeded, pr.Items, pr.Failed, pr.InFlight, pr.Batches)
			}
		},
	})
	spent := 0.0
	for _, x := range res {
		spent += x.Resp.Usage.Cost
	}
	release(spent)
	if err != nil {
		return nil, fmt.Errorf("evaluate %s: judge batch (%s): %w", targetID, state, err)
	}
	return res, nil
}

// client wraps a seat's real-time client so batch answers are served first.
// Build it once per phase: every row shares the answers.
func (jb *judgeBatches) client(k int, realtime llm.Client) llm.Client {
	if jb == nil || jb.results[k] == nil {
		return realtime
	}
	return batch.Replay(jb.results[k], jb.keys[k], realtime)
}

// cleanup removes the batch state once every row's answer is saved in the call store.
func (jb *judgeBatches) cleanup() {
	if jb == nil {
		return
	}
	for _, s := range jb.states {
		if s != "" {
			_ = batch.Remove(s)
		}
	}
}
