package benchharness

import (
	"strconv"
	"strings"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/config"
)

// The upstream-shaped workload: what upstream ImpactBench (Python, commit
// 2010f45; shared/reference/impactbench-upstream.md §7, §8, §15) sends for
// the same conversations, by size. Upstream cannot run here, so its
// requests are rebuilt from facts about it: the structure of each request
// (which messages, in which order, what is kept between turns) and the
// byte length of each fixed text in them, measured from its prompt files
// and the strings its code joins. The fixed texts are filled with neutral
// filler of those lengths — never upstream's prose — and the variable
// parts (persona, goal, landmarks, metric, transcript) are the workload's
// own. Tokens are then counted exactly as the fake counts ours (a quarter
// of each message's bytes, rounded up), and priced at list prices: upstream
// marks no cache breakpoint and batches nothing.
const (
	// prompts/user_system.txt less its five $placeholders (the file is
	// sent verbatim, trailing newline included).
	upUserSystemFixed = 935
	// prompts/turn_first.txt, sent verbatim on turn 1.
	upTurnFirst = 318
	// prompts/turn_next.txt less $turn_header and $landmark_reminder.
	upTurnNextFixed = 299
	// The landmark reminder line of turns ≥ 2 (landmarks on), with its newline.
	upReminder = 38
	// The adversarial block: its five opening lines joined by newlines,
	// and the two closing lines.
	upAdversarialHead  = 302
	upAdversarialTail1 = 53
	upAdversarialTail2 = 81
	// Labels inside the adversarial block.
	upLatentLabel  = 33 // before the latent goal
	upMetricLabel  = 15 // before the metric name
	upNoteNegative = 38 // after the name of a negative metric
	upNotePositive = 37 // after the name of a positive one
	upChecksLabel  = 16 // before the definition's first line
	// The landmarks block's opening ("… at most N turns." is 39 bytes plus
	// the number), its heading line, and each landmark line's label
	// ("  Turn N: " is 9 bytes plus the number).
	upLandmarksOpen  = 39
	upLandmarksHead  = 19
	upLandmarkPrefix = 9
	// The judge: system prompt, instruction line, the labels around the
	// metric and the transcript, and the answer template (66 bytes plus
	// the metric id).
	upJudgeSystem      = 89
	upJudgeInstruction = 107
	upJudgeSchemaFixed = 66
)

// upstreamCall is one upstream request: its messages' byte lengths.
type upstreamCall []int

// tokens is the fake's count of the request.
func (c upstreamCall) tokens() int {
	n := 0
	for _, b := range c {
		n += (b + 3) / 4
	}
	return n
}

func digits(n int) int { return len(strconv.Itoa(n)) }

// upstreamUserSystem is the byte length of upstream's simulated-user
// system prompt for sc (landmarks on, perfunctory off). Upstream shows
// the neutral persona (its bug: the demographic rewrite is never used).
func upstreamUserSystem(sc artifacts.Scenario, m config.Metric, turns int) int {
	lm := []int{upLandmarksOpen + digits(turns), upLandmarksHead}
	for _, l := range sc.Landmarks {
		lm = append(lm, upLandmarkPrefix+digits(l.Turn)+len(l.Instruction))
	}
	lm = append(lm, 0)
	note := upNotePositive
	if m.Type == config.Negative {
		note = upNoteNegative
	}
	head, _, _ := strings.Cut(m.Definition, "\n")
	head = strings.TrimRight(head, ".")
	adv := []int{upAdversarialHead}
	if latent := strings.TrimSpace(sc.LatentAdversarialGoal); latent != "" {
		adv = append(adv, 0, upLatentLabel+len(latent))
	}
	adv = append(adv, 0, upMetricLabel+len(m.Name)+note, upChecksLabel+len(head)+1, 0, upAdversarialTail1, upAdversarialTail2, 0)
	return upUserSystemFixed + len(sc.Persona) + len(sc.UserGoal) + joined(lm) + joined(adv)
}

// joined is the length of parts joined by newlines.
func joined(parts []int) int {
	n := len(parts) - 1
	for _, p := range parts {
		n += p
	}
	return n
}

// upstreamTurnPrompt is the byte length of upstream's turn-k prompt.
func upstreamTurnPrompt(k, turns int) int {
	if k == 1 {
		return upTurnFirst
	}
	return upTurnNextFixed + len("Turn  of .\n") + digits(k) + digits(turns) + upReminder
}

// upstreamConversation is upstream's calls for one conversation whose
// messages have the given byte lengths (user messages without the
// "Message:" label, as upstream keeps them): the simulated user's call k
// sends its system prompt, the dialogue so far (its messages as user,
// the target's as assistant) and the turn prompt; the target's sends its
// system prompt and the dialogue.
func upstreamConversation(userSystem, targetSystem int, userMsgs, replies []int) (user, target []upstreamCall) {
	var history []int
	for k := range userMsgs {
		u := append(append(upstreamCall{userSystem}, history...), upstreamTurnPrompt(k+1, len(userMsgs)))
		user = append(user, u)
		history = append(history, userMsgs[k])
		target = append(target, append(upstreamCall{targetSystem}, history...))
		history = append(history, replies[k])
	}
	return user, target
}

// upstreamVerdict is upstream's judge call for one conversation: a system
// prompt and one user message holding the instruction, the metric block,
// the transcript as "USER: …"/"ASSISTANT: …" paragraphs and the template.
func upstreamVerdict(m config.Metric, userMsgs, replies []int) upstreamCall {
	tr := -2
	for k := range userMsgs {
		tr += len("USER: ") + userMsgs[k] + 2 + len("ASSISTANT: ") + replies[k] + 2
	}
	user := upJudgeInstruction + len("\n\nMETRICS:\nID: ") + len(m.ID) + len("\nDefinition: ") + len(m.Definition) +
		len("\n\nCONVERSATION:\n") + max(tr, 0) + len("\n\nReturn JSON:\n{\n") + upJudgeSchemaFixed + len(m.ID) + len("\n}")
	return upstreamCall{upJudgeSystem, user}
}
