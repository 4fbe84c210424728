package human

import (
	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/stages"
)

// A person's message is held to the same turn checks as a simulated
// user's reply (stages.CheckUserReply): empty, a JSON blob, reasoning
// meant to stay hidden, the assistant's voice, a refusal to play, saying
// it is a test, the previous message again, the hidden goal stated word
// for word. A simulated user's failing reply is asked again and never
// reaches the target; a person's failing message is refused with the
// reason, for them to rephrase, and never reaches the target either — so
// every stored conversation passed the checks on every turn, and says so
// (Validity, checks "turns").

// CheckMessage runs the turn checks on msg, the next message of c, for a
// scenario whose hidden goal is latentGoal: nil, or why it would not be
// sent.
func CheckMessage(c *Conversation, msg, latentGoal string) *stages.TurnProblem {
	prev := ""
	for i := len(c.Transcript) - 1; i >= 0; i-- {
		if c.Transcript[i].Role == "user" {
			prev = c.Transcript[i].Content
			break
		}
	}
	// A person's message has no reply format: it is the message line.
	return stages.CheckUserReply("Message: "+msg, msg, false, stages.TurnContext{Previous: prev, LatentGoal: latentGoal, First: len(c.Transcript) == 0})
}

// turnChecked is the validity of a conversation whose every stored turn
// passed the turn checks; the viewer then has it audited when the audit is
// on (runner.Player.AuditHuman), which replaces it.
func turnChecked() *artifacts.Validity {
	yes := true
	return &artifacts.Validity{Valid: &yes, Checks: "turns"}
}
