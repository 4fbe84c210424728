// Package artifacts defines the benchmark's files (scenarios.json,
// conversations.json, scores.json, results.json, cost.json) in upstream
// ImpactBench's formats, reads their legacy variants, and writes them
// atomically, byte-compatible with upstream's Python JSON output.
package artifacts

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"

	"github.com/impactbench/impactbench/internal/llm"
)

// Landmark is one turn instruction of a scenario.
type Landmark struct {
	Turn        int    `json:"turn"`
	Instruction string `json:"instruction"`
}

// Pair is one ordered key/value. Used for demographics (axis order matters)
// and for pass-through of unknown keys.
type Pair struct {
	Key   string
	Value any // a decoded JSON value, or json.RawMessage
}

// Demographic is an ordered axis→value mapping ({} when no axes).
type Demographic []Pair

// Scenario is one scenarios.json row (a demographic variant of a base scenario).
// Known fields are typed; any other key is kept in Extra, in file order.
type Scenario struct {
	ID                    string      `json:"id"`
	MetricID              string      `json:"metric_id"`
	Persona               string      `json:"persona"`
	HasPersona            bool        `json:"-"` // key present (upstream precedence rule)
	UserPersona           string      `json:"user_persona,omitempty"`
	UserGoal              string      `json:"user_goal"`
	LatentAdversarialGoal string      `json:"latent_adversarial_goal"`
	Landmarks             []Landmark  `json:"landmarks"`
	Demographic           Demographic `json:"demographic"`
	TargetSystemPrompt    string      `json:"target_system_prompt,omitempty"`
	Extra                 []Pair      `json:"-"`
}

// BaseID is the base scenario id (m01_s002 for m01_s002_v01).
func (s Scenario) BaseID() string { return BaseIDOf(s.ID) }

// SimPersona is the persona the simulated user plays: the demographic rewrite
// when there is one (fixes upstream's bug of preferring the neutral persona).
func (s Scenario) SimPersona() string {
	if s.UserPersona != "" {
		return s.UserPersona
	}
	return s.Persona
}

// Conversation end statuses.
const (
	StatusCompleted      = "completed"       // ran all turns
	StatusUserTerminated = "user_terminated" // simulated user said "terminate conversation"
	StatusMaxTurns       = "max_turns"       // reserved: stopped by a turn cap other than generation.turns
	StatusError          = "error"           // failed after retries; StatusReason says why
	StatusBudget         = "budget"          // stopped by the cost ceiling before finishing
	// StatusInvalid: a simulated user's reply still failed a turn check
	// (Fidelity) after its re-asks, so it was never sent; the transcript
	// holds the turns before it, and Validity says why.
	StatusInvalid = "invalid"
)

// Turn is one transcript message.
type Turn struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// UsageRecord is the `_usage` object: upstream's three keys first, ours after.
type UsageRecord struct {
	Cost              float64 `json:"cost"`
	InputTokens       int     `json:"input_tokens"`
	OutputTokens      int     `json:"output_tokens"`
	CachedInputTokens int     `json:"cached_input_tokens,omitempty"`
	CacheWriteTokens  int     `json:"cache_write_tokens,omitempty"`
	// CacheWriteLongTokens: the part of CacheWriteTokens with the one-hour
	// lifetime; CacheSaving: what the prompt cache saved, in USD (see
	// llm.Usage).
	CacheWriteLongTokens int     `json:"cache_write_1h_tokens,omitempty"`
	CacheSaving          float64 `json:"cache_saving,omitempty"`
	ReasoningTokens      int     `json:"reasoning_tokens,omitempty"`
	Requests             int     `json:"requests,omitempty"`
	CostKnown            *bool   `json:"cost_known,omitempty"`
}

// UsageFrom converts llm.Usage to the on-disk record (cost rounded to 6 dp like upstream).
func UsageFrom(u llm.Usage) UsageRecord {
	r := UsageRecord{
		Cost:              Round(u.Cost, 6),
		InputTokens:       u.InputTokens,
		OutputTokens:      u.OutputTokens,
		CachedInputTokens: u.CachedInputTokens,
		CacheWriteTokens:  u.CacheWriteTokens,
		ReasoningTokens:   u.ReasoningTokens,
		Requests:          u.Requests,

		CacheWriteLongTokens: u.CacheWriteLongTokens,
		CacheSaving:          Round(u.CacheSaving, 6),
	}
	if !u.CostKnown && u.Requests > 0 {
		f := false
		r.CostKnown = &f
	}
	return r
}

// RunInfo records the models and settings a conversation was made with.
// It stays comparable (the report interns equal records).
type RunInfo struct {
	UserModel   string `json:"user_model"`
	TargetModel string `json:"target_model"` // provider model string (target_model above is the target id)
	Turns       int    `json:"turns"`
	Landmarks   bool   `json:"landmarks"`
	Perfunctory bool   `json:"perfunctory"`
	Seed        uint64 `json:"seed"`
	// UserTemperature and TargetTemperature are the temperatures configured
	// for the two models (null: none set, the provider default applies);
	// UserSeeds and TargetSeeds the sampling seeds their calls carried. All
	// four are absent in rows written before they were recorded.
	UserTemperature   Temperature `json:"user_temperature,omitzero"`
	TargetTemperature Temperature `json:"target_temperature,omitzero"`
	UserSeeds         Seeds       `json:"user_seeds,omitzero"`
	TargetSeeds       Seeds       `json:"target_seeds,omitzero"`
}

// Conversation is one runs/<target>/conversations.json row.
// Upstream keys first (id, metric_id, conv_id, _sample, target_model,
// transcript, _usage); our additions after.
type Conversation struct {
	ID          string      `json:"id"`
	MetricID    string      `json:"metric_id"`
	ConvID      string      `json:"conv_id"`
	Sample      int         `json:"_sample"`
	TargetModel string      `json:"target_model"`
	Transcript  []Turn      `json:"transcript"`
	Usage       UsageRecord `json:"_usage"`
	// UserUsage and AuditUsage are the simulated user's and the audit's
	// parts of Usage (the rest is the target's), for cost.json's split by
	// model; absent in older rows.
	UserUsage    *UsageRecord `json:"user_usage,omitempty"`
	AuditUsage   *UsageRecord `json:"audit_usage,omitempty"`
	Status       string       `json:"status,omitempty"`
	StatusReason string       `json:"status_reason,omitempty"`
	Run          *RunInfo     `json:"run,omitempty"`
	// Validity is the verdict on the simulated user: its turn checks and
	// its audit (nil when neither ran, as in upstream's rows).
	Validity *Validity `json:"validity,omitempty"`
	// UserThoughts is the simulated user's hidden reasoning (its "Thought:"
	// text), one per user message of Transcript; omitted when it gave none.
	// Only the report shows it: the target and the judge never see it.
	UserThoughts []string `json:"user_thoughts,omitempty"`
	// Truncated lists the Transcript indices of messages made from a reply
	// the client cut short (llm.Response.Truncated: longer than
	// llm.MaxReplyBytes, whatever max_tokens asked); omitted when none was.
	Truncated []int `json:"truncated,omitempty"`
	// Refused lists the Transcript indices of target replies the provider
	// stopped for safety (llm.Response.Refused): the message holds what
	// the provider gave, often nothing, and readers of the transcript
	// (the judge, the audit, the simulated user and the target's own next
	// turn) see prompts.RefusedNote in place of an empty one; omitted
	// when none was.
	Refused []int `json:"refused,omitempty"`
	// Fidelity records every simulated-user reply a turn check rejected and
	// every attempt at the conversation that was redone; omitted when there
	// were none.
	Fidelity *Fidelity `json:"fidelity,omitempty"`
	// Repairs records what was repaired to read the simulated user's
	// messages from its replies: "message <transcript index>: " and a fixed
	// phrase (userreply.ParseRepairs), never model text; omitted when every
	// reply was in the requested format.
	Repairs []string `json:"_repairs,omitempty"`
}

// Validity is the verdict on a conversation's simulated user. Its first
// five keys are the landmark check's (older rows have only those); the
// audit's further answers and the failure kinds follow.
type Validity struct {
	Valid         *bool  `json:"valid"`
	FollowedSteps *bool  `json:"followed_landmarks"`
	RevealedTest  *bool  `json:"revealed_test"`
	Reason        string `json:"reason"`
	Judge         string `json:"judge"` // the audit's model; "" when no audit ran
	// InPersona and PursuedGoal are the audit's other answers (nil: not
	// audited, or a landmark_check override that does not ask them).
	InPersona   *bool `json:"in_persona,omitempty"`
	PursuedGoal *bool `json:"pursued_goal,omitempty"`
	// Checks says what was checked: "turns", "audit" or "turns+audit".
	Checks string `json:"checks,omitempty"`
	// Failed lists the failure kinds of an invalid conversation (see
	// FailureKinds); empty when it is valid.
	Failed []string `json:"failed,omitempty"`
	// Error is why the audit gave no answer (Valid is then null): the
	// conversation is kept and judged, and the next run asks again.
	Error string `json:"error,omitempty"`
	// AuditSample is the conversation's stratum when the audit reads a
	// share of the conversations (validity.audit_share below 1): one of
	// the AuditSample* values, decided by its first attempt. Empty when
	// every conversation is audited.
	AuditSample string `json:"audit_sample,omitempty"`
	// AuditShare is the share of unflagged conversations drawn for the
	// audit (with AuditSample).
	AuditShare *float64 `json:"audit_share,omitempty"`
	// Suspect is what the suspect check found in the first attempt's user
	// messages (stratum AuditSuspect): the turn and the meta-talk.
	Suspect string `json:"suspect,omitempty"`
	// Repairs records what it took to read the audit's answer, as on
	// Score: what was removed around its JSON and one "asked again: answer
	// N …" per unusable answer before it, in fixed phrases (never model
	// text). Absent when its first answer was clean JSON.
	Repairs []string `json:"_repairs,omitempty"`
}

// The strata of a sampled audit (Validity.AuditSample, Score.AuditSample).
const (
	// AuditFlagged: the turn checks flagged the first attempt (a reply
	// asked again, or the attempt ended invalid); every attempt is audited.
	AuditFlagged = "flagged"
	// AuditSampled: unflagged, drawn, and its first attempt passed the audit.
	AuditSampled = "sampled"
	// AuditSampledInvalid: unflagged, drawn, and its first attempt failed
	// the audit (then redone, each redo audited).
	AuditSampledInvalid = "sampled_invalid"
	// AuditSkipped: unflagged and not drawn: valid by the turn checks
	// alone, its audit verdict estimated from the sampled ones.
	AuditSkipped = "skipped"
	// AuditSuspect: unflagged, but the suspect check found meta-talk in a
	// user message of its first attempt (talk of the exercise, the
	// role-play, the persona, its instructions…); every attempt is
	// audited, as a flagged one's.
	AuditSuspect = "suspect"
)

// IsInvalid reports whether v marks its conversation invalid.
func (v *Validity) IsInvalid() bool { return v != nil && v.Valid != nil && !*v.Valid }

// Failure kinds: why a simulated user's reply or conversation is invalid.
// The turn checks' kinds name what a single reply did; the audit's (prefixed
// "audit_") what the whole conversation did.
const (
	FailFormat    = "format"    // not a Message: line, or a JSON object/array instead of a message
	FailReasoning = "reasoning" // its Thought: or other reasoning inside the message
	FailRole      = "role"      // answering as the assistant (advice, "As an AI assistant…")
	FailRefusal   = "refusal"   // refusing to play the user
	FailReveal    = "reveal"    // saying it is an AI, a simulation or a test
	FailEmpty     = "empty"     // no message
	FailRepeat    = "repeat"    // the same message as its previous one
	FailGoalLeak  = "goal_leak" // the hidden goal stated word for word

	FailAuditPersona   = "audit_persona"   // the audit: out of persona
	FailAuditGoal      = "audit_goal"      // the audit: did not pursue the goal
	FailAuditLandmarks = "audit_landmarks" // the audit: did not follow the scripted steps
	FailAuditReveal    = "audit_reveal"    // the audit: revealed the test
)

// FailureKinds lists every failure kind in a fixed order (reports use it).
var FailureKinds = []string{FailFormat, FailReasoning, FailRole, FailRefusal, FailReveal, FailEmpty, FailRepeat,
	FailGoalLeak, FailAuditPersona, FailAuditGoal, FailAuditLandmarks, FailAuditReveal}

// Fidelity is what the checks of the simulated user did to a conversation.
type Fidelity struct {
	// Reasks lists every reply a turn check rejected, in order; none of
	// them was sent to the target.
	Reasks []Reask `json:"reasks,omitempty"`
	// Redos lists every attempt at the conversation that was found
	// invalid and made again with a fresh seed, in order.
	Redos []Redo `json:"redos,omitempty"`
}

// Reask is one simulated-user reply a turn check rejected.
type Reask struct {
	// Redo is the attempt at the conversation it belongs to (0: the
	// first, 1: the first redo, …).
	Redo int `json:"redo"`
	Turn int `json:"turn"`
	// Attempt numbers the turn's replies: 1 its first, 2 the first
	// re-ask's, …. A rejected reply was followed by a re-ask unless the
	// turn was out of re-asks (the attempt then ended as invalid).
	Attempt int    `json:"attempt"`
	Check   string `json:"check"`  // a failure kind
	Detail  string `json:"detail"` // what the check found
}

// Redo is one attempt at a conversation that was thrown away and made again.
type Redo struct {
	// Redo is the attempt it was replaced by (1: the first redo, …).
	Redo int `json:"redo"`
	// Failed and Reason are the discarded attempt's failure kinds and why.
	Failed []string `json:"failed"`
	Reason string   `json:"reason"`
	// Status is how the discarded attempt ended.
	Status string `json:"status"`
}

// MessageRepair reads one of a conversation's Repairs, "message <transcript
// index>: <fixed phrase>": the message's index and the phrase; ok is false
// for anything else.
func MessageRepair(r string) (index int, what string, ok bool) {
	rest, found := strings.CutPrefix(r, "message ")
	num, what, found2 := strings.Cut(rest, ": ")
	if !found || !found2 || what == "" {
		return 0, "", false
	}
	index, err := strconv.Atoi(num)
	if err != nil || index < 0 || strconv.Itoa(index) != num {
		return 0, "", false
	}
	return index, what, true
}

// ConvID builds `<scenario_id>__<target>__s<sample>` (upstream's documented
// `<scenario_id>__<model_id>` plus the sample, so samples stay distinct).
func ConvID(scenarioID, target string, sample int) string {
	return scenarioID + "__" + target + "__s" + itoa(sample)
}

// IsConvID reports whether conv is ConvID(scenarioID, target, sample),
// without building that string (aggregate checks 100,000 of them).
func IsConvID(conv, scenarioID, target string, sample int) bool {
	rest, ok := strings.CutPrefix(conv, scenarioID)
	if !ok {
		return false
	}
	if rest, ok = strings.CutPrefix(rest, "__"); !ok {
		return false
	}
	rest, ok = strings.CutPrefix(rest, target)
	if !ok {
		return false
	}
	rest, ok = strings.CutPrefix(rest, "__s")
	return ok && rest == strconv.Itoa(sample) // no allocation below 100
}

// JudgeVerdict is one panel member's verdict on a row.
type JudgeVerdict struct {
	Judge         string `json:"judge"`
	Present       *bool  `json:"present"`
	Justification string `json:"justification"`
	NullReason    string `json:"null_reason,omitempty"`
	// Evidence and Unverified: as on Score, for this judge's verdict.
	Evidence   []Quote `json:"evidence,omitempty"`
	Unverified *bool   `json:"unverified,omitempty"`
	// Usage is what this judge's calls cost (part of the score's _usage).
	Usage *UsageRecord `json:"_usage,omitempty"`
	// Repairs: as on Score, for this judge's verdict.
	Repairs []string `json:"_repairs,omitempty"`
}

// Quote is one piece of evidence a judge cited: the assistant's words it
// relied on, as the judge wrote them.
type Quote struct {
	Text string `json:"quote"`
	// Message is the transcript index of the assistant message the quote
	// was found in (see FindQuote), or nil when it is in none of them.
	Message *int `json:"message"`
}

// Score is one runs/<target>/scores.json row. Upstream keys first in
// upstream's order (id, metric_id, target_model, sample, present, passed,
// justification); our additions after.
type Score struct {
	ID            string         `json:"id"`
	MetricID      string         `json:"metric_id"`
	TargetModel   string         `json:"target_model"`
	Sample        int            `json:"sample"`
	Present       *bool          `json:"present"`
	Passed        *bool          `json:"passed"`
	Justification string         `json:"justification"`
	ConvID        string         `json:"conv_id,omitempty"`
	NullReason    string         `json:"null_reason,omitempty"`
	Judges        []JudgeVerdict `json:"judges,omitempty"`
	Usage         *UsageRecord   `json:"_usage,omitempty"`
	// Valid mirrors the conversation's validity verdict (nil: not checked).
	Valid *bool `json:"valid,omitempty"`
	// Judge names the judge of a single-judge row (a panel's are in Judges),
	// so unverified verdicts can be counted per judge.
	Judge string `json:"judge,omitempty"`
	// Evidence is what the row's verdict cites: short verbatim quotes of the
	// assistant's messages (none for an absent behaviour with nothing to quote).
	Evidence []Quote `json:"evidence,omitempty"`
	// Unverified is the marker of a verdict whose evidence is not in the
	// assistant's messages even after the judge was asked once more: true
	// when the verdict is kept but unverified, false when checked and found,
	// nil when there is no verdict or the row predates the check. For a
	// panel it is true when no judge of the majority had its evidence found.
	Unverified *bool `json:"unverified,omitempty"`
	// Invalid lists the failure kinds of a conversation whose simulated
	// user made it invalid (its validity's "failed"); such a row has no
	// verdict.
	Invalid []string `json:"invalid,omitempty"`
	// AuditSample mirrors the conversation's audit stratum
	// (Validity.AuditSample; empty when every conversation is audited).
	AuditSample string `json:"audit_sample,omitempty"`
	// UserModel is the model that played the simulated user (the
	// conversation's run.user_model).
	UserModel string `json:"user_model,omitempty"`
	// TranscriptHash identifies the transcript the row judged
	// (TranscriptHash): samples of one scenario with equal hashes are
	// byte-identical conversations.
	TranscriptHash string `json:"transcript_hash,omitempty"`
	// Refused mirrors the judged conversation's Refused: the transcript
	// indices of the target's replies its provider stopped for safety
	// (omitted when none was, and in rows judged before it was recorded).
	Refused []int `json:"refused,omitempty"`
	// Repairs records what it took to read a single judge's verdict, in
	// fixed phrases (never model text): what was removed from its answer
	// (a <think> block, a ``` code fence, prose around the JSON object)
	// and one "asked again: answer N …" per unusable answer before it.
	// Absent when the first answer was clean JSON. A panel's are on each
	// of its Judges.
	Repairs []string `json:"_repairs,omitempty"`
}

// PhaseCost is one cost.json entry (upstream shape: cost, input_tokens,
// output_tokens, phase; ours after).
type PhaseCost struct {
	Cost              float64 `json:"cost"`
	InputTokens       int     `json:"input_tokens"`
	OutputTokens      int     `json:"output_tokens"`
	Phase             string  `json:"phase"`
	CachedInputTokens int     `json:"cached_input_tokens,omitempty"`
	ReasoningTokens   int     `json:"reasoning_tokens,omitempty"`
	Requests          int     `json:"requests,omitempty"`
	CostKnown         *bool   `json:"cost_known,omitempty"`
	// CacheWriteTokens are the input tokens written to a prompt cache;
	// CacheSaving is the USD the cache saved (reads' discount less the
	// writes' surcharge); Models splits the phase by the model that made
	// the calls ("user_model: …", "target: …", "judge: …").
	CacheWriteTokens int                  `json:"cache_write_tokens,omitempty"`
	CacheSaving      float64              `json:"cache_saving,omitempty"`
	Models           map[string]ModelCost `json:"models,omitempty"`
}

// ModelCost is one model's share of a cost.json phase.
type ModelCost struct {
	Requests          int     `json:"requests"`
	Cost              float64 `json:"cost"`
	InputTokens       int     `json:"input_tokens"`
	OutputTokens      int     `json:"output_tokens"`
	CachedInputTokens int     `json:"cached_input_tokens"`
	CacheWriteTokens  int     `json:"cache_write_tokens"`
	CacheSaving       float64 `json:"cache_saving"`
}

func itoa(i int) string {
	if i == 0 {
		return "0"
	}
	neg := i < 0
	if neg {
		i = -i
	}
	var b [20]byte
	p := len(b)
	for i > 0 {
		p--
		b[p] = byte('0' + i%10)
		i /= 10
	}
	if neg {
		p--
		b[p] = '-'
	}
	return string(b[p:])
}

// TranscriptHash is "sha256:" and the first 16 hex digits of the SHA-256
// of the transcript's messages (role, a NUL, content, a NUL, each): enough
// to tell whether two samples of one scenario are the same conversation
// byte for byte. "" for an empty transcript.
func TranscriptHash(ts []Turn) string {
	if len(ts) == 0 {
		return ""
	}
	h := sha256.New()
	for _, t := range ts {
		h.Write([]byte(t.Role))
		h.Write([]byte{0})
		h.Write([]byte(t.Content))
		h.Write([]byte{0})
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)[:8])
}

// TranscriptDigest is the sha256, in hex, of a transcript's roles and
// messages (each length-prefixed, in order): what a human label records
// of the conversation its labeller read, so that a label on a
// conversation run again since (same conv_id, other messages) is told
// apart from a label on the conversation as it stands.
func TranscriptDigest(ts []Turn) string {
	h := sha256.New()
	var n [20]byte
	for _, t := range ts {
		for _, s := range [2]string{t.Role, t.Content} {
			h.Write(strconv.AppendInt(n[:0], int64(len(s)), 10))
			h.Write([]byte{':'})
			h.Write([]byte(s))
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}
