package openai

import (
	"bytes"
	"encoding/json"

	"github.com/impactbench/impactbench/internal/llm"
)

// The request body is encoded here rather than by the SDK's
// ChatCompletionNewParams.MarshalJSON: the SDK's param encoder (its own
// reflection over optional fields and unions, then a second pass for extra
// fields) was 11 % of the tool's CPU in the study preset, more than anything
// else the tool does per call, for a body of a handful of fields. The SDK
// still sends the request and decodes the answer; TestWireBodyMatchesSDK
// keeps this body equal, as JSON, to what the SDK's params would send.
type wireRequest struct {
	Messages            []wireMessage       `json:"messages"`
	Model               string              `json:"model"`
	MaxCompletionTokens *int64              `json:"max_completion_tokens,omitempty"`
	MaxTokens           *int64              `json:"max_tokens,omitempty"`
	Seed                *int64              `json:"seed,omitempty"`
	Temperature         *float64            `json:"temperature,omitempty"`
	ResponseFormat      *wireResponseFormat `json:"response_format,omitempty"`
}

type wireMessage struct {
	Role    llm.Role `json:"role"`
	Content string   `json:"content"`
}

type wireResponseFormat struct {
	Type       string          `json:"type"`
	JSONSchema *wireJSONSchema `json:"json_schema,omitempty"`
}

type wireJSONSchema struct {
	Name   string         `json:"name"`
	Schema map[string]any `json:"schema"`
	Strict bool           `json:"strict"`
}

// body encodes the Chat Completions request for req.
func (c *Client) body(req llm.Request, seed *int64) ([]byte, error) {
	w := wireRequest{Model: c.cfg.Model, Messages: make([]wireMessage, len(req.Messages)), Seed: seed}
	size := 256
	for i, m := range req.Messages {
		role := m.Role
		if role != llm.RoleSystem && role != llm.RoleAssistant {
			role = llm.RoleUser
		}
		w.Messages[i] = wireMessage{Role: role, Content: m.Content}
		size += len(m.Content) + 32
	}
	maxTokens := int64(c.cfg.MaxTokens)
	if req.MaxTokens > 0 {
		maxTokens = int64(req.MaxTokens)
	}
	if c.official {
		// max_tokens is deprecated and rejected by o-series/gpt-5 models.
		w.MaxCompletionTokens = &maxTokens
	} else {
		w.MaxTokens = &maxTokens
	}
	w.Temperature = req.Temperature
	if w.Temperature == nil {
		w.Temperature = c.cfg.Temperature
	}
	switch {
	case req.Schema != nil && c.official:
		w.ResponseFormat = &wireResponseFormat{Type: "json_schema", JSONSchema: &wireJSONSchema{
			Name: SchemaName(req.SchemaName), Schema: req.Schema, Strict: StrictCompatible(req.Schema)}}
	case req.JSON || req.Schema != nil:
		w.ResponseFormat = &wireResponseFormat{Type: "json_object"}
	}
	buf := bytes.NewBuffer(make([]byte, 0, size))
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false) // '<' stays '<': any JSON parser reads both alike
	if err := enc.Encode(w); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
