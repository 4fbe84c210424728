// Package summary is what an invocation did, for people and for --json:
// per benchmark, every phase's report (its rows counted as they end), what
// was paid and replayed, the cost ceiling, the dry run's plan and the
// provider pools' limits; per study, the same added up.
//
// Rows count themselves in (Count) as they end; an output adds its phase's
// report (Add) when it is written, skipped or stopped; Settle fills the
// counts of every report from its rows once every row has ended, so a row
// that ends late is never missed or counted twice.
package summary

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/impactbench/impactbench/internal/llm"
	"github.com/impactbench/impactbench/internal/phase"
	"github.com/impactbench/impactbench/internal/plan"
	"github.com/impactbench/impactbench/internal/results"
	"github.com/impactbench/impactbench/internal/schedule"
)

// Summary is what an invocation did to one benchmark, for people and for
// --json. Rows count themselves into it as they end (tally); an output
// adds its phase's report when it is written, skipped or stopped; the
// counts of every report are settled from the rows once every row has
// ended, so a row that ends late is never missed or counted twice.
type Summary struct {
	mu        sync.Mutex
	Benchmark string        `json:"benchmark"`
	DryRun    bool          `json:"dry_run,omitempty"`
	Phases    []PhaseReport `json:"phases"`
	Spent     llm.Usage     `json:"spent"`  // paid in this invocation
	Reused    llm.Usage     `json:"reused"` // stored answers replayed instead of paid again
	Budget    *BudgetReport `json:"budget,omitempty"`
	Plan      []plan.Row    `json:"plan,omitempty"` // dry-run estimates
	// Precision is the dry run's precision plan (precision.go).
	Precision *plan.PrecisionPlan `json:"precision,omitempty"`
	// Limits is each provider pool's concurrency at the end (see RecordLimits).
	Limits []PoolLimit `json:"limits,omitempty"`
	// Results is the headline of each model aggregate wrote in this
	// invocation, in results.json's order, so --json need not read back a
	// file whose per-scenario rows can be larger than everything else the
	// run held (nil when aggregate did not run).
	Results []results.Headline `json:"-"`

	// direct is what phases without rows of their own (generation,
	// aggregate) paid and replayed; tallies are the rows' counts.
	direct, directSaved llm.Usage
	tallies             map[key]*tally
	// Turns is generation.turns, for the dry run's batch waves.
	Turns int `json:"-"`
}

// PhaseReport is one phase (for one target).
type PhaseReport struct {
	Phase    phase.Stage  `json:"phase"`
	Target   string       `json:"target,omitempty"`
	Status   phase.Status `json:"status"`
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
	// tallied: the counts come from the rows of Phase and Target (settle).
	tallied bool
	// settled: Settle made this report for rows whose phase had not
	// reported then; the next Settle makes it again or, when the phase has
	// reported meanwhile (a target still at work while another settled),
	// drops it.
	settled bool
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

// tally is what the rows of one stage and target did in this invocation.
type tally struct {
	rows, reused, failed, stopped int
	failures                      []RowFailure
	spent, saved                  llm.Usage
}

const maxListedFailures = 20

// Count adds one row's outcome to its phase's tally.
func (s *Summary) Count(stage phase.Stage, target, row string, status schedule.Status, reason string, spent, saved llm.Usage) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tallies == nil {
		s.tallies = map[key]*tally{}
	}
	k := key{stage, target}
	t := s.tallies[k]
	if t == nil {
		t = &tally{}
		s.tallies[k] = t
	}
	t.spent, t.saved = t.spent.Add(spent), t.saved.Add(saved)
	switch status {
	case schedule.Stopped:
		t.stopped++
		return
	case schedule.Reused:
		t.reused++
	case schedule.Failed:
		t.failed++
		t.failures = append(t.failures, RowFailure{Row: row, Reason: reason})
	}
	t.rows++
}

// Add records a phase's report. The report of a stage made of counted
// rows (simulate, evaluate, repeats) takes its counts from them when the
// summary is settled; any other brings what it spent.
func (s *Summary) Add(p PhaseReport) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p.tallied = p.Phase.Tallied()
	s.Phases = append(s.Phases, p)
	if !p.tallied {
		s.direct = s.direct.Add(p.Spent)
		s.Spent = s.Spent.Add(p.Spent) // Settle totals it again with the rows
	}
}

func (s *Summary) AddReused(u llm.Usage) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.directSaved = s.directSaved.Add(u)
	s.Reused = s.Reused.Add(u)
}

// Settle fills every tallied report's counts from its rows, adds a stopped
// report for rows whose phase never reported (a run that stopped before
// their output was due), and totals what was spent and replayed. Call it
// once every row has ended; it may be called again.
func (s *Summary) Settle() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.Spent, s.Reused = s.direct, s.directSaved
	s.Phases = slices.DeleteFunc(s.Phases, func(p PhaseReport) bool { return p.settled })
	seen := map[key]bool{}
	for i := range s.Phases {
		p := &s.Phases[i]
		if !p.tallied {
			continue
		}
		k := key{p.Phase, p.Target}
		seen[k] = true
		if t := s.tallies[k]; t != nil {
			p.fill(t)
		}
	}
	for _, k := range sortedKeys(s.tallies) {
		t := s.tallies[k]
		s.Spent, s.Reused = s.Spent.Add(t.spent), s.Reused.Add(t.saved)
		if seen[k] || (t.spent.Requests == 0 && t.failed == 0 && t.rows == 0) {
			continue
		}
		p := PhaseReport{Phase: k.stage, Target: k.target, Status: phase.StatusStopped, Rows: t.rows, tallied: true, settled: true,
			Reason: fmt.Sprintf("the run stopped before %s was written; %d row(s) finished meanwhile are stored for the next run", k.stage.OutputName(), t.rows)}
		p.fill(t)
		s.Phases = append(s.Phases, p)
	}
}

// fill sets a report's counts from its rows (Rows stays what its output holds).
func (p *PhaseReport) fill(t *tally) {
	p.Reused, p.Spent, p.Calls, p.Failed = t.reused, t.spent, t.spent.Requests, t.failed
	p.Failures = slices.Clone(t.failures)
	slices.SortFunc(p.Failures, func(a, b RowFailure) int {
		if a.Row < b.Row {
			return -1
		}
		if a.Row > b.Row {
			return 1
		}
		return 0
	})
	if len(p.Failures) > maxListedFailures {
		p.Failures = p.Failures[:maxListedFailures]
	}
	if p.Status == phase.StatusRan && t.failed > 0 {
		p.Status = phase.StatusFailed
	}
}

func sortedKeys(m map[key]*tally) []key {
	ks := make([]key, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.SortFunc(ks, func(a, b key) int {
		if a.target != b.target {
			if a.target < b.target {
				return -1
			}
			return 1
		}
		return int(a.stage) - int(b.stage)
	})
	return ks
}

// Ran reports whether phase ran (was not skipped, refused or stopped) for
// any target in this invocation.
func (s *Summary) Ran(stage phase.Stage) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.Phases {
		if p.Phase == stage && p.Status == phase.StatusRan {
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
			name := p.Phase.String()
			if p.Target != "" {
				name += " " + p.Target
			}
			phases = append(phases, name)
		}
	}
	return n, phases
}

// OnlyPartial reports whether every failed phase still wrote its output
// (so the phases after it can go on with the rows that succeeded).
func (s *Summary) OnlyPartial() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.Phases {
		if p.Failed > 0 && !p.Partial {
			return false
		}
	}
	return true
}

// Stopped reports whether phase stopped for target.
func (s *Summary) Stopped(stage phase.Stage, target string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.Phases {
		if p.Phase == stage && p.Target == target && p.Status == phase.StatusStopped {
			return true
		}
	}
	return false
}

// NoteRemaining adds n rows the cost ceiling (or an interruption) left undone.
func (s *Summary) NoteRemaining(n int, b BudgetView) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.Budget == nil && b != nil {
		s.Budget = &BudgetReport{Max: b.Max()}
	}
	if s.Budget != nil {
		s.Budget.Remaining += n
		if b != nil {
			s.Budget.Stopped = b.Exhausted()
			s.Budget.Spent = b.Spent()
		}
	}
}

// BudgetView is the cost ceiling as a summary reads it.
type BudgetView interface {
	Max() float64
	Spent() float64
	Exhausted() bool
}

// tallyOf is a copy of the tally of stage and target's rows in this
// invocation (zero when none ended).
func (s *Summary) tallyOf(stage phase.Stage, target string) tally {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t := s.tallies[key{stage, target}]; t != nil {
		return *t
	}
	return tally{}
}

// FailedRows is how many rows of stage and target failed in this invocation.
func (s *Summary) FailedRows(stage phase.Stage, target string) int {
	return s.tallyOf(stage, target).failed
}

// ReusedRows is how many rows of stage and target this invocation took
// from the call store whole (finished by an earlier run, or every call of
// them stored) instead of paying for them.
func (s *Summary) ReusedRows(stage phase.Stage, target string) int {
	return s.tallyOf(stage, target).reused
}

// SpentOn is what the rows of stage and target paid in this invocation.
func (s *Summary) SpentOn(stage phase.Stage, target string) llm.Usage {
	return s.tallyOf(stage, target).spent
}

// Wrote reports whether phase wrote its output in this invocation (with
// every row, or with the rows that succeeded).
func (s *Summary) Wrote(stage phase.Stage) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.Phases {
		if p.Phase == stage && (p.Status == phase.StatusRan || p.Status == phase.StatusFailed && p.Partial) {
			return true
		}
	}
	return false
}

// CacheNote says what the providers' prompt caches did for the calls in
// u: input tokens read from a cache and written to one, and the net
// saving (the reads' discount less the writes' surcharge, at the models'
// prices; negative when writes went unread). "" when nothing was cached.
func CacheNote(u llm.Usage) string {
	if u.CachedInputTokens == 0 && u.CacheWriteTokens == 0 {
		return ""
	}
	return fmt.Sprintf("prompt cache: %d of %d input tokens read from it, %d written to it; net saving $%.4f",
		u.CachedInputTokens, u.InputTokens, u.CacheWriteTokens, u.CacheSaving)
}

// key is a tally's stage and target.
type key struct {
	stage  phase.Stage
	target string
}

// New is the summary of one benchmark (slug) in an invocation.
func New(slug string, dryRun bool, turns int) *Summary {
	return &Summary{Benchmark: slug, DryRun: dryRun, Turns: turns}
}

// AddPlan adds dry-run estimates.
func (s *Summary) AddPlan(rows ...plan.Row) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.Plan = append(s.Plan, rows...)
}

// EditPlan applies fn to the plan rows of stage and target.
func (s *Summary) EditPlan(stage phase.Stage, target string, fn func(*plan.Row)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	name := stage.String()
	for i := range s.Plan {
		p := &s.Plan[i]
		if (p.Phase == name || strings.HasPrefix(p.Phase, name+" ")) && p.Target == target {
			fn(p)
		}
	}
}

// SetPrecision records the dry run's precision plan.
func (s *Summary) SetPrecision(p *plan.PrecisionPlan) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.Precision = p
}

// SetLimits records the provider pools' limits at the end.
func (s *Summary) SetLimits(l []PoolLimit) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.Limits = l
}

// SetResults records the headlines aggregate wrote.
func (s *Summary) SetResults(h []results.Headline) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.Results = h
}

// Totals settles the summary and returns what it paid and replayed, its
// plan and its cost ceiling's report, for a study's totals.
func (s *Summary) Totals() (spent, reused llm.Usage, rows []plan.Row, budget *BudgetReport) {
	s.Settle()
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.Spent, s.Reused, slices.Clone(s.Plan), s.Budget
}
