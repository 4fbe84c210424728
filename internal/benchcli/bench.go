package benchcli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/impactbench/impactbench/internal/benchharness"
	"github.com/impactbench/impactbench/internal/fault"
)

func newBenchCmd(g *globals) *cobra.Command {
	var preset, workerChild string
	var caching bool
	var cf costFlags
	var af adaptiveFlags
	f := benchharness.Options{}
	cmd := &cobra.Command{
		Use:   "impactbench-bench",
		Short: "Measure this tool against a local fake provider: wall time vs T_min, 429s, CPU, memory",
		Long: `Runs a full simulate+evaluate workload against a rate-limited fake provider on
127.0.0.1 (or the offline model), with the impactbench command as a child process
(--binary, or built from this source tree with go build), and prints the wall time, T_min (the physical lower bound for that workload: critical
path, requests/RPM, tokens/TPM, calls·latency/concurrency), their ratio, requests
answered 429 (overall and after the first minute), the tool's CPU per request and
its peak RSS. Needs no config.yaml and no network; the temporary project is removed
afterwards unless --keep.

Presets: small (40 conversations × 3 turns, 5ms latency), full (2,000 × 6, 200ms),
rpm (full with 3,000 RPM per model, learned from headers), inflight (full with 64
calls in flight per model, configured), memory (100,000 × 2 on the offline model, no
latency), and for concurrency auto (nothing configured, no rate-limit headers):
auto-inflight (3,000 × 6, 429 above 48 calls in flight per model) and auto-rpm
(1,250 × 6, 6,000 RPM per model). pipeline is a whole run from metrics to results:
no metrics and no scenarios.json, a generator model on the fake writes 6 metrics ×
9 base scenarios × 4 demographic variants = 216 conversations × 6 turns, 200ms, no
limits, 64 conversations in flight (--concurrency; generation and evaluate keep the
tool's defaults); T_min is max(critical path of generation + conversation + judge,
calls × latency / conversations in flight), and the generator's steps are shown
with the window in which each ran. --metrics, --scenarios-per-metric and
--demographics change its shape. Flags override a preset's values.

--preset cluster-dir and cluster-s3 are the many-workers benchmark: a project of 3
benchmarks (360 conversations × 3 turns) whose every model sits behind one fake
limit (6,000 RPM learned from headers, 48 calls in flight), run once by one process,
then by real impactbench run all workers that take 16 indexes from the scheduler's
variables, --workers at a time, on one shared directory (then merge all) or each
on its own directory sharing an S3 store in this process (then merge all
--from-store); it prints wall time against the shared limit's bound, 429s, calls
paid twice (identical requests the fake answered more often than for one process)
and the files compared byte for byte. -kill kills two workers mid-run and starts a
duplicate worker; -redis shares the limit through Redis instead of dividing it.

--preset cost is the cost benchmark: 3 metrics × 9 base scenarios × 4 variants, 2
targets, 6 turns, pre-generated, run once per configuration (real time, judge
batched, user and judge batched, all batched) and wire format (OpenAI, Anthropic)
against a fake that bills prompt caching as the providers do; it prints tokens
and dollars per conversation and per verdict and the ratio to the same workload
sent the way upstream ImpactBench sends it. --before BINARY measures an earlier
build next to this one; --long-system-prompt, --cache-min, --wave and the reply
lengths change the workload (docs/performance.md).

--preset adaptive-replay replays the published July 2026 verdicts (16 models, 360
metrics × 3 base scenarios × 2 ages, rebuilt from the embedded published files)
through the adaptive study design --replays times, each in a random order of every
metric's base scenarios (--seed), as if they were being collected, and prints the
share of the conversations used (median, 5th and 95th percentiles), what each replay
states against and of the full study's conclusions, how many replays meet issue #37's
goal, and which conclusions cost the most; --start, --max, --rho, --hope and --budget
set the design (docs/statistics.md).`,
		Example: `  impactbench-bench --preset small
  impactbench-bench --preset rpm --configure-limits
  impactbench-bench --preset pipeline --metrics 2 --scenarios-per-metric 3 --demographics 2
  impactbench-bench --conversations 500 --turns 4 --latency 1s --rpm 600 --json
  impactbench-bench --caching
  impactbench-bench --preset cost --before ./impactbench-main
  impactbench-bench --preset adaptive-replay --replays 200 --seed 2026`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if workerChild != "" {
				// One worker process of the multi-worker presets.
				return benchharness.RunWorkerChild(cmd.Context(), workerChild, g.stdout)
			}
			if preset == "cost" {
				return runCostBench(cmd, g, f, cf)
			}
			if preset == "adaptive-replay" {
				return runAdaptiveReplay(cmd.Context(), g, af, f.Dir)
			}
			if caching {
				res, err := benchharness.CachingRatio(cmd.Context(), benchharness.CachingOptions{Turns: f.Turns})
				if err != nil {
					return err
				}
				if g.JSON {
					enc := json.NewEncoder(g.stdout)
					enc.SetIndent("", "  ")
					return enc.Encode(res)
				}
				return res.WriteText(g.stdout)
			}
			o := benchharness.Options{}
			if preset != "" {
				p, err := benchharness.Preset(preset)
				if err != nil {
					return fault.Usagef("--preset: %v", err)
				}
				o = p
			}
			benchOverrides(cmd, &o, f)
			if o.Pipeline && cmd.Flags().Changed("conversations") {
				return fault.Usagef("--conversations: the pipeline preset's conversations are --metrics × --scenarios-per-metric × the --demographics variants")
			}
			if o.Pipeline && (o.Metrics < 1 || o.ScenariosPerMetric < 1) {
				return fault.Usagef("--metrics %d, --scenarios-per-metric %d: want at least 1 each", o.Metrics, o.ScenariosPerMetric)
			}
			if o.Study != "" && (cmd.Flags().Changed("conversations") || cmd.Flags().Changed("metrics") || cmd.Flags().Changed("demographics")) {
				return fault.Usagef("--conversations, --metrics, --demographics: a study's metrics and age variants come from its published data; its size is --scenarios-per-metric × 2 ages × --targets")
			}
			if !o.Pipeline && o.Study == "" && (cmd.Flags().Changed("metrics") || cmd.Flags().Changed("scenarios-per-metric") || cmd.Flags().Changed("demographics")) {
				return fault.Usagef("--metrics, --scenarios-per-metric and --demographics shape the pipeline preset only (--preset pipeline)")
			}
			if o.Binary == "" {
				o.Binary = defaultBinary()
			}
			o.Harness, _ = os.Executable() // "": the workers presets build it
			if !g.Quiet && !g.JSON {
				o.Stderr = g.stderr
			}
			res, err := benchharness.Run(cmd.Context(), o)
			if err != nil && res == nil {
				return err
			}
			if werr := writeResult(g, res); werr != nil {
				return werr
			}
			if err != nil {
				return err
			}
			if res.ChildExitCode != 0 {
				return errors.New("the benchmarked run failed (exit " + fmt.Sprint(res.ChildExitCode) + "): " + res.ChildError)
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&preset, "preset", "", "start from a preset: "+strings.Join(benchharness.Presets(), ", ")+", cost (the cost benchmark) or adaptive-replay (the adaptive study design over the July 2026 verdicts)")
	fl.StringVar(&cf.before, "before", "", "--preset cost: also measure this earlier build (e.g. main) and show it next to --binary")
	fl.DurationVar(&cf.wave, "wave", 0, "--preset cost: how long each batch takes on the fake's clock (default 10m)")
	fl.BoolVar(&cf.long, "long-system-prompt", false, "--preset cost: give every scenario a ~1,500-token target system prompt")
	fl.BoolVar(&cf.audit, "audit", false, "--preset cost: turn the fidelity audit on (its own model on the fake, priced as the judge) to measure its share of the bill")
	fl.Float64Var(&cf.auditShare, "audit-share", -1, "--preset cost: with --audit, the measured build's validity.audit_share (default: its own default; 1 audits every conversation)")
	fl.IntVar(&cf.auditReplyChars, "audit-reply-chars", -1, "--preset cost: with --audit, the measured build's validity.audit_reply_chars (default: its own default; 0 reads whole replies)")
	fl.Float64Var(&cf.userBreak, "user-break", 0, "--preset cost: the chance that a reply of the fake's simulated user is broken (twelve kinds; docs/performance.md); with --audit, prints how many broken conversations were caught")
	fl.IntVar(&cf.min, "cache-min", 0, "--preset cost: the fake's Anthropic cache minimum in tokens (default 1024)")
	fl.StringSliceVar(&cf.configs, "configs", nil, "--preset cost: the configurations to run (default all: \"real time\", \"judge batched\", \"user and judge batched\", \"all batched\")")
	fl.IntVar(&f.Conversations, "conversations", benchharness.DefaultConversations, "conversations (scenarios × samples × targets)")
	fl.IntVar(&f.Turns, "turns", benchharness.DefaultTurns, "turns per conversation")
	fl.IntVar(&f.Targets, "targets", 1, "target models")
	fl.IntVar(&f.Samples, "samples", 1, "samples per scenario")
	fl.DurationVar(&f.Latency, "latency", benchharness.DefaultLatency, "per-call latency of the fake (offline.latency with --offline)")
	fl.DurationVar(&f.PerOutputToken, "per-output-token", 0, "extra latency per output token")
	fl.IntVar(&f.RPM, "rpm", 0, "requests per minute the fake enforces per model (0: none)")
	fl.IntVar(&f.TPM, "tpm", 0, "tokens per minute the fake enforces per model (0: none)")
	fl.IntVar(&f.MaxInFlight, "max-in-flight", 0, "concurrent requests the fake accepts per model (0: no cap)")
	fl.DurationVar(&f.Burst, "burst", benchharness.DefaultBurst, "the fake's bucket size as refill time (1s: OpenAI's per-second quanta)")
	fl.BoolVar(&f.HideLimits, "hide-limits", false, "the fake sends no x-ratelimit-* headers: the tool must find the limits from 429s")
	fl.BoolVar(&f.SharedPool, "shared-pool", false, "one server for all models: one base_url (the tool keeps one limit pool for it) and one fake limit pool")
	fl.IntVar(&f.Concurrency, "concurrency", 0, "run.concurrency.simulate and .evaluate (0: sized by Little's law; -1: unset, i.e. auto)")
	fl.IntVar(&f.MaxConcurrency, "max-concurrency", 0, "max_concurrency of every model (0: only when the automatic concurrency needs it; -1: never)")
	fl.IntVar(&f.MaxRetries, "max-retries", 0, "max_retries of every model (0: the tool's default)")
	fl.BoolVar(&f.IndependentOpenings, "independent-openings", false, "every target's conversation asks the simulated user for its own first turn (generation.independent_openings), the workload before openings were shared")
	fl.BoolVar(&f.ConfigureLimits, "configure-limits", false, "write --rpm/--tpm into config.yaml instead of letting the tool learn them from headers")
	fl.BoolVar(&f.Offline, "offline", false, "use the offline model instead of the HTTP fake (memory runs)")
	fl.IntVar(&f.UserTokens, "user-tokens", benchharness.DefaultUserTokens, "reply length of the simulated user, tokens")
	fl.IntVar(&f.TargetTokens, "target-tokens", benchharness.DefaultTargetTokens, "reply length of the target, tokens")
	fl.IntVar(&f.JudgeTokens, "judge-tokens", benchharness.DefaultJudgeTokens, "reply length of the judge, tokens")
	fl.IntVar(&f.Metrics, "metrics", benchharness.DefaultMetrics, "pipeline preset: metrics the generator writes")
	fl.IntVar(&f.ScenariosPerMetric, "scenarios-per-metric", benchharness.DefaultScenariosPerMetric, "pipeline and study presets: base scenarios per metric")
	f.Demographics = append([]int(nil), benchharness.DefaultDemographics...)
	fl.Var((*axesValue)(&f.Demographics), "demographics", "pipeline preset: values per demographic axis (2,2: 4 variants per base scenario)")
	fl.BoolVar(&caching, "caching", false, "instead: measure billed input tokens with and without prompt caching for one --turns conversation (Anthropic and OpenAI accounting)")
	fl.StringVar(&f.Study, "study", "", "run a study shaped as ImpactBench's published one from this data `DIR` (taxonomy.json, metric-criteria.json; \"auto\": ../shared/compat/published-2026-07 above the working directory)")
	fl.StringVar(&f.Binary, "binary", "", "impactbench executable to measure (default: the impactbench beside this executable, else on PATH, else built from this source tree)")
	fl.StringVar(&f.Dir, "dir", "", "where to create the temporary project (default: the system temp directory)")
	fl.BoolVar(&f.KeepDir, "keep", false, "keep the temporary project and print its path")
	fl.StringVar(&f.TracePools, "trace-pools", "", "write the fake's requests in flight per pool (the simulated user's first turns apart) every 100ms to this `FILE`; IMPACTBENCH_POOLTRACE=FILE makes the child write its own side (slots held, calls queued)")
	fl.IntVar(&f.Workers, "workers", 4, "workers… and cluster… presets: worker processes running at once")
	fl.IntVar(&f.Indexes, "indexes", 0, "cluster… presets: indexes (shards) the workers take in turn (default 4 × --workers)")
	fl.IntVar(&f.Benchmarks, "benchmarks", 3, "cluster… presets: benchmarks in the project, sharing --conversations")
	fl.StringVar(&workerChild, "worker-child", "", "run as one worker process of the workers presets (the harness passes its spec `FILE`)")
	_ = fl.MarkHidden("worker-child")
	addAdaptiveFlags(fl, &af)
	return cmd
}

// costFlags are the cost benchmark's own flags.
type costFlags struct {
	before string
	wave   time.Duration
	long   bool
	audit  bool
	// auditShare is --audit-share (negative: not given).
	auditShare float64
	// auditReplyChars is --audit-reply-chars (negative: not given).
	auditReplyChars int
	userBreak       float64
	min             int
	configs         []string
}

// runCostBench runs `bench --preset cost`: the shared flags that shape a
// workload (--metrics, --scenarios-per-metric, --demographics, --targets,
// --turns, the reply lengths, --binary, --dir) and its own.
func runCostBench(cmd *cobra.Command, g *globals, f benchharness.Options, cf costFlags) error {
	set := cmd.Flags().Changed
	o := benchharness.CostOptions{Binary: f.Binary, Before: cf.before, Dir: f.Dir, Wave: cf.wave,
		LongSystemPrompt: cf.long, MinCacheTokens: cf.min, Audit: cf.audit}
	if cf.auditShare >= 0 {
		if cf.auditShare > 1 || !cf.audit {
			return fault.Usagef("--audit-share %g: give a share between 0 and 1, with --audit", cf.auditShare)
		}
		o.AuditShare = &cf.auditShare
	}
	if cf.auditReplyChars >= 0 {
		if !cf.audit {
			return fault.Usagef("--audit-reply-chars %d: give it with --audit", cf.auditReplyChars)
		}
		o.AuditReplyChars = &cf.auditReplyChars
	}
	if cf.userBreak < 0 || cf.userBreak >= 1 {
		return fault.Usagef("--user-break %g: give a chance at least 0 and below 1", cf.userBreak)
	}
	o.UserBreak = cf.userBreak
	for _, x := range []struct {
		name     string
		dst, src *int
	}{{"metrics", &o.Metrics, &f.Metrics}, {"scenarios-per-metric", &o.ScenariosPerMetric, &f.ScenariosPerMetric},
		{"targets", &o.Targets, &f.Targets}, {"turns", &o.Turns, &f.Turns}, {"user-tokens", &o.UserTokens, &f.UserTokens},
		{"target-tokens", &o.TargetTokens, &f.TargetTokens}, {"judge-tokens", &o.JudgeTokens, &f.JudgeTokens}} {
		if set(x.name) {
			*x.dst = *x.src
		}
	}
	if set("demographics") {
		o.Variants = 1
		for _, n := range f.Demographics {
			o.Variants *= n
		}
	}
	if o.Binary == "" {
		if o.Binary = defaultBinary(); o.Binary == "" {
			var err error
			if o.Binary, err = benchharness.BuildBinary(cmd.Context(), os.TempDir()); err != nil {
				return err
			}
		}
	}
	o.Configs = cf.configs
	res, err := benchharness.Cost(cmd.Context(), o)
	if res == nil {
		return err
	}
	if werr := writeResult(g, res); werr != nil {
		return werr
	}
	if err != nil {
		return err
	}
	for _, run := range res.Runs {
		if run.Error != "" {
			return fmt.Errorf("%s %s %s: %s", run.Build, run.Format, run.Config, run.Error)
		}
	}
	return nil
}

// benchOverrides copies the flags the user set onto o (a preset or zero
// Options, whose defaults Run fills in).
func benchOverrides(cmd *cobra.Command, o *benchharness.Options, f benchharness.Options) {
	set := cmd.Flags().Changed
	ints := []struct {
		name     string
		dst, src *int
	}{
		{"conversations", &o.Conversations, &f.Conversations}, {"turns", &o.Turns, &f.Turns},
		{"targets", &o.Targets, &f.Targets}, {"samples", &o.Samples, &f.Samples},
		{"rpm", &o.RPM, &f.RPM}, {"tpm", &o.TPM, &f.TPM}, {"max-in-flight", &o.MaxInFlight, &f.MaxInFlight},
		{"concurrency", &o.Concurrency, &f.Concurrency}, {"max-concurrency", &o.MaxConcurrency, &f.MaxConcurrency},
		{"max-retries", &o.MaxRetries, &f.MaxRetries},
		{"user-tokens", &o.UserTokens, &f.UserTokens}, {"target-tokens", &o.TargetTokens, &f.TargetTokens},
		{"judge-tokens", &o.JudgeTokens, &f.JudgeTokens},
		{"metrics", &o.Metrics, &f.Metrics}, {"scenarios-per-metric", &o.ScenariosPerMetric, &f.ScenariosPerMetric},
		{"workers", &o.Workers, &f.Workers}, {"indexes", &o.Indexes, &f.Indexes}, {"benchmarks", &o.Benchmarks, &f.Benchmarks},
	}
	for _, x := range ints {
		if set(x.name) {
			*x.dst = *x.src
		}
	}
	durs := []struct {
		name     string
		dst, src *time.Duration
	}{{"latency", &o.Latency, &f.Latency}, {"per-output-token", &o.PerOutputToken, &f.PerOutputToken}, {"burst", &o.Burst, &f.Burst}}
	for _, x := range durs {
		if set(x.name) {
			*x.dst = *x.src
			if x.name == "latency" && *x.dst == 0 {
				*x.dst = -1 // an explicit zero, not "use the default"
			}
		}
	}
	bools := []struct {
		name     string
		dst, src *bool
	}{{"shared-pool", &o.SharedPool, &f.SharedPool}, {"hide-limits", &o.HideLimits, &f.HideLimits}, {"configure-limits", &o.ConfigureLimits, &f.ConfigureLimits}, {"offline", &o.Offline, &f.Offline}, {"independent-openings", &o.IndependentOpenings, &f.IndependentOpenings}}
	for _, x := range bools {
		if set(x.name) {
			*x.dst = *x.src
		}
	}
	if set("demographics") {
		o.Demographics = f.Demographics
	}
	if set("study") {
		o.Study = f.Study
	}
	o.Binary, o.Dir, o.KeepDir, o.TracePools = f.Binary, f.Dir, f.KeepDir, f.TracePools
}

// axesValue is --demographics: the number of values of each demographic
// axis, comma-separated.
type axesValue []int

func (v *axesValue) Type() string { return "N,N" }

func (v *axesValue) String() string {
	parts := make([]string, len(*v))
	for i, n := range *v {
		parts[i] = strconv.Itoa(n)
	}
	return strings.Join(parts, ",")
}

func (v *axesValue) Set(s string) error {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return errors.New("want the number of values of each demographic axis, each ≥ 1, e.g. 2,2")
		}
		out = append(out, n)
	}
	*v = out
	return nil
}

// defaultBinary is the impactbench command to measure when --binary is
// not given: the one installed beside impactbench-bench, else the one on
// PATH ("" when there is none: the harness builds it from this source
// tree).
func defaultBinary() string {
	name := "impactbench"
	if runtime.GOOS == "windows" {
		name += ".exe"
	}
	if exe, err := os.Executable(); err == nil {
		if p := filepath.Join(filepath.Dir(exe), name); p != exe {
			if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
				return p
			}
		}
	}
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	return ""
}

// writeResult prints a benchmark's result: indented JSON with --json, else
// its text.
func writeResult(g *globals, res interface{ WriteText(io.Writer) error }) error {
	if g.JSON {
		enc := json.NewEncoder(g.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	return res.WriteText(g.stdout)
}
