package openai_test

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/impactbench/impactbench/internal/llm"
	"github.com/impactbench/impactbench/internal/llm/llmtest"
	"github.com/impactbench/impactbench/internal/llm/openai"
)

func TestSeedOnTheWire(t *testing.T) {
	const seed = uint64(0xdeadbeefcafef00d)
	tests := []struct {
		name    string
		dialect openai.Dialect
		seed    uint64
		want    any // body["seed"]; nil = absent
	}{
		{"openai", openai.DialectOpenAI, seed, float64(llm.WireSeed(seed))},
		{"compatible", openai.DialectCompatible, seed, float64(llm.WireSeed(seed))},
		{"no seed in the request", openai.DialectOpenAI, 0, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := llmtest.NewOpenAI(t)
			c := newClient(t, srv, func(cfg *openai.Config) { cfg.Dialect = tc.dialect })
			resp, err := c.Complete(t.Context(), llm.Request{Messages: dialogue, Seed: tc.seed})
			if err != nil {
				t.Fatal(err)
			}
			body := srv.Last().Body
			got, ok := body["seed"]
			if tc.want == nil {
				if ok {
					t.Fatalf("seed %v sent for a request without one", got)
				}
				if resp.SentSeed != nil || resp.NoSeed != llm.NoSeedInRequest {
					t.Errorf("response reports seed %v, %q; want none, %q", resp.SentSeed, resp.NoSeed, llm.NoSeedInRequest)
				}
				return
			}
			if got != tc.want {
				t.Fatalf("body seed = %v, want %v", got, tc.want)
			}
			if resp.SentSeed == nil || float64(*resp.SentSeed) != tc.want || resp.NoSeed != "" {
				t.Errorf("response reports seed %v, %q; want %v", resp.SentSeed, resp.NoSeed, tc.want)
			}
		})
	}
}

// A server that does not know `seed` (strict OpenAI-compatible servers
// answer 400 or 422 naming it) still answers: the call is sent again
// without it, later calls go without it, one warning says so, and every
// answer says why it carried no seed.
func TestServerRefusingSeed(t *testing.T) {
	refusals := []struct {
		name  string
		reply llmtest.Reply
	}{
		{"400 unrecognized argument", llmtest.OpenAIError(400, "invalid_request_error", "", "Unrecognized request argument supplied: seed")},
		{"422 extra field", llmtest.Reply{Status: 422, Body: `{"error":{"message":"body.seed: Extra inputs are not permitted","type":"BadRequestError","code":422}}`}},
	}
	for _, tc := range refusals {
		t.Run(tc.name, func(t *testing.T) {
			srv := llmtest.NewOpenAI(t)
			srv.Handle(func(r llmtest.ChatRequest) llmtest.Reply {
				if r.Seed != nil {
					return tc.reply
				}
				return llmtest.Text("fine", llmtest.Usage{Input: 10, Output: 2})
			})
			var logs bytes.Buffer
			c := newClient(t, srv, func(cfg *openai.Config) {
				cfg.Dialect = openai.DialectCompatible
				cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
			})
			resp, err := c.Complete(t.Context(), llm.Request{Messages: dialogue, Seed: 42})
			if err != nil {
				t.Fatalf("a refused seed failed the call: %v", err)
			}
			if srv.Calls() != 2 || resp.Usage.Requests != 2 {
				t.Errorf("calls %d, usage requests %d; want the refused attempt and one without the seed", srv.Calls(), resp.Usage.Requests)
			}
			if resp.SentSeed != nil || !strings.Contains(resp.NoSeed, "refused the seed parameter") {
				t.Errorf("response reports seed %v, %q; want none and why", resp.SentSeed, resp.NoSeed)
			}

			resp, err = c.Complete(t.Context(), llm.Request{Messages: dialogue, Seed: 43})
			if err != nil {
				t.Fatal(err)
			}
			if srv.Calls() != 3 {
				t.Errorf("the next call was refused again (%d calls): the client should stop sending seeds", srv.Calls())
			}
			if _, ok := srv.Last().Body["seed"]; ok {
				t.Error("seed sent again after the server refused it")
			}
			if !strings.Contains(resp.NoSeed, "refused the seed parameter") {
				t.Errorf("later answer: NoSeed = %q", resp.NoSeed)
			}
			if n := strings.Count(logs.String(), "refuses the seed parameter"); n != 1 {
				t.Errorf("%d warnings, want 1:\n%s", n, logs.String())
			}
		})
	}
}

// A 400 about something else is an ordinary error: not retried, and seeds
// keep being sent.
func TestOtherBadRequestKeepsSeed(t *testing.T) {
	srv := llmtest.NewOpenAI(t)
	srv.Enqueue(llmtest.OpenAIError(400, "invalid_request_error", "context_length_exceeded", "maximum context length is 8192 tokens"))
	c := newClient(t, srv, nil)
	_, err := c.Complete(t.Context(), llm.Request{Messages: dialogue, Seed: 42})
	if llm.KindOf(err) != llm.KindBadRequest || srv.Calls() != 1 {
		t.Fatalf("err %v (kind %s) after %d calls; want the 400 as is after 1", err, llm.KindOf(err), srv.Calls())
	}
	resp, err := c.Complete(t.Context(), llm.Request{Messages: dialogue, Seed: 42})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := srv.Last().Body["seed"]; !ok || resp.SentSeed == nil {
		t.Error("seed no longer sent after an unrelated 400")
	}
}
