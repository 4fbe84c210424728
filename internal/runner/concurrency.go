package runner

import (
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/llm/ratelimit"
)

// autoWorkerCeiling is the most workers a phase with concurrency auto
// starts: twice the highest concurrency any provider pool may reach (a
// simulation worker waits on two pools in turn, so twice keeps both full).
// Workers beyond what the pools admit only wait in their queues, at the
// cost of a goroutine and the row they hold.
func autoWorkerCeiling(cfg *config.Config) int {
	hi := ratelimit.DefaultMaxConcurrency
	for _, m := range allModels(cfg) {
		hi = max(hi, m.MaxConcurrency)
	}
	return 2 * hi
}

// laneCeiling is the most rows in flight of one auto lane (a stage of one
// target): twice the highest concurrency its own pools may reach. Sized
// from every model of the run instead, each target's lane of a study held
// 512 conversations when its pools could use 128, and all of them
// advanced turn by turn together, holding their transcripts to the end.
func laneCeiling(cfg *config.Config, stage Stage, target string) int {
	var ms []config.ModelConfig
	switch stage {
	case StageSimulate:
		ms = append(ms, cfg.UserModel)
		for _, t := range cfg.Targets {
			if t.ID == target {
				ms = append(ms, t)
			}
		}
		if cfg.LandmarkModel != nil {
			ms = append(ms, *cfg.LandmarkModel) // the audit's calls
		} else if len(cfg.EvaluatorModels) > 0 {
			ms = append(ms, cfg.EvaluatorModels[0])
		}
	case StageEvaluate, StageRepeats:
		ms = cfg.EvaluatorModels
	default:
		return autoWorkerCeiling(cfg)
	}
	hi := 0
	for _, m := range ms {
		if m.MaxConcurrency > 0 {
			hi = max(hi, m.MaxConcurrency)
		} else {
			hi = max(hi, ratelimit.DefaultMaxConcurrency)
		}
	}
	if hi == 0 {
		return autoWorkerCeiling(cfg)
	}
	return 2 * hi
}

// idleConnsPerHost sizes the shared HTTP client's idle pool: every model
// of the run may talk to the same host (one provider, or a gateway), so the
// pool must hold a connection for each call all of their pools may have in
// flight at once. Sized to one model's concurrency, a study with four
// targets, a user and a judge on one host closed and redialled a third of
// its connections on every round of calls.
func idleConnsPerHost(cfg *config.Config) int {
	n := 0
	for _, m := range allModels(cfg) {
		if m.MaxConcurrency > 0 {
			n += m.MaxConcurrency
		} else {
			n += ratelimit.DefaultMaxConcurrency
		}
	}
	return max(256, n)
}

func allModels(cfg *config.Config) []config.ModelConfig {
	ms := append([]config.ModelConfig{cfg.UserModel}, cfg.Targets...)
	ms = append(ms, cfg.EvaluatorModels...)
	for _, m := range []*config.ModelConfig{cfg.GeneratorModel, cfg.LandmarkModel} {
		if m != nil {
			ms = append(ms, *m)
		}
	}
	return ms
}

// workers is a phase's worker-pool size for rows rows: the configured
// run.concurrency value, which is a cap as upstream, or with auto (0) every
// row at once up to the ceiling, so that the provider pools' adaptive
// limits, not the workers, decide how many calls are in flight.
func (r *env) workers(configured, rows int) int {
	if configured > 0 {
		return configured
	}
	return max(1, min(rows, r.autoWorkers))
}

// startConcurrency is where the limit of a pool first used by role (a
// config field) starts: the phase's configured concurrency, which is how
// many calls upstream sent at once from the start (0: the automatic
// start). The limit still adapts from there, and never passes
// max_concurrency.
func (r *env) startConcurrency(role string) int {
	cc := r.cfg.Run.Concurrency
	switch {
	case role == "user_model" || strings.HasPrefix(role, "targets["):
		return cc.Simulate
	case role == "evaluator_model" || strings.HasPrefix(role, "evaluator_models["):
		return cc.Evaluate
	case role == "generator_model":
		return cc.GenScenariosExpand
	}
	return 0
}

// expandWorkers is how many of one metric's demographic rewrites (of all
// its base scenarios) run at once. A configured gen_scenarios_expand is the total
// over the gen_scenarios workers, so each gets its share; auto rewrites
// them all at once.
func (r *Runner) expandWorkers(rewrites int) int {
	cc := r.cfg.Run.Concurrency
	if cc.GenScenariosExpand <= 0 {
		return r.workers(0, rewrites)
	}
	gs := r.workers(cc.GenScenarios, len(r.bench.Metrics))
	return max(1, (cc.GenScenariosExpand+gs-1)/gs)
}

// poolName is how progress and the summary name a model's limit pool:
// its rate_pool, else its model name (the pool key itself holds a hash
// of the API key and stays in memory).
func poolName(m config.ModelConfig) string {
	if m.RatePool != "" {
		return m.RatePool
	}
	if m.BaseURL != "" {
		if u, err := url.Parse(m.BaseURL); err == nil && u.Host != "" {
			return u.Host + strings.TrimSuffix(u.Path, "/") // never userinfo or the query: they may hold a key
		}
	}
	return m.Model
}

// limitNote returns the progress-bar note for a phase that calls models:
// each distinct pool's current concurrency limit, e.g.
// "limit gpt-4o 48, claude-haiku 64". Pools without a limiter (the offline
// model without limits) are left out.
func (r *env) limitNote(models ...config.ModelConfig) func() string {
	var keys, names []string
	for _, m := range models {
		if k := poolKey(m); !slices.Contains(keys, k) {
			keys, names = append(keys, k), append(names, poolName(m))
		}
	}
	return func() string {
		var parts []string
		for i, k := range keys {
			if st, ok := r.limits.PoolStats(k); ok {
				parts = append(parts, fmt.Sprintf("%s %d", names[i], st.Concurrency))
			}
		}
		if len(parts) == 0 {
			return ""
		}
		return "limit " + strings.Join(parts, ", ")
	}
}

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

// RecordLimits stores every provider pool's concurrency in Report.Limits,
// for the summary; call it once the phases are done.
func (r *Runner) RecordLimits() {
	out := r.poolLimits()
	r.Report.mu.Lock()
	r.Report.Limits = out
	r.Report.mu.Unlock()
}

// poolLimits is every provider pool this invocation called, as it is now.
func (r *env) poolLimits() []PoolLimit {
	r.mu.Lock()
	names := make(map[string]string, len(r.poolNames))
	for k, v := range r.poolNames {
		names[k] = v
	}
	r.mu.Unlock()
	var out []PoolLimit
	for _, st := range r.limits.Stats() {
		if st.Calls == 0 {
			continue
		}
		name, ok := names[st.Pool]
		if !ok {
			continue
		}
		out = append(out, PoolLimit{
			Pool: name, Concurrency: st.Concurrency, MaxConcurrency: st.MaxConcurrency,
			PeakInFlight: st.PeakInFlight, BackOffs: st.BackOffs, Calls: st.Calls, RateLimited: st.RateLimited,
			LatencyBaselineMS: st.LatencyBaseline.Milliseconds(), RPM: st.Effective.RPM, TPM: st.Effective.TPM,
		})
	}
	slices.SortFunc(out, func(a, b PoolLimit) int { return strings.Compare(a.Pool, b.Pool) })
	return out
}
