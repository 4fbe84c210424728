package openai

import (
	"github.com/tidwall/gjson"

	"github.com/impactbench/impactbench/internal/llm"
)

// answer is what the adapter reads from a Chat Completions body.
//
// It is read with gjson rather than decoded into the SDK's ChatCompletion:
// the SDK's decoder (a full JSON scan, then its own reflection that keeps
// every field's raw text and metadata) was 7 % of the tool's CPU in the
// study preset, to read a handful of fields. gjson (the SDK's own
// dependency) reads them in place and is as lenient as the SDK: a field of
// the wrong type reads as empty, a number as a string's number.
type answer struct {
	// err and choiceErr are the raw "error" members of the body and of its
	// first choice (gateways report failures inside a 200).
	err, choiceErr string
	choices        bool // at least one choice
	model, finish  string
	refusal        string
	content        string
	usage          llm.Usage
}

// readAnswer reads body; ok is false when body is not valid JSON. Each
// object is walked once, its members taken by name (the last of a
// repeated name, as encoding/json does).
func readAnswer(body []byte) (a answer, ok bool) {
	if !gjson.ValidBytes(body) {
		return a, false
	}
	a.usage = llm.Usage{Requests: 1}
	gjson.ParseBytes(body).ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "error":
			a.err = v.Raw
		case "model":
			a.model = str(v)
		case "usage":
			a.usage = readUsage(v)
		case "choices":
			a.choices = false
			if ch := v.Get("0"); v.IsArray() && ch.Exists() {
				a.choices = true
				a.readChoice(ch)
			}
		}
		return true
	})
	return a, true
}

// readChoice reads the first choice.
func (a *answer) readChoice(ch gjson.Result) {
	a.choiceErr, a.finish, a.refusal, a.content = "", "", "", ""
	ch.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "error":
			a.choiceErr = v.Raw
		case "finish_reason":
			a.finish = str(v)
		case "message":
			a.refusal = str(v.Get("refusal"))
			a.content = str(v.Get("content"))
			if c := v.Get("content"); c.IsArray() {
				// Some OpenAI-compatible servers answer with content
				// parts ([{"type":"text","text":…}]).
				a.content = contentParts(c.Raw)
			}
		}
		return true
	})
}

// str is r's text when r is a JSON string, else "" (as the SDK reads a
// string field that holds something else).
func str(r gjson.Result) string {
	if r.Type != gjson.String {
		return ""
	}
	return r.Str
}

func readUsage(u gjson.Result) llm.Usage {
	return llm.Usage{
		Requests:          1,
		InputTokens:       int(u.Get("prompt_tokens").Int()),
		OutputTokens:      int(u.Get("completion_tokens").Int()),
		CachedInputTokens: int(u.Get("prompt_tokens_details.cached_tokens").Int()),
		CacheWriteTokens:  int(u.Get("prompt_tokens_details.cache_write_tokens").Int()),
		ReasoningTokens:   int(u.Get("completion_tokens_details.reasoning_tokens").Int()),
	}
}
