// Package stages implements the benchmark's stages as plain functions over
// typed values: generate metrics, generate and expand scenarios, simulate a
// conversation, judge it. They make model calls and nothing else — no file
// I/O, worker pools or caches; the runner owns those.
//
// Every request carries a Purpose, a MaxTokens, a Seed derived from the
// inputs (so a response cache can tell independent draws apart and a rerun
// reproduces them) and the llm.Meta* facts the offline model needs to play
// its role.
package stages

import (
	"context"
	"errors"
	"github.com/impactbench/impactbench/internal/artifacts"
	"strconv"

	"github.com/impactbench/impactbench/internal/llm"
)

// Default output budgets. Reasoning models spend part of max_tokens on
// hidden reasoning, so the judge gets 2048 (upstream's 1024 left them
// dry) and the generators scale with how much they must write.
const (
	defaultMaxTokens  = 2048
	judgeMaxTokens    = 2048
	metricsMaxTokens  = 8192
	maxLandmarks      = 5
	defaultMaxRounds  = 4
	perScenarioTokens = 800
)

// GenOptions tunes the generation stages.
type GenOptions struct {
	// Attempts per JSON call (validation feedback retries); 0 means llm's default (3).
	Attempts int
	// MaxRounds bounds GenBaseScenarios' regeneration rounds (default 4).
	MaxRounds int
	// Seed is the master seed; each call mixes it with what it generates.
	Seed uint64
	// Count is the number of metrics GenMetrics asks for (0: the model decides).
	Count int
	// MaxTokens overrides the per-call output budget (0: stage default).
	MaxTokens int
	// Logf receives non-fatal notes (dropped items, extra rounds); nil discards them.
	Logf func(format string, args ...any)
	// Existing are base scenarios the metric keeps (a scenario set grown
	// or with weak items replaced): GenBaseScenarios returns them first,
	// as they are, and asks only for the rest, listing their goals so the
	// new ones differ. NextID is the number of the first new id (s%03d);
	// ids are never reused, so a replaced scenario's results stay its own.
	// Both zero: a fresh generation.
	Existing []artifacts.Scenario
	NextID   int
}

func (o GenOptions) logf(format string, args ...any) {
	if o.Logf != nil {
		o.Logf(format, args...)
	}
}

func (o GenOptions) maxTokens(def int) int {
	if o.MaxTokens > 0 {
		return o.MaxTokens
	}
	return def
}

// JudgeOptions tunes Judge and Evaluate.
type JudgeOptions struct {
	// ShowExamples adds the metric's examples to the judge prompt.
	ShowExamples bool
	// Seed is the master seed (vary it for independent judge passes).
	Seed uint64
	// Attempts per JSON call; 0 means llm's default (3).
	Attempts int
	// MaxTokens overrides the judge's output budget (0: 2048).
	MaxTokens int
	// Refused is the judged conversation's Refused (Evaluate sets it):
	// the prompt shows prompts.RefusedNote for those messages when empty.
	Refused []int
}

// seedOf derives a call seed from a master seed and the identity of the
// draw. It is a fixed function (FNV-1a over length-prefixed parts, then the
// splitmix64 finaliser) so seeds are identical across processes and platforms.
func seedOf(master uint64, parts ...string) uint64 {
	const (
		offset = 14695981039346656037
		prime  = 1099511628211
	)
	h := uint64(offset)
	add := func(b byte) { h = (h ^ uint64(b)) * prime }
	for i := range 8 {
		add(byte(master >> (8 * i)))
	}
	for _, p := range parts {
		n := uint64(len(p))
		for i := range 8 {
			add(byte(n >> (8 * i)))
		}
		for i := 0; i < len(p); i++ {
			add(p[i])
		}
	}
	return splitmix(h)
}

func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

func itoa(i int) string { return strconv.Itoa(i) }

// callUsage is what one call cost, including a failed call the provider
// billed. Adapters report failed attempts in llm.Error.Usage; CompleteJSON
// already folds those into resp.Usage, so the error's usage only counts when
// the response carries none.
func callUsage(resp llm.Response, err error) llm.Usage {
	if resp.Usage != (llm.Usage{}) {
		return resp.Usage
	}
	var le *llm.Error
	if errors.As(err, &le) {
		return le.Usage
	}
	return llm.Usage{}
}

// fatal reports errors that must stop the stage rather than be recorded as
// a failed row: cancellation, the cost ceiling, and setup problems
// (credentials, billing, configuration) that would fail every row alike.
func fatal(ctx context.Context, err error) bool {
	if err == nil {
		return false
	}
	if ctx.Err() != nil || errors.Is(err, context.Canceled) || errors.Is(err, llm.ErrBudgetExceeded) {
		return true
	}
	switch llm.KindOf(err) {
	case llm.KindAuth, llm.KindQuota, llm.KindConfig:
		return true
	}
	return false
}
