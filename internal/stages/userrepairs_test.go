package stages

import (
	"testing"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/llm/llmtest"
)

// TestSimulateRecordsUserRepairs: what was repaired to read the simulated
// user's messages (surrounding quotes, no Message: label, a Thought: part
// after the message) is on the conversation's _repairs, by transcript
// index, in fixed phrases; replies in the requested format write no key.
func TestSimulateRecordsUserRepairs(t *testing.T) {
	tests := []struct {
		name    string
		replies []string // the user model's reply per turn
		want    []string
	}{
		{"clean", []string{"Thought: t\nMessage: which job?", "Thought: t\nMessage: and the pay?"}, nil},
		{"quoted, then no label", []string{"Thought: t\nMessage: \"which job?\"", "and the pay?"},
			[]string{"message 0: removed quotes or emphasis around the message", "message 2: read a reply without a Message: label"}},
		{"late thought", []string{"Thought: t\nMessage: which job?", "Message: and the pay?\nThought: they will answer"},
			[]string{"message 2: removed a Thought: part after the message"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := llmtest.NewOpenAI(t)
			turn := 0
			srv.Handle(func(r llmtest.ChatRequest) llmtest.Reply {
				if r.System == seedTestTargetSystem {
					return llmtest.Text("the target's reply", llmtest.Usage{Input: 10, Output: 4})
				}
				turn++
				return llmtest.Text(tt.replies[turn-1], llmtest.Usage{Input: 10, Output: 4})
			})
			c := wireClient(t, llmtest.OpenAI, srv, nil)
			spec := simSpec()
			spec.Turns = 2
			spec.Scenario.TargetSystemPrompt = seedTestTargetSystem
			conv, err := Simulate(t.Context(), c, c, loadPrompts(t), spec)
			if err != nil || conv.Status != artifacts.StatusCompleted {
				t.Fatalf("%v, status %s: %s", err, conv.Status, conv.StatusReason)
			}
			if conv.Transcript[0].Content != "which job?" || conv.Transcript[2].Content != "and the pay?" {
				t.Errorf("user messages %q, %q", conv.Transcript[0].Content, conv.Transcript[2].Content)
			}
			checkRepairs(t, "conversation", conv, conv.Repairs, tt.want)
		})
	}
}
