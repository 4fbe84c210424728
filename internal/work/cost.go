package work

import (
	"fmt"
	"path/filepath"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/layout"
	"github.com/impactbench/impactbench/internal/llm"
)

// WriteCost records a phase's usage in dir/cost.json: upstream's shape
// (cost, input and output tokens, phase) and ours after it, including the
// prompt cache's reads, writes and net saving and, when given, the split
// by model. A shard writes its own dir/cost.shard-i-of-K.json instead
// (shards running at once never rewrite one file); merge folds them in.
func (b *Bench) WriteCost(dir, phase string, u llm.Usage, models ...ByModel) error {
	all := ByModel{}
	for _, m := range models {
		for label, mu := range m {
			all.Add(label, mu)
		}
	}
	return artifacts.UpdateCost(filepath.Join(dir, b.Opts.Shard.File(layout.CostFile)), phase, PhaseCost(phase, u, all))
}

// PhaseCost is one cost.json entry.
func PhaseCost(phase string, u llm.Usage, models ByModel) artifacts.PhaseCost {
	pc := artifacts.PhaseCost{
		Cost: artifacts.Round(u.Cost, 6), InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, Phase: phase,
		CachedInputTokens: u.CachedInputTokens, ReasoningTokens: u.ReasoningTokens, Requests: u.Requests,
		CacheWriteTokens: u.CacheWriteTokens, CacheSaving: artifacts.Round(u.CacheSaving, 6),
	}
	if u.Requests > 0 && !u.CostKnown {
		f := false
		pc.CostKnown = &f
	}
	for label, mu := range models {
		if pc.Models == nil {
			pc.Models = map[string]artifacts.ModelCost{}
		}
		pc.Models[label] = artifacts.ModelCost{Requests: mu.Requests, Cost: artifacts.Round(mu.Cost, 6),
			InputTokens: mu.InputTokens, OutputTokens: mu.OutputTokens, CachedInputTokens: mu.CachedInputTokens,
			CacheWriteTokens: mu.CacheWriteTokens, CacheSaving: artifacts.Round(mu.CacheSaving, 6)}
	}
	return pc
}

// PhaseUsage reads a cost.json entry back: its usage and its split by model.
func PhaseUsage(p artifacts.PhaseCost) (llm.Usage, ByModel) {
	u := UsageOf(artifacts.UsageRecord{Cost: p.Cost, InputTokens: p.InputTokens, OutputTokens: p.OutputTokens,
		CachedInputTokens: p.CachedInputTokens, CacheWriteTokens: p.CacheWriteTokens, CacheSaving: p.CacheSaving,
		ReasoningTokens: p.ReasoningTokens, Requests: p.Requests, CostKnown: p.CostKnown})
	models := ByModel{}
	for label, m := range p.Models {
		models.Add(label, llm.Usage{Requests: m.Requests, Cost: m.Cost, InputTokens: m.InputTokens, OutputTokens: m.OutputTokens,
			CachedInputTokens: m.CachedInputTokens, CacheWriteTokens: m.CacheWriteTokens, CacheSaving: m.CacheSaving, CostKnown: u.CostKnown})
	}
	return u, models
}

// UsageOf converts an on-disk usage record back (for phase totals).
func UsageOf(u artifacts.UsageRecord) llm.Usage {
	known := u.CostKnown == nil || *u.CostKnown
	req := u.Requests
	if req == 0 && (u.InputTokens > 0 || u.OutputTokens > 0) {
		req = 1
	}
	return llm.Usage{Requests: req, InputTokens: u.InputTokens, OutputTokens: u.OutputTokens,
		CachedInputTokens: u.CachedInputTokens, CacheWriteTokens: u.CacheWriteTokens,
		CacheWriteLongTokens: u.CacheWriteLongTokens, CacheSaving: u.CacheSaving,
		ReasoningTokens: u.ReasoningTokens, Cost: u.Cost, CostKnown: known}
}

// ByModel adds usages up per model label (cost.json's "models").
type ByModel map[string]llm.Usage

// Add adds u to label's usage (nothing when u is empty).
func (m ByModel) Add(label string, u llm.Usage) {
	if u.Requests > 0 || u.InputTokens > 0 {
		m[label] = m[label].Add(u)
	}
}

// Paid is what a row paid in this invocation and what it replayed from
// the call store instead of paying again.
type Paid struct{ Spent, Saved llm.Usage }

// FromStoreNote is the clause a phase's summary line adds for its rows
// taken whole from the call store — a rerun after a kill, or a worker
// repeating an index — so the line itself shows they were not paid again;
// nothing when there were none.
func FromStoreNote(rows int) string {
	if rows == 0 {
		return ""
	}
	return fmt.Sprintf("; %d of them from the store, not paid again", rows)
}
