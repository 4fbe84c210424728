package runner

import (
	"sync"

	"github.com/impactbench/impactbench/internal/llm"
	"github.com/impactbench/impactbench/internal/results"
)

// Summary is what an invocation did, for people and for --json.
type Summary struct {
	mu        sync.Mutex
	Benchmark string        `json:"benchmark"`
	DryRun    bool          `json:"dry_run,omitempty"`
	Phases    []PhaseReport `json:"phases"`
	Spent     llm.Usage     `json:"spent"`  // paid in this invocation
	Reused    llm.Usage     `json:"reused"` // stored answers replayed instead of paid again
	Budget    *BudgetReport `json:"budget,omitempty"`
	Plan      []PlanRow     `json:"plan,omitempty"` // dry-run estimates
	// Precision is the dry run's precision plan (precision.go).
	Precision *PrecisionPlan `json:"precision,omitempty"`
	// Limits is each provider pool's concurrency at the end (see RecordLimits).
	Limits []PoolLimit `json:"limits,omitempty"`
	// Results is the headline of each model aggregate wrote in this
	// invocation, in results.json's order, so --json need not read back a
	// file whose per-scenario rows can be larger than everything else the
	// run held (nil when aggregate did not run).
	Results []results.Headline `json:"-"`
}

// PhaseReport is one phase (for one target).
type PhaseReport struct {
	Phase    string       `json:"phase"`
	Target   string       `json:"target,omitempty"`
	Status   string       `json:"status"` // ran | skipped | failed | stopped
	Reason   string       `json:"reason,omitempty"`
	Rows     int          `json:"rows"`
	Failed   int          `json:"failed"`
	Reused   int          `json:"reused_rows"`
	Calls    int          `json:"calls"` // requests sent now (all attempts)
	Spent    llm.Usage    `json:"spent"`
	Output   string       `json:"output,omitempty"`
	Failures []RowFailure `json:"failures,omitempty"`
	// Partial: the output was written with the rows that succeeded and later
	// phases go on with them (the failed rows are still exit 1).
	Partial bool `json:"partial,omitempty"`
}

// RowFailure names a failed row and why.
type RowFailure struct {
	Row    string `json:"row"`
	Reason string `json:"reason"`
}

// BudgetReport says how the cost ceiling went.
type BudgetReport struct {
	Max       float64 `json:"max_usd"`
	Spent     float64 `json:"spent_usd"`
	Stopped   bool    `json:"stopped"`
	Remaining int     `json:"rows_remaining"`
}

func (s *Summary) add(p PhaseReport) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.Phases = append(s.Phases, p)
	s.Spent = s.Spent.Add(p.Spent)
}

func (s *Summary) addReused(u llm.Usage) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.Reused = s.Reused.Add(u)
}

// Ran reports whether phase ran (was not skipped, refused or stopped) for
// any target in this invocation.
func (s *Summary) Ran(phase string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.Phases {
		if p.Phase == phase && p.Status == "ran" {
			return true
		}
	}
	return false
}

// Failed counts failed rows over all phases.
func (s *Summary) Failed() (n int, phases []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.Phases {
		if p.Failed > 0 {
			n += p.Failed
			name := p.Phase
			if p.Target != "" {
				name += " " + p.Target
			}
			phases = append(phases, name)
		}
	}
	return n, phases
}

// onlyPartial reports whether every failed phase still wrote its output
// (so the phases after it can go on with the rows that succeeded).
func (s *Summary) onlyPartial() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.Phases {
		if p.Failed > 0 && !p.Partial {
			return false
		}
	}
	return true
}

const maxListedFailures = 20
