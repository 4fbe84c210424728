package runner

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/llm"
)

// PlanRow is a dry-run estimate for one phase (and target, and model role).
type PlanRow struct {
	Phase        string  `json:"phase"`
	Target       string  `json:"target,omitempty"`
	Model        string  `json:"model"`
	Rows         int     `json:"rows"`
	Calls        int     `json:"calls"`
	InputTokens  int     `json:"input_tokens"`
	OutputTokens int     `json:"output_tokens"`
	Cost         float64 `json:"cost_usd"`
	CostKnown    bool    `json:"cost_known"`
	// Note says when the phase would be skipped (its output is up to date).
	Note string `json:"note,omitempty"`
	// Stored answers that would be replayed are not subtracted: the
	// estimate is the cost of a fresh run.
}

// Typical sizes (tokens) for estimates; the real numbers come from usage.
const (
	estUserSystem   = 700
	estTargetSystem = 150
	estUserMsg      = 80
	estTargetMsg    = 400
	estUserOut      = 120
	estJudgeSystem  = 400
	estJudgeOut     = 150
)

func (r *Runner) planRow(phase, target string, m config.ModelConfig, rows, calls, inPerCall, outPerCall int) {
	r.addPlan(phase, target, m, rows, calls, calls*inPerCall, calls*outPerCall)
}

// planNote marks the plan rows of a phase that would be skipped.
func (r *Runner) planNote(phase, target, note string) {
	r.Report.mu.Lock()
	defer r.Report.mu.Unlock()
	for i := range r.Report.Plan {
		p := &r.Report.Plan[i]
		if (p.Phase == phase || len(p.Phase) > len(phase) && p.Phase[:len(phase)+1] == phase+" ") && p.Target == target {
			p.Note = note
		}
	}
}

func (r *Runner) addPlan(phase, target string, m config.ModelConfig, rows, calls, in, out int) {
	cost, known := r.prices.Cost(m.Model, llm.Usage{Requests: calls, InputTokens: in, OutputTokens: out}, m.Pricing)
	if m.Provider() == "offline" {
		cost, known = 0, true
	}
	r.Report.mu.Lock()
	r.Report.Plan = append(r.Report.Plan, PlanRow{Phase: phase, Target: target, Model: m.Label(),
		Rows: rows, Calls: calls, InputTokens: in, OutputTokens: out, Cost: cost, CostKnown: known})
	r.Report.mu.Unlock()
}

// planSimulate estimates a simulate phase: per conversation T user calls and
// T target calls whose inputs grow with the dialogue (quadratic in T).
func (r *Runner) planSimulate(target string, t config.ModelConfig, rows int) {
	T := r.cfg.Generation.Turns
	turnPair := estUserMsg + estTargetMsg
	// Σ_{k=1..T} (system + (k-1) exchanged pairs + current turn prompt)
	userIn := T*estUserSystem + turnPair*T*(T-1)/2 + T*60
	targetIn := T*estTargetSystem + estUserMsg*T*(T+1)/2 + estTargetMsg*T*(T-1)/2
	r.addPlan("simulate (user)", target, r.cfg.UserModel, rows, rows*T, rows*userIn, rows*T*estUserOut)
	r.addPlan("simulate (target)", target, t, rows, rows*T, rows*targetIn, rows*T*estTargetMsg)
}

func (r *Runner) planSimulateFromConfig(t config.ModelConfig) error {
	r.planSimulate(t.ID, t, r.expectedConversations())
	return nil
}

func (r *Runner) planEvaluate(target string, judges []config.ModelConfig, rows int) {
	T := r.cfg.Generation.Turns
	in := estJudgeSystem + T*(estUserMsg+estTargetMsg)
	for _, j := range judges {
		r.addPlan("evaluate", target, j, rows, rows, rows*in, rows*estJudgeOut)
	}
}

// PrintPlan writes the dry-run table.
func PrintPlan(w io.Writer, s *Summary) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	order := map[string]int{"gen_metrics": 0, "gen_scenarios": 1, "simulate": 2, "evaluate": 3}
	rank := func(p PlanRow) int {
		for k, v := range order {
			if p.Phase == k || strings.HasPrefix(p.Phase, k+" ") {
				return v
			}
		}
		return 9
	}
	sort.SliceStable(s.Plan, func(i, j int) bool {
		a, b := s.Plan[i], s.Plan[j]
		if a.Target != b.Target && rank(a) >= 2 && rank(b) >= 2 {
			return a.Target < b.Target
		}
		return rank(a) < rank(b)
	})
	fmt.Fprintln(tw, "phase\ttarget\tmodel\trows\tcalls\tinput tok\toutput tok\test. cost\tnote\t")
	var total, todo float64
	allKnown := true
	for _, p := range s.Plan {
		c := fmt.Sprintf("$%.4f", p.Cost)
		if !p.CostKnown {
			c = "unknown"
			allKnown = false
		}
		total += p.Cost
		if p.Note == "" {
			todo += p.Cost
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%d\t%s\t%s\t\n", p.Phase, p.Target, p.Model, p.Rows, p.Calls, p.InputTokens, p.OutputTokens, c, p.Note)
	}
	tw.Flush()
	unk := ""
	if !allKnown {
		unk = " (lower bound: some model prices are unknown; add them under pricing: in config.yaml)"
	}
	fmt.Fprintf(w, "estimated cost of a fresh run: $%.4f%s\n", total, unk)
	fmt.Fprintf(w, "estimated cost of what would run now (phases not up to date; stored answers would be reused, so it can be less): $%.4f\n", todo)
	fmt.Fprintln(w, "no model was called (dry run)")
}
