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
	// Batch is set on simulate rows sent in batch waves (`batch: true`);
	// Cost is then the batch price.
	Batch *PlanBatch `json:"batch,omitempty"`
	// Stored answers that would be replayed are not subtracted: the
	// estimate is the cost of a fresh run.
}

// PlanBatch estimates one target's batch-wave simulation. Each wave waits
// for its batch: providers answer most within an hour and promise 24 h at
// most, so the elapsed time is a range, not a forecast.
type PlanBatch struct {
	Waves     int     `json:"waves"`      // batches one after another: turns × batched roles
	SavingUSD float64 `json:"saving_usd"` // this row's calls at the real-time price minus the batch price
	// Elapsed time of all waves, in hours, if every batch took 5 min,
	// 1 h (typical) or 24 h (the providers' limit).
	ElapsedFastHours    float64 `json:"elapsed_fast_hours"`
	ElapsedTypicalHours float64 `json:"elapsed_typical_hours"`
	ElapsedMaxHours     float64 `json:"elapsed_max_hours"`
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

// planLabel is a plan row's phase: the stage, and the role or step within it
// ("simulate (user, batch)", "gen_scenarios (demographic rewrite)").
func planLabel(stage Stage, role string) string {
	if role == "" {
		return stage.String()
	}
	return stage.String() + " (" + role + ")"
}

func (r *Runner) planRow(stage Stage, role, target string, m config.ModelConfig, rows, calls, inPerCall, outPerCall int) {
	r.appendPlan(r.planRowOf(planLabel(stage, role), target, m, rows, calls, calls*inPerCall, calls*outPerCall))
}

// planNote marks the plan rows of a phase that would be skipped.
func (r *Runner) planNote(stage Stage, target, note string) {
	r.Report.mu.Lock()
	defer r.Report.mu.Unlock()
	name := stage.String()
	for i := range r.Report.Plan {
		p := &r.Report.Plan[i]
		if (p.Phase == name || strings.HasPrefix(p.Phase, name+" ")) && p.Target == target {
			p.Note = note
		}
	}
}

func (r *Runner) planRowOf(label, target string, m config.ModelConfig, rows, calls, in, out int) PlanRow {
	cost, known := r.prices.Cost(m.Model, llm.Usage{Requests: calls, InputTokens: in, OutputTokens: out}, m.Pricing)
	if m.Provider() == "offline" {
		cost, known = 0, true
	}
	return PlanRow{Phase: label, Target: target, Model: m.Label(),
		Rows: rows, Calls: calls, InputTokens: in, OutputTokens: out, Cost: cost, CostKnown: known}
}

func (r *Runner) appendPlan(p PlanRow) {
	r.Report.mu.Lock()
	r.Report.Plan = append(r.Report.Plan, p)
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
	waves := 0
	for _, m := range []config.ModelConfig{r.cfg.UserModel, t} {
		if batchable(m) {
			waves += T
		}
	}
	r.addSimPlan("user", target, r.cfg.UserModel, waves, rows, rows*T, rows*userIn, rows*T*estUserOut)
	r.addSimPlan("target", target, t, waves, rows, rows*T, rows*targetIn, rows*T*estTargetMsg)
}

// addSimPlan adds one simulate role's row; a batched role's calls are
// priced at the batch rate, with the waves and the saving.
func (r *Runner) addSimPlan(role, target string, m config.ModelConfig, waves, rows, calls, in, out int) {
	p := r.planRowOf(planLabel(StageSimulate, role), target, m, rows, calls, in, out)
	if batchable(m) {
		p.Phase = planLabel(StageSimulate, role+", batch")
		saving := p.Cost / 2
		p.Cost -= saving
		p.Batch = &PlanBatch{Waves: waves, SavingUSD: saving,
			ElapsedFastHours:    float64(waves) * waveFast.Hours(),
			ElapsedTypicalHours: float64(waves) * waveTypical.Hours(),
			ElapsedMaxHours:     float64(waves) * waveMax.Hours(),
		}
	}
	r.appendPlan(p)
}

// batchable reports whether a model's calls go through a batch API:
// `batch: true` and a provider that has one (see batch.ForModel).
func batchable(m config.ModelConfig) bool {
	return m.Batch && (m.Provider() == "openai" || m.Provider() == "anthropic")
}

func (r *Runner) planSimulateFromConfig(t config.ModelConfig) error {
	r.planSimulate(t.ID, t, r.expectedConversations())
	return nil
}

func (r *Runner) planEvaluate(target string, judges []config.ModelConfig, rows int) {
	T := r.cfg.Generation.Turns
	in := estJudgeSystem + T*(estUserMsg+estTargetMsg)
	for _, j := range judges {
		r.appendPlan(r.planRowOf(planLabel(StageEvaluate, ""), target, j, rows, rows, rows*in, rows*estJudgeOut))
	}
}

// PrintPlan writes the dry-run table.
func PrintPlan(w io.Writer, s *Summary) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	rank := func(p PlanRow) int {
		for _, st := range []Stage{StageGenMetrics, StageGenScenarios, StageSimulate, StageEvaluate} {
			if p.Phase == st.String() || strings.HasPrefix(p.Phase, st.String()+" ") {
				return int(st)
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
	printWaves(w, s.Plan)
	fmt.Fprintln(w, "no model was called (dry run)")
}

// printWaves says, per target simulated in batch waves, what the waves
// save and how long they may take.
func printWaves(w io.Writer, plan []PlanRow) {
	type waves struct {
		b      PlanBatch
		calls  int
		known  bool
		target string
	}
	var order []*waves
	byTarget := map[string]*waves{}
	for _, p := range plan {
		if p.Batch == nil {
			continue
		}
		t := byTarget[p.Target]
		if t == nil {
			t = &waves{b: *p.Batch, known: true, target: p.Target}
			t.b.SavingUSD = 0
			byTarget[p.Target] = t
			order = append(order, t)
		}
		t.calls += p.Calls
		t.b.SavingUSD += p.Batch.SavingUSD
		t.known = t.known && p.CostKnown
	}
	for _, t := range order {
		saving := fmt.Sprintf("$%.4f", t.b.SavingUSD)
		if !t.known {
			saving = "unknown (a price is unknown)"
		}
		fmt.Fprintf(w, "batch waves for %s: %d waves, %d calls at 50%% price (saving %s vs real time); "+
			"elapsed ≈ %s if each batch takes 5 min, %s at a typical 1 h, up to %s at the providers' 24 h limit (an estimate: batch turnaround is not promised)\n",
			t.target, t.b.Waves, t.calls, saving, hours(t.b.ElapsedFastHours), hours(t.b.ElapsedTypicalHours), hours(t.b.ElapsedMaxHours))
	}
}

// hours writes a duration in hours as minutes, hours or days.
func hours(h float64) string {
	switch {
	case h < 1:
		return fmt.Sprintf("%.0f min", h*60)
	case h < 48:
		return fmt.Sprintf("%.0f h", h)
	}
	return fmt.Sprintf("%.0f days", h/24)
}
