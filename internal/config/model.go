package config

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"net/url"
	"strings"
)

// knownSources are the accepted values of a model's source key. google is an
// alias of gemini; openai_compatible is any OpenAI-style endpoint given by
// base_url. A function, not a var, so no caller can append to it.
func knownSources() []string {
	return []string{
		"openai", "anthropic", "gemini", "google", "deepinfra", "xai", "openrouter",
		"together", "groq", "ollama", "vllm", "offline", "openai_compatible",
	}
}

// DefaultBaseURL returns the endpoint used for source when base_url is not
// set, or "" when the source has none (offline, openai_compatible, unknown).
// Sources are normalised like ModelConfig.Provider ("" = openai, google = gemini).
func DefaultBaseURL(source string) string {
	switch normalizeSource(source) {
	case "openai":
		return "https://api.openai.com/v1"
	case "anthropic":
		return "https://api.anthropic.com"
	case "gemini":
		return "https://generativelanguage.googleapis.com"
	case "deepinfra":
		return "https://api.deepinfra.com/v1/openai"
	case "xai":
		return "https://api.x.ai/v1"
	case "openrouter":
		return "https://openrouter.ai/api/v1"
	case "together":
		return "https://api.together.xyz/v1"
	case "groq":
		return "https://api.groq.com/openai/v1"
	case "ollama":
		return "http://localhost:11434/v1"
	case "vllm":
		return "http://localhost:8000/v1"
	}
	return ""
}

func normalizeSource(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	switch s {
	case "":
		return "openai"
	case "google":
		return "gemini"
	}
	return s
}

// Provider is Source normalised: lower case, "" → openai, google → gemini.
func (m ModelConfig) Provider() string { return normalizeSource(m.Source) }

// Label is a display name without secrets: the id when set, else
// provider/model.
func (m ModelConfig) Label() string {
	if m.ID != "" {
		return m.ID
	}
	if m.Model == "" {
		return m.Provider()
	}
	return m.Provider() + "/" + m.Model
}

// Redacted returns a shallow copy safe to print or log: the API key and
// credential-looking extra_headers values become "***"; credentials embedded
// in base_url (user:password@, ?key=…) become REDACTED (URL-safe).
func (m ModelConfig) Redacted() ModelConfig {
	r := m
	if r.APIKey != "" {
		r.APIKey = "***"
	}
	if len(m.ExtraHeaders) > 0 {
		r.ExtraHeaders = maps.Clone(m.ExtraHeaders)
		for k, v := range r.ExtraHeaders {
			if v != "" && isSecretHeader(k) {
				r.ExtraHeaders[k] = "***"
			}
		}
	}
	r.BaseURL = redactURL(m.BaseURL)
	return r
}

// isSecretHeader matches internal/callstore's rule plus anything named like
// a key or auth header: over-redacting a log line costs nothing.
func isSecretHeader(name string) bool {
	n := strings.ToLower(name)
	for _, s := range []string{"auth", "key", "token", "secret", "cookie", "password", "session"} {
		if strings.Contains(n, s) {
			return true
		}
	}
	return false
}

func redactURL(raw string) string {
	if raw == "" {
		return ""
	}
	u, err := url.Parse(raw)
	if err != nil {
		// Unparseable: drop anything that could be a credential rather than
		// echo it.
		if i := strings.IndexAny(raw, "@?"); i >= 0 {
			return raw[:i] + "***"
		}
		return raw
	}
	changed := false
	if u.User != nil {
		if _, has := u.User.Password(); has {
			u.User = url.UserPassword(u.User.Username(), "REDACTED")
		} else {
			u.User = url.User("REDACTED")
		}
		changed = true
	}
	if u.RawQuery != "" {
		q := u.Query()
		for k := range q {
			if isSecretHeader(k) || strings.EqualFold(k, "sig") || strings.EqualFold(k, "signature") {
				q[k] = []string{"REDACTED"}
				changed = true
			}
		}
		if changed {
			u.RawQuery = q.Encode()
		}
	}
	if !changed {
		return raw
	}
	return u.String()
}

// String describes the model without secrets, e.g.
// "grok-4-fast (openai grok-4-1-fast-non-reasoning, base_url=https://api.x.ai/v1, apikey=***)".
func (m ModelConfig) String() string {
	r := m.Redacted()
	var b strings.Builder
	b.WriteString(r.Label())
	b.WriteString(" (")
	b.WriteString(r.Provider())
	if r.Model != "" {
		b.WriteString(" ")
		b.WriteString(r.Model)
	}
	if r.BaseURL != "" {
		b.WriteString(", base_url=")
		b.WriteString(r.BaseURL)
	}
	if r.APIKey != "" {
		b.WriteString(", apikey=***")
	}
	b.WriteString(")")
	return b.String()
}

// plainModel drops ModelConfig's methods so the redacted copy can be
// formatted or marshalled without recursing into them.
type plainModel ModelConfig

// GoString keeps %#v (which bypasses String) free of the key.
func (m ModelConfig) GoString() string {
	s := fmt.Sprintf("%#v", plainModel(m.Redacted()))
	return strings.Replace(s, "config.plainModel", "config.ModelConfig", 1)
}

// LogValue makes slog print the model without secrets.
func (m ModelConfig) LogValue() slog.Value {
	r := m.Redacted()
	attrs := []slog.Attr{slog.String("source", r.Provider()), slog.String("model", r.Model)}
	if r.ID != "" {
		attrs = append([]slog.Attr{slog.String("id", r.ID)}, attrs...)
	}
	if r.BaseURL != "" {
		attrs = append(attrs, slog.String("base_url", r.BaseURL))
	}
	if r.APIKey != "" {
		attrs = append(attrs, slog.String("apikey", r.APIKey))
	}
	return slog.GroupValue(attrs...)
}

// MarshalJSON writes the redacted model: run manifests and debug dumps are
// JSON, and a key must never reach a file that may be committed or shared.
func (m ModelConfig) MarshalJSON() ([]byte, error) {
	return json.Marshal(plainModel(m.Redacted()))
}

var (
	_ fmt.Stringer   = ModelConfig{}
	_ fmt.GoStringer = ModelConfig{}
	_ slog.LogValuer = ModelConfig{}
	_ json.Marshaler = ModelConfig{}
)
