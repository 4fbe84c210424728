package plan

import (
	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/llm"
	"github.com/impactbench/impactbench/internal/llm/ratelimit"
	"github.com/impactbench/impactbench/internal/phase"
)

// Estimator prices a run's phases before anything is called: rows, calls,
// tokens, cost four ways and wall time, from typical message sizes (the
// real numbers come from usage).
type Estimator struct {
	Cfg    *config.Config
	Prices *llm.Prices
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

// Label is a plan row's phase: the stage, and the role or step within it
// ("simulate (user, batch)", "gen_scenarios (demographic rewrite)").
func Label(stage phase.Stage, role string) string {
	if role == "" {
		return stage.String()
	}
	return stage.String() + " (" + role + ")"
}

// Row prices one plan row four ways (see Row).
func (e Estimator) Row(label, target string, m config.ModelConfig, rows, calls, in, out, read, write int) Row {
	p := Row{Phase: label, Target: target, Model: m.Label(), Rows: rows, RowsNow: rows,
		Calls: calls, InputTokens: in, OutputTokens: out, CachedInputTokens: read, CacheWriteTokens: write,
		CallSecs: CallSecs(out, calls)}
	if m.Provider() == "offline" {
		zero := 0.0
		p.CostKnown, p.CostBatch = true, &zero
		return p
	}
	pr, ok := e.Prices.Price(m.Model, m.Pricing)
	if !ok {
		p.Unpriced = m.Model
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
	if HasBatchAPI(m) {
		u.CacheWriteLongTokens = u.CacheWriteTokens // batches cache for an hour
		b := pr.Cost(u, true)
		p.CostBatch = &b
	}
	return p
}

// CallSecs is the assumed duration of one call with out output tokens in
// all over calls calls: 1.5 s plus 60 output tokens a second.
func CallSecs(out, calls int) float64 {
	if calls == 0 {
		return 0
	}
	return 1.5 + float64(out)/float64(calls)/60
}

// Concurrency is the calls in flight a phase's estimate assumes: its
// run.concurrency number, else the 32 a pool of `concurrency: auto`
// starts at (it grows from there, so the estimate is an upper bound).
func (e Estimator) Concurrency(stage phase.Stage) int {
	c := e.Cfg.Run.Concurrency
	n := map[phase.Stage]int{phase.StageGenScenarios: c.GenScenarios, phase.StageSimulate: c.Simulate, phase.StageEvaluate: c.Evaluate}[stage]
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

// HasBatchAPI reports whether the model's provider has a batch API.
func HasBatchAPI(m config.ModelConfig) bool {
	return m.Provider() == "openai" || m.Provider() == "anthropic"
}

// Generation is a generation phase's row: one-off calls (no prompt
// re-sent), in real time (generation has no batch mode).
func (e Estimator) Generation(stage phase.Stage, role, target string, m config.ModelConfig, rows, calls, inPerCall, outPerCall int) Row {
	p := e.Row(Label(stage, role), target, m, rows, calls, calls*inPerCall, calls*outPerCall, 0, 0)
	p.CostBatch = nil
	p.WallSecs = p.CallSecs * float64(max(1, calls/e.Concurrency(stage)))
	return p
}

// Simulate estimates a simulate phase: per conversation T user calls and
// T target calls whose inputs grow with the dialogue (quadratic in T).
func (e Estimator) Simulate(target string, t config.ModelConfig, rows int) []Row {
	T := e.Cfg.Generation.Turns
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
	for _, m := range []config.ModelConfig{e.Cfg.UserModel, t} {
		if Batchable(m) {
			waves += T
		}
	}
	user := e.simRow("user", target, e.Cfg.UserModel, rows, userCalls, estUserOut)
	tgt := e.simRow("target", target, t, rows, targetCalls, estTargetMsg)
	wall := max(float64(T)*(user.CallSecs+tgt.CallSecs),
		(float64(user.Calls)*user.CallSecs+float64(tgt.Calls)*tgt.CallSecs)/float64(e.Concurrency(phase.StageSimulate)))
	out := []Row{user, tgt}
	for i := range out {
		out[i].WallSecs = wall
		if Batchable(e.Cfg.UserModel) || Batchable(t) {
			out[i].Batch = waveBatch(waves, out[i])
		}
	}
	return out
}

// simRow is one simulate role's row: rows conversations of calls with
// perCall prompt tokens; a batched role's calls are priced at the batch rate.
func (e Estimator) simRow(role, target string, m config.ModelConfig, rows int, perCall []int, outPerCall int) Row {
	in := 0
	for _, n := range perCall {
		in += n
	}
	read, write := cacheEstimate(perCall, cacheMin(m))
	T := len(perCall)
	p := e.Row(Label(phase.StageSimulate, role), target, m, rows, rows*T, rows*in, rows*T*outPerCall, rows*read, rows*write)
	if Batchable(m) {
		p.Phase = Label(phase.StageSimulate, role+", batch")
		if p.CostBatch != nil {
			p.Cost, p.CostNow = *p.CostBatch, *p.CostBatch
		}
	}
	return p
}

// waveBatch describes the batch waves a conversation's calls go in.
func waveBatch(waves int, p Row) *Batch {
	return &Batch{Waves: waves, SavingUSD: p.CostCached - p.Cost,
		ElapsedFastHours:    float64(waves) * WaveFast.Hours(),
		ElapsedTypicalHours: float64(waves) * WaveTypical.Hours(),
		ElapsedMaxHours:     float64(waves) * WaveMax.Hours(),
	}
}

// Batchable reports whether a model's calls go through a batch API:
// `batch: true` and a provider that has one (see batch.ForModel).
func Batchable(m config.ModelConfig) bool {
	return m.Batch && HasBatchAPI(m)
}

// Evaluate estimates an evaluate phase: one call per conversation and judge.
func (e Estimator) Evaluate(target string, judges []config.ModelConfig, rows int) []Row {
	var out []Row
	T := e.Cfg.Generation.Turns
	// The transcript as a JSON array: each message in its object.
	in := estJudgeSystem + T*(estUserMsg+estTargetMsg+20)
	for _, j := range judges {
		p := e.Row(Label(phase.StageEvaluate, ""), target, j, rows, rows, rows*in, rows*estJudgeOut, 0, 0)
		if Batchable(j) && p.CostBatch != nil {
			p.Cost, p.CostNow = *p.CostBatch, *p.CostBatch
		}
		p.WallSecs = p.CallSecs * float64(max(1, rows/e.Concurrency(phase.StageEvaluate)))
		out = append(out, p)
	}
	return out
}
