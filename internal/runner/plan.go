package runner

import (
	"strings"

	"github.com/impactbench/impactbench/internal/llm/ratelimit"

	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/llm"
)

// PlanRow is a dry-run estimate for one phase (and target, and model role).
type PlanRow struct {
	Phase        string `json:"phase"`
	Target       string `json:"target,omitempty"`
	Model        string `json:"model"`
	Rows         int    `json:"rows"`
	Calls        int    `json:"calls"`
	InputTokens  int    `json:"input_tokens"`
	OutputTokens int    `json:"output_tokens"`
	// Cost is the phase sent the way config.yaml says (a `batch: true`
	// role's calls at the batch price), with prompt caching as the
	// providers bill it.
	Cost      float64 `json:"cost_usd"`
	CostKnown bool    `json:"cost_known"`
	// CachedInputTokens and CacheWriteTokens are the parts of InputTokens
	// a provider would read from and write to its prompt cache: each call
	// of a conversation reads the previous call's prompt when that reached
	// the model's cache minimum, and writes its own unless it is the last
	// (writes are billed only where they cost extra: Anthropic).
	CachedInputTokens int `json:"cached_input_tokens"`
	CacheWriteTokens  int `json:"cache_write_tokens"`
	// CostList is every call in real time at list prices without caching,
	// CostCached in real time with caching, CostBatch through the
	// provider's batch API with caching (one-hour cache writes on
	// Anthropic), null when the provider has none.
	CostList   float64  `json:"cost_list_usd"`
	CostCached float64  `json:"cost_cached_usd"`
	CostBatch  *float64 `json:"cost_batch_usd"`
	// RowsNow is how many rows would run now: those whose result the call
	// store does not hold under their current inputs (0 when the phase is
	// up to date); CostNow is their share of Cost.
	RowsNow int     `json:"rows_now"`
	CostNow float64 `json:"cost_now_usd"`
	// WallSecs is the phase's expected wall time in real time (see
	// wallEstimate), CallSecs the time one call is assumed to take.
	WallSecs float64 `json:"wall_s"`
	CallSecs float64 `json:"call_s"`
	// Note says when the phase would be skipped (its output is up to date).
	Note string `json:"note,omitempty"`
	// Batch is set on simulate rows sent in batch waves (`batch: true`);
	// Cost is then the batch price.
	Batch *PlanBatch `json:"batch,omitempty"`
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
	estJudgeSystem  = 300
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

// planRow adds a generation phase: one-off calls (no prompt re-sent), in
// real time (generation has no batch mode).
func (r *Runner) planRow(stage Stage, role, target string, m config.ModelConfig, rows, calls, inPerCall, outPerCall int) {
	p := r.planRowOf(planLabel(stage, role), target, m, rows, calls, calls*inPerCall, calls*outPerCall, 0, 0)
	p.CostBatch = nil
	p.WallSecs = p.CallSecs * float64(max(1, calls/r.planConcurrency(stage)))
	r.appendPlan(p)
}

// planNote marks the plan rows of a phase that would be skipped.
func (r *Runner) planNote(stage Stage, target, note string) {
	r.planRows(stage, target, func(p *PlanRow) {
		p.Note, p.RowsNow, p.CostNow = note, 0, 0
	})
}

// planRows applies fn to the plan rows of stage and target.
func (r *Runner) planRows(stage Stage, target string, fn func(*PlanRow)) {
	r.Report.mu.Lock()
	defer r.Report.mu.Unlock()
	name := stage.String()
	for i := range r.Report.Plan {
		p := &r.Report.Plan[i]
		if (p.Phase == name || strings.HasPrefix(p.Phase, name+" ")) && p.Target == target {
			fn(p)
		}
	}
}

// planRowOf prices one plan row four ways (see PlanRow).
func (r *Runner) planRowOf(label, target string, m config.ModelConfig, rows, calls, in, out, read, write int) PlanRow {
	p := PlanRow{Phase: label, Target: target, Model: m.Label(), Rows: rows, RowsNow: rows,
		Calls: calls, InputTokens: in, OutputTokens: out, CachedInputTokens: read, CacheWriteTokens: write,
		CallSecs: callSecs(out, calls)}
	if m.Provider() == "offline" {
		zero := 0.0
		p.CostKnown, p.CostBatch = true, &zero
		return p
	}
	pr, ok := r.prices.Price(m.Model, m.Pricing)
	if !ok {
		return p
	}
	u := llm.Usage{Requests: calls, InputTokens: in, OutputTokens: out, CachedInputTokens: read}
	if m.Provider() == "anthropic" {
		u.CacheWriteTokens = write // OpenAI-style caches write for free
	}
	p.CostKnown = true
	p.CostList = pr.Cost(llm.Usage{InputTokens: in, OutputTokens: out}, false)
	p.CostCached = pr.Cost(u, false)
	p.Cost, p.CostNow = p.CostCached, p.CostCached
	if hasBatchAPI(m) {
		u.CacheWriteLongTokens = u.CacheWriteTokens // batches cache for an hour
		b := pr.Cost(u, true)
		p.CostBatch = &b
	}
	return p
}

// callSecs is the assumed duration of one call with out output tokens in
// all over calls calls: 1.5 s plus 60 output tokens a second.
func callSecs(out, calls int) float64 {
	if calls == 0 {
		return 0
	}
	return 1.5 + float64(out)/float64(calls)/60
}

// planConcurrency is the calls in flight a phase's estimate assumes: its
// run.concurrency number, else the 32 a pool of `concurrency: auto`
// starts at (it grows from there, so the estimate is an upper bound).
func (r *Runner) planConcurrency(stage Stage) int {
	c := r.cfg.Run.Concurrency
	n := map[Stage]int{StageGenScenarios: c.GenScenarios, StageSimulate: c.Simulate, StageEvaluate: c.Evaluate}[stage]
	if n > 0 {
		return n
	}
	return ratelimit.DefaultInitialConcurrency
}

// cacheEstimate is the prompt cache of one conversation's calls of one
// role, whose prompts are perCall tokens long, as the cache plan places it
// (llm.Conversation): call k reads call k−1's prompt when that reached the
// model's minimum, and writes its own (less what it read) unless it is
// the last.
func cacheEstimate(perCall []int, minTokens int) (read, write int) {
	for k, p := range perCall {
		got := 0
		if k > 0 && perCall[k-1] >= minTokens {
			got = perCall[k-1]
		}
		read += got
		if k < len(perCall)-1 && p >= minTokens {
			write += p - got
		}
	}
	return read, write
}

// cacheMin is m's shortest cacheable prefix (cache_min_tokens, else the
// model's known minimum).
func cacheMin(m config.ModelConfig) int {
	if m.CacheMinTokens > 0 {
		return m.CacheMinTokens
	}
	return llm.CacheMinTokens(m.Model)
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
	// User call k sends its system prompt, the k−1 exchanges so far (its
	// message; the target's reply as a JSON line and a turn line) and the
	// turn line; target call k its system prompt and the dialogue.
	const wrap = 20
	userCalls, targetCalls := make([]int, T), make([]int, T)
	for k := 1; k <= T; k++ {
		userCalls[k-1] = estUserSystem + (estUserMsg+estTargetMsg+wrap)*(k-1) + wrap
		targetCalls[k-1] = estTargetSystem + estUserMsg*k + estTargetMsg*(k-1)
	}
	waves := 0
	for _, m := range []config.ModelConfig{r.cfg.UserModel, t} {
		if batchable(m) {
			waves += T
		}
	}
	user := r.simPlanRow("user", target, r.cfg.UserModel, rows, userCalls, estUserOut)
	tgt := r.simPlanRow("target", target, t, rows, targetCalls, estTargetMsg)
	wall := max(float64(T)*(user.CallSecs+tgt.CallSecs),
		(float64(user.Calls)*user.CallSecs+float64(tgt.Calls)*tgt.CallSecs)/float64(r.planConcurrency(StageSimulate)))
	for _, p := range []PlanRow{user, tgt} {
		p.WallSecs = wall
		if batchable(r.cfg.UserModel) || batchable(t) {
			p.Batch = waveBatch(waves, p)
		}
		r.appendPlan(p)
	}
}

// simPlanRow is one simulate role's row: rows conversations of calls with
// perCall prompt tokens; a batched role's calls are priced at the batch rate.
func (r *Runner) simPlanRow(role, target string, m config.ModelConfig, rows int, perCall []int, outPerCall int) PlanRow {
	in := 0
	for _, n := range perCall {
		in += n
	}
	read, write := cacheEstimate(perCall, cacheMin(m))
	T := len(perCall)
	p := r.planRowOf(planLabel(StageSimulate, role), target, m, rows, rows*T, rows*in, rows*T*outPerCall, rows*read, rows*write)
	if batchable(m) {
		p.Phase = planLabel(StageSimulate, role+", batch")
		if p.CostBatch != nil {
			p.Cost, p.CostNow = *p.CostBatch, *p.CostBatch
		}
	}
	return p
}

// waveBatch describes the batch waves a conversation's calls go in.
func waveBatch(waves int, p PlanRow) *PlanBatch {
	return &PlanBatch{Waves: waves, SavingUSD: p.CostCached - p.Cost,
		ElapsedFastHours:    float64(waves) * waveFast.Hours(),
		ElapsedTypicalHours: float64(waves) * waveTypical.Hours(),
		ElapsedMaxHours:     float64(waves) * waveMax.Hours(),
	}
}

// batchable reports whether a model's calls go through a batch API:
// `batch: true` and a provider that has one (see batch.ForModel).
func batchable(m config.ModelConfig) bool {
	return m.Batch && hasBatchAPI(m)
}

func (r *Runner) planSimulateFromConfig(t config.ModelConfig) error {
	r.planSimulate(t.ID, t, r.expectedConversations())
	return nil
}

func (r *Runner) planEvaluate(target string, judges []config.ModelConfig, rows int) {
	T := r.cfg.Generation.Turns
	// The transcript as a JSON array: each message in its object.
	in := estJudgeSystem + T*(estUserMsg+estTargetMsg+20)
	for _, j := range judges {
		p := r.planRowOf(planLabel(StageEvaluate, ""), target, j, rows, rows, rows*in, rows*estJudgeOut, 0, 0)
		if batchable(j) && p.CostBatch != nil {
			p.Cost, p.CostNow = *p.CostBatch, *p.CostBatch
		}
		p.WallSecs = p.CallSecs * float64(max(1, rows/r.planConcurrency(StageEvaluate)))
		r.appendPlan(p)
	}
}
