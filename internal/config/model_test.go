package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestDefaultBaseURL(t *testing.T) {
	tests := []struct{ source, want string }{
		{"", "https://api.openai.com/v1"},
		{"openai", "https://api.openai.com/v1"},
		{"anthropic", "https://api.anthropic.com"},
		{"gemini", "https://generativelanguage.googleapis.com"},
		{"google", "https://generativelanguage.googleapis.com"},
		{"deepinfra", "https://api.deepinfra.com/v1/openai"},
		{"xai", "https://api.x.ai/v1"},
		{"openrouter", "https://openrouter.ai/api/v1"},
		{"together", "https://api.together.xyz/v1"},
		{"groq", "https://api.groq.com/openai/v1"},
		{"ollama", "http://localhost:11434/v1"},
		{"vllm", "http://localhost:8000/v1"},
		{"offline", ""},
		{"openai_compatible", ""},
		{"bedrock", ""},
	}
	for _, tt := range tests {
		if got := DefaultBaseURL(tt.source); got != tt.want {
			t.Errorf("DefaultBaseURL(%q) = %q, want %q", tt.source, got, tt.want)
		}
	}
	// Every known source is covered by the table above.
	for _, s := range knownSources() {
		found := false
		for _, tt := range tests {
			found = found || tt.source == s
		}
		if !found {
			t.Errorf("source %q missing from the table", s)
		}
	}
}

func TestProviderAndLabel(t *testing.T) {
	tests := []struct {
		m                   ModelConfig
		provider, wantLabel string
	}{
		{ModelConfig{Model: "gpt-4o"}, "openai", "openai/gpt-4o"},
		{ModelConfig{Model: "gemini-2.5-pro", Source: "google"}, "gemini", "gemini/gemini-2.5-pro"},
		{ModelConfig{Model: "m", Source: "Anthropic "}, "anthropic", "anthropic/m"},
		{ModelConfig{ID: "grok", Model: "grok-4", Source: "xai", APIKey: "secret"}, "xai", "grok"},
		{ModelConfig{Source: "offline"}, "offline", "offline"},
	}
	for _, tt := range tests {
		if got := tt.m.Provider(); got != tt.provider {
			t.Errorf("%#v.Provider() = %q, want %q", tt.m, got, tt.provider)
		}
		if got := tt.m.Label(); got != tt.wantLabel {
			t.Errorf("%#v.Label() = %q, want %q", tt.m, got, tt.wantLabel)
		}
	}
}

func TestRedacted(t *testing.T) {
	m := ModelConfig{
		ID: "x", Model: "m", Source: "openai_compatible",
		APIKey:  "sk-secret",
		BaseURL: "https://u:pw@host/v1?key=k1&mode=fast",
		ExtraHeaders: map[string]string{
			"User-Agent": "Test", "Authorization": "Bearer t", "X-Api-Key": "k", "X-Session-Token": "s",
		},
	}
	r := m.Redacted()
	want := ModelConfig{
		ID: "x", Model: "m", Source: "openai_compatible",
		APIKey:  "***",
		BaseURL: "https://REDACTED@host/v1?key=REDACTED&mode=fast",
		ExtraHeaders: map[string]string{
			"User-Agent": "Test", "Authorization": "***", "X-Api-Key": "***", "X-Session-Token": "***",
		},
	}
	if diff := cmp.Diff(want, r); diff != "" {
		t.Errorf("Redacted (-want +got):\n%s", diff)
	}
	if m.ExtraHeaders["Authorization"] != "Bearer t" || m.APIKey != "sk-secret" {
		t.Errorf("Redacted modified the original")
	}
	if got := (ModelConfig{Model: "m"}).Redacted().APIKey; got != "" {
		t.Errorf("empty key redacted to %q, want empty", got)
	}
}

// TestSecretsNeverPrinted loads a config whose key is a literal (the worst
// case) and checks every way a model or error can be rendered.
func TestSecretsNeverPrinted(t *testing.T) {
	secrets := []string{"sk-live-LITERALSECRET123", "hdr-SECRET-456789", "pw-SECRET-789", "q-SECRET-000"}
	check := func(what, s string) {
		t.Helper()
		for _, sec := range secrets {
			if strings.Contains(s, sec) {
				t.Errorf("%s contains secret %q:\n%s", what, sec, s)
			}
		}
	}

	// The file has an error next to the key (temperature: 9).
	_, err := LoadWithOptions("testdata/good/secrets.yaml", LoadOptions{LookupEnv: noEnv})
	if err == nil {
		t.Fatal("want an error for temperature: 9")
	}
	check("Error()", err.Error())
	if !strings.Contains(err.Error(), "user_model.temperature: must be between 0 and 2") {
		t.Errorf("unexpected error: %v", err)
	}

	m := ModelConfig{
		ID: "t", Model: "m", APIKey: secrets[0],
		ExtraHeaders: map[string]string{"X-Api-Key": secrets[1]},
		BaseURL:      "https://user:" + secrets[2] + "@example.com/v1?key=" + secrets[3],
	}
	cfg := &Config{UserModel: m, Targets: []ModelConfig{m}, EvaluatorModels: []ModelConfig{m}}

	for _, verb := range []string{"%v", "%+v", "%s", "%#v"} {
		check("Sprintf("+verb+", model)", fmt.Sprintf(verb, m))
		check("Sprintf("+verb+", &model)", fmt.Sprintf(verb, &m))
		check("Sprintf("+verb+", config)", fmt.Sprintf(verb, cfg))
	}
	check("String()", m.String())
	check("Label()", m.Label())

	var buf bytes.Buffer
	for _, h := range []slog.Handler{slog.NewTextHandler(&buf, nil), slog.NewJSONHandler(&buf, nil)} {
		log := slog.New(h)
		log.Info("call", "model", m, "ptr", &m)
		log.Info("cfg", "targets", cfg.Targets)
	}
	check("slog", buf.String())
	if !strings.Contains(buf.String(), "apikey=***") {
		t.Errorf("slog output does not show that a key is set:\n%s", buf.String())
	}

	data, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	check("json.Marshal", string(data))
}

func TestModelString(t *testing.T) {
	m := ModelConfig{ID: "grok-4-fast", Model: "grok-4-1-fast-non-reasoning", BaseURL: "https://api.x.ai/v1", APIKey: "k"}
	want := "grok-4-fast (openai grok-4-1-fast-non-reasoning, base_url=https://api.x.ai/v1, apikey=***)"
	if got := m.String(); got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	if got := fmt.Sprintf("%#v", m); !strings.HasPrefix(got, "config.ModelConfig{") {
		t.Errorf("GoString = %q", got)
	}
}

// TestSecrets: every credential of every model block, long ones first,
// short values left out (they occur in ordinary text).
func TestSecrets(t *testing.T) {
	gen := ModelConfig{Model: "g", APIKey: "gen-key-0123456789"}
	lm := ModelConfig{Model: "l", ExtraHeaders: map[string]string{"Authorization": "Bearer landmark-token-99", "User-Agent": "impactbench-agent"}}
	cfg := &Config{
		UserModel:       ModelConfig{Model: "u", APIKey: "user-key-0123456789"},
		GeneratorModel:  &gen,
		EvaluatorModels: []ModelConfig{{Model: "j", APIKey: "judge-key-0123456789"}, {Model: "j2", APIKey: "short"}},
		LandmarkModel:   &lm,
		Targets: []ModelConfig{
			{ID: "t", Model: "t", APIKey: "user-key-0123456789", BaseURL: "https://gwuser:gw-password-1@gw.example/v1?api_key=query-key-12345&mode=fastmode1"},
			{ID: "h", Model: "h", ExtraHeaders: map[string]string{"X-Api-Key": "header-key-abcdef"}},
		},
	}
	got := cfg.Secrets()
	want := []string{"Bearer landmark-token-99", "judge-key-0123456789", "user-key-0123456789", "gen-key-0123456789",
		"landmark-token-99", "header-key-abcdef", "query-key-12345", "gw-password-1"}
	for _, w := range want {
		if !slices.Contains(got, w) {
			t.Errorf("Secrets() misses %q: %q", w, got)
		}
	}
	for _, no := range []string{"short", "impactbench-agent", "fastmode1", "gwuser"} {
		if slices.Contains(got, no) {
			t.Errorf("Secrets() holds %q, which is no secret or too short: %q", no, got)
		}
	}
	for i := 1; i < len(got); i++ {
		if len(got[i]) > len(got[i-1]) {
			t.Errorf("Secrets() not longest first: %q", got)
		}
	}
	if n := len(got); n != len(want) {
		t.Errorf("Secrets() = %d values %q, want %d (each once)", n, got, len(want))
	}
}
