package batch_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/impactbench/impactbench/internal/callstore"
	"github.com/impactbench/impactbench/internal/llm"
	"github.com/impactbench/impactbench/internal/llm/anthropic"
	"github.com/impactbench/impactbench/internal/llm/batch"
	"github.com/impactbench/impactbench/internal/llm/batch/fakebatch"
	"github.com/impactbench/impactbench/internal/llm/llmtest"
)

type verdict struct {
	Justification string `json:"justification"`
	Present       bool   `json:"present"`
}

// stage is a real-time stage: two JSON calls through c.
func stage(ctx context.Context, c llm.Client) ([]verdict, llm.Usage, error) {
	var out []verdict
	var total llm.Usage
	for _, conv := range []string{"conv A", "conv B"} {
		var v verdict
		resp, err := llm.CompleteJSON(ctx, c, llm.Request{Purpose: llm.PurposeJudge, Messages: []llm.Message{
			{Role: llm.RoleSystem, Content: "Judge."}, {Role: llm.RoleUser, Content: conv}}, MaxTokens: 200}, &v, llm.JSONOptions{})
		total = total.Add(resp.Usage)
		if err != nil {
			return nil, total, err
		}
		out = append(out, v)
	}
	return out, total, nil
}

// TestCollectReplay: collect a stage's requests, batch them, replay the
// stage from the results; what the batch did not answer well goes to the
// real-time client.
func TestCollectReplay(t *testing.T) {
	id := callstore.Identity{Provider: "anthropic", Model: "claude-haiku-4-5"}
	key := func(r llm.Request) string { return callstore.Key(id, r) }

	col := batch.NewCollector(key, `{"justification":"","present":false}`)
	if _, _, err := stage(t.Context(), col); err != nil {
		t.Fatal(err)
	}
	items := col.Items()
	if len(items) != 2 || len(items[0].CustomID) != 64 {
		t.Fatalf("collected %+v", items)
	}

	// The batch answers conv A well and conv B with invalid JSON.
	srv := fakebatch.NewAnthropic(t, fakebatch.Options{Answer: func(_ string, r llmtest.ChatRequest) fakebatch.Outcome {
		text := `{"justification":"batch","present":true}`
		if strings.Contains(r.LastUser(), "conv B") {
			text = "not json"
		}
		return fakebatch.Outcome{Reply: llmtest.Text(text, llmtest.Usage{Input: 1000, Output: 100})}
	}})
	rs, err := batch.Run(t.Context(), newAnthropic(t, srv, nil), filepath.Join(t.TempDir(), "s.json"), items, fast)
	if err != nil {
		t.Fatal(err)
	}

	rt := llmtest.NewAnthropic(t)
	rt.HandleText(func(llmtest.ChatRequest) string { return `{"justification":"realtime","present":false}` })
	rc, err := anthropic.New(anthropic.Config{APIKey: rt.APIKey(), BaseURL: rt.BaseURL(), Model: "claude-haiku-4-5", HTTPClient: rt.Client()})
	if err != nil {
		t.Fatal(err)
	}
	realtime := llm.WithCost(rc, price, true)

	vs, usage, err := stage(t.Context(), batch.Replay(rs, key, realtime))
	if err != nil {
		t.Fatal(err)
	}
	if vs[0].Justification != "batch" || vs[1].Justification != "realtime" {
		t.Errorf("verdicts %+v", vs)
	}
	// conv B: the batch answer (invalid) then the validation retry in real time.
	if rt.Calls() != 1 || srv.TotalSubmissions() != 2 {
		t.Errorf("%d real-time calls, %d batch submissions", rt.Calls(), srv.TotalSubmissions())
	}
	if !usage.CostKnown || usage.Requests != 3 {
		t.Errorf("usage %+v", usage)
	}

	// Served once: replaying again sends everything to the fallback.
	r2 := batch.Replay(rs, key, nil)
	if _, err := r2.Complete(t.Context(), items[0].Req); err != nil {
		t.Fatal(err)
	}
	if _, err := r2.Complete(t.Context(), items[0].Req); llm.KindOf(err) != llm.KindConfig {
		t.Errorf("second replay of the same request: %v", err)
	}
}
