package llm

import "strings"

// ConversationStart is the user turn put in front of a dialogue that would
// otherwise open with the assistant. Anthropic and Gemini want the first
// turn to be the user's; when the simulated user is itself played by such a
// model, the dialogue it sees can start with its counterpart speaking (the
// roles are mirrored for it), so a neutral kickoff turn keeps the request
// valid without inventing content.
const ConversationStart = "(conversation start)"

// Turns splits msgs into system prompts and a dialogue that alternates
// user/assistant and starts with the user, as Anthropic and Gemini require:
// consecutive turns of one role are merged (joined by a blank line), and a
// dialogue that starts with the assistant (or is empty) gets a
// ConversationStart user turn in front.
func Turns(msgs []Message) (system []string, turns []Message) {
	turns = make([]Message, 0, len(msgs)+1)
	for _, m := range msgs {
		switch m.Role {
		case RoleSystem:
			system = append(system, m.Content)
			continue
		case RoleAssistant:
		default:
			m.Role = RoleUser
		}
		if n := len(turns); n > 0 && turns[n-1].Role == m.Role {
			turns[n-1].Content = joinTurns(turns[n-1].Content, m.Content)
			continue
		}
		if len(turns) == 0 && m.Role == RoleAssistant {
			turns = append(turns, Message{Role: RoleUser, Content: ConversationStart})
		}
		turns = append(turns, m)
	}
	if len(turns) == 0 {
		turns = append(turns, Message{Role: RoleUser, Content: ConversationStart})
	}
	return system, turns
}

func joinTurns(a, b string) string {
	switch {
	case strings.TrimSpace(a) == "":
		return b
	case strings.TrimSpace(b) == "":
		return a
	}
	return a + "\n\n" + b
}
