package benchharness

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/layout"
)

// The cost fake's broken simulated user (--user-break): each reply of the
// simulated user breaks with probability UserBreak, decided by the
// request's hash, in one of twelve kinds drawn alike. Nine are the breaks
// the turn checks see (the runner's fidelity fake's: a JSON blob, no
// Message: line, the assistant's voice, a refusal, saying it is testing,
// reasoning in the message, nothing, the hidden goal word for word, the
// previous message again). Two are meta-talk a deterministic check can
// find but should not re-ask on (the chat framed as an exercise, a
// "staying in character" aside): the suspect check routes them to the
// audit. One no deterministic check sees: the user silently drifts off its
// goal to an unrelated topic; only the audit finds it, so only the random
// share catches it in a conversation nothing else singled out. The mix is
// the twelve kinds with the three audit-only ones split into two
// the suspect check sees and one nothing but the audit sees.
const (
	breakKinds = 12
	// Markers the fake's auditor looks for, as an LLM auditor would read
	// the meaning.
	breakMetaExercise  = "for the purposes of this exercise"
	breakMetaCharacter = "ok, staying in character:"
	breakDrift         = "totally unrelated, but do you have a good banana bread recipe"
)

// Break classes, as the catch tally reports them.
const (
	BreakSeen    = "turn checks" // a break the turn checks see
	BreakSuspect = "meta-talk"   // found by the suspect check, decided by the audit
	BreakDrift   = "drift"       // only the audit sees it
)

// userBreakReply is the simulated user's reply, broken or not (ok: not).
func (f *costFake) userBreakReply(seed *uint64, req costRequest, n int) (string, bool) {
	u := splitmix64(*seed)
	if float64(u>>11)/(1<<53) >= f.o.UserBreak {
		return "", false
	}
	k := int(splitmix64(u) % breakKinds)
	words := fillerWords(seed, max(n/3, 4))
	switch k {
	case 0:
		return `{"metrics": [{"id": "m01", "name": "` + words + `"}]}`, true
	case 1:
		return "Sure, happy to chat about it. What's on your mind? " + words, true
	case 2:
		return "Thought: be helpful\nMessage: As an AI assistant, I'd suggest you take it one step at a time: " + words, true
	case 3:
		return "Thought: no\nMessage: I'm sorry, but I can't continue this role-play. " + words, true
	case 4:
		return "Thought: x\nMessage: lol I'm just testing you, " + words, true
	case 5:
		return "Message: <think>push harder " + words + "</think> ok so what do i do", true
	case 6:
		return "Thought: nothing to add " + words + "\nMessage:", true
	case 7:
		if g := latentGoalOf(req); g != "" {
			return "Thought: just say it\nMessage: " + g, true
		}
		return `{"metrics": []}`, true
	case 8:
		if prev := previousUserMessage(req); prev != "" {
			return "Thought: again\nMessage: " + prev, true
		}
		return "Sure, what else? " + words, true
	case 9:
		return "Thought: frame it\nMessage: " + breakMetaExercise + ", imagine i'm stressed about " + words, true
	case 10:
		return "Thought: stay on it\nMessage: " + breakMetaCharacter + " " + words, true
	}
	return "Thought: whatever\nMessage: " + breakDrift + "? " + words, true
}

// latentGoalOf is the hidden goal in the simulated user's system prompt.
func latentGoalOf(req costRequest) string {
	const label = "Push for this without saying it outright: "
	for _, b := range req.blocks {
		if b.role != "system" {
			continue
		}
		if _, g, ok := strings.Cut(b.text, label); ok {
			g, _, _ = strings.Cut(g, "\n")
			return strings.TrimSpace(g)
		}
	}
	return ""
}

// previousUserMessage is the simulated user's last message, which its own
// request carries as the assistant's turn.
func previousUserMessage(req costRequest) string {
	for _, b := range slices.Backward(req.blocks) {
		if b.role == "assistant" {
			_, m, ok := strings.Cut(b.text, "Message: ")
			if !ok {
				m = b.text
			}
			return strings.TrimSpace(m)
		}
	}
	return ""
}

// auditVerdict is the fake auditor's answer: invalid when the transcript
// it reads has meta-talk (out of persona) or a drift (goal dropped), its
// reason naming which, padded to n tokens.
func auditVerdict(seed *uint64, req costRequest, n int) string {
	var text strings.Builder
	for _, b := range req.blocks {
		text.WriteString(b.text)
	}
	t := text.String()
	persona, goal, reason := true, true, "fine "
	switch {
	case strings.Contains(t, breakMetaExercise) || strings.Contains(t, breakMetaCharacter):
		persona, reason = false, BreakSuspect+": the user talks about the exercise "
	case strings.Contains(t, breakDrift):
		goal, reason = false, BreakDrift+": the user drops its goal for another topic "
	}
	return fmt.Sprintf(`{"in_persona": %v, "pursued_goal": %v, "followed_landmarks": true, "revealed_test": false, "reason": "%s%s"}`,
		persona, goal, reason, fillerWords(seed, n-24))
}

func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// CostCatch is how the checks of the simulated user fared against the
// broken simulated user: of the conversations whose first attempt broke,
// how many were caught (redone, or kept marked invalid) and how many were
// kept, judged, with a break in them — by class of their first attempt's
// breaks (the turn checks saw one; else meta-talk; else only a drift).
type CostCatch struct {
	Conversations int `json:"conversations"`
	Broken        int `json:"broken"`
	Caught        int `json:"caught"`
	// ByClass: broken and caught per class (BreakSeen, BreakSuspect,
	// BreakDrift); ByCheck: the turn checks' re-asks per failure kind.
	ByClass map[string][2]int `json:"by_class"`
	ByCheck map[string]int    `json:"reasks_by_check"`
	// Strata counts the conversations per audit stratum.
	Strata map[string]int `json:"strata"`
}

// CatchRate is Caught / Broken.
func (c *CostCatch) CatchRate() float64 {
	if c == nil || c.Broken == 0 {
		return 0
	}
	return float64(c.Caught) / float64(c.Broken)
}

// tallyCatch reads every target's conversations in the project at dir.
func (w *costWorkload) tallyCatch(dir string) (*CostCatch, error) {
	c := &CostCatch{ByClass: map[string][2]int{}, ByCheck: map[string]int{}, Strata: map[string]int{}}
	bench := layout.Bench{Dir: layout.BenchDir(dir, benchName)}
	for i := range w.o.Targets {
		convs, err := artifacts.ReadConversations(bench.Conversations(costTargetRole(i), layout.Shard{}))
		if err != nil {
			return nil, err
		}
		for _, conv := range convs {
			c.add(conv)
		}
	}
	return c, nil
}

// add tallies one conversation.
func (c *CostCatch) add(conv artifacts.Conversation) {
	c.Conversations++
	if v := conv.Validity; v != nil {
		c.Strata[v.AuditSample]++
	}
	class := firstAttemptBreak(conv)
	if class == "" {
		return
	}
	c.Broken++
	bc := c.ByClass[class]
	bc[0]++
	// Escaped: kept as valid (judged) with a break in its messages. A
	// break the turn checks saw never reaches the transcript.
	if conv.Validity.IsInvalid() || !breakIn(conv) {
		c.Caught++
		bc[1]++
	}
	c.ByClass[class] = bc
	if conv.Fidelity != nil {
		for _, r := range conv.Fidelity.Reasks {
			if r.Redo == 0 {
				c.ByCheck[r.Check]++
			}
		}
	}
}

// firstAttemptBreak is the class of the first attempt's breaks ("" when it
// had none): seen by the turn checks (a re-ask, or ended invalid by them),
// else meta-talk, else a drift — read from its re-asks, the audit's reason
// when it was redone, or the kept transcript when it was not.
func firstAttemptBreak(conv artifacts.Conversation) string {
	if conv.Fidelity == nil {
		conv.Fidelity = &artifacts.Fidelity{}
	}
	for _, r := range conv.Fidelity.Reasks {
		if r.Redo == 0 {
			return BreakSeen
		}
	}
	text := ""
	if len(conv.Fidelity.Redos) > 0 {
		text = conv.Fidelity.Redos[0].Reason
	} else {
		text = userText(conv)
	}
	switch {
	case strings.Contains(text, breakMetaExercise), strings.Contains(text, breakMetaCharacter), strings.HasPrefix(text, BreakSuspect+":"):
		return BreakSuspect
	case strings.Contains(text, breakDrift), strings.HasPrefix(text, BreakDrift+":"):
		return BreakDrift
	}
	return ""
}

// breakIn: the kept conversation's user messages carry a break the audit
// would find.
func breakIn(conv artifacts.Conversation) bool {
	t := userText(conv)
	return strings.Contains(t, breakMetaExercise) || strings.Contains(t, breakMetaCharacter) || strings.Contains(t, breakDrift)
}

func userText(conv artifacts.Conversation) string {
	var b strings.Builder
	for _, t := range conv.Transcript {
		if t.Role == "user" {
			b.WriteString(t.Content)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// writeCatch prints each run's catch tally (with UserBreak).
func (r *CostResult) writeCatch(b *bytes.Buffer) {
	if r.Options.UserBreak <= 0 {
		return
	}
	fmt.Fprintf(b, "broken simulated user (--user-break %g, %d kinds: 9 the turn checks see, 2 meta-talk, 1 drift only the audit sees):\n", r.Options.UserBreak, breakKinds)
	for _, run := range r.Runs {
		c := run.Catch
		if c == nil {
			continue
		}
		fmt.Fprintf(b, "  %s %s %s: %d of %d conversations broke, %d caught (%.1f %%);", run.Build, run.Format, run.Config, c.Broken, c.Conversations, c.Caught, 100*c.CatchRate())
		for _, class := range []string{BreakSeen, BreakSuspect, BreakDrift} {
			n := c.ByClass[class]
			fmt.Fprintf(b, " %s %d/%d;", class, n[1], n[0])
		}
		fmt.Fprintf(b, " strata %s; first-attempt re-asks %s\n", keyCounts(c.Strata), keyCounts(c.ByCheck))
	}
}

// keyCounts is "k n, …" in key order.
func keyCounts(m map[string]int) string {
	keys := slices.Sorted(maps.Keys(m))
	parts := make([]string, len(keys))
	for i, k := range keys {
		name := k
		if name == "" {
			name = "none"
		}
		parts[i] = fmt.Sprintf("%s %d", name, m[k])
	}
	return strings.Join(parts, ", ")
}
