package stages

import (
	"context"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/llm"
	"github.com/impactbench/impactbench/internal/llm/llmtest"
	"github.com/impactbench/impactbench/internal/prompts"
)

// retried wraps the adapter for flavor in the retry loop the clientset
// puts around every model (5 attempts), without waiting between them.
func retried(t *testing.T, flavor llmtest.Flavor, srv *llmtest.Server) llm.Client {
	return llm.WithRetry(wireClient(t, flavor, srv, nil), llm.RetryPolicy{
		Sleep: func(context.Context, time.Duration) error { return nil },
	})
}

// geminiBlocked is a Gemini answer whose prompt was blocked: no candidate,
// a promptFeedback.blockReason.
const geminiBlocked = `{"promptFeedback":{"blockReason":"PROHIBITED_CONTENT"},"usageMetadata":{"promptTokenCount":12,"totalTokenCount":12},"modelVersion":"m","responseId":"r1"}`

// refusals are the provider safety stops of each wire format, with the
// text the target's turn keeps.
var refusals = []struct {
	name     string
	flavor   llmtest.Flavor
	reply    llmtest.Reply
	wantText string
}{
	{"openai refusal", llmtest.OpenAI, llmtest.Reply{Refusal: "I can't help with that."}, "I can't help with that."},
	{"anthropic refusal", llmtest.Anthropic, llmtest.Reply{Refusal: "x"}, ""},
	{"anthropic partial", llmtest.Anthropic, llmtest.Reply{Text: "Here is how you", Refusal: "x"}, "Here is how you"},
	{"gemini SAFETY", llmtest.Gemini, llmtest.Reply{FinishReason: "SAFETY"}, ""},
	{"gemini blocked prompt", llmtest.Gemini, llmtest.Reply{Body: geminiBlocked}, ""},
}

// A target's reply its provider stops for safety is the target's answer:
// one request (not five retries), the conversation goes on (the simulated
// user answers the refusal, the target sees its own turn), the turn is
// listed in Refused, and the conversation is judged (a verdict, so it
// counts in the pass rate) with the judge shown the refusal note when the
// provider gave no text.
func TestRefusedTargetTurnIsTheAnswer(t *testing.T) {
	for _, tc := range refusals {
		t.Run(tc.name, func(t *testing.T) {
			srv := llmtest.New(t, tc.flavor)
			targetCalls := 0
			var judging atomic.Bool
			srv.Handle(func(r llmtest.ChatRequest) llmtest.Reply {
				switch {
				case r.System == seedTestTargetSystem:
					targetCalls++
					if targetCalls == 1 {
						return tc.reply
					}
					return llmtest.Text("a second answer", llmtest.Usage{Input: 10, Output: 4})
				case judging.Load():
					return llmtest.Text(`{"justification":"declined","evidence":[],"present":false}`, llmtest.Usage{Input: 10, Output: 4})
				}
				return llmtest.Text("Thought: t\nMessage: a question", llmtest.Usage{Input: 10, Output: 4})
			})
			user, target, judge := retried(t, tc.flavor, srv), retried(t, tc.flavor, srv), retried(t, tc.flavor, srv)
			p := loadPrompts(t)
			spec := simSpec()
			spec.Turns = 2
			spec.Scenario.TargetSystemPrompt = seedTestTargetSystem
			conv, err := Simulate(t.Context(), user, target, p, spec)
			if err != nil || conv.Status != artifacts.StatusCompleted {
				t.Fatalf("%v, status %s: %s", err, conv.Status, conv.StatusReason)
			}
			if targetCalls != 2 {
				t.Errorf("%d target requests, want 2 (the refused turn asked once)", targetCalls)
			}
			if len(conv.Transcript) != 4 || conv.Transcript[1].Content != tc.wantText || conv.Transcript[3].Content != "a second answer" {
				t.Fatalf("transcript %+v, want the refused turn %q then the second answer", conv.Transcript, tc.wantText)
			}
			if !slices.Equal(conv.Refused, []int{1}) {
				t.Errorf("refused = %v, want [1]", conv.Refused)
			}
			shown := tc.wantText
			if shown == "" {
				shown = prompts.RefusedNote
			}
			// What the simulated user and the target were shown next.
			var sawUser, sawTarget bool
			for _, r := range srv.Requests() {
				switch {
				case r.Chat.System == seedTestTargetSystem && len(r.Chat.Messages) == 3:
					sawTarget = r.Chat.Messages[1] == llm.Message{Role: llm.RoleAssistant, Content: shown}
				case r.Chat.System != seedTestTargetSystem && strings.Contains(r.Chat.LastUser(), shown):
					sawUser = true
				}
			}
			if !sawUser || !sawTarget {
				t.Errorf("the refused turn shown as %q: to the simulated user %v, to the target's next turn %v", shown, sawUser, sawTarget)
			}

			before := len(srv.Requests())
			judging.Store(true)
			row, _, err := Evaluate(t.Context(), []NamedClient{{Name: "j", Client: judge}}, p, metric, conv, JudgeOptions{})
			if err != nil || row.Present == nil || row.NullReason != "" {
				t.Fatalf("evaluate: %v, present %v, null reason %q", err, row.Present, row.NullReason)
			}
			// The score row mirrors the refused turns (results.json counts them).
			if !slices.Equal(row.Refused, []int{1}) {
				t.Errorf("score row refused = %v, want [1]", row.Refused)
			}
			reqs := srv.Requests()[before:]
			if len(reqs) != 1 {
				t.Fatalf("%d judge requests, want 1", len(reqs))
			}
			if prompt := string(reqs[0].Raw); !strings.Contains(prompt, shown) {
				t.Errorf("the judge's request does not show the refused turn as %q: %s", shown, prompt)
			}
		})
	}
}

// Only the target's refusal is an answer: the simulated user's and the
// judge's must be usable, so theirs are retried like any empty answer
// (5 attempts) and then fail.
func TestRefusedHelperCallsAreRetried(t *testing.T) {
	for _, tc := range refusals {
		for _, purpose := range []llm.Purpose{llm.PurposeUser, llm.PurposeJudge, llm.PurposeGenScenarios} {
			t.Run(tc.name+"/"+string(purpose), func(t *testing.T) {
				srv := llmtest.New(t, tc.flavor)
				srv.Handle(func(llmtest.ChatRequest) llmtest.Reply { return tc.reply })
				_, err := retried(t, tc.flavor, srv).Complete(t.Context(), llm.Request{Purpose: purpose,
					Messages: []llm.Message{{Role: llm.RoleSystem, Content: "s"}, {Role: llm.RoleUser, Content: "u"}}})
				if llm.KindOf(err) != llm.KindEmpty {
					t.Errorf("error %v, want kind %s", err, llm.KindEmpty)
				}
				if n := len(srv.Requests()); n != llm.DefaultMaxRetries+1 {
					t.Errorf("%d requests, want %d", n, llm.DefaultMaxRetries+1)
				}
			})
		}
	}
}

// A person playing the user (TargetReply) sees the note in place of a
// refused reply without text, asked once; a refusal with text is kept.
func TestTargetReplyShowsARefusal(t *testing.T) {
	for _, tc := range refusals {
		t.Run(tc.name, func(t *testing.T) {
			srv := llmtest.New(t, tc.flavor)
			srv.Handle(func(llmtest.ChatRequest) llmtest.Reply { return tc.reply })
			reply, _, _, err := TargetReply(t.Context(), retried(t, tc.flavor, srv), simSpec(), []artifacts.Turn{{Role: "user", Content: "hi"}})
			want := tc.wantText
			if want == "" {
				want = prompts.RefusedNote
			}
			if err != nil || reply.Content != want || len(srv.Requests()) != 1 {
				t.Errorf("reply %+v, err %v after %d requests; want %q after 1", reply, err, len(srv.Requests()), want)
			}
		})
	}
}
