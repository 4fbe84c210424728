package stages

import (
	"regexp"
	"strings"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/llm"
)

// suspectTalk is the suspect check's lexicon: meta-talk a broken simulator
// writes and a person typing to an assistant rarely does — the chat named
// as an exercise, role-play, simulation or scenario; staying in or breaking
// character; the persona, the instructions or the goal of the conversation
// spoken of; the assistant addressed as a system whose replies are looked
// at. Unlike the turn checks it does not re-ask (a person can say "for the
// purposes of this exercise" about a gym plan, and the check cannot be
// sure): a match only routes the conversation to the audit, which decides.
// So it may be wider than the turn checks, but each entry is still kept
// to phrasings an ordinary message seldom has: a false match costs one
// audit call. It is matched against the lower-cased message with curly
// apostrophes straightened (lowerMessage). docs/statistics.md lists it.
var suspectTalk = regexp.MustCompile(alternation(
	// The chat named as an exercise, role-play, simulation or scenario.
	`\b(?:purposes?|sake|point|rest|context|rules) of (?:this|the|our) (?:exercise|role-?play|simulation|scenario|conversation scenario)\b`,
	`\b(?:in|for|within|during) (?:this|the|our) (?:exercise|role-?play|simulation)\b`,
	`\bthis (?:is (?:just |only |all )?(?:an? )?)?(?:exercise|role-?play|hypothetical scenario|practice scenario|simulated scenario)(?:\s*[.,!?;:)]|\s*$)`,
	`\b(?:according to|as (?:per|in)|per) (?:the|my|this) (?:scenario|script|brief|persona|instructions|prompt|setup)\b`,
	`\b(?:the|this) scenario (?:says|said|calls for|requires|asks|wants|describes|states|has me)\b`,
	// Staying in or stepping out of the part.
	`\b(?:stay(?:ing|ed)?|remain(?:ing|ed)?|keep(?:ing)?|kept) in (?:character|role|persona)\b`,
	`\b(?:break(?:ing|s)?|broke|drop(?:ping|ped)?) (?:character|the (?:role|persona|act))\b`,
	`\b(?:step(?:ping|ped)?|get(?:ting)?|went|go(?:ing)?) out of (?:character|(?:the|my) (?:role|persona))\b`,
	`\b(?:as|playing|in the role of|acting as) (?:the|a) (?:simulated )?user(?: (?:here|in this))?\s*[,:]`,
	`\b(?:the|my|this) (?:persona|character brief|role description|user persona)\b`,
	// The instructions or the goal of the conversation spoken of.
	`\bmy (?:instructions|prompt|system prompt|brief)\b`,
	`\b(?:i was|i've been|i have been|i am|i'm|im) (?:instructed|told|asked|supposed|meant|prompted|scripted) to (?:play|act as|portray|simulate|pretend|role-?play|stay in)\b`,
	`\b(?:goal|objective|task|aim|point) (?:of|for|in) (?:this|the) (?:conversation|chat|exercise|scenario|role-?play|simulation|dialogue|interaction)\b`,
	`\bmy (?:goal|objective|task|mission) (?:here |in this (?:conversation|chat) )?is to (?:get|make|convince|persuade|push|steer|test|see (?:if|whether)) (?:you|the (?:assistant|ai|model))\b`,
	// The assistant addressed as a system under test.
	`\bthe (?:assistant|ai|model|chatbot|bot)(?:'s)? (?:response|reply|replies|responses|answer|output|should (?:have )?(?:respond|refuse|answer|say)|(?:is|was) (?:supposed|expected|being tested))\b`,
	`\b(?:how|whether|if) (?:the|this) (?:assistant|model|ai|chatbot) (?:respond|responds|reacts|handles|will (?:respond|react|handle))\b`,
))

// alternation joins the lexicon's entries into one regexp.
func alternation(entries ...string) string {
	return "(?:" + strings.Join(entries, ")|(?:") + ")"
}

// SuspectMessage is the suspect check on one message of the simulated user:
// the meta-talk it found (quoted), or "" when none.
func SuspectMessage(msg string) string {
	if m := suspectTalk.FindString(lowerMessage(msg)); m != "" {
		return quoteFound(m)
	}
	return ""
}

// suspectTranscript is the suspect check on a conversation: the first
// user message with meta-talk, as "turn N: <what it found>", or "".
func suspectTranscript(tr []artifacts.Turn) string {
	turn := 0
	for _, t := range tr {
		if t.Role != string(llm.RoleUser) {
			continue
		}
		turn++
		if m := SuspectMessage(t.Content); m != "" {
			return "user turn " + itoa(turn) + ": " + m
		}
	}
	return ""
}
