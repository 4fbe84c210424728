package benchharness

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/layout"
	"github.com/impactbench/impactbench/internal/llm"
	"github.com/impactbench/impactbench/internal/plan"
	"github.com/impactbench/impactbench/internal/stats"
)

// The cost benchmark (`impactbench-bench --preset cost`): what a study
// costs in tokens and dollars, per conversation and per verdict, on each
// provider's wire format, with prompt caching as the providers bill it and
// with the batch APIs, against the same workload sent the way upstream
// sends it (upstream.go).
//
// Each configuration is one `impactbench run` of a fresh project (the
// measured build as a child process) against costFake, which counts every
// call's prompt, cache reads and writes and output per role. The workload
// is ImpactBench's first study's shape: Metrics × ScenariosPerMetric base
// scenarios × Variants demographic variants, pre-generated, each simulated
// against Targets targets for Turns turns and judged once.

// Roles (and the path prefixes of their models on the fake).
const (
	costRoleUser  = "user"
	costRoleJudge = "judge"
	costRoleAudit = "audit" // the fidelity audit's model (landmark_model), with --audit
)

func costTargetRole(i int) string { return targetID(i) }

// CostOptions shape the cost benchmark. Zero fields take the defaults.
type CostOptions struct {
	Metrics            int `json:"metrics"`              // default 3
	ScenariosPerMetric int `json:"scenarios_per_metric"` // default 9
	Variants           int `json:"variants"`             // demographic variants per base scenario, default 4
	Targets            int `json:"targets"`              // default 2
	Turns              int `json:"turns"`                // default 6
	// Reply lengths in tokens (defaults 60, 400 and 150, as every preset).
	UserTokens   int `json:"user_tokens"`
	TargetTokens int `json:"target_tokens"`
	JudgeTokens  int `json:"judge_tokens"`
	// LongSystemPrompt gives every scenario the harness's ~1,500-token
	// target system prompt instead of the benchmark's one-line
	// user_context (upstream's fallback).
	LongSystemPrompt bool `json:"long_system_prompt"`
	// Audit turns the fidelity audit on (validity.audit, one call per
	// conversation to its own model on the fake, priced as the judge),
	// to measure its share of the bill; off by default, since upstream
	// has no audit to compare with.
	Audit bool `json:"audit"`
	// AuditShare, with Audit, sets validity.audit_share (nil: the
	// measured build's default; 1 audits every conversation).
	AuditShare *float64 `json:"audit_share,omitempty"`
	// AuditReplyChars, with Audit, sets validity.audit_reply_chars (nil:
	// the measured build's default; 0 reads whole replies).
	AuditReplyChars *int `json:"audit_reply_chars,omitempty"`
	// UserBreak is the chance that a reply of the fake's simulated user is
	// broken (costbreak.go's twelve kinds); 0 for none. With Audit the run
	// reports how many broken conversations were caught (CostRun.Catch).
	UserBreak float64 `json:"user_break,omitempty"`
	// MinCacheTokens is the fake's shortest cacheable prefix on the
	// Anthropic format (default 1,024, Sonnet's).
	MinCacheTokens int `json:"min_cache_tokens"`
	// OpenAITTL is how long an OpenAI prefix stays cached after its last
	// use (default 30 min); Wave is how long each batch takes on the fake's
	// clock (default 10 min).
	OpenAITTL time.Duration `json:"openai_ttl_ns"`
	Wave      time.Duration `json:"wave_ns"`
	// Configs lists the configurations to run (default all of CostConfigs);
	// Formats the wire formats (default "openai", "anthropic").
	Configs []string `json:"configs"`
	Formats []string `json:"formats"`
	// PrecisionHalfWidth and PrecisionICC define a precise score (see
	// CostPrecision): the 95 % half-width wanted (default 0.10) and the
	// intra-class correlation assumed (default 0.3), `impactbench plan`'s
	// defaults.
	PrecisionHalfWidth float64 `json:"precision_half_width"`
	PrecisionICC       float64 `json:"precision_icc"`

	// Binary is the build measured; Before, when set, an earlier build
	// measured the same way (e.g. main before a change).
	Binary string    `json:"-"`
	Before string    `json:"-"`
	Dir    string    `json:"-"`
	Stderr io.Writer `json:"-"`
}

func (o CostOptions) withDefaults() CostOptions {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&o.Metrics, 3)
	def(&o.ScenariosPerMetric, 9)
	def(&o.Variants, 4)
	def(&o.Targets, 2)
	def(&o.Turns, 6)
	def(&o.UserTokens, DefaultUserTokens)
	def(&o.TargetTokens, DefaultTargetTokens)
	def(&o.JudgeTokens, DefaultJudgeTokens)
	def(&o.MinCacheTokens, 1024)
	if o.OpenAITTL <= 0 {
		o.OpenAITTL = 30 * time.Minute
	}
	if o.Wave <= 0 {
		o.Wave = 10 * time.Minute
	}
	if len(o.Configs) == 0 {
		for _, c := range CostConfigs {
			o.Configs = append(o.Configs, c.Name)
		}
	}
	if len(o.Formats) == 0 {
		o.Formats = []string{"openai", "anthropic"}
	}
	if !(o.PrecisionHalfWidth > 0 && o.PrecisionHalfWidth < 1) {
		o.PrecisionHalfWidth = plan.DefaultPlanHalfWidth
	}
	if !(o.PrecisionICC > 0 && o.PrecisionICC <= 1) {
		o.PrecisionICC = plan.DefaultPlanICC
	}
	return o
}

// CostConfig is which roles send their calls through a batch API.
type CostConfig struct {
	Name                string
	User, Target, Judge bool
}

// CostConfigs are the configurations the benchmark compares.
var CostConfigs = []CostConfig{
	{Name: "real time"},
	{Name: "judge batched", Judge: true},
	{Name: "user and judge batched", User: true, Judge: true},
	{Name: "all batched", User: true, Target: true, Judge: true},
}

// costPrices is the list price each format's calls are billed at: every
// role on one model of that provider, so that the formats differ only in
// how caching bills (Anthropic: writes 1.25× or 2×, reads 0.1×; OpenAI:
// free writes, reads at this model's 0.1×).
var costPrices = map[string]string{"anthropic": "claude-sonnet-4-6", "openai": "gpt-5.1"}

// CostResult is the benchmark's outcome.
type CostResult struct {
	Options       CostOptions `json:"options"`
	Conversations int         `json:"conversations"`
	Verdicts      int         `json:"verdicts"`
	// Precision defines every run's USDPerPreciseScore.
	Precision CostPrecision `json:"precision"`
	// Upstream is the upstream-shaped workload's bill per format.
	Upstream []CostRun `json:"upstream"`
	Runs     []CostRun `json:"runs"`
}

// CostPrecision is the cost benchmark's unit of precision: a precise
// score, one model's pass rate on one metric stated to ±HalfWidth with 95 %
// confidence. The conversations it takes are what `impactbench plan` sizes
// for the cluster-score interval (stats.ScenariosNeeded): base scenarios of
// ConversationsPerScenario conversations (the workload's demographic
// variants), at the widest rate (0.5) and the assumed ICC; each
// conversation is judged once. A run's cost per precise score is its cost
// per judged conversation times Conversations: the cost of reaching a fixed
// half-width, the usual cost × variance measure made concrete. It scales
// with the design: a lab measuring K models on M metrics to that precision
// pays about K·M times it (less for rates far from one half, whose
// intervals are narrower).
type CostPrecision struct {
	HalfWidth                float64 `json:"half_width"`
	Conf                     float64 `json:"conf"`
	Rate                     float64 `json:"rate"`
	ICC                      float64 `json:"icc"`
	ConversationsPerScenario int     `json:"conversations_per_base_scenario"`
	BaseScenarios            int     `json:"base_scenarios_needed"`
	Conversations            int     `json:"conversations_needed"`
	// WorkloadHalfWidth is the expected half-width of one model's score on
	// one metric from the workload's own ScenariosPerMetric base scenarios
	// (nil below two, where no interval is planned).
	WorkloadHalfWidth *float64 `json:"workload_half_width"`
}

// precisionConf is the confidence of a precise score.
const precisionConf = 0.95

func costPrecision(o CostOptions) CostPrecision {
	m := float64(o.Variants)
	p := CostPrecision{HalfWidth: o.PrecisionHalfWidth, Conf: precisionConf, Rate: plan.DefaultPlanRate, ICC: o.PrecisionICC,
		ConversationsPerScenario: o.Variants}
	p.BaseScenarios = stats.ScenariosNeeded(p.HalfWidth, m, p.Rate, p.ICC, p.Conf)
	p.Conversations = p.BaseScenarios * o.Variants
	if o.ScenariosPerMetric >= 2 {
		hw := stats.ExpectedHalfWidth(o.ScenariosPerMetric, m, p.Rate, p.ICC, p.Conf)
		p.WorkloadHalfWidth = &hw
	}
	return p
}

// CostRun is one build × format × configuration.
type CostRun struct {
	Build  string `json:"build"` // "upstream", "before", "after"
	Format string `json:"format"`
	Config string `json:"config"`
	Model  string `json:"priced_as"`
	// Roles sums the calls per role (and batch or real time).
	Roles []CostRole `json:"roles"`
	// PerConversation covers the simulated user's and the target's calls,
	// PerVerdict the judge's.
	PerConversation CostTokens `json:"per_conversation"`
	PerVerdict      CostTokens `json:"per_verdict"`
	USD             float64    `json:"usd"`
	// Ratio is USD over the upstream-shaped bill on the same format.
	Ratio float64 `json:"ratio_to_upstream"`
	// USDPerPreciseScore is what one precise score (CostPrecision) costs
	// at this run's cost per judged conversation.
	USDPerPreciseScore float64 `json:"usd_per_precise_score"`
	// AuditCalls and AuditShareOfBill are the fidelity audit's calls and
	// its part of USD (with Audit).
	AuditCalls       int     `json:"audit_calls,omitempty"`
	AuditShareOfBill float64 `json:"audit_share_of_bill,omitempty"`
	// Catch is how the checks fared against the broken simulated user
	// (with UserBreak).
	Catch    *CostCatch `json:"catch,omitempty"`
	WallSecs float64    `json:"wall_s,omitempty"`
	Error    string     `json:"error,omitempty"`
}

// CostRole is one role's calls.
type CostRole struct {
	Role  string `json:"role"`
	Batch bool   `json:"batch"`
	CostTokens
}

// CostTokens are token counts and their price.
type CostTokens struct {
	Calls      int     `json:"calls"`
	Prompt     int     `json:"prompt_tokens"`
	CacheRead  int     `json:"cache_read_tokens"`
	CacheWrite int     `json:"cache_write_tokens"`
	Output     int     `json:"output_tokens"`
	USD        float64 `json:"usd"`
}

// Cost runs the cost benchmark.
func Cost(ctx context.Context, o CostOptions) (*CostResult, error) {
	o = o.withDefaults()
	if o.Binary == "" {
		return nil, fmt.Errorf("benchharness: no binary to measure")
	}
	w := newCostWorkload(o)
	res := &CostResult{Options: o, Conversations: w.conversations(), Verdicts: w.conversations(), Precision: costPrecision(o)}
	for _, format := range o.Formats {
		up, err := w.upstreamBill(format)
		if err != nil {
			return nil, err
		}
		res.price(&up)
		res.Upstream = append(res.Upstream, up)
	}
	builds := [][2]string{{"after", o.Binary}}
	if o.Before != "" {
		builds = [][2]string{{"before", o.Before}, {"after", o.Binary}}
	}
	// The measured build polls batches this often (the default is 15 s);
	// a build without the knob polls at its default.
	defer setEnv("IMPACTBENCH_BATCH_POLL", "100ms")()
	defer setEnv("IMPACTBENCH_FAKE_KEY", "fake-key")()
	for _, b := range builds {
		for _, format := range o.Formats {
			for _, name := range o.Configs {
				cfg, ok := costConfig(name)
				if !ok {
					return nil, fmt.Errorf("benchharness: unknown cost configuration %q", name)
				}
				run := w.run(ctx, b[0], b[1], format, cfg)
				run.Ratio = run.USD / res.upstream(format).USD
				res.price(&run)
				res.Runs = append(res.Runs, run)
				if err := ctx.Err(); err != nil {
					return res, err
				}
			}
		}
	}
	return res, nil
}

// price sets run's cost per precise score.
func (r *CostResult) price(run *CostRun) {
	if r.Conversations > 0 {
		run.USDPerPreciseScore = run.USD / float64(r.Conversations) * float64(r.Precision.Conversations)
	}
}

func (r *CostResult) upstream(format string) CostRun {
	for _, u := range r.Upstream {
		if u.Format == format {
			return u
		}
	}
	return CostRun{}
}

func costConfig(name string) (CostConfig, bool) {
	for _, c := range CostConfigs {
		if c.Name == name {
			return c, true
		}
	}
	return CostConfig{}, false
}

// setEnv sets a variable for the child runs and returns the undo.
func setEnv(k, v string) func() {
	old, had := os.LookupEnv(k)
	_ = os.Setenv(k, v) // a valid name and value
	return func() {
		if had {
			_ = os.Setenv(k, old)
		} else {
			_ = os.Unsetenv(k)
		}
	}
}

// costWorkload is the study: its metrics and scenario variants, and the
// byte lengths of the replies the fake gives.
type costWorkload struct {
	o         CostOptions
	metrics   []config.Metric
	scenarios []artifacts.Scenario
	userMsg   int // bytes of a simulated user's message (after "Message: ")
	reply     int // bytes of a target reply
}

func (w *costWorkload) conversations() int { return len(w.scenarios) * w.o.Targets }

func newCostWorkload(o CostOptions) *costWorkload {
	w := &costWorkload{o: o}
	for i := range o.Metrics {
		typ, def := metricDefinition(i)
		w.metrics = append(w.metrics, config.Metric{ID: metricID(i), Name: fmt.Sprintf("Harness metric %d", i+1),
			Type: config.MetricType(typ), Definition: fmt.Sprintf("%s (variant %d)", def, i+1)})
	}
	base := scenarios(sizing{scenarios: o.Metrics * o.ScenariosPerMetric, metrics: o.Metrics}, o.Turns)
	for _, sc := range base {
		for v := range o.Variants {
			x := sc
			x.ID = fmt.Sprintf("%s_v%02d", strings.TrimSuffix(sc.ID, "_v01"), v+1)
			x.UserPersona = sc.Persona + fmt.Sprintf(" They are in %s and write the way people there do.", variantName(v))
			x.Demographic = artifacts.Demographic{{Key: "age", Value: fmt.Sprintf("age %d", v/2+1)}, {Key: "gender", Value: fmt.Sprintf("gender %d", v%2+1)}}
			if o.LongSystemPrompt {
				x.TargetSystemPrompt = TargetSystemPrompt
			}
			w.scenarios = append(w.scenarios, x)
		}
	}
	seed := uint64(1)
	th := o.UserTokens / 3
	w.userMsg = len(fillerWords(&seed, o.UserTokens-th-2))
	w.reply = len(fillerWords(&seed, o.TargetTokens))
	return w
}

func variantName(v int) string {
	return []string{"their teens", "their twenties", "their forties", "their seventies"}[v%4]
}

// userContext is the benchmark's target system prompt (upstream's
// fallback for it too) unless LongSystemPrompt.
const userContext = "A general-purpose community help assistant."

// upstreamBill prices the upstream-shaped workload on format: every request
// upstream would send, billed by a costFake of the same options as ours, in
// real time (upstream batches nothing) and in upstream's order — each
// target's conversations (one `simulate` per target), then their verdicts.
// The fake caches what the format's provider caches for any caller: on
// OpenAI, every earlier prefix of 1,024 tokens or more; on Anthropic,
// nothing, since upstream marks no breakpoint.
func (w *costWorkload) upstreamBill(format string) (CostRun, error) {
	model := costPrices[format]
	if _, ok := llm.DefaultPrices().Lookup(model); !ok {
		return CostRun{}, fmt.Errorf("benchharness: no price for %s", model)
	}
	run := CostRun{Build: "upstream", Format: format, Config: "real time", Model: model}
	fake := newCostFake(w.o)
	openAI := format == "openai"
	for t := range w.o.Targets {
		for _, sc := range w.scenarios {
			msgs, replies := w.upstreamDialogue(sc, t)
			user, target := upstreamConversation(upstreamUserSystem(sc, w.metric(sc.MetricID), w.o.Turns), w.targetSystem(sc), msgs, replies)
			for k := range user {
				fake.record(costRoleUser, user[k], openAI, false, w.o.UserTokens)
				fake.record(costTargetRole(t), target[k], openAI, false, w.o.TargetTokens)
			}
		}
	}
	for t := range w.o.Targets {
		for _, sc := range w.scenarios {
			msgs, replies := w.upstreamDialogue(sc, t)
			fake.record(costRoleJudge, upstreamVerdict(w.metric(sc.MetricID), msgs, replies), openAI, false, w.o.JudgeTokens)
		}
	}
	calls, err := fake.snapshot()
	if err != nil {
		return run, fmt.Errorf("benchharness: upstream bill: %w", err)
	}
	w.bill(&run, calls)
	return run, nil
}

// upstreamDialogue is the simulated user's messages and target t's replies
// in one upstream conversation: the workload's reply lengths, with text
// drawn for this conversation alone (each is sampled afresh).
func (w *costWorkload) upstreamDialogue(sc artifacts.Scenario, t int) (msgs, replies []string) {
	for k := range w.o.Turns {
		key := fmt.Sprintf("upstream/%s/%s/%d/", sc.ID, costTargetRole(t), k)
		msgs = append(msgs, sized(key+"user", w.userMsg))
		replies = append(replies, sized(key+"target", w.reply))
	}
	return msgs, replies
}

// targetSystem is the target's system prompt for sc: the scenario's own,
// else the benchmark's user_context (upstream's order of fallbacks).
func (w *costWorkload) targetSystem(sc artifacts.Scenario) string {
	if sc.TargetSystemPrompt != "" {
		return sc.TargetSystemPrompt
	}
	return userContext
}

func (w *costWorkload) metric(id string) config.Metric {
	for _, m := range w.metrics {
		if m.ID == id {
			return m
		}
	}
	return config.Metric{}
}

// finish fills the per-conversation and per-verdict figures and the total.
func (r *CostRun) finish(conversations int) {
	var conv, verdict CostTokens
	r.USD = 0
	for _, ro := range r.Roles {
		r.USD += ro.USD
		dst := &conv
		if ro.Role == costRoleJudge {
			dst = &verdict
		}
		dst.Calls += ro.Calls
		dst.Prompt += ro.Prompt
		dst.CacheRead += ro.CacheRead
		dst.CacheWrite += ro.CacheWrite
		dst.Output += ro.Output
		dst.USD += ro.USD
	}
	r.PerConversation, r.PerVerdict = conv.per(conversations), verdict.per(conversations)
}

// per divides the totals by n (rounded to whole tokens).
func (t CostTokens) per(n int) CostTokens {
	if n == 0 {
		return t
	}
	d := func(v int) int { return (v + n/2) / n }
	return CostTokens{Calls: d(t.Calls), Prompt: d(t.Prompt), CacheRead: d(t.CacheRead), CacheWrite: d(t.CacheWrite),
		Output: d(t.Output), USD: t.USD / float64(n)}
}

func sortRoles(rs []CostRole) {
	rank := func(r CostRole) string {
		switch r.Role {
		case costRoleUser:
			return "0"
		case costRoleAudit:
			return "8"
		case costRoleJudge:
			return "9"
		}
		return "5" + r.Role
	}
	for i := 1; i < len(rs); i++ {
		for j := i; j > 0 && rank(rs[j]) < rank(rs[j-1]); j-- {
			rs[j], rs[j-1] = rs[j-1], rs[j]
		}
	}
}

// run measures one build × format × configuration.
func (w *costWorkload) run(ctx context.Context, build, bin, format string, cfg CostConfig) CostRun {
	run := CostRun{Build: build, Format: format, Config: cfg.Name, Model: costPrices[format]}
	dir, err := os.MkdirTemp(w.o.Dir, "impactbench-cost-")
	if err != nil {
		run.Error = err.Error()
		return run
	}
	defer os.RemoveAll(dir)
	fake := newCostFake(w.o)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		run.Error = err.Error()
		return run
	}
	srv := &http.Server{Handler: fake, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }() // ends with Close below
	defer srv.Close()
	if err := w.writeProject(dir, "http://"+ln.Addr().String(), format, cfg); err != nil {
		run.Error = err.Error()
		return run
	}
	cr, err := runChild(ctx, bin, dir, benchName, w.o.Stderr)
	if err != nil {
		run.Error = err.Error()
		return run
	}
	run.WallSecs = cr.wall.Seconds()
	if cr.exitCode != 0 {
		run.Error = fmt.Sprintf("exit %d: %s", cr.exitCode, cr.errText)
	}
	calls, ferr := fake.snapshot()
	if ferr != nil && run.Error == "" {
		run.Error = "fake provider: " + ferr.Error()
	}
	w.bill(&run, calls)
	if w.o.UserBreak > 0 && run.Error == "" {
		if run.Catch, err = w.tallyCatch(dir); err != nil {
			run.Error = "catch tally: " + err.Error()
		}
	}
	return run
}

// bill prices the calls the fake counted.
func (w *costWorkload) bill(run *CostRun, calls []costCall) {
	price, _ := llm.DefaultPrices().Lookup(run.Model)
	for _, c := range byRole(calls) {
		u := llm.Usage{InputTokens: c.Prompt, CachedInputTokens: c.Read, CacheWriteTokens: c.Write,
			CacheWriteLongTokens: c.WriteLong, OutputTokens: c.Output}
		run.Roles = append(run.Roles, CostRole{Role: c.Role, Batch: c.Batch, CostTokens: CostTokens{
			Calls: c.Calls, Prompt: c.Prompt, CacheRead: c.Read, CacheWrite: c.Write, Output: c.Output,
			USD: price.Cost(u, c.Batch)}})
	}
	sortRoles(run.Roles)
	run.finish(w.conversations())
	for _, ro := range run.Roles {
		if ro.Role == costRoleAudit && run.USD > 0 {
			run.AuditCalls += ro.Calls
			run.AuditShareOfBill += ro.USD / run.USD
		}
	}
}

// writeProject writes config.yaml, benchmark.yaml and scenarios.json.
func (w *costWorkload) writeProject(dir, base, format string, cfg CostConfig) error {
	bdir := layout.BenchDir(dir, benchName)
	if err := os.MkdirAll(bdir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(layout.ConfigPath(dir), []byte(w.configYAML(base, format, cfg)), 0o644); err != nil {
		return err
	}
	var b strings.Builder
	b.WriteString("# Written by the impactbench cost benchmark (internal/benchharness).\nname: Cost benchmark\n")
	b.WriteString("description: The shape of ImpactBench's first study, pre-generated.\n")
	fmt.Fprintf(&b, "scenario:\n  user_context: %q\nmetrics:\n", userContext)
	for _, m := range w.metrics {
		fmt.Fprintf(&b, "- id: %s\n  name: %q\n  type: %s\n  definition: %q\n", m.ID, m.Name, m.Type, m.Definition)
	}
	if err := os.WriteFile(layout.BenchmarkPath(bdir), []byte(b.String()), 0o644); err != nil {
		return err
	}
	return artifacts.WriteScenarios(layout.Bench{Dir: bdir}.Scenarios(), w.scenarios)
}

func (w *costWorkload) configYAML(base, format string, cfg CostConfig) string {
	var b bytes.Buffer
	b.WriteString("# Written by the impactbench cost benchmark (internal/benchharness).\nseed: 1\n")
	model := func(indent, role string, batch bool) {
		url := base + "/" + role
		src := "anthropic"
		if format == "openai" {
			url, src = url+"/v1", "openai"
		}
		fmt.Fprintf(&b, "%smodel: %s\n%ssource: %s\n%sbase_url: %q\n%sapikey: \"${IMPACTBENCH_FAKE_KEY}\"\n",
			indent, costPrices[format], indent, src, indent, url, indent)
		if batch {
			fmt.Fprintf(&b, "%sbatch: true\n", indent)
		}
	}
	b.WriteString("user_model:\n")
	model("  ", costRoleUser, cfg.User)
	b.WriteString("evaluator_model:\n")
	model("  ", costRoleJudge, cfg.Judge)
	b.WriteString("targets:\n")
	for i := range w.o.Targets {
		fmt.Fprintf(&b, "  - id: %s\n", costTargetRole(i))
		model("    ", costTargetRole(i), cfg.Target)
	}
	fmt.Fprintf(&b, "generation:\n  scenarios_per_metric: %d\n  turns: %d\n  num_samples: 1\n", w.o.ScenariosPerMetric, w.o.Turns)
	b.WriteString("landmarks: true\nperfunctory: false\n")
	// Upstream makes no fidelity audit: the same work is compared without
	// it (docs/performance.md gives the audit's own cost).
	if w.o.Audit {
		b.WriteString("landmark_model:\n")
		model("  ", costRoleAudit, cfg.Judge)
		b.WriteString("validity:\n  audit: true\n")
		if s := w.o.AuditShare; s != nil {
			fmt.Fprintf(&b, "  audit_share: %g\n", *s)
		}
		if n := w.o.AuditReplyChars; n != nil {
			fmt.Fprintf(&b, "  audit_reply_chars: %d\n", *n)
		}
	} else {
		b.WriteString("validity:\n  audit: false\n")
	}
	return b.String()
}

// WriteText prints the bill of every run against upstream's.
func (r *CostResult) WriteText(w io.Writer) error {
	o := r.Options
	var b bytes.Buffer
	sys := "one line (the benchmark's user_context)"
	if o.LongSystemPrompt {
		sys = fmt.Sprintf("≈%d tokens", tokens(TargetSystemPrompt))
	}
	fmt.Fprintf(&b, "cost benchmark: %d metrics × %d base scenarios × %d variants × %d targets = %d conversations × %d turns, %d verdicts\n",
		o.Metrics, o.ScenariosPerMetric, o.Variants, o.Targets, r.Conversations, o.Turns, r.Verdicts)
	fmt.Fprintf(&b, "replies: user %d, target %d, judge %d tokens; target system prompt: %s; Anthropic cache minimum %d tokens; OpenAI cache lifetime %s; each batch %s\n",
		o.UserTokens, o.TargetTokens, o.JudgeTokens, sys, o.MinCacheTokens, o.OpenAITTL, o.Wave)
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "format\tbuild\tconfiguration\tconv: prompt\tread\twritten\toutput\t$/conv\tverdict: prompt\t$/verdict\tstudy $\t× upstream\t$/precise score\t")
	for _, format := range o.Formats {
		rows := append([]CostRun{r.upstream(format)}, r.runsOf(format)...)
		for _, run := range rows {
			c, v := run.PerConversation, run.PerVerdict
			ratio := fmt.Sprintf("%.3f", run.Ratio)
			if run.Build == "upstream" {
				ratio = "1"
			}
			if run.Error != "" {
				ratio += " (failed: " + run.Error + ")"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%d\t%.5f\t%d\t%.5f\t%.4f\t%s\t%.2f\t\n", format, run.Build, run.Config,
				c.Prompt, c.CacheRead, c.CacheWrite, c.Output, c.USD, v.Prompt, v.USD, run.USD, ratio, run.USDPerPreciseScore)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if o.Audit {
		share := "the build's default validity.audit_share"
		if o.AuditShare != nil {
			share = fmt.Sprintf("validity.audit_share %g", *o.AuditShare)
		}
		if o.AuditReplyChars != nil {
			share += fmt.Sprintf(", validity.audit_reply_chars %d", *o.AuditReplyChars)
		}
		fmt.Fprintf(&b, "fidelity audit (%s, real time, priced as the judge):", share)
		for _, run := range r.Runs {
			fmt.Fprintf(&b, " %s %s %s: %d calls, %.2f %% of the bill;", run.Build, run.Format, run.Config, run.AuditCalls, 100*run.AuditShareOfBill)
		}
		b.WriteString("\n")
		r.writeCatch(&b)
	}
	fmt.Fprintf(&b, "priced at list prices (prices.json): anthropic as %s, openai as %s; batched calls at half; conv = the simulated user's and the target's calls of one conversation\n",
		costPrices["anthropic"], costPrices["openai"])
	b.WriteString("upstream: its requests in real time, billed as ours: on openai its prefixes of 1,024 tokens or more are read from the automatic cache; on anthropic it marks no breakpoint, so nothing is cached\n")
	pr := r.Precision
	own := fmt.Sprintf("no interval from %d base scenario", o.ScenariosPerMetric)
	if pr.WorkloadHalfWidth != nil {
		own = fmt.Sprintf("±%.1f pt from %d", 100**pr.WorkloadHalfWidth, o.ScenariosPerMetric)
	}
	fmt.Fprintf(&b, "precise score: one model's pass rate on one metric to ±%.0f pt (%.0f %%, cluster-score interval, rate %.1f, ICC %.1f): %d base scenarios × %d conversations, each judged (this workload: %s)\n",
		100*pr.HalfWidth, 100*pr.Conf, pr.Rate, pr.ICC, pr.BaseScenarios, pr.ConversationsPerScenario, own)
	_, err := w.Write(b.Bytes())
	return err
}

func (r *CostResult) runsOf(format string) []CostRun {
	var out []CostRun
	for _, run := range r.Runs {
		if run.Format == format {
			out = append(out, run)
		}
	}
	return out
}
