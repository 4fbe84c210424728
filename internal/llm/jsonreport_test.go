package llm

import (
	"context"
	"errors"
	"slices"
	"testing"
)

// TestCompleteJSONReport: the report names the repairs of the accepted
// answer and, in fixed phrases, why each earlier answer was unusable; the
// retry prompt still shows the model the full problem.
func TestCompleteJSONReport(t *testing.T) {
	type out struct {
		N int `json:"n"`
	}
	positive := func(v any) error {
		if v.(*out).N <= 0 {
			return &UnusableError{Reason: "had a non-positive n", Err: errors.New("n must be positive")}
		}
		return nil
	}
	tests := []struct {
		name     string
		answers  []string
		validate func(any) error
		want     JSONReport
		recorded []string
	}{
		{"clean", []string{`{"n": 1}`}, nil, JSONReport{}, nil},
		{"fenced after think", []string{"<think>hm</think>```json\n{\"n\": 1}\n```"}, nil,
			JSONReport{Repairs: []string{"removed a <think> block", "unwrapped a ``` code fence"}},
			[]string{"removed a <think> block", "unwrapped a ``` code fence"}},
		{"every kind of unusable", []string{"nope", `[1]`, `{"n": "x"}`, `{"n": 0}`, "Sure: {\"n\": 2}"}, positive,
			JSONReport{Repairs: []string{"removed prose around the JSON object"},
				Unusable: []string{"was not JSON", "was not a JSON object", "did not match the schema", "had a non-positive n"}},
			[]string{"removed prose around the JSON object", "asked again: answer 1 was not JSON", "asked again: answer 2 was not a JSON object",
				"asked again: answer 3 did not match the schema", "asked again: answer 4 had a non-positive n"}},
		{"plain validate error", []string{`{"n": 0}`, `{"n": 3}`}, func(v any) error {
			if v.(*out).N == 0 {
				return errors.New("zero")
			}
			return nil
		}, JSONReport{Unusable: []string{"failed the caller's check"}}, []string{"asked again: answer 1 failed the caller's check"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var prompts []string
			n := 0
			c := ClientFunc(func(_ context.Context, req Request) (Response, error) {
				prompts = append(prompts, req.Messages[len(req.Messages)-1].Content)
				n++
				return Response{Text: tt.answers[n-1]}, nil
			})
			var o out
			_, rep, err := CompleteJSONReport(context.Background(), c, Request{Messages: []Message{{Role: RoleUser, Content: "go"}}}, &o,
				JSONOptions{Attempts: len(tt.answers), Validate: tt.validate})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(rep.Repairs, tt.want.Repairs) || !slices.Equal(rep.Unusable, tt.want.Unusable) {
				t.Errorf("report %+v, want %+v", rep, tt.want)
			}
			if got := rep.Recorded(); !slices.Equal(got, tt.recorded) {
				t.Errorf("Recorded() %q, want %q", got, tt.recorded)
			}
			if tt.name == "every kind of unusable" && prompts[4] != "That output was not valid: n must be positive\nReply again with only the corrected JSON object." {
				t.Errorf("retry prompt %q", prompts[4])
			}
		})
	}
}
