package llm

import "strings"

// CachePlan is what a stage knows about a request's prefixes being sent
// again, which the request alone cannot show.
//
// Prompt caching bills a prefix re-read within the cache's lifetime at a
// tenth of the input price, but a provider with explicit breakpoints
// (Anthropic's cache_control) bills writing it at 1.25× (2× for the
// one-hour lifetime): a breakpoint pays only where a later request reads
// the prefix again before it expires. A conversation's turn k re-sends
// turn k−1's whole request, so every call but the last writes its prompt
// and the last only reads; a verdict is read once and writes nothing.
// Providers that cache on their own (OpenAI, Gemini, DeepSeek-style
// servers) need no marks and charge no writes; for them the stages put the
// constant part of every prompt first.
type CachePlan struct {
	// Write is how many leading messages the next request of the same
	// conversation re-sends, soon (0: none will, e.g. the last turn).
	Write int
	// Read is how many leading messages an earlier request of the
	// conversation sent and wrote: read them, writing nothing new.
	Read int
	// SharedSystem: the system prompt opens many conversations' requests
	// (a target's system prompt), so it is worth caching on its own.
	SharedSystem bool
	// Long: the next request comes minutes to hours later (conversations
	// simulated in batch waves), past the default five-minute lifetime of
	// a cached prefix: Anthropic marks get the one-hour lifetime, written
	// at 2× input instead of 1.25×, which pays when a wave takes under an
	// hour.
	Long bool
}

// Zero reports whether the plan marks nothing.
func (p CachePlan) Zero() bool { return p == CachePlan{} }

// Conversation is the plan of a conversation's call that sends msgs: every
// message is re-sent by the next call unless this is the last one, and
// the previous call's prompt (msgs less the two newest messages: its
// answer and this call's new turn) is read.
func Conversation(msgs []Message, last bool) CachePlan {
	p := CachePlan{SharedSystem: true}
	if !last {
		p.Write = len(msgs)
	}
	if n := len(msgs) - 2; n > 0 && (n > 1 || msgs[0].Role != RoleSystem) {
		p.Read = n
	}
	return p
}

// Default minimum cacheable prefixes, in tokens: below it a provider
// caches nothing (Anthropic silently ignores the breakpoint).
const (
	DefaultCacheMinTokens = 1024
	// Claude Haiku 4.5 and Opus 4.5/4.6 need 4,096; Claude 3 and 3.5
	// Haiku 2,048; the other Claude models (Sonnet, Opus 4 and 4.1) and
	// OpenAI's and Gemini's automatic caching 1,024.
	cacheMinLarge  = 4096
	cacheMinMedium = 2048
)

// CacheMinTokens is the shortest prefix model caches, by its name (a
// config.yaml cache_min_tokens overrides it). Sources disagree on some
// models (Sonnet 4.6: 1,024 or 2,048); the lower figure is used, as a
// breakpoint below the real minimum costs nothing (it is ignored) while
// one left out forgoes a discount.
func CacheMinTokens(model string) int {
	m := strings.ToLower(model)
	switch {
	case strings.Contains(m, "haiku-4-5"), strings.Contains(m, "haiku-4.5"),
		strings.Contains(m, "opus-4-5"), strings.Contains(m, "opus-4.5"),
		strings.Contains(m, "opus-4-6"), strings.Contains(m, "opus-4.6"):
		return cacheMinLarge
	case strings.Contains(m, "claude-3-5-haiku"), strings.Contains(m, "claude-3-haiku"):
		return cacheMinMedium
	}
	return DefaultCacheMinTokens
}

// PromptTokens over-estimates the tokens of msgs for cache decisions: a
// token per three bytes (English text runs about four bytes a token) plus
// a few per message. An over-estimate only places a breakpoint the
// provider then ignores, at no cost.
func PromptTokens(msgs []Message) int {
	n := 0
	for _, m := range msgs {
		n += (len(m.Content)+2)/3 + 4
	}
	return n
}
