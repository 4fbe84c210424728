package clientset

import (
	"context"
	"errors"

	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/llm"
)

// replayOnly is the client of a replay (merge --from-store): it is reached
// only when the call store in front of it has no answer, and then fails
// without calling anyone, so the replay pays for nothing and needs no key.
type replayOnly struct{ m config.ModelConfig }

func (r replayOnly) Complete(context.Context, llm.Request) (llm.Response, error) {
	return llm.Response{}, &llm.Error{
		Kind: llm.KindConfig, Provider: r.m.Provider(), Model: r.m.Model,
		Message: notStored,
		Hint:    "a replay (merge --from-store) calls no model: the worker that owns this row has not finished it — run that shard's index again, then merge",
	}
}

const notStored = "this call is not in the call store"

// NotStored reports whether err holds a replay's call that the call store
// did not hold (a row of a worker that has not finished).
func NotStored(err error) bool {
	var le *llm.Error
	return errors.As(err, &le) && le.Kind == llm.KindConfig && le.Message == notStored
}
