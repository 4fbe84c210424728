package summary

import (
	"github.com/impactbench/impactbench/internal/llm"
	"github.com/impactbench/impactbench/internal/plan"
)

// PoolLimit is one provider pool's concurrency as the invocation left it
// (Summary.Limits, `--json` "limits").
type PoolLimit struct {
	Pool string `json:"pool"` // rate_pool, else model name
	// Concurrency is the learned limit at the end; MaxConcurrency the cap it
	// may grow to (max_concurrency, or the default ceiling).
	Concurrency    int `json:"concurrency"`
	MaxConcurrency int `json:"max_concurrency"`
	PeakInFlight   int `json:"peak_in_flight"`
	// BackOffs counts cuts of the limit (429, overloaded, latency).
	BackOffs    int64 `json:"back_offs"`
	Calls       int64 `json:"calls"`
	RateLimited int64 `json:"rate_limited"`
	// LatencyBaselineMS is the pool's uncongested latency as the controller
	// saw it (0: not measured).
	LatencyBaselineMS int64 `json:"latency_baseline_ms"`
	// RPM and TPM in effect at the end: configured, or learned from the
	// provider's rate-limit headers (0: none).
	RPM int `json:"rpm,omitempty"`
	TPM int `json:"tpm,omitempty"`
}

// StudySummary is what a study invocation did: each benchmark's summary,
// and what the study spent, replayed and learned as a whole.
type StudySummary struct {
	DryRun     bool
	Benchmarks []*Summary
	Spent      llm.Usage // paid in this invocation, every benchmark together
	Reused     llm.Usage
	Budget     *BudgetReport // the one ceiling of the study (nil: none)
	Limits     []PoolLimit
	Plan       *plan.Total // --dry-run: the study's bill
}
