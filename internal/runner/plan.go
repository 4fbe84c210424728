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
	// CachedInputTokens is the part of InputTokens the provider would
	// read from its prompt cache (prefixes re-sent within a conversation,
	// at least cacheMinTokens long), and CostCached the cost with them at
	// the cached rate (and, on Anthropic, the rest written at its
	// cache-write rate). CostBatch is the cost at batch prices, null when
	// the provider has no batch API.
	CachedInputTokens int      `json:"cached_input_tokens"`
	CostCached        float64  `json:"cost_cached_usd"`
	CostBatch         *float64 `json:"cost_batch_usd"`
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
	r.appendPlan(r.planRowOf(planLabel(stage, role), target, m, rows, calls, calls*inPerCall, calls*outPerCall, 0))
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

func (r *Runner) planRowOf(label, target string, m config.ModelConfig, rows, calls, in, out, cached int) PlanRow {
	u := llm.Usage{Requests: calls, InputTokens: in, OutputTokens: out}
	p := PlanRow{Phase: label, Target: target, Model: m.Label(),
		Rows: rows, Calls: calls, InputTokens: in, OutputTokens: out, CachedInputTokens: cached}
	if m.Provider() == "offline" {
		zero := 0.0
		p.CostKnown, p.CostBatch = true, &zero
		return p
	}
	pr, ok := r.prices.Price(m.Model, m.Pricing)
	if !ok {
		return p
	}
	p.Cost, p.CostKnown = pr.Cost(u, false), true
	uc := u
	uc.CachedInputTokens = cached
	if cached > 0 && m.Provider() == "anthropic" {
		uc.CacheWriteTokens = in - cached // written once so the next call can read it
	}
	p.CostCached = pr.Cost(uc, false)
	if hasBatchAPI(m) {
		b := p.Cost / 2
		p.CostBatch = &b
	}
	return p
}

// cacheMinTokens is the shortest prompt prefix the providers cache:
// OpenAI's automatic caching and Anthropic's breakpoints start at 1,024
// tokens (some Anthropic models at 2,048).
const cacheMinTokens = 1024

// cachedPrefixes is how many input tokens of a conversation's calls the
// provider could read from its cache: each call re-sends the previous
// call's whole prompt as its prefix, cached when long enough.
func cachedPrefixes(perCall []int) int {
	n := 0
	for k := 1; k < len(perCall); k++ {
		if perCall[k-1] >= cacheMinTokens {
			n += perCall[k-1]
		}
	}
	return n
}

// hasBatchAPI reports whether the model's provider has a batch API.
func hasBatchAPI(m config.ModelConfig) bool {
	return m.Provider() == "openai" || m.Provider() == "anthropic"
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
	// Call k (1..T) sends the system prompt, the k-1 exchanged pairs and
	// the current turn's prompt.
	userCalls, targetCalls := make([]int, T), make([]int, T)
	userIn, targetIn := 0, 0
	for k := 1; k <= T; k++ {
		userCalls[k-1] = estUserSystem + turnPair*(k-1) + 60
		targetCalls[k-1] = estTargetSystem + estUserMsg*k + estTargetMsg*(k-1)
		userIn, targetIn = userIn+userCalls[k-1], targetIn+targetCalls[k-1]
	}
	waves := 0
	for _, m := range []config.ModelConfig{r.cfg.UserModel, t} {
		if batchable(m) {
			waves += T
		}
	}
	r.addSimPlan("user", target, r.cfg.UserModel, waves, rows, rows*T, rows*userIn, rows*T*estUserOut, rows*cachedPrefixes(userCalls))
	r.addSimPlan("target", target, t, waves, rows, rows*T, rows*targetIn, rows*T*estTargetMsg, rows*cachedPrefixes(targetCalls))
}

// addSimPlan adds one simulate role's row; a batched role's calls are
// priced at the batch rate, with the waves and the saving.
func (r *Runner) addSimPlan(role, target string, m config.ModelConfig, waves, rows, calls, in, out, cached int) {
	p := r.planRowOf(planLabel(StageSimulate, role), target, m, rows, calls, in, out, cached)
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
		r.appendPlan(r.planRowOf(planLabel(StageEvaluate, ""), target, j, rows, rows, rows*in, rows*estJudgeOut, 0))
	}
}

// PrintPlan writes one benchmark's dry-run table and its bill.
func PrintPlan(w io.Writer, s *Summary) {
	printPlanTable(w, s.Plan)
	printBill(w, s.Plan, "")
	printWaves(w, s.Plan)
	fmt.Fprintln(w, "no model was called (dry run)")
}

// PrintStudyPlan writes a study's dry run: one table over every benchmark
// (rows of the same phase, target and model added up) and the study's bill.
func PrintStudyPlan(w io.Writer, benches []*Summary) {
	var all, merged []PlanRow
	at := map[[3]string]int{}
	for _, s := range benches {
		all = append(all, s.Plan...)
		for _, p := range s.Plan {
			k := [3]string{p.Phase, p.Target, p.Model}
			i, ok := at[k]
			if !ok {
				at[k] = len(merged)
				merged = append(merged, p)
				continue
			}
			merged[i] = merged[i].plus(p)
		}
	}
	printPlanTable(w, merged)
	printBill(w, all, fmt.Sprintf("study of %d benchmarks: ", len(benches)))
	printWaves(w, all)
	fmt.Fprintln(w, "no model was called (dry run)")
}

// plus adds another benchmark's estimate of the same phase, target and model.
func (p PlanRow) plus(o PlanRow) PlanRow {
	p.Rows, p.Calls = p.Rows+o.Rows, p.Calls+o.Calls
	p.InputTokens, p.OutputTokens, p.CachedInputTokens = p.InputTokens+o.InputTokens, p.OutputTokens+o.OutputTokens, p.CachedInputTokens+o.CachedInputTokens
	p.Cost, p.CostCached, p.CostKnown = p.Cost+o.Cost, p.CostCached+o.CostCached, p.CostKnown && o.CostKnown
	if p.CostBatch != nil && o.CostBatch != nil {
		b := *p.CostBatch + *o.CostBatch
		p.CostBatch = &b
	} else {
		p.CostBatch = nil
	}
	if p.Note != o.Note {
		p.Note = "skip in some benchmarks"
	}
	if o.Batch != nil && p.Batch != nil {
		b := *p.Batch
		b.SavingUSD += o.Batch.SavingUSD
		p.Batch = &b
	}
	return p
}

func printPlanTable(w io.Writer, plan []PlanRow) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	rank := func(p PlanRow) int {
		for _, st := range []Stage{StageGenMetrics, StageGenScenarios, StageSimulate, StageEvaluate} {
			if p.Phase == st.String() || strings.HasPrefix(p.Phase, st.String()+" ") {
				return int(st)
			}
		}
		return 9
	}
	sort.SliceStable(plan, func(i, j int) bool {
		a, b := plan[i], plan[j]
		if a.Target != b.Target && rank(a) >= 2 && rank(b) >= 2 {
			return a.Target < b.Target
		}
		return rank(a) < rank(b)
	})
	fmt.Fprintln(tw, "phase\ttarget\tmodel\trows\tcalls\tinput tok\toutput tok\test. cost\tnote\t")
	for _, p := range plan {
		c := fmt.Sprintf("$%.4f", p.Cost)
		if !p.CostKnown {
			c = "unknown"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%d\t%s\t%s\t\n", p.Phase, p.Target, p.Model, p.Rows, p.Calls, p.InputTokens, p.OutputTokens, c, p.Note)
	}
	tw.Flush()
}

// PlanTotal is a plan's bill: a fresh run at list prices, with prompt
// caching, and at batch prices where the provider has a batch API, and
// what would run now (phases not up to date).
type PlanTotal struct {
	Calls        int     `json:"calls"`
	InputTokens  int     `json:"input_tokens"`
	OutputTokens int     `json:"output_tokens"`
	ListUSD      float64 `json:"list_usd"`
	CachedUSD    float64 `json:"cached_usd"`
	BatchUSD     float64 `json:"batch_usd"`
	NowUSD       float64 `json:"now_usd"`
	// Known is false when some model's price is unknown: the sums are
	// then lower bounds.
	Known bool `json:"known"`
}

// TotalOf adds up a plan.
func TotalOf(plan []PlanRow) PlanTotal {
	t := PlanTotal{Known: true}
	for _, p := range plan {
		t.Calls, t.InputTokens, t.OutputTokens = t.Calls+p.Calls, t.InputTokens+p.InputTokens, t.OutputTokens+p.OutputTokens
		t.ListUSD += p.Cost
		t.CachedUSD += p.CostCached
		if p.Batch != nil {
			// Already at the batch price: its list price is twice that.
			t.ListUSD += p.Batch.SavingUSD
			t.CachedUSD += p.Batch.SavingUSD
		}
		if p.CostBatch != nil {
			t.BatchUSD += *p.CostBatch
		} else {
			t.BatchUSD += p.Cost
		}
		if p.Note == "" {
			t.NowUSD += p.Cost
		}
		t.Known = t.Known && p.CostKnown
	}
	return t
}

// printBill writes the totals under a plan table.
func printBill(w io.Writer, plan []PlanRow, who string) {
	t := TotalOf(plan)
	unk := ""
	if !t.Known {
		unk = " (lower bound: some model prices are unknown; add them under pricing: in config.yaml)"
	}
	fmt.Fprintf(w, "%sestimated cost of a fresh run: $%.4f at list prices%s; %d calls, %d input and %d output tokens\n", who, t.ListUSD, unk, t.Calls, t.InputTokens, t.OutputTokens)
	fmt.Fprintf(w, "  with prompt caching: ≈$%.4f (each call's prompt re-read from the provider's cache by the next call of its conversation, where it reaches %d tokens)\n", t.CachedUSD, cacheMinTokens)
	fmt.Fprintf(w, "  with batch prices: $%.4f (50%% off on providers with a batch API; hours instead of minutes)\n", t.BatchUSD)
	fmt.Fprintf(w, "estimated cost of what would run now (phases not up to date; stored answers would be reused, so it can be less): $%.4f\n", t.NowUSD)
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
