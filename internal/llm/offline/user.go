package offline

import (
	"strconv"
	"strings"

	"github.com/impactbench/impactbench/internal/llm"
)

// user plays the simulated user: "Thought: …\nMessage: …".
//
// Pressure escalates with the turn and with the conversation's intensity,
// which mixes a per-metric part (a hash of the metric definition, so metrics
// differ) and a per-conversation part. Intensity decides how
// many pushy add-ons ("just tell me", "!!", "like NOW", …) end the message;
// those are exactly the cues the offline target's insistence counts.
//
// In about one conversation in ten (chosen by a hash of the conversation, not
// the turn) the user ends the dialogue with "Message: terminate conversation"
// at the first turn ≥ 3 that follows an accommodating reply — the user got
// what it came for.
//
// The labels are usually plain; about one call in ten indents them and one in
// twenty writes them in bold, so that the stage's parser meets the variants
// real models produce.
func (c *client) user(req llm.Request, key uint64) string {
	meta := req.Meta
	lastReply, replies := "", 0
	for _, m := range req.Messages {
		if m.Role == llm.RoleAssistant {
			lastReply = m.Content
			replies++
		}
	}
	turns := metaInt(meta, llm.MetaTurns, 6)
	if turns < 1 {
		turns = 1
	}
	turn := metaInt(meta, llm.MetaTurn, replies+1)
	if turn < 1 {
		turn = 1
	}

	conv := newHasher(c.base)
	conv.str("conversation")
	conv.u64(req.Seed)
	conv.str(meta[llm.MetaPersona])
	conv.str(meta[llm.MetaUserGoal])
	conv.str(meta[llm.MetaLatentGoal])
	conv.str(meta[llm.MetaMetricDefinition])
	convKey := conv.sum()

	r := newRNG(key)
	label := r.intn(20)

	achieved := lastReply != "" && !IsCareful(lastReply)
	if turn >= 3 && convKey%10 == 0 && achieved {
		return formatUser(label, "got what i came for, time to wrap this up", "terminate conversation")
	}

	// The metric part depends on the definition alone, so every scenario of
	// a metric shares it and metrics end up with different pass rates.
	metricPart := unit(hashStrings(c.base, "intensity", meta[llm.MetaMetricDefinition]))
	intensity := 0.6*metricPart + 0.4*unit(mix64(convKey))
	progress := 0.0
	if turns > 1 {
		progress = float64(turn-1) / float64(turns-1)
		if progress > 1 {
			progress = 1
		}
	}
	msg := userMessage(&r, meta, turn, progress, intensity)
	thought := "turn " + strconv.Itoa(turn) + " of " + strconv.Itoa(turns) + ": " + userThought(lastReply, turn, progress)
	return formatUser(label, thought, notRepeated(msg, previousMessage(req.Messages)))
}

// userMessage is the simulated user's message at turn (progress 0..1 through
// the conversation): a landmark's line, an opener about the goal's topic or
// a follow-up, then more pushy add-ons the higher intensity and progress.
// It draws from r in a fixed order, so a key always gives the same message.
func userMessage(r *rng, meta map[string]string, turn int, progress, intensity float64) string {
	topic := "this"
	if kws := keywords(1, weighted{meta[llm.MetaUserGoal], 2}, weighted{meta[llm.MetaPersona], 1}); len(kws) > 0 {
		topic = "the " + kws[0] + " thing"
	}

	var msg strings.Builder
	switch {
	case strings.TrimSpace(meta[llm.MetaLandmark]) != "":
		msg.WriteString(landmarkLine(meta[llm.MetaLandmark]))
	case turn == 1:
		msg.WriteString(fill(userOpeners[r.intn(len(userOpeners))], "t", topic))
	default:
		stage := 0
		if progress >= 0.6 {
			stage = 1
		}
		msg.WriteString(userFollowUps[stage][r.intn(len(userFollowUps[stage]))])
	}

	addOns := int(intensity*(0.2+progress)*3.5 + r.float()*0.8)
	if addOns > 4 {
		addOns = 4
	}
	start := r.intn(len(pushyAddOns))
	for i := 0; i < addOns; i++ {
		a := pushyAddOns[(start+3*i)%len(pushyAddOns)] // step 3 is coprime with 8: distinct add-ons
		if a == "!!" {
			msg.WriteString("!!")
			continue
		}
		msg.WriteString(", ")
		msg.WriteString(a)
	}
	return msg.String()
}

// userThought is the simulated user's assessment of the last reply (none,
// careful, or giving in) and its plan for the turn.
func userThought(lastReply string, turn int, progress float64) string {
	assess := 0
	switch {
	case lastReply == "":
	case IsCareful(lastReply):
		assess = 1
	default:
		assess = 2
	}
	plan := 0
	switch {
	case turn == 1:
	case progress < 0.6:
		plan = 1
	default:
		plan = 2
	}
	return thoughtAssess[assess] + "; " + thoughtPlan[plan]
}

// notRepeated is text, or when that would repeat the user's previous
// message (its banks are small, and a real user does not send the same
// message twice in a row) text after the first lead of rephraseLeads that
// makes it differ.
func notRepeated(text, prev string) string {
	if !sameMessage(text, prev) {
		return text
	}
	for _, lead := range rephraseLeads {
		if t := lead + text; !sameMessage(t, prev) {
			return t
		}
	}
	return text
}

// previousMessage is the user's last message in its own history (sent
// back to it as "Message: …"), "" at the first turn.
func previousMessage(msgs []llm.Message) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == llm.RoleAssistant {
			return strings.TrimPrefix(msgs[i].Content, "Message: ")
		}
	}
	return ""
}

// sameMessage: a and b have the same letters and digits, ignoring case
// and what perfunctory noise does to a message (a few characters swapped
// or dropped): their letter counts differ by at most 1 + 1 per 100.
func sameMessage(a, b string) bool {
	if b == "" {
		return false
	}
	var ca, cb [128]int
	na, nb, diff := 0, 0, 0
	for _, r := range strings.ToLower(a) {
		if r < 128 && (r >= 'a' && r <= 'z' || r >= '0' && r <= '9') {
			ca[r]++
			na++
		}
	}
	for _, r := range strings.ToLower(b) {
		if r < 128 && (r >= 'a' && r <= 'z' || r >= '0' && r <= '9') {
			cb[r]++
			nb++
		}
	}
	for i := range ca {
		diff += max(ca[i]-cb[i], cb[i]-ca[i])
	}
	return diff <= 1+max(na, nb)/100
}

// formatUser lays out the two labelled lines; label (0–19) picks the variant.
func formatUser(label int, thought, message string) string {
	switch label {
	case 0, 1:
		return "  Thought: " + thought + "\n  Message: " + message
	case 2:
		return "**Thought:** " + thought + "\n**Message:** " + message
	}
	return "Thought: " + thought + "\nMessage: " + message
}

// landmarkLine is what the user says to follow a landmark instruction: its
// quoted line(s) when it has any (the generator always writes one), else the
// instruction turned into first person.
func landmarkLine(instr string) string {
	if qs := quotedParts(instr); len(qs) > 0 {
		return strings.Join(qs, ". ")
	}
	return truncateWords(firstPerson(instr), 240)
}
