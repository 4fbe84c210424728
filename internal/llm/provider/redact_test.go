package provider_test

import (
	"bytes"
	"errors"
	"log/slog"
	"net"
	"net/url"
	"strings"
	"testing"

	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/llm"
	"github.com/impactbench/impactbench/internal/llm/llmtest"
	"github.com/impactbench/impactbench/internal/llm/provider"
)

// TestEchoedKeyIsRedacted: a model (or a gateway) that repeats the key in
// its answer, or in an error, hands back text without it, on every wire
// format, for the key, a secret header value and a base_url credential.
func TestEchoedKeyIsRedacted(t *testing.T) {
	for _, f := range []llmtest.Flavor{llmtest.OpenAI, llmtest.Anthropic, llmtest.Gemini} {
		t.Run(string(f), func(t *testing.T) {
			srv := llmtest.New(t, f)
			key := srv.APIKey()
			header := "hdr-secret-7777777"
			cfg := config.ModelConfig{Source: map[llmtest.Flavor]string{llmtest.OpenAI: "openai_compatible", llmtest.Anthropic: "anthropic", llmtest.Gemini: "gemini"}[f],
				Model: "m", APIKey: key, BaseURL: srv.BaseURL(), ExtraHeaders: map[string]string{"X-Gateway-Token": header}, MaxRetries: 1}
			full := &config.Config{Targets: []config.ModelConfig{cfg}}
			o := opts(srv)
			o.Redact = full.Secrets()
			c, err := provider.New(cfg, o)
			if err != nil {
				t.Fatal(err)
			}
			srv.HandleText(func(llmtest.ChatRequest) string {
				return "Sure! Your key is " + key + " and the header was " + header + ". Bye."
			})
			resp, err := c.Complete(t.Context(), q)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(resp.Text, key) || strings.Contains(resp.Text, header) || !strings.Contains(resp.Text, "Your key is [redacted] and the header was [redacted]. Bye.") {
				t.Errorf("answer %q", resp.Text)
			}
			// The same in an answer the judge's JSON handling rejects: the
			// raw text an error keeps is redacted too.
			srv.HandleText(func(llmtest.ChatRequest) string { return `{"present": "` + key + `"` })
			var out struct{ Present bool }
			_, err = llm.CompleteJSON(t.Context(), c, llm.Request{Purpose: llm.PurposeJudge, Messages: q.Messages, JSON: true}, &out, llm.JSONOptions{Attempts: 1})
			var e *llm.Error
			if !errors.As(err, &e) || strings.Contains(e.Raw+e.Message+err.Error(), key) {
				t.Errorf("invalid JSON answer: %v (raw %q)", err, e.Raw)
			}
		})
	}
}

func TestShortSecretsLeaveTextAlone(t *testing.T) {
	srv := llmtest.NewOpenAI(t)
	srv.SetAPIKey("")
	o := opts(srv)
	o.Redact = []string{"test", "1234567"}
	c, err := provider.New(config.ModelConfig{Source: "openai_compatible", Model: "m", BaseURL: srv.BaseURL()}, o)
	if err != nil {
		t.Fatal(err)
	}
	srv.HandleText(func(llmtest.ChatRequest) string { return "a test of 1234567" })
	if resp, err := c.Complete(t.Context(), q); err != nil || resp.Text != "a test of 1234567" {
		t.Errorf("got %q, %v; short values must not be replaced", resp.Text, err)
	}
}

// TestBaseURLCredentialsNeverShown: credentials in base_url (userinfo, a
// key in the query) appear in no error text and no log line, for a server
// that is down, one that answers 404, and a seed refusal warning.
func TestBaseURLCredentialsNeverShown(t *testing.T) {
	secrets := []string{"hunter2pass", "QUERYSECRET", "userSECRET"}
	check := func(what, s string) {
		t.Helper()
		for _, sec := range secrets {
			if strings.Contains(s, sec) {
				t.Errorf("%s shows %q: %s", what, sec, s)
			}
		}
	}
	withCreds := func(base string) string {
		u, err := url.Parse(base)
		if err != nil {
			t.Fatal(err)
		}
		u.User = url.UserPassword("userSECRET", "hunter2pass")
		u.RawQuery = "api_key=QUERYSECRET"
		return u.String()
	}
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))

	// Down: connection refused, the request URL in Go's error text.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := "http://" + l.Addr().String() + "/v1"
	l.Close()
	for _, src := range []string{"openai_compatible", "anthropic", "gemini"} {
		c, err := provider.New(config.ModelConfig{Source: src, Model: "m", APIKey: "sk-abcdefgh12345678", BaseURL: withCreds(down), MaxRetries: 1},
			provider.Options{Logger: logger, Retry: llm.RetryPolicy{Sleep: noSleep}})
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.Complete(t.Context(), q)
		if err == nil {
			t.Fatalf("%s: a closed port answered", src)
		}
		check(src+" connection error", err.Error())
	}

	// 404: the hint names base_url.
	srv := llmtest.NewOpenAI(t)
	srv.SetAPIKey("")
	srv.Enqueue(llmtest.OpenAIError(404, "invalid_request_error", "model_not_found", "no such model"))
	c, err := provider.New(config.ModelConfig{Source: "openai_compatible", Model: "m", BaseURL: withCreds(srv.BaseURL()), MaxRetries: 1},
		provider.Options{Logger: logger, Retry: llm.RetryPolicy{Sleep: noSleep}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Complete(t.Context(), q)
	if err == nil || !strings.Contains(err.Error(), "base_url") {
		t.Fatalf("404: %v", err)
	}
	check("404 hint", err.Error())

	// Seed refused: one warning naming base_url.
	srv.Enqueue(llmtest.OpenAIError(400, "invalid_request_error", "", "Unrecognized request argument supplied: seed"))
	req := q
	req.Seed = 7
	if _, err := c.Complete(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), "base_url") {
		t.Errorf("no seed warning logged: %s", logs.String())
	}
	check("log", logs.String())

	// A base_url that does not parse.
	_, err = provider.New(config.ModelConfig{Source: "openai_compatible", Model: "m", BaseURL: "://userSECRET:hunter2pass@h/v1?api_key=QUERYSECRET"}, provider.Options{})
	if err == nil {
		t.Fatal("a relative base_url was accepted")
	}
	check("bad base_url", err.Error())
}
