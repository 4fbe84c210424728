package batch_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/llm"
	"github.com/impactbench/impactbench/internal/llm/anthropic"
	"github.com/impactbench/impactbench/internal/llm/batch"
	"github.com/impactbench/impactbench/internal/llm/batch/fakebatch"
	"github.com/impactbench/impactbench/internal/llm/llmtest"
	"github.com/impactbench/impactbench/internal/llm/openai"
	"github.com/impactbench/impactbench/internal/llm/provider"
)

// shapeRequests cover the request features the adapters translate.
func shapeRequests() []llm.Request {
	temp := 0.2
	schema := map[string]any{"type": "object", "additionalProperties": false,
		"properties": map[string]any{"justification": map[string]any{"type": "string"}, "present": map[string]any{"type": "boolean"}},
		"required":   []any{"justification", "present"}}
	return []llm.Request{
		{Purpose: llm.PurposeJudge, Messages: []llm.Message{{Role: llm.RoleSystem, Content: "Judge."}, {Role: llm.RoleUser, Content: "Transcript…"}},
			MaxTokens: 500, JSON: true, Schema: schema, SchemaName: "judge"},
		{Purpose: llm.PurposeTarget, Temperature: &temp, Cache: llm.CachePlan{Write: 4, Read: 2, SharedSystem: true, Long: true}, Messages: []llm.Message{
			{Role: llm.RoleSystem, Content: "Be kind."}, {Role: llm.RoleUser, Content: "hi"},
			{Role: llm.RoleAssistant, Content: "hello"}, {Role: llm.RoleUser, Content: "bye"}}},
	}
}

func jsonEqual(t *testing.T, what string, want, got []byte) {
	t.Helper()
	var w, g any
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatalf("%s: want is not JSON: %v", what, err)
	}
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("%s: got is not JSON: %v", what, err)
	}
	if d := cmp.Diff(w, g); d != "" {
		t.Errorf("%s differs from the real-time body (-realtime +batch):\n%s", what, d)
	}
}

func TestOpenAIRequestShape(t *testing.T) {
	for _, dialect := range []openai.Dialect{openai.DialectOpenAI, openai.DialectCompatible} {
		t.Run(map[openai.Dialect]string{openai.DialectOpenAI: "official", openai.DialectCompatible: "compatible"}[dialect], func(t *testing.T) {
			srv := fakebatch.NewOpenAI(t, fakebatch.Options{})
			headers := map[string]string{"X-Extra": "1"}
			p := newOpenAI(t, srv, func(c *batch.OpenAIConfig) { c.Dialect = dialect; c.ExtraHeaders = headers; c.MaxTokens = 777 })
			reqs := shapeRequests()
			items := []batch.Item{{CustomID: "a", Req: reqs[0]}, {CustomID: "b", Req: reqs[1]}}
			if _, err := batch.Run(t.Context(), p, filepath.Join(t.TempDir(), "s.json"), items, fast); err != nil {
				t.Fatal(err)
			}

			// The real-time adapter, same config, against a real-time fake.
			rt := llmtest.NewOpenAI(t)
			c, err := openai.New(openai.Config{APIKey: rt.APIKey(), BaseURL: rt.BaseURL(), Model: "gpt-4o-mini", HTTPClient: rt.Client(),
				Dialect: dialect, ExtraHeaders: headers, MaxTokens: 777})
			if err != nil {
				t.Fatal(err)
			}
			lines := srv.Lines()
			if len(lines) != 2 {
				t.Fatalf("%d lines submitted, want 2", len(lines))
			}
			for i, it := range items {
				if _, err := c.Complete(t.Context(), it.Req); err != nil {
					t.Fatal(err)
				}
				var line struct {
					CustomID string          `json:"custom_id"`
					Method   string          `json:"method"`
					URL      string          `json:"url"`
					Body     json.RawMessage `json:"body"`
				}
				if err := json.Unmarshal(lines[i], &line); err != nil {
					t.Fatal(err)
				}
				if line.CustomID != it.CustomID || line.Method != "POST" || line.URL != "/v1/chat/completions" {
					t.Errorf("line %d = %s", i, lines[i])
				}
				jsonEqual(t, "line "+it.CustomID+" body", rt.Last().Raw, line.Body)
			}

			// Control-plane requests: auth, extra headers, multipart, batch params.
			var sawUpload, sawCreate bool
			for _, r := range srv.Requests() {
				if got := r.Header.Get("Authorization"); got != "Bearer "+srv.APIKey() {
					t.Errorf("%s %s: Authorization %q", r.Method, r.Path, got)
				}
				if r.Header.Get("X-Extra") != "1" {
					t.Errorf("%s %s: extra header missing", r.Method, r.Path)
				}
				switch {
				case r.Method == "POST" && r.Path == "/v1/files":
					sawUpload = true
					_, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
					if err != nil {
						t.Fatal(err)
					}
					mr := multipart.NewReader(bytes.NewReader(r.Body), params["boundary"])
					parts := map[string]string{}
					for {
						part, err := mr.NextPart()
						if err == io.EOF {
							break
						}
						if err != nil {
							t.Fatal(err)
						}
						b, _ := io.ReadAll(part)
						parts[part.FormName()] = string(b)
						if part.FormName() == "file" && !strings.HasSuffix(part.FileName(), ".jsonl") {
							t.Errorf("file name %q", part.FileName())
						}
					}
					if parts["purpose"] != "batch" || strings.Count(parts["file"], "\n") != 2 {
						t.Errorf("upload parts = %q", parts)
					}
				case r.Method == "POST" && r.Path == "/v1/batches":
					sawCreate = true
					var body map[string]any
					if err := json.Unmarshal(r.Body, &body); err != nil {
						t.Fatal(err)
					}
					if body["completion_window"] != "24h" || body["endpoint"] != "/v1/chat/completions" || !strings.HasPrefix(body["input_file_id"].(string), "file-") {
						t.Errorf("create batch body = %s", r.Body)
					}
				}
			}
			if !sawUpload || !sawCreate {
				t.Errorf("upload %v, create %v", sawUpload, sawCreate)
			}
		})
	}
}

func TestAnthropicRequestShape(t *testing.T) {
	srv := fakebatch.NewAnthropic(t, fakebatch.Options{})
	headers := map[string]string{"X-Extra": "1"}
	p := newAnthropic(t, srv, func(c *batch.AnthropicConfig) {
		c.ExtraHeaders, c.StructuredOutputs, c.CacheMinTokens = headers, true, 1
	})
	reqs := shapeRequests()
	items := []batch.Item{{CustomID: "a", Req: reqs[0]}, {CustomID: "b", Req: reqs[1]}}
	if _, err := batch.Run(t.Context(), p, filepath.Join(t.TempDir(), "s.json"), items, fast); err != nil {
		t.Fatal(err)
	}
	rt := llmtest.NewAnthropic(t)
	c, err := anthropic.New(anthropic.Config{APIKey: rt.APIKey(), BaseURL: rt.BaseURL(), Model: "claude-haiku-4-5",
		HTTPClient: rt.Client(), ExtraHeaders: headers, StructuredOutputs: true, CacheMinTokens: 1})
	if err != nil {
		t.Fatal(err)
	}
	lines := srv.Lines()
	if len(lines) != 2 {
		t.Fatalf("%d requests submitted, want 2", len(lines))
	}
	for i, it := range items {
		if _, err := c.Complete(t.Context(), it.Req); err != nil {
			t.Fatal(err)
		}
		var req struct {
			CustomID string          `json:"custom_id"`
			Params   json.RawMessage `json:"params"`
		}
		if err := json.Unmarshal(lines[i], &req); err != nil {
			t.Fatal(err)
		}
		if req.CustomID != it.CustomID {
			t.Errorf("request %d custom_id %q", i, req.CustomID)
		}
		jsonEqual(t, "params of "+it.CustomID, rt.Last().Raw, req.Params)
	}
	// The multi-turn request keeps its prompt-cache breakpoints and their
	// one-hour lifetime (a conversation's next call is in a later wave).
	if !strings.Contains(string(lines[1]), `"cache_control":{"ttl":"1h","type":"ephemeral"}`) {
		t.Errorf("cache_control lost or not 1h: %s", lines[1])
	}
	for _, r := range srv.Requests() {
		if r.Header.Get("X-Api-Key") != srv.APIKey() || r.Header.Get("Anthropic-Version") != "2023-06-01" || r.Header.Get("X-Extra") != "1" {
			t.Errorf("%s %s: headers %v", r.Method, r.Path, r.Header)
		}
		if r.Header.Get("Authorization") != "" {
			t.Errorf("%s %s: Authorization header sent to Anthropic", r.Method, r.Path)
		}
	}
}

// TestUsageAndBatchPrice: usage is mapped exactly like the real-time
// adapter maps it, and the cost is half the real-time cost.
func TestUsageAndBatchPrice(t *testing.T) {
	u := llmtest.Usage{Input: 10_000, Output: 800, Cached: 4_000, CacheWrite: 0, Reasoning: 300}
	ua := llmtest.Usage{Input: 10_000, Output: 800, Cached: 4_000, CacheWrite: 2_000}
	cases := []struct {
		name     string
		fake     *fakebatch.Server
		prov     func(*fakebatch.Server) batch.Provider
		realtime func(t *testing.T) llm.Client
	}{
		{"openai", fakebatch.NewOpenAI(t, fakebatch.Options{Answer: func(string, llmtest.ChatRequest) fakebatch.Outcome {
			return fakebatch.Outcome{Reply: llmtest.Text("ok", u)}
		}}), func(s *fakebatch.Server) batch.Provider { return newOpenAI(t, s, nil) }, func(t *testing.T) llm.Client {
			rt := llmtest.NewOpenAI(t)
			rt.Enqueue(llmtest.Text("ok", u))
			c, err := openai.New(openai.Config{APIKey: rt.APIKey(), BaseURL: rt.BaseURL(), Model: "gpt-4o-mini", HTTPClient: rt.Client()})
			if err != nil {
				t.Fatal(err)
			}
			return c
		}},
		{"anthropic", fakebatch.NewAnthropic(t, fakebatch.Options{Answer: func(string, llmtest.ChatRequest) fakebatch.Outcome {
			return fakebatch.Outcome{Reply: llmtest.Text("ok", ua)}
		}}), func(s *fakebatch.Server) batch.Provider { return newAnthropic(t, s, nil) }, func(t *testing.T) llm.Client {
			rt := llmtest.NewAnthropic(t)
			rt.Enqueue(llmtest.Text("ok", ua))
			c, err := anthropic.New(anthropic.Config{APIKey: rt.APIKey(), BaseURL: rt.BaseURL(), Model: "claude-haiku-4-5", HTTPClient: rt.Client()})
			if err != nil {
				t.Fatal(err)
			}
			return c
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			items := judgeItems(1)
			rs, err := batch.Run(t.Context(), tc.prov(tc.fake), filepath.Join(t.TempDir(), "s.json"), items, fast)
			if err != nil || rs[0].Err != nil {
				t.Fatal(err, rs[0].Err)
			}
			rtResp, err := llm.WithCost(tc.realtime(t), price, true).Complete(t.Context(), items[0].Req)
			if err != nil {
				t.Fatal(err)
			}
			got, want := rs[0].Resp.Usage, rtResp.Usage
			if got.CachedInputTokens == 0 || (tc.name == "openai" && got.ReasoningTokens == 0) || (tc.name == "anthropic" && got.CacheWriteTokens == 0) {
				t.Errorf("usage details lost: %+v", got)
			}
			wantCost, wantSaving := want.Cost/2, want.CacheSaving/2
			gotCost, gotSaving := got.Cost, got.CacheSaving
			want.Cost, want.CacheSaving, got.Cost, got.CacheSaving = 0, 0, 0, 0
			if d := gotSaving - wantSaving; d > 1e-12 || d < -1e-12 || gotSaving <= 0 {
				t.Errorf("batch cache saving %g, want half of real time = %g", gotSaving, wantSaving)
			}
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("usage differs from real time (-realtime +batch):\n%s", d)
			}
			if diff := gotCost - wantCost; diff > 1e-12 || diff < -1e-12 || gotCost == 0 {
				t.Errorf("batch cost %g, want half of real time = %g", gotCost, wantCost)
			}
			if rs[0].Resp.Text != "ok" || rs[0].Resp.Model == "" || rs[0].Resp.Latency != 0 || rs[0].Resp.Cached {
				t.Errorf("response = %+v", rs[0].Resp)
			}
		})
	}
}

// TestResultsJoinedByCustomID: results come back reversed, with a
// duplicated line and a line for an id never submitted.
func TestResultsJoinedByCustomID(t *testing.T) {
	for _, f := range flavours {
		t.Run(f.name, func(t *testing.T) {
			srv := f.fake(t, fakebatch.Options{DuplicateResults: true, UnknownResults: true})
			items := judgeItems(7)
			rs, err := batch.Run(t.Context(), f.prov(t, srv), filepath.Join(t.TempDir(), "s.json"), items, fast)
			if err != nil {
				t.Fatal(err)
			}
			if len(rs) != len(items) {
				t.Fatalf("%d results for %d items", len(rs), len(items))
			}
			for i, r := range rs {
				if r.CustomID != items[i].CustomID || r.Err != nil || r.Resp.Text != "answer to "+items[i].CustomID {
					t.Errorf("result %d = %s %q %v", i, r.CustomID, r.Resp.Text, r.Err)
				}
			}
		})
	}
}

// TestResultErrorKinds: result lines decode to the *llm.Error the real-time
// adapter would return (kind, status, code), and requests that did not run
// are retryable timeouts / server errors.
func TestResultErrorKinds(t *testing.T) {
	outcomes := map[string]func(llmtest.Flavor) fakebatch.Outcome{
		"bad": func(f llmtest.Flavor) fakebatch.Outcome {
			if f == llmtest.OpenAI {
				return fakebatch.Outcome{Reply: llmtest.OpenAIError(400, "invalid_request_error", "", "max_tokens is too large")}
			}
			return fakebatch.Outcome{Reply: llmtest.AnthropicError(400, "invalid_request_error", "max_tokens is too large")}
		},
		"srv": func(f llmtest.Flavor) fakebatch.Outcome {
			if f == llmtest.OpenAI {
				return fakebatch.Outcome{Reply: llmtest.OpenAIError(500, "server_error", "", "boom")}
			}
			return fakebatch.Outcome{Reply: llmtest.AnthropicError(529, "overloaded_error", "busy")}
		},
		"exp":    func(llmtest.Flavor) fakebatch.Outcome { return fakebatch.Outcome{Expire: true} },
		"cancel": func(llmtest.Flavor) fakebatch.Outcome { return fakebatch.Outcome{Cancel: true} },
		"empty":  func(llmtest.Flavor) fakebatch.Outcome { return fakebatch.Outcome{Reply: llmtest.Reply{Text: ""}} },
	}
	want := map[string]map[string]llm.ErrorKind{
		"openai":    {"bad": llm.KindBadRequest, "srv": llm.KindServer, "exp": llm.KindTimeout, "cancel": llm.KindServer, "empty": llm.KindEmpty},
		"anthropic": {"bad": llm.KindBadRequest, "srv": llm.KindOverloaded, "exp": llm.KindTimeout, "cancel": llm.KindServer, "empty": llm.KindEmpty},
	}
	for _, f := range flavours {
		t.Run(f.name, func(t *testing.T) {
			fl := llmtest.Flavor(f.name)
			srv := f.fake(t, fakebatch.Options{Answer: func(id string, _ llmtest.ChatRequest) fakebatch.Outcome { return outcomes[id](fl) }})
			p := f.prov(t, srv)
			var items []batch.Item
			for id := range outcomes {
				items = append(items, batch.Item{CustomID: id, Req: judgeItems(1)[0].Req})
			}
			// One round: see the first outcome of each, before any retry.
			rs, err := batch.Run(t.Context(), p, filepath.Join(t.TempDir(), "s.json"), items, batch.Options{PollInterval: fast.PollInterval, MaxRounds: 1})
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range rs {
				var le *llm.Error
				if !errors.As(r.Err, &le) {
					t.Errorf("%s: err = %v, want an *llm.Error", r.CustomID, r.Err)
					continue
				}
				if le.Kind != want[f.name][r.CustomID] || le.Provider != f.name {
					t.Errorf("%s: %s (%s), want kind %s", r.CustomID, le.Kind, le, want[f.name][r.CustomID])
				}
				if r.CustomID == "bad" && (le.StatusCode != 400 || !strings.Contains(le.Message, "max_tokens is too large")) {
					t.Errorf("bad: %s", le)
				}
			}
		})
	}
}

func TestForModel(t *testing.T) {
	m := config.ModelConfig{Source: "openai", Model: "gpt-4o-mini", APIKey: "sk-test-123456"}
	p, err := batch.ForModel(m, provider.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if pl := p.(batch.Planner); pl.Identity() != "openai https://api.openai.com/v1 gpt-4o-mini" || pl.Limits() != batch.OpenAILimits {
		t.Errorf("identity %q limits %+v", pl.Identity(), pl.Limits())
	}
	a, err := batch.ForModel(config.ModelConfig{Source: "anthropic", Model: "anthropic/claude-haiku-4-5", APIKey: "sk-ant-123456"}, provider.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if id := a.(batch.Planner).Identity(); id != "anthropic https://api.anthropic.com claude-haiku-4-5" {
		t.Errorf("anthropic identity %q (the source prefix must be stripped like real time)", id)
	}
	for _, tc := range []struct {
		m    config.ModelConfig
		want string
	}{
		{config.ModelConfig{Source: "gemini", Model: "gemini-2.5-flash", APIKey: "k"}, "batch not supported for source gemini"},
		{config.ModelConfig{Source: "deepinfra", Model: "x", APIKey: "k"}, "batch not supported for source deepinfra"},
		{config.ModelConfig{Source: "anthropic", Model: "claude-haiku-4-5"}, "API key is empty"},
		{config.ModelConfig{Source: "openai"}, "model is empty"},
	} {
		_, err := batch.ForModel(tc.m, provider.Options{Role: "evaluator_model"})
		var le *llm.Error
		if !errors.As(err, &le) || le.Kind != llm.KindConfig || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s/%s: err = %v, want KindConfig %q", tc.m.Source, tc.m.Model, err, tc.want)
		}
	}
}

// TestForModelPrice: the batch cost is half of what the real-time client of
// the same model config reports.
func TestForModelPrice(t *testing.T) {
	srv := fakebatch.NewOpenAI(t, fakebatch.Options{Answer: func(string, llmtest.ChatRequest) fakebatch.Outcome {
		return fakebatch.Outcome{Reply: llmtest.Text("ok", llmtest.Usage{Input: 1000, Output: 100})}
	}})
	m := config.ModelConfig{Source: "openai", Model: "gpt-4o-mini", APIKey: srv.APIKey(), BaseURL: srv.BaseURL(),
		Pricing: &config.Price{Input: 2, Output: 8}}
	p, err := batch.ForModel(m, provider.Options{HTTP: srv.Client()})
	if err != nil {
		t.Fatal(err)
	}
	rs, err := batch.Run(t.Context(), p, filepath.Join(t.TempDir(), "s.json"), judgeItems(1), fast)
	if err != nil || rs[0].Err != nil {
		t.Fatal(err, rs[0].Err)
	}
	want := (1000*2.0 + 100*8.0) / 1e6 / 2
	if u := rs[0].Resp.Usage; !u.CostKnown || u.Cost < want*0.999 || u.Cost > want*1.001 {
		t.Errorf("cost %+v, want %g", u, want)
	}
}

// TestSeedRecordedLikeRealTime: a batched answer reports the sampling seed
// its request carried (or why none was sent) exactly as the real-time
// adapter reports it, since conversations record the seeds in their run
// block. Results are decoded without their request, so this needs care.
func TestSeedRecordedLikeRealTime(t *testing.T) {
	req := func(seed uint64) llm.Request {
		return llm.Request{Purpose: llm.PurposeTarget, Seed: seed, MaxTokens: 100,
			Messages: []llm.Message{{Role: llm.RoleSystem, Content: "Be kind."}, {Role: llm.RoleUser, Content: "hi"}}}
	}
	realtime := map[string]func(t *testing.T) llm.Client{
		"openai": func(t *testing.T) llm.Client {
			rt := llmtest.NewOpenAI(t)
			c, err := openai.New(openai.Config{APIKey: rt.APIKey(), BaseURL: rt.BaseURL(), Model: "gpt-4o-mini", HTTPClient: rt.Client()})
			if err != nil {
				t.Fatal(err)
			}
			return c
		},
		"anthropic": func(t *testing.T) llm.Client {
			rt := llmtest.NewAnthropic(t)
			c, err := anthropic.New(anthropic.Config{APIKey: rt.APIKey(), BaseURL: rt.BaseURL(), Model: "claude-haiku-4-5", HTTPClient: rt.Client()})
			if err != nil {
				t.Fatal(err)
			}
			return c
		},
	}
	for _, f := range flavours {
		t.Run(f.name, func(t *testing.T) {
			srv := f.fake(t, fakebatch.Options{})
			items := []batch.Item{{CustomID: "seeded", Req: req(42)}, {CustomID: "unseeded", Req: req(0)}}
			rs, err := batch.Run(t.Context(), f.prov(t, srv), filepath.Join(t.TempDir(), "s.json"), items, fast)
			if err != nil {
				t.Fatal(err)
			}
			rt := realtime[f.name](t)
			for i, it := range items {
				want, err := rt.Complete(t.Context(), it.Req)
				if err != nil || rs[i].Err != nil {
					t.Fatal(err, rs[i].Err)
				}
				got := rs[i].Resp
				if !cmp.Equal(got.SentSeed, want.SentSeed) || got.NoSeed != want.NoSeed {
					t.Errorf("%s: batch reports seed %v %q, real time %v %q", it.CustomID, got.SentSeed, got.NoSeed, want.SentSeed, want.NoSeed)
				}
			}
		})
	}
}

// A batched answer the provider stopped for safety reaches what the
// real-time adapter gives: the target's answer (Refused, with the text
// the provider gave), and for any other request (a judge's) a retryable
// empty answer, submitted again like one.
func TestRefusalLikeRealTime(t *testing.T) {
	wantText := map[string]string{"openai": "I can't help with that.", "anthropic": ""}
	for _, f := range flavours {
		t.Run(f.name, func(t *testing.T) {
			srv := f.fake(t, fakebatch.Options{Answer: func(string, llmtest.ChatRequest) fakebatch.Outcome {
				return fakebatch.Outcome{Reply: llmtest.Reply{Refusal: "I can't help with that."}}
			}})
			items := []batch.Item{{CustomID: "target", Req: shapeRequests()[1]}, {CustomID: "judge", Req: judgeItems(1)[0].Req}}
			rs, err := batch.Run(t.Context(), f.prov(t, srv), filepath.Join(t.TempDir(), "s.json"), items, batch.Options{PollInterval: fast.PollInterval, MaxRounds: 2})
			if err != nil {
				t.Fatal(err)
			}
			if r := rs[0]; r.Err != nil || !r.Resp.Refused || r.Resp.Text != wantText[f.name] || r.Resp.Usage.Requests != 1 {
				t.Errorf("target: %v, refused %v, text %q, usage %+v; want the refusal as its answer", r.Err, r.Resp.Refused, r.Resp.Text, r.Resp.Usage)
			}
			if r := rs[1]; llm.KindOf(r.Err) != llm.KindEmpty || r.Resp.Refused {
				t.Errorf("judge: %v (refused %v), want a %s error", r.Err, r.Resp.Refused, llm.KindEmpty)
			}
			if n, m := srv.Submissions("judge"), srv.Submissions("target"); n != 2 || m != 1 {
				t.Errorf("submitted the judge's request %d times and the target's %d in 2 rounds, want 2 (retried) and 1", n, m)
			}
		})
	}
}
