package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/llm"
	"github.com/impactbench/impactbench/internal/phase"
	"github.com/impactbench/impactbench/internal/plan"
	"github.com/impactbench/impactbench/internal/summary"
)

// TestDryRunBillPrintsEveryWay: the dry run's bill names the four prices
// (real time at list prices, with prompt caching, through the batch APIs,
// as configured), the batch waves of a batched simulation (a batch per
// turn and batched role) and of a batched judge, and what would run now.
func TestDryRunBillPrintsEveryWay(t *testing.T) {
	cfg := &config.Config{Generation: config.Generation{Turns: 6, NumSamples: 1, ScenariosPerMetric: 2}}
	cfg.UserModel = config.ModelConfig{Model: "claude-sonnet-4-6", Source: "anthropic", APIKey: "k", Batch: true}
	judges := []config.ModelConfig{{Model: "gpt-5.4-mini", Source: "openai", APIKey: "k", Batch: true}}
	target := config.ModelConfig{ID: "t1", Model: "gpt-4o", Source: "openai", APIKey: "k"}
	e := plan.Estimator{Cfg: cfg, Prices: llm.DefaultPrices()}
	s := summary.New("example", true, cfg.Generation.Turns)
	s.AddPlan(e.Generation(phase.StageGenMetrics, "", "", cfg.UserModel, 1, 1, 1500, 1500))
	s.AddPlan(e.Simulate("t1", target, 8)...)
	s.AddPlan(e.Evaluate("t1", judges, 8)...)
	var out strings.Builder
	printDryRun(&out, s)
	for _, want := range []string{"real time, list prices", "with prompt caching", "with batch APIs", "as configured",
		"(12 batches:", "(1 batch:", "what would run now", "estimated cost", "batch waves for t1", "no model was called (dry run)"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("dry run output lacks %q:\n%s", want, out.String())
		}
	}
}

// TestDryRunBillPrintsWaves: a target simulated in batch waves gets a line
// saying how many waves, the calls, what they save against real time with
// caching, and how long they may take.
func TestDryRunBillPrintsWaves(t *testing.T) {
	cfg := &config.Config{Generation: config.Generation{Turns: 3, NumSamples: 1}}
	cfg.UserModel = config.ModelConfig{Model: "gpt-4o-mini", Source: "openai", APIKey: "k", Batch: true}
	target := config.ModelConfig{ID: "t1", Model: "gpt-4o", Source: "openai", APIKey: "k", Batch: true}
	e := plan.Estimator{Cfg: cfg, Prices: llm.DefaultPrices()}
	s := summary.New("example", true, cfg.Generation.Turns)
	rows := e.Simulate("t1", target, 4)
	s.AddPlan(rows...)
	var out strings.Builder
	printDryRun(&out, s)
	saving := rows[0].Batch.SavingUSD + rows[1].Batch.SavingUSD
	line := fmt.Sprintf("batch waves for t1: 6 waves, %d calls (saving $%.4f vs real time with caching); elapsed ≈ 30 min if each batch takes 5 min, 6 h at a typical 1 h, up to 6 days",
		rows[0].Calls+rows[1].Calls, saving)
	if !strings.Contains(out.String(), line) {
		t.Errorf("dry run does not print\n%s\n%s", line, out.String())
	}
}

// TestDryRunNamesTheModelsWithoutAPrice: the dry run's table shows a
// target by its id, but pricing: in config.yaml is keyed by model name;
// the bill's note names the models that have no price, and the pricing:
// entry it suggests prices them.
func TestDryRunNamesTheModelsWithoutAPrice(t *testing.T) {
	dir := t.TempDir()
	if code, _, errs := run(t, dir, "init", dir); code != 0 {
		t.Fatalf("init: exit %d\n%s", code, errs)
	}
	cfgPath := filepath.Join(dir, "config.yaml")
	unpriced := strings.Replace(string(readBytes(t, cfgPath)), `  - id: offline-careful
    model: offline-careful
    source: offline
`, `  - id: acme-7b
    model: acme-chat-7b
    source: openai
    apikey: sk-test-0123456789
    base_url: http://127.0.0.1:9/v1
`, 1)
	for _, tt := range []struct {
		name, cfg string
		want      []string
		not       []string
	}{
		{"unpriced", unpriced, []string{"no price is known for acme-chat-7b", "`pricing: {acme-chat-7b: {input: 0.5, output: 1.5}}`"}, nil},
		{"priced as suggested", unpriced + "pricing: {acme-chat-7b: {input: 0.5, output: 1.5}}\n", nil, []string{"no price is known", "lower bounds"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if err := os.WriteFile(cfgPath, []byte(tt.cfg), 0o644); err != nil {
				t.Fatal(err)
			}
			code, out, errs := run(t, dir, "run", "example", "--dry-run")
			if code != 0 {
				t.Fatalf("run --dry-run: exit %d\n%s", code, errs)
			}
			for _, w := range tt.want {
				if !strings.Contains(out+errs, w) {
					t.Errorf("dry run does not say %q:\n%s%s", w, out, errs)
				}
			}
			for _, w := range tt.not {
				if strings.Contains(out+errs, w) {
					t.Errorf("dry run says %q:\n%s%s", w, out, errs)
				}
			}
		})
	}
}
