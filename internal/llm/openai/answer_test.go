package openai

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	sdk "github.com/openai/openai-go/v3"

	"github.com/impactbench/impactbench/internal/llm"
)

// sdkAnswer reads body the way the adapter read it through the SDK's
// ChatCompletion: the oracle readAnswer must agree with.
func sdkAnswer(t *testing.T, body string) answer {
	t.Helper()
	var comp sdk.ChatCompletion
	if err := json.Unmarshal([]byte(body), &comp); err != nil {
		t.Fatalf("the SDK refuses %s: %v", body, err)
	}
	u := comp.Usage
	a := answer{model: comp.Model, choices: len(comp.Choices) > 0, usage: llm.Usage{Requests: 1,
		InputTokens: int(u.PromptTokens), OutputTokens: int(u.CompletionTokens),
		CachedInputTokens: int(u.PromptTokensDetails.CachedTokens), CacheWriteTokens: int(u.PromptTokensDetails.CacheWriteTokens),
		ReasoningTokens: int(u.CompletionTokensDetails.ReasoningTokens)}}
	if f, ok := comp.JSON.ExtraFields["error"]; ok {
		a.err = f.Raw()
	}
	if !a.choices {
		return a
	}
	ch := comp.Choices[0]
	if f, ok := ch.JSON.ExtraFields["error"]; ok {
		a.choiceErr = f.Raw()
	}
	a.finish, a.refusal, a.content = ch.FinishReason, ch.Message.Refusal, ch.Message.Content
	if raw := ch.Message.JSON.Content.Raw(); strings.HasPrefix(raw, "[") {
		a.content = contentParts(raw)
	}
	return a
}

func TestReadAnswerMatchesSDK(t *testing.T) {
	bodies := map[string]string{
		"plain": `{"id":"x","object":"chat.completion","created":1,"model":"gpt-4o-mini","choices":[{"index":0,"message":{"role":"assistant","content":"Hi \"there\"\n\u00e9 \ud83d\ude00"},"finish_reason":"stop"}],` +
			`"usage":{"prompt_tokens":12,"completion_tokens":3,"total_tokens":15,"prompt_tokens_details":{"cached_tokens":8,"cache_write_tokens":2},"completion_tokens_details":{"reasoning_tokens":1}}}`,
		"content parts": `{"model":"m","choices":[{"message":{"role":"assistant","content":[{"type":"text","text":"a"},{"type":"image_url","image_url":{}},{"type":"text","text":"b"}]},"finish_reason":"stop"}]}`,
		"no choices":    `{"model":"m","choices":[],"usage":{"prompt_tokens":5}}`,
		"choices null":  `{"model":"m","choices":null}`,
		"top error":     `{"error":{"code":429,"message":"slow down"}}`,
		"error null":    `{"error":null,"model":"m","choices":[{"message":{"content":"ok"},"finish_reason":"stop"}]}`,
		"choice error":  `{"model":"m","choices":[{"error":{"code":"server_error","message":"boom"},"finish_reason":"error","message":{"content":""}}]}`,
		"refusal":       `{"model":"m","choices":[{"message":{"content":null,"refusal":"no"},"finish_reason":"stop"}]}`,
		"null content":  `{"model":"m","choices":[{"message":{"content":null},"finish_reason":"length"}]}`,
		"no message":    `{"model":"m","choices":[{"finish_reason":"stop"}]}`,
		"usage null":    `{"model":"m","choices":[{"message":{"content":"x"}}],"usage":null}`,
		"two choices":   `{"model":"m","choices":[{"message":{"content":"first"}},{"message":{"content":"second"}}]}`,
	}
	for name, body := range bodies {
		t.Run(name, func(t *testing.T) {
			got, ok := readAnswer([]byte(body))
			if !ok {
				t.Fatal("readAnswer: not valid JSON")
			}
			want := sdkAnswer(t, body)
			if diff := cmp.Diff(want, got, cmp.AllowUnexported(answer{})); diff != "" {
				t.Errorf("readAnswer differs from the SDK (-sdk +ours):\n%s", diff)
			}
		})
	}
}

// BenchmarkReadAnswer compares reading a reply with gjson and with the
// SDK's ChatCompletion (go test -bench ReadAnswer).
func BenchmarkReadAnswer(b *testing.B) {
	text := strings.Repeat("A sentence of a target's reply, long enough to count. ", 30)
	body, _ := json.Marshal(map[string]any{"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "bench-target",
		"choices": []any{map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": text}, "finish_reason": "stop"}},
		"usage":   map[string]any{"prompt_tokens": 2000, "completion_tokens": 400, "total_tokens": 2400}})
	b.Run("gjson", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, _ = readAnswer(body)
		}
	})
	b.Run("sdk", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var comp sdk.ChatCompletion
			if err := json.Unmarshal(body, &comp); err != nil {
				b.Fatal(err)
			}
		}
	})
}
