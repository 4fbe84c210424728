package llm

import (
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/impactbench/impactbench/internal/sanitize"
)

// KindForStatus maps an HTTP status to the error kind every provider shares.
// Adapters refine it with the provider's error code (e.g. OpenAI's 429
// insufficient_quota is KindQuota, not KindRateLimit).
func KindForStatus(status int) ErrorKind {
	switch {
	case status == http.StatusUnauthorized, status == http.StatusForbidden:
		return KindAuth
	case status == http.StatusPaymentRequired:
		return KindQuota
	case status == http.StatusTooManyRequests:
		return KindRateLimit
	case status == http.StatusRequestTimeout, status == http.StatusConflict, status == http.StatusTooEarly:
		// The official SDKs retry 408 and 409 too: both mean "try again".
		return KindServer
	case status == http.StatusServiceUnavailable, status == 529:
		return KindOverloaded
	case status >= 500:
		return KindServer
	case status >= 400:
		return KindBadRequest
	}
	return KindServer
}

// ParseRetryAfter reads the server's wait hint: retry-after-ms (OpenAI,
// Anthropic) first, then Retry-After as seconds or an HTTP date. It returns 0
// when there is no usable hint.
func ParseRetryAfter(h http.Header, now time.Time) time.Duration {
	if h == nil {
		return 0
	}
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 && ms < 1e12 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s <= 0 || s > 1e9 {
			return 0
		}
		return time.Duration(s * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return d
		}
	}
	return 0
}

// keyLike matches strings shaped like provider API keys (OpenAI echoes a
// masked key in its 401 message; other gateways may echo more of it).
var keyLike = regexp.MustCompile(`\b(sk|sk-proj|sk-ant|xai|gsk|pk|rk|AIza)[-_][A-Za-z0-9_*.\-]{4,}|\bAIza[A-Za-z0-9_\-]{20,}`)

// maxMessageLen bounds provider messages kept in errors: proxies answer 502s
// with whole HTML pages, which would drown the log.
const maxMessageLen = 400

// Redact removes every secret, anything shaped like an API key and the
// credentials of any URL (sanitize.URLsIn: Go's HTTP client puts the
// request URL in transport errors) from s and shortens it to a
// log-friendly length. Adapters pass provider messages
// through it before putting them into an Error.
func Redact(s string, secrets ...string) string {
	s = sanitize.URLsIn(s)
	for _, k := range secrets {
		if len(k) >= 4 {
			s = strings.ReplaceAll(s, k, "[redacted]")
		}
	}
	s = keyLike.ReplaceAllString(s, "[redacted]")
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > maxMessageLen {
		cut := maxMessageLen
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}

// ParseRateLimit reads the rate-limit headers of a response: OpenAI's (and
// most OpenAI-compatible servers') x-ratelimit-*, whose resets are Go-style
// durations ("6m0s", "12ms"), or Anthropic's anthropic-ratelimit-*, whose
// resets are RFC 3339 times (Anthropic's input-token limit is preferred over
// its combined one, as that is what binds). It returns nil when there are none.
func ParseRateLimit(h http.Header, now time.Time) *RateLimit {
	if h == nil {
		return nil
	}
	var rl RateLimit
	if h.Get("x-ratelimit-limit-requests") != "" || h.Get("x-ratelimit-limit-tokens") != "" ||
		h.Get("x-ratelimit-remaining-requests") != "" || h.Get("x-ratelimit-remaining-tokens") != "" {
		rl = RateLimit{
			LimitRequests:     headerInt(h, "x-ratelimit-limit-requests"),
			LimitTokens:       headerInt(h, "x-ratelimit-limit-tokens"),
			RemainingRequests: headerInt(h, "x-ratelimit-remaining-requests"),
			RemainingTokens:   headerInt(h, "x-ratelimit-remaining-tokens"),
			ResetRequests:     headerDuration(h, "x-ratelimit-reset-requests"),
			ResetTokens:       headerDuration(h, "x-ratelimit-reset-tokens"),
		}
	} else if h.Get("anthropic-ratelimit-requests-limit") != "" || h.Get("anthropic-ratelimit-input-tokens-limit") != "" ||
		h.Get("anthropic-ratelimit-tokens-limit") != "" {
		tok := "anthropic-ratelimit-input-tokens-"
		if h.Get(tok+"limit") == "" {
			tok = "anthropic-ratelimit-tokens-"
		}
		rl = RateLimit{
			LimitRequests:     headerInt(h, "anthropic-ratelimit-requests-limit"),
			LimitTokens:       headerInt(h, tok+"limit"),
			RemainingRequests: headerInt(h, "anthropic-ratelimit-requests-remaining"),
			RemainingTokens:   headerInt(h, tok+"remaining"),
			ResetRequests:     headerUntil(h, "anthropic-ratelimit-requests-reset", now),
			ResetTokens:       headerUntil(h, tok+"reset", now),
		}
	} else {
		return nil
	}
	if rl == (RateLimit{}) {
		// Azure and some proxies send zeros or -1: no information.
		return nil
	}
	return &rl
}

// headerInt reads a non-negative integer header (negative or malformed
// values, which some proxies send, count as not reported).
func headerInt(h http.Header, k string) int {
	n, err := strconv.Atoi(strings.TrimSpace(h.Get(k)))
	if err != nil || n < 0 {
		return 0
	}
	return n
}

func headerDuration(h http.Header, k string) time.Duration {
	v := strings.TrimSpace(h.Get(k))
	if v == "" {
		return 0
	}
	if d, err := time.ParseDuration(v); err == nil && d > 0 {
		return d
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil && s > 0 { // bare seconds
		return time.Duration(s * float64(time.Second))
	}
	return 0
}

func headerUntil(h http.Header, k string, now time.Time) time.Duration {
	t, err := time.Parse(time.RFC3339, strings.TrimSpace(h.Get(k)))
	if err != nil {
		return 0
	}
	return max(t.Sub(now), 0)
}
