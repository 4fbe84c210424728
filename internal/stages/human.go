package stages

import (
	"context"
	"fmt"
	"strings"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/llm"
	"github.com/impactbench/impactbench/internal/prompts"
)

// HumanUser is the user model named in the run block of a conversation a
// person played (the viewer's Play page), and the "user" of its rows.
const HumanUser = "human"

// TargetReply is the target's next reply in a conversation whose user
// messages someone other than the simulated user wrote — a person, on the
// viewer's Play page. The target is sent exactly what a simulated
// conversation's turn sends it: its system prompt (the scenario's, else
// the benchmark's, as in Simulate) and the dialogue, its user messages as
// data in user turns; nothing else of the scenario. An empty reply is
// asked for again as in Simulate.
//
// transcript must alternate user and assistant messages, starting with the
// user's and ending with the one to answer; the turn is its number of user
// messages. spec.Sample numbers the person's conversation of this
// scenario and target: the calls' seeds mix it with "human", so no call
// shares a seed (or a stored answer) with a simulated sample's.
func TargetReply(ctx context.Context, c llm.Client, spec SimSpec, transcript []artifacts.Turn) (reply artifacts.Turn, truncated bool, _ llm.Usage, _ error) {
	if err := checkDialogue(transcript); err != nil {
		return artifacts.Turn{}, false, llm.Usage{}, err
	}
	turn := (len(transcript) + 1) / 2
	if spec.Turns > 0 && turn > spec.Turns {
		return artifacts.Turn{}, false, llm.Usage{}, fmt.Errorf("turn %d is past the conversation's %d turns", turn, spec.Turns)
	}
	convSeed := seedOf(spec.Seed, "human", spec.Scenario.ID, spec.TargetID, itoa(spec.Sample))
	var seeds seedLog
	resp, usage, err := targetTurn(ctx, c, spec, targetMessages(targetSystemPrompt(spec), transcript), turn, convSeed, &seeds)
	if err != nil {
		return artifacts.Turn{}, false, usage, err
	}
	text := resp.Text
	if resp.Refused && strings.TrimSpace(text) == "" {
		// A person's conversation keeps no list of refused turns: the
		// note is the message, so the person sees why there is no reply
		// and the next turn sends no empty assistant message (which
		// Anthropic refuses).
		text = prompts.RefusedNote
	}
	return artifacts.Turn{Role: string(llm.RoleAssistant), Content: text}, resp.Truncated, usage, nil
}

// checkDialogue holds a transcript to answer to the shape every reader of
// transcripts expects: user and assistant in turn, the user's first and
// last, no empty message.
func checkDialogue(transcript []artifacts.Turn) error {
	if len(transcript)%2 == 0 {
		return fmt.Errorf("dialogue of %d messages: it must end with the user's message to answer", len(transcript))
	}
	for i, t := range transcript {
		want := string(llm.RoleUser)
		if i%2 == 1 {
			want = string(llm.RoleAssistant)
		}
		if t.Role != want {
			return fmt.Errorf("message %d is the %s's; the dialogue must alternate user and assistant, the user's first", i, t.Role)
		}
		if t.Content == "" {
			return fmt.Errorf("message %d is empty", i)
		}
	}
	return nil
}
