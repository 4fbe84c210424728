package stages

import (
	"bytes"
	"testing"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/callstore"
	"github.com/impactbench/impactbench/internal/llm"
	"github.com/impactbench/impactbench/internal/llm/anthropic"
	"github.com/impactbench/impactbench/internal/llm/gemini"
	"github.com/impactbench/impactbench/internal/llm/llmtest"
	"github.com/impactbench/impactbench/internal/llm/openai"
)

const seedTestTargetSystem = "TARGET-SYSTEM"

// wireClient builds the real adapter for flavor against srv, with the
// given configured temperature.
func wireClient(t *testing.T, flavor llmtest.Flavor, srv *llmtest.Server, temp *float64) llm.Client {
	t.Helper()
	var (
		c   llm.Client
		err error
	)
	hc := srv.Client()
	switch flavor {
	case llmtest.OpenAI:
		c, err = openai.New(openai.Config{APIKey: srv.APIKey(), BaseURL: srv.BaseURL(), Model: "m", HTTPClient: hc, Temperature: temp})
	case llmtest.Gemini:
		c, err = gemini.New(gemini.Config{APIKey: srv.APIKey(), BaseURL: srv.BaseURL(), Model: "m", HTTPClient: hc, Temperature: temp})
	case llmtest.Anthropic:
		c, err = anthropic.New(anthropic.Config{APIKey: srv.APIKey(), BaseURL: srv.BaseURL(), Model: "m", HTTPClient: hc, Temperature: temp})
	}
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Two samples of one scenario must be two different requests on the wire
// wherever the provider takes a seed, and the same sample must send the
// same requests again on a rerun (so the call store and the provider's
// best-effort determinism both reproduce it). Anthropic has no seed
// parameter: its requests carry none and the run block says so. The run
// block records the configured temperatures and exactly the seeds sent.
func TestSamplesDifferOnTheWire(t *testing.T) {
	tests := []struct {
		flavor llmtest.Flavor
		seeds  bool
	}{
		{llmtest.OpenAI, true},
		{llmtest.Gemini, true},
		{llmtest.Anthropic, false},
	}
	targetTemp := 0.9
	for _, tc := range tests {
		t.Run(string(tc.flavor), func(t *testing.T) {
			srv := llmtest.New(t, tc.flavor)
			srv.Handle(func(r llmtest.ChatRequest) llmtest.Reply {
				if r.System == seedTestTargetSystem {
					return llmtest.Text("the target's reply", llmtest.Usage{Input: 10, Output: 4})
				}
				return llmtest.Text("Thought: t\nMessage: the same question", llmtest.Usage{Input: 10, Output: 4})
			})
			user := wireClient(t, tc.flavor, srv, nil)
			target := wireClient(t, tc.flavor, srv, &targetTemp)
			p := loadPrompts(t)
			simulate := func(sample int) (artifacts.Conversation, []llmtest.Request) {
				spec := simSpec()
				spec.Turns = 2
				spec.Sample = sample
				spec.Scenario.TargetSystemPrompt = seedTestTargetSystem
				spec.TargetTemperature = &targetTemp
				before := len(srv.Requests())
				conv, err := Simulate(t.Context(), user, target, p, spec)
				if err != nil || conv.Status != artifacts.StatusCompleted {
					t.Fatalf("sample %d: %v, status %s: %s", sample, err, conv.Status, conv.StatusReason)
				}
				reqs := srv.Requests()[before:]
				if len(reqs) != 4 { // user, target, user, target
					t.Fatalf("sample %d: %d requests, want 4", sample, len(reqs))
				}
				return conv, reqs
			}
			c1, r1 := simulate(1)
			c2, r2 := simulate(2)
			c1again, r1again := simulate(1)

			for i := range r1 {
				if !bytes.Equal(r1[i].Raw, r1again[i].Raw) {
					t.Errorf("request %d: sample 1 sent something else on rerun:\n%s\n%s", i, r1[i].Raw, r1again[i].Raw)
				}
				s1, s2 := r1[i].Chat.Seed, r2[i].Chat.Seed
				if !tc.seeds {
					if s1 != nil || s2 != nil || bytes.Contains(r1[i].Raw, []byte(`"seed"`)) {
						t.Errorf("request %d carries a seed: %s", i, r1[i].Raw)
					}
					continue
				}
				if s1 == nil || s2 == nil {
					t.Fatalf("request %d: no seed sent (sample 1 %v, sample 2 %v): %s", i, s1, s2, r1[i].Raw)
				}
				if *s1 == *s2 || bytes.Equal(r1[i].Raw, r2[i].Raw) {
					t.Errorf("request %d: samples 1 and 2 sent the same request (seed %d):\n%s", i, *s1, r1[i].Raw)
				}
			}
			if tc.seeds {
				// Distinct across the calls of one conversation too.
				seen := map[int64]bool{}
				for _, r := range r1 {
					seen[*r.Chat.Seed] = true
				}
				if len(seen) != len(r1) {
					t.Errorf("seeds repeat within a conversation: %v", seen)
				}
			}

			if *c1.Run != *c1again.Run {
				t.Errorf("run block changed on rerun:\n%+v\n%+v", c1.Run, c1again.Run)
			}
			for _, run := range []struct {
				conv artifacts.Conversation
				reqs []llmtest.Request
			}{{c1, r1}, {c2, r2}} {
				checkRunBlock(t, run.conv.Run, run.reqs, tc.seeds, targetTemp)
			}
		})
	}
}

// checkRunBlock compares the run block with what went over the wire.
func checkRunBlock(t *testing.T, run *artifacts.RunInfo, reqs []llmtest.Request, seeds bool, targetTemp float64) {
	t.Helper()
	if v, ok := run.TargetTemperature.Get(); !ok || v != targetTemp {
		t.Errorf("run target_temperature = %v (set %v), want %v", v, ok, targetTemp)
	}
	if _, ok := run.UserTemperature.Get(); ok || run.UserTemperature.IsZero() {
		t.Errorf("run user_temperature = %+v, want null (provider default)", run.UserTemperature)
	}
	for i, r := range reqs {
		isTarget := i%2 == 1
		if got := r.Chat.Temperature; isTarget != (got != nil) || (got != nil && *got != targetTemp) {
			t.Errorf("request %d: temperature on the wire %v does not match the run block", i, got)
		}
	}
	for role, rec := range map[string]artifacts.Seeds{"user": run.UserSeeds, "target": run.TargetSeeds} {
		sent, why := rec.Sent()
		if !seeds {
			if sent != nil || why != llm.NoSeedParameter {
				t.Errorf("%s_seeds = %v %q, want %q", role, sent, why, artifacts.SeedsNotSent+llm.NoSeedParameter)
			}
			continue
		}
		first := 0
		if role == "target" {
			first = 1
		}
		var onWire []int64
		for i := first; i < len(reqs); i += 2 {
			onWire = append(onWire, *reqs[i].Chat.Seed)
		}
		if len(sent) != len(onWire) {
			t.Fatalf("%s_seeds = %v, the wire carried %v", role, sent, onWire)
		}
		for i := range sent {
			if sent[i] == nil || *sent[i] != onWire[i] {
				t.Errorf("%s_seeds[%d] = %v, the wire carried %d", role, i, sent[i], onWire[i])
			}
		}
	}
}

// A rerun replays the conversation from the call store without a request,
// and its run block still names the seeds the original requests carried.
func TestReplayedConversationKeepsItsSeeds(t *testing.T) {
	srv := llmtest.NewOpenAI(t)
	srv.Handle(func(r llmtest.ChatRequest) llmtest.Reply {
		if r.System == seedTestTargetSystem {
			return llmtest.Text("the target's reply", llmtest.Usage{Input: 10, Output: 4})
		}
		return llmtest.Text("Thought: t\nMessage: a question", llmtest.Usage{Input: 10, Output: 4})
	})
	c := wireClient(t, llmtest.OpenAI, srv, nil)
	dir := t.TempDir()
	p := loadPrompts(t)
	simulate := func() artifacts.Conversation {
		u, err := callstore.Open(dir, false).Unit("sim/s1")
		if err != nil {
			t.Fatal(err)
		}
		defer u.Close()
		spec := simSpec()
		spec.Turns, spec.Sample = 2, 1
		spec.Scenario.TargetSystemPrompt = seedTestTargetSystem
		id := callstore.Identity{Provider: "openai", BaseURL: srv.BaseURL(), Model: "m"}
		conv, err := Simulate(t.Context(), u.Client(id, c), u.Client(id, c), p, spec)
		if err != nil || conv.Status != artifacts.StatusCompleted {
			t.Fatalf("%v, status %s: %s", err, conv.Status, conv.StatusReason)
		}
		return conv
	}
	first := simulate()
	calls := srv.Calls()
	again := simulate()
	if srv.Calls() != calls {
		t.Errorf("rerun made %d requests, want 0", srv.Calls()-calls)
	}
	if *first.Run != *again.Run {
		t.Errorf("replayed run block differs:\n%+v\n%+v", first.Run, again.Run)
	}
	if sent, _ := again.Run.TargetSeeds.Sent(); len(sent) != 2 || sent[0] == nil || sent[1] == nil {
		t.Errorf("replayed target_seeds = %v, want the 2 seeds sent", sent)
	}
}
