package openai

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"

	"github.com/impactbench/impactbench/internal/llm"
)

// sdkParams is the request as the SDK's own params would carry it: the
// oracle the hand-encoded body (wire.go) must equal, as JSON.
func sdkParams(c *Client, req llm.Request, seed *int64) sdk.ChatCompletionNewParams {
	p := sdk.ChatCompletionNewParams{
		Model:    shared.ChatModel(c.cfg.Model),
		Messages: make([]sdk.ChatCompletionMessageParamUnion, 0, len(req.Messages)),
	}
	for _, m := range req.Messages {
		switch m.Role {
		case llm.RoleSystem:
			p.Messages = append(p.Messages, sdk.SystemMessage(m.Content))
		case llm.RoleAssistant:
			p.Messages = append(p.Messages, sdk.AssistantMessage(m.Content))
		default:
			p.Messages = append(p.Messages, sdk.UserMessage(m.Content))
		}
	}
	maxTokens := int64(c.cfg.MaxTokens)
	if req.MaxTokens > 0 {
		maxTokens = int64(req.MaxTokens)
	}
	if c.official {
		// max_tokens is deprecated and rejected by o-series/gpt-5 models.
		p.MaxCompletionTokens = sdk.Int(maxTokens)
	} else {
		p.MaxTokens = sdk.Int(maxTokens)
	}
	if t := req.Temperature; t != nil {
		p.Temperature = sdk.Float(*t)
	} else if t := c.cfg.Temperature; t != nil {
		p.Temperature = sdk.Float(*t)
	}
	if seed != nil {
		p.Seed = sdk.Int(*seed)
	}
	switch {
	case req.Schema != nil && c.official:
		p.ResponseFormat = sdk.ChatCompletionNewParamsResponseFormatUnion{
			OfJSONSchema: &shared.ResponseFormatJSONSchemaParam{
				JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{
					Name:   SchemaName(req.SchemaName),
					Schema: req.Schema,
					Strict: sdk.Bool(StrictCompatible(req.Schema)),
				},
			},
		}
	case req.JSON || req.Schema != nil:
		p.ResponseFormat = sdk.ChatCompletionNewParamsResponseFormatUnion{
			OfJSONObject: &shared.ResponseFormatJSONObjectParam{},
		}
	}
	return p
}

func TestWireBodyMatchesSDK(t *testing.T) {
	temp, cfgTemp := 0.7, 0.25
	seed := int64(-42)
	schema := map[string]any{"type": "object", "properties": map[string]any{"score": map[string]any{"type": "integer"}},
		"required": []any{"score"}, "additionalProperties": false}
	loose := map[string]any{"type": "object"}
	msgs := []llm.Message{
		{Role: llm.RoleSystem, Content: "Be terse <b>&</b> \"quoted\" \u2028 é"},
		{Role: llm.RoleUser, Content: "Hi\n\tthere"},
		{Role: llm.RoleAssistant, Content: "Hello."},
		{Role: "tool", Content: "an unknown role goes as the user's"},
	}
	tests := []struct {
		name     string
		official bool
		cfg      Config
		req      llm.Request
		seed     *int64
	}{
		{name: "plain", req: llm.Request{Messages: msgs}},
		{name: "no messages", req: llm.Request{}},
		{name: "official caps and seed", official: true, req: llm.Request{Messages: msgs, MaxTokens: 77}, seed: &seed},
		{name: "request temperature", cfg: Config{Temperature: &cfgTemp}, req: llm.Request{Messages: msgs, Temperature: &temp}},
		{name: "config temperature", cfg: Config{Temperature: &cfgTemp}, req: llm.Request{Messages: msgs}},
		{name: "json object", req: llm.Request{Messages: msgs, JSON: true}},
		{name: "schema, not official", req: llm.Request{Messages: msgs, Schema: schema}},
		{name: "strict schema", official: true, req: llm.Request{Messages: msgs, Schema: schema, SchemaName: "verdict"}},
		{name: "loose schema", official: true, req: llm.Request{Messages: msgs, Schema: loose, JSON: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := tt.cfg
			cfg.Model, cfg.MaxTokens = "gpt-4o-mini", DefaultMaxTokens
			c := &Client{cfg: cfg, official: tt.official}
			want, err := sdkParams(c, tt.req, tt.seed).MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			got, err := c.body(tt.req, tt.seed)
			if err != nil {
				t.Fatal(err)
			}
			var g, w any
			if err := json.Unmarshal(got, &g); err != nil {
				t.Fatalf("body is not JSON: %v\n%s", err, got)
			}
			if err := json.Unmarshal(want, &w); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(w, g); diff != "" {
				t.Errorf("body differs from the SDK's (-sdk +ours):\n%s\nours: %s", diff, got)
			}
		})
	}
}

// BenchmarkRequestBody compares the hand-encoded body with the SDK's
// params encoding for a judge-sized request (go test -bench RequestBody).
func BenchmarkRequestBody(b *testing.B) {
	long := make([]byte, 6000)
	for i := range long {
		long[i] = 'a' + byte(i%26)
	}
	req := llm.Request{Messages: []llm.Message{
		{Role: llm.RoleSystem, Content: string(long)},
		{Role: llm.RoleUser, Content: string(long[:2000])},
		{Role: llm.RoleAssistant, Content: string(long[:1500])},
		{Role: llm.RoleUser, Content: string(long[:400])},
	}, JSON: true}
	c := &Client{cfg: Config{Model: "m", MaxTokens: DefaultMaxTokens}}
	b.Run("ours", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := c.body(req, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("sdk", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := sdkParams(c, req, nil).MarshalJSON(); err != nil {
				b.Fatal(err)
			}
		}
	})
}
