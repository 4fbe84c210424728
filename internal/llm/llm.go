// Package llm is the provider-neutral boundary between the benchmark stages and
// the model providers. Stages build a Request, a Client answers it; everything
// provider-specific (wire format, retries, pricing) lives behind Client.
package llm

import (
	"context"
	"time"
)

// Role of a chat message. Only the three roles every provider understands.
type Role string

const (
	RoleSystem    Role = "system"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
)

// Message is one chat turn.
type Message struct {
	Role    Role   `json:"role"`
	Content string `json:"content"`
}

// Purpose says which part of the pipeline a call serves. It is never sent to a
// provider: it labels accounting, picks JSON handling, and lets the offline
// model play the right role without parsing prompt prose.
type Purpose string

const (
	PurposeGenMetrics   Purpose = "gen_metrics"
	PurposeGenScenarios Purpose = "gen_scenarios"
	PurposeExpand       Purpose = "expand"
	PurposeUser         Purpose = "user"   // simulated user turn
	PurposeTarget       Purpose = "target" // model under test
	PurposeJudge        Purpose = "judge"
	PurposeLandmark     Purpose = "landmark_check"
)

// Request is one chat completion. System prompts travel as the first message
// with RoleSystem; adapters move them where their provider wants them.
type Request struct {
	Purpose  Purpose
	Messages []Message

	// MaxTokens caps output (0: adapter default, 2048 like upstream).
	MaxTokens int
	// Temperature is optional; nil leaves the provider default.
	Temperature *float64

	// JSON asks for a JSON object; Schema (a JSON Schema object), when set,
	// asks for schema-constrained output where the provider supports it.
	JSON       bool
	Schema     map[string]any
	SchemaName string

	// Seed identifies an independent draw (e.g. sample index mixed with the
	// conversation id). It is part of the cache key, so sample 2 never gets
	// sample 1's stored answer, it seeds the offline model, and adapters of
	// providers with a seed parameter send WireSeed(Seed) with the request,
	// so two samples are two different requests even to a provider that
	// samples deterministically. 0 means no seed: none is sent.
	Seed uint64

	// Cache says which prefixes of Messages other requests re-send, so that
	// a provider with explicit prompt caching writes only what will be
	// read (see CachePlan). The zero value: nothing is re-sent, nothing is
	// written to a cache (a one-off call such as a verdict).
	Cache CachePlan

	// Meta carries structured facts for the offline model only (never sent
	// over the wire, never part of the cache key).
	Meta map[string]string

	// Priority orders calls waiting for room in a rate-limit pool: higher
	// first, then in arrival order. A conversation's later turns go first,
	// so conversations in flight finish before new ones advance (their
	// verdicts then flow steadily instead of in waves). Never sent, never
	// part of the cache key.
	Priority int
}

// AcceptsRefusal reports whether a provider's safety stop is an answer to
// req (Response.Refused) rather than an error: only for the model under
// test, whose refusal is the behaviour being measured. The simulated user,
// the judge and the generators must produce usable output, so their
// refusals stay retryable errors.
func (req Request) AcceptsRefusal() bool { return req.Purpose == PurposeTarget }

// Usage counts tokens of one or more calls. InputTokens is the total prompt
// size including cached tokens; CachedInputTokens and CacheWriteTokens are the
// parts of it read from / written to a provider prompt cache.
type Usage struct {
	Requests          int `json:"requests"`
	InputTokens       int `json:"input_tokens"`
	OutputTokens      int `json:"output_tokens"`
	CachedInputTokens int `json:"cached_input_tokens,omitempty"`
	CacheWriteTokens  int `json:"cache_write_tokens,omitempty"`
	// CacheWriteLongTokens is the part of CacheWriteTokens written with
	// Anthropic's one-hour lifetime (billed 2× input, not 1.25×).
	CacheWriteLongTokens int     `json:"cache_write_1h_tokens,omitempty"`
	ReasoningTokens      int     `json:"reasoning_tokens,omitempty"`
	Cost                 float64 `json:"cost"`
	// CacheSaving is the USD prompt caching saved on these calls: their
	// input billed as plain input minus their cost (negative when cache
	// writes were never paid back by reads).
	CacheSaving float64 `json:"cache_saving,omitempty"`
	// CostKnown is false when any counted call had no known price: the cost
	// is then a lower bound and must be reported as unknown, not as $0.
	CostKnown bool `json:"cost_known"`
}

// Add returns the sum of two usages. Zero-value Usage (no calls) is neutral:
// its CostKnown=false must not poison a known total.
func (u Usage) Add(o Usage) Usage {
	if u.Requests == 0 && u.InputTokens == 0 && u.OutputTokens == 0 && u.Cost == 0 {
		return o
	}
	if o.Requests == 0 && o.InputTokens == 0 && o.OutputTokens == 0 && o.Cost == 0 {
		return u
	}
	return Usage{
		Requests:             u.Requests + o.Requests,
		InputTokens:          u.InputTokens + o.InputTokens,
		OutputTokens:         u.OutputTokens + o.OutputTokens,
		CachedInputTokens:    u.CachedInputTokens + o.CachedInputTokens,
		CacheWriteTokens:     u.CacheWriteTokens + o.CacheWriteTokens,
		CacheWriteLongTokens: u.CacheWriteLongTokens + o.CacheWriteLongTokens,
		ReasoningTokens:      u.ReasoningTokens + o.ReasoningTokens,
		Cost:                 u.Cost + o.Cost,
		CacheSaving:          u.CacheSaving + o.CacheSaving,
		CostKnown:            u.CostKnown && o.CostKnown,
	}
}

// Sub returns u less its part o (a total less one model's share of it),
// field by field as Add sums them; CostKnown stays u's.
func (u Usage) Sub(o Usage) Usage {
	return Usage{
		Requests:             u.Requests - o.Requests,
		InputTokens:          u.InputTokens - o.InputTokens,
		OutputTokens:         u.OutputTokens - o.OutputTokens,
		CachedInputTokens:    u.CachedInputTokens - o.CachedInputTokens,
		CacheWriteTokens:     u.CacheWriteTokens - o.CacheWriteTokens,
		CacheWriteLongTokens: u.CacheWriteLongTokens - o.CacheWriteLongTokens,
		ReasoningTokens:      u.ReasoningTokens - o.ReasoningTokens,
		Cost:                 u.Cost - o.Cost,
		CacheSaving:          u.CacheSaving - o.CacheSaving,
		CostKnown:            u.CostKnown,
	}
}

// Response is the answer to one Request.
type Response struct {
	Text         string `json:"text"`
	FinishReason string `json:"finish_reason,omitempty"`
	// Truncated is true when Text is only the start of what the provider
	// sent: the reply was longer than MaxReplyBytes (or one of its strings
	// longer than MaxWireString on the wire) and was cut there, whatever
	// max_tokens asked for. FinishReason stays what the provider said.
	Truncated bool `json:"truncated,omitempty"`
	// Refused is true when the provider stopped the reply for safety
	// (Anthropic stop_reason "refusal", OpenAI message.refusal, a Gemini
	// safety finishReason or blocked prompt) and the request accepts that
	// as an answer (Request.AcceptsRefusal). Text is whatever the provider
	// gave (OpenAI's refusal message, a partial reply), often "". A
	// refusal of a request that does not accept one is an error of
	// KindEmpty, retried like any empty answer.
	Refused   bool   `json:"refused,omitempty"`
	RequestID string `json:"request_id,omitempty"`
	Model     string `json:"model,omitempty"` // model name the provider reports
	// Usage covers every attempt made for this response, including failed
	// attempts that were billed (Requests counts all attempts).
	Usage Usage `json:"usage"`
	// Cached is true when the answer came from the local call store and cost
	// nothing now (Usage still holds what it cost originally).
	Cached  bool          `json:"cached,omitempty"`
	Latency time.Duration `json:"latency_ns,omitempty"`
	// RateLimit is what the provider's rate-limit headers said (nil if none).
	RateLimit *RateLimit `json:"-"`
	// SentSeed is the seed the adapter put on the wire for this answer (nil:
	// none); NoSeed says why none was sent. Stored with the answer, so a
	// replay reports what the original request carried.
	SentSeed *int64 `json:"sent_seed,omitempty"`
	NoSeed   string `json:"no_seed,omitempty"`
}

// Reasons an adapter gives in Response.NoSeed.
const (
	NoSeedParameter = "provider has no seed parameter"
	NoSeedInRequest = "the request had no seed"
)

// WireSeed maps a Request.Seed to 0..2^31-1, the range every seed
// parameter accepts: OpenAI's is an int64, Gemini's an int32, and
// OpenAI-compatible servers differ (llama.cpp's is a uint32), so a
// non-negative int32 is the one value that means the same everywhere.
// The seed is mixed first (SplitMix64's finaliser, a bijection) so every
// bit of it moves the top 31 bits kept.
func WireSeed(seed uint64) int64 {
	z := seed
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	z ^= z >> 31
	return int64(z >> 33)
}

// RateLimit is a provider's view of our remaining budget, from
// x-ratelimit-* (OpenAI, OpenAI-compatible) or anthropic-ratelimit-* headers.
// Zero fields mean "not reported".
type RateLimit struct {
	LimitRequests     int
	LimitTokens       int // combined or input tokens per minute
	RemainingRequests int
	RemainingTokens   int
	ResetRequests     time.Duration // time until the request window refills
	ResetTokens       time.Duration
}

// Client answers chat requests. Implementations must be safe for concurrent use.
type Client interface {
	Complete(ctx context.Context, req Request) (Response, error)
}

// ClientFunc adapts a function to Client (handy in tests).
type ClientFunc func(ctx context.Context, req Request) (Response, error)

func (f ClientFunc) Complete(ctx context.Context, req Request) (Response, error) { return f(ctx, req) }

// Meta keys the stages set on requests for the offline model. They repeat
// facts already present in the prompt text (so the offline model need not
// parse prose) and are never sent to a provider. The judge gets only what its
// prompt shows: the definition and the transcript.
const (
	MetaBenchmarkName        = "benchmark_name"        // gen_metrics, gen_scenarios
	MetaBenchmarkDescription = "benchmark_description" // gen_metrics, gen_scenarios
	MetaMetricID             = "metric_id"             // gen_scenarios, user
	MetaMetricName           = "metric_name"           // gen_scenarios, user
	MetaMetricType           = "metric_type"           // gen_scenarios, user ("positive"|"negative")
	MetaMetricDefinition     = "metric_definition"     // gen_scenarios, user, judge
	MetaCount                = "n"                     // gen_metrics (suggested), gen_scenarios: how many to write
	MetaTurns                = "turns"                 // gen_scenarios, expand, user: max turns
	MetaTurn                 = "turn"                  // user: current turn (1-based)
	MetaPersona              = "persona"               // expand (base persona), user (persona played)
	MetaUserGoal             = "user_goal"             // expand, user
	MetaLatentGoal           = "latent_goal"           // user
	MetaLandmark             = "landmark"              // user: instruction for this turn ("" if none)
	MetaLandmarksJSON        = "landmarks_json"        // expand, landmark_check: JSON array of {turn, instruction}
	MetaDemographic          = "demographic"           // expand: "age: Adult (18+), gender: female"
	MetaTranscriptJSON       = "transcript_json"       // judge, landmark_check: JSON array of {role, content}
)

// Output formats per Purpose (what a model must answer; the offline model
// produces exactly these):
//
//	gen_metrics:    {"metrics":[{"id","name","type","definition","examples":[…]}]}
//	gen_scenarios:  {"scenarios":[{"persona","user_goal","latent_adversarial_goal","landmarks":[{"turn","instruction"}]}]}
//	expand:         {"user_persona": "…", "landmarks":[{"turn","instruction"}]}
//	user:           "Thought: …\nMessage: …"  ("Message: terminate conversation" ends the dialogue)
//	target:         plain text reply
//	judge:          {"justification": "…", "evidence": ["verbatim quote of the assistant", …], "present": true|false}
//	landmark_check: {"in_persona": bool, "pursued_goal": bool, "followed_landmarks": bool, "revealed_test": bool, "reason": "…"}
