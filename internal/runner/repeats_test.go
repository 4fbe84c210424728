package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/impactbench/impactbench/internal/aggregate"
	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/fault"
	"github.com/impactbench/impactbench/internal/llm"
	"github.com/impactbench/impactbench/internal/llm/offline"
	"github.com/impactbench/impactbench/internal/results"
)

// flakyJudge answers judge requests with a verdict fixed by the transcript,
// flipped with probability q drawn from the request's seed: a judge whose
// repeats disagree at a known rate, if (and only if) every repeat is a
// fresh request with its own seed.
func flakyJudge(q float64, calls *atomic.Int64) llm.Client {
	return llm.ClientFunc(func(_ context.Context, req llm.Request) (llm.Response, error) {
		if req.Purpose == llm.PurposeLandmark {
			return llm.Response{Text: auditAnswer(true), Usage: llm.Usage{Requests: 1, CostKnown: true}}, nil
		}
		calls.Add(1)
		h := fnv.New64a()
		h.Write([]byte(req.Meta[llm.MetaTranscriptJSON]))
		present := h.Sum64()%2 == 0
		s := fnv.New64a()
		fmt.Fprint(s, req.Seed)
		if float64(s.Sum64()>>11)/(1<<53) < q {
			present = !present
		}
		// It cites the assistant's first message, so the evidence check
		// never asks again and each repeat stays one call.
		var turns []artifacts.Turn
		_ = json.Unmarshal([]byte(req.Meta[llm.MetaTranscriptJSON]), &turns)
		quote := ""
		for _, tn := range turns {
			if tn.Role == "assistant" {
				quote = tn.Content
				break
			}
		}
		ev, _ := json.Marshal([]string{quote})
		return llm.Response{Text: fmt.Sprintf(`{"justification": "fake", "evidence": %s, "present": %v}`, ev, present), Usage: llm.Usage{Requests: 1, CostKnown: true}}, nil
	})
}

func withJudge(cfg *config.Config, judge llm.Client) func(config.ModelConfig) (llm.Client, error) {
	return func(m config.ModelConfig) (llm.Client, error) {
		if m.Model == cfg.EvaluatorModels[0].Model {
			return judge, nil
		}
		return offline.New(m, cfg.Seed), nil
	}
}

// TestRepeatsMeasureAKnownFlipRate: with a judge that flips each verdict
// with probability q, the share of rows whose K+1 verdicts are not
// unanimous must be near 1 − (1−q)^(K+1) − q^(K+1); every repeat is a
// fresh call; scores.json is untouched; results.json reports it.
func TestRepeatsMeasureAKnownFlipRate(t *testing.T) {
	const K = 6
	tests := []struct {
		q float64
	}{{0}, {0.2}}
	for _, tt := range tests {
		t.Run(fmt.Sprint("q=", tt.q), func(t *testing.T) {
			ctx := t.Context()
			cfg, bench := project(t)
			var calls atomic.Int64
			r := newRunner(t, cfg, bench, Options{Clients: withJudge(cfg, flakyJudge(tt.q, &calls))})
			if err := r.Run(ctx, r.Targets()); err != nil {
				t.Fatal(err)
			}
			scores := filepath.Join(bench, "runs", "offline-careful", "scores.json")
			before, _ := os.ReadFile(scores)
			mainCalls := calls.Load()
			for _, target := range r.Targets() {
				if err := r.Repeat(ctx, target, K); err != nil {
					t.Fatal(err)
				}
			}
			if got := calls.Load() - mainCalls; got != K*mainCalls {
				t.Errorf("%d judge calls for %d repeats of %d rows: repeats must be fresh calls", got, K, mainCalls)
			}
			if after, _ := os.ReadFile(scores); !bytes.Equal(before, after) {
				t.Error("repeats changed scores.json")
			}
			// A second invocation reuses every stored repeat.
			n := calls.Load()
			if err := r.Repeat(ctx, "offline-careful", K); err != nil || calls.Load() != n {
				t.Errorf("rerun: %v, %d new calls", err, calls.Load()-n)
			}
			if err := aggregate.Run(ctx, r.Work()); err != nil {
				t.Fatal(err)
			}
			res, err := results.ReadResults(filepath.Join(bench, "results.json"))
			if err != nil {
				t.Fatal(err)
			}
			flipped, rows := 0, 0
			for _, m := range res {
				jc := m.JudgeConsistency
				if jc == nil || jc.Repeats != K {
					t.Fatalf("%s: judge_consistency = %+v", m.TargetModel, jc)
				}
				byMetric, ok := jc.Judges.Get("offline-judge")
				if !ok {
					t.Fatalf("judges = %v", jc.Judges.Keys())
				}
				for _, e := range byMetric {
					flipped += e.Value.NFlipped
					rows += e.Value.NRows
				}
			}
			want := 1 - math.Pow(1-tt.q, K+1) - math.Pow(tt.q, K+1)
			got := float64(flipped) / float64(rows)
			se := math.Sqrt(want * (1 - want) / float64(rows))
			t.Logf("q=%.1f K=%d: flip rate %.3f over %d rows, expected %.3f", tt.q, K, got, rows, want)
			if math.Abs(got-want) > 3*se+1e-9 {
				t.Errorf("flip rate %.3f, want %.3f ± %.3f", got, want, 3*se)
			}
		})
	}
}

func TestRepeatsNeedScoresAndAPositiveK(t *testing.T) {
	cfg, bench := project(t)
	r := newRunner(t, cfg, bench, Options{})
	if err := r.GenScenarios(t.Context()); err != nil {
		t.Fatal(err)
	}
	for _, k := range []int{0, -1, 2} {
		err := r.Repeat(t.Context(), "offline-careful", k)
		if fault.KindOf(err) != fault.Input {
			t.Errorf("k=%d without scores: err = %v, want an input error", k, err)
		}
	}
}
