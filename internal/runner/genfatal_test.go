package runner

import (
	"errors"
	"strings"
	"testing"

	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/llm"
	"github.com/impactbench/impactbench/internal/llm/llmtest"
)

// TestGenerationEndsOnARefusedKey: a generator whose key the provider
// refuses (or whose quota is gone) fails every metric alike, and no rerun
// heals it. gen_metrics and gen_scenarios then end the run with that error and its hint
// (which apikey to check), as simulate and evaluate do — not with a
// PartialError's "run the same command again to retry only the failed
// ones" (found against a loopback Anthropic server with a wrong key).
func TestGenerationEndsOnARefusedKey(t *testing.T) {
	for _, tt := range []struct {
		name   string
		flavor llmtest.Flavor
		source string
		reply  llmtest.Reply
		kind   llm.ErrorKind
	}{
		{"openai wrong key", llmtest.OpenAI, "openai", llmtest.Reply{}, llm.KindAuth},
		{"anthropic wrong key", llmtest.Anthropic, "anthropic", llmtest.Reply{}, llm.KindAuth},
		{"openai quota", llmtest.OpenAI, "openai",
			llmtest.OpenAIError(429, "insufficient_quota", "insufficient_quota", "You exceeded your current quota"), llm.KindQuota},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg, bench := project(t)
			srv := llmtest.New(t, tt.flavor)
			key := srv.APIKey()
			if tt.kind == llm.KindAuth {
				key = "wrong-key-0123456789"
			} else {
				srv.Handle(func(llmtest.ChatRequest) llmtest.Reply { return tt.reply })
			}
			cfg.UserModel = config.ModelConfig{Model: "gen-model", Source: tt.source, APIKey: key, BaseURL: srv.BaseURL(), MaxRetries: 1}
			for _, stage := range []struct {
				name string
				run  func(*Runner) error
			}{
				{"gen_metrics --force", func(r *Runner) error { return r.GenMetrics(t.Context()) }},
				{"gen_scenarios", func(r *Runner) error { return r.GenScenarios(t.Context()) }},
			} {
				r := newRunner(t, cfg, bench, Options{Force: true})
				err := stage.run(r)
				var pe *PartialError
				if llm.KindOf(err) != tt.kind || errors.As(err, &pe) {
					t.Fatalf("%s: %v, want the provider's %s error", stage.name, err, tt.kind)
				}
				if tt.kind == llm.KindAuth && !strings.Contains(err.Error(), "check apikey of user_model") {
					t.Errorf("%s: %v, want the hint naming the apikey to check", stage.name, err)
				}
				r.Close()
			}
		})
	}
}
