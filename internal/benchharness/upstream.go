package benchharness

import (
	"hash/fnv"
	"strconv"
	"strings"
	"time"

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
// own. Each request is then billed by costFake exactly as ours are (a
// quarter of each message's bytes, rounded up, at list prices): upstream
// batches nothing and marks no cache breakpoint, so on the Anthropic format
// nothing is cached, while on the OpenAI format the provider's automatic
// prefix caching reads what an earlier request of the same model sent.
//
// What is cached depends only on which messages are identical, so the
// texts are built to be identical exactly where upstream's are: its fixed
// texts are the same filler in every request, the scenario's text is the
// base scenario's (upstream shows the neutral persona to every variant),
// and the dialogue — sampled at the provider's default temperature, which
// upstream does not change — is different in every conversation.
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

// upFixed is one of upstream's fixed texts, by its byte length: the same
// neutral filler wherever upstream sends that text.
func upFixed(name string, n int) string { return sized("fixed/"+name, n) }

// sized is exactly n bytes of filler words determined by key.
func sized(key string, n int) string {
	if n <= 0 {
		return ""
	}
	h := fnv.New64a()
	h.Write([]byte(key))
	seed := h.Sum64()
	// fillerWords(k) is at least 4k − 1 bytes, and 4(⌊n/4⌋ + 1) − 1 ≥ n.
	return fillerWords(&seed, n/4+1)[:n]
}

// upstreamUserSystem is upstream's simulated-user system prompt for sc
// (landmarks on, perfunctory off): its fixed text, the persona and goal,
// the landmarks block and the adversarial block. Upstream shows the
// neutral persona (its bug: the demographic rewrite is never used), so
// every variant of a base scenario gets the same prompt. Where the
// placeholders sit in the file does not matter to the bill: the prompt is
// one message, and the fixed text before its first placeholder is far
// below the 1,024-token cache minimum.
func upstreamUserSystem(sc artifacts.Scenario, m config.Metric, turns int) string {
	lm := []string{upFixed("landmarks-open", upLandmarksOpen) + strconv.Itoa(turns), upFixed("landmarks-head", upLandmarksHead)}
	for _, l := range sc.Landmarks {
		lm = append(lm, "  Turn "+strconv.Itoa(l.Turn)+": "+l.Instruction)
	}
	lm = append(lm, "")
	note := upFixed("note-positive", upNotePositive)
	if m.Type == config.Negative {
		note = upFixed("note-negative", upNoteNegative)
	}
	head, _, _ := strings.Cut(m.Definition, "\n")
	head = strings.TrimRight(head, ".")
	adv := []string{upFixed("adversarial-head", upAdversarialHead)}
	if latent := strings.TrimSpace(sc.LatentAdversarialGoal); latent != "" {
		adv = append(adv, "", upFixed("latent-label", upLatentLabel)+latent)
	}
	adv = append(adv, "", upFixed("metric-label", upMetricLabel)+m.Name+note, upFixed("checks-label", upChecksLabel)+head+".", "",
		upFixed("adversarial-tail1", upAdversarialTail1), upFixed("adversarial-tail2", upAdversarialTail2), "")
	return upFixed("user-system", upUserSystemFixed) + sc.Persona + sc.UserGoal + strings.Join(lm, "\n") + strings.Join(adv, "\n")
}

// upstreamTurnPrompt is upstream's turn-k prompt: turn_first.txt on turn 1,
// then the header, turn_next.txt's text and the landmark reminder.
func upstreamTurnPrompt(k, turns int) string {
	if k == 1 {
		return upFixed("turn-first", upTurnFirst)
	}
	return "Turn " + strconv.Itoa(k) + " of " + strconv.Itoa(turns) + ".\n" + upFixed("turn-next", upTurnNextFixed) + upFixed("reminder", upReminder)
}

// upstreamConversation is upstream's requests for one conversation whose
// simulated user wrote userMsgs (without the "Message:" label, as upstream
// keeps them) and whose target replied replies: the simulated user's call
// k sends its system prompt, the dialogue so far (its messages as user,
// the target's as assistant) and the turn prompt, which is not kept; the
// target's sends its system prompt and the dialogue.
func upstreamConversation(userSystem, targetSystem string, userMsgs, replies []string) (user, target []costRequest) {
	var history []cacheBlock
	for k := range userMsgs {
		u := append(append([]cacheBlock{{role: "system", text: userSystem}}, history...),
			cacheBlock{role: "user", text: upstreamTurnPrompt(k+1, len(userMsgs))})
		user = append(user, plainRequest(u))
		history = append(history, cacheBlock{role: "user", text: userMsgs[k]})
		target = append(target, plainRequest(append([]cacheBlock{{role: "system", text: targetSystem}}, history...)))
		history = append(history, cacheBlock{role: "assistant", text: replies[k]})
	}
	return user, target
}

// upstreamVerdict is upstream's judge call for one conversation: a system
// prompt and one user message holding the instruction, the metric block,
// the transcript as "USER: …"/"ASSISTANT: …" paragraphs and the template.
func upstreamVerdict(m config.Metric, userMsgs, replies []string) costRequest {
	var tr []string
	for k := range userMsgs {
		tr = append(tr, "USER: "+userMsgs[k], "ASSISTANT: "+replies[k])
	}
	user := upFixed("judge-instruction", upJudgeInstruction) + "\n\nMETRICS:\nID: " + m.ID + "\nDefinition: " + m.Definition +
		"\n\nCONVERSATION:\n" + strings.Join(tr, "\n\n") + "\n\nReturn JSON:\n{\n" + upFixed("judge-template", upJudgeSchemaFixed) + m.ID + "\n}"
	return plainRequest([]cacheBlock{{role: "system", text: upFixed("judge-system", upJudgeSystem)}, {role: "user", text: user}})
}

// plainRequest is a request without cache breakpoints, as upstream sends
// every request (the blocks are copied: callers reuse their history).
func plainRequest(blocks []cacheBlock) costRequest {
	return costRequest{blocks: append([]cacheBlock(nil), blocks...), ttls: make([]time.Duration, len(blocks))}
}
