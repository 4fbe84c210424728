package config

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"net/url"
	"slices"
	"strings"

	"github.com/impactbench/impactbench/internal/sanitize"
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

// isSecretHeader reports header names that carry credentials (one rule
// for headers and query parameters, in internal/sanitize): over-redacting a
// log line costs nothing.
func isSecretHeader(name string) bool { return sanitize.SecretName(name) }

func redactURL(raw string) string { return sanitize.URL(raw) }

// minSecretLen is the shortest configured value Secrets returns: shorter
// ones ("1", "yes") occur in ordinary text, which must not be mangled.
const minSecretLen = 8

// Secrets returns every credential the config holds, to be removed from
// model text before it is stored: each model's apikey, the values of its
// credential-named extra_headers (Authorization's "Bearer <key>" and the
// key alone), and the credentials in its base_url (userinfo, and values of
// credential-named query parameters). Values shorter than 8 characters
// are left out; longer ones come first, so that a key containing another
// is replaced whole.
func (c *Config) Secrets() []string {
	seen := map[string]bool{}
	var out []string
	add := func(s string) {
		s = strings.TrimSpace(s)
		if len(s) >= minSecretLen && !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	for _, m := range c.models() {
		add(m.APIKey)
		for k, v := range m.ExtraHeaders {
			if isSecretHeader(k) {
				add(v)
				if _, tok, ok := strings.Cut(v, " "); ok {
					add(tok) // "Bearer <key>": the key alone too
				}
			}
		}
		for _, s := range urlSecrets(m.BaseURL) {
			add(s)
		}
	}
	for _, raw := range []string{c.Store, c.RateBackend} {
		for _, s := range urlSecrets(raw) {
			add(s)
		}
	}
	slices.SortStableFunc(out, func(a, b string) int { return len(b) - len(a) })
	return out
}

// models lists every model block of the config.
func (c *Config) models() []ModelConfig {
	ms := []ModelConfig{c.UserModel}
	if c.GeneratorModel != nil {
		ms = append(ms, *c.GeneratorModel)
	}
	ms = append(ms, c.EvaluatorModels...)
	if c.LandmarkModel != nil {
		ms = append(ms, *c.LandmarkModel)
	}
	return append(ms, c.Targets...)
}

// urlSecrets returns the credentials written into a base_url.
func urlSecrets(raw string) []string {
	u, err := url.Parse(raw)
	if err != nil {
		return nil
	}
	var out []string
	if u.User != nil {
		out = append(out, u.User.Username())
		if pw, ok := u.User.Password(); ok {
			out = append(out, pw)
		}
	}
	for k, vs := range u.Query() {
		if isSecretHeader(k) {
			out = append(out, vs...)
		}
	}
	return out
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
