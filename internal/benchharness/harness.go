// Package benchharness measures impactbench itself: it runs a full
// simulate+evaluate workload against a local fake provider (or the offline
// model), as a child process, and compares the wall time with T_min, the
// physical lower bound for that workload (providers-and-performance §2.3).
//
// Run builds a throw-away project (config.yaml, a benchmark and a
// pre-generated scenarios.json, so only simulate, evaluate and aggregate
// run; with Options.Pipeline no metrics and no scenarios.json, so the whole
// pipeline runs, see pipeline.go), starts the fake provider on 127.0.0.1, runs
// `impactbench run bench --no-report --json` as a child and reports:
//
//   - wall time, T_min with the bound that binds, and their ratio;
//   - requests seen by the fake, 429s in all and after the first minute;
//   - the child's CPU time per request and its peak RSS (from the child's
//     rusage, so the fake server's own work is not counted).
//
// The fake is fakeprovider (RPM/TPM token buckets, 429 + Retry-After +
// x-ratelimit-* headers) behind a wrapper that gives every model name its
// own limit pool (as OpenAI does) unless SharedPool, records a per-second
// timeline of requests and 429s, and turns judge replies into parseable
// verdicts.
//
// CachingRatio (caching.go) is the separate prompt-caching measurement.
package benchharness

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http/httptest"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/layout"
	"github.com/impactbench/impactbench/internal/llm/ratelimit"
	"github.com/impactbench/impactbench/internal/llm/ratelimit/fakeprovider"
)

// Options describe one harness run. Zero fields take the defaults noted.
type Options struct {
	// Conversations is scenarios × samples × targets (default 2,000); the
	// scenario count is rounded up so every target gets the same rows.
	Conversations int `json:"conversations"`
	Turns         int `json:"turns"`   // default 6
	Targets       int `json:"targets"` // default 1
	Samples       int `json:"samples"` // default 1

	// Latency is the fake's fixed per-call latency (default 200ms; with
	// Offline it is the offline model's offline.latency, default 0), and
	// PerOutputToken is added per output token. A negative Latency means
	// zero (the zero value takes the default).
	Latency        time.Duration `json:"latency_ns"`
	PerOutputToken time.Duration `json:"per_output_token_ns"`
	// Reply lengths in tokens per role (defaults 60, 400, 150).
	UserTokens   int `json:"user_tokens"`
	TargetTokens int `json:"target_tokens"`
	JudgeTokens  int `json:"judge_tokens"`

	// RPM and TPM are enforced per limit pool by the fake (0: unenforced).
	RPM int `json:"rpm"`
	TPM int `json:"tpm"`
	// MaxInFlight caps concurrent requests per pool at the fake (a server's
	// slot count; 0: none). Above it the fake answers 429 without Retry-After.
	MaxInFlight int `json:"max_in_flight"`
	// Burst is the fake's bucket capacity as refill time (default 1s:
	// OpenAI enforces per-minute limits in per-second quanta).
	Burst time.Duration `json:"burst_ns"`
	// HideLimits makes the fake send no x-ratelimit-* headers (Retry-After
	// still comes with a 429): the limits are unknown to the tool, which
	// must find them from 429s alone, as with many providers and servers.
	HideLimits bool `json:"hide_limits,omitempty"`
	// SharedPool puts every model in one limit pool at the fake (like
	// Anthropic's per-model-family pools) although the tool keys its pools
	// by model name. Default: one pool per model name, as the tool assumes.
	// A shared pool answers every role with TargetTokens.
	SharedPool bool `json:"shared_pool"`

	// Concurrency sets run.concurrency.simulate and .evaluate. 0 sizes them
	// by Little's law from the limits (2 × rate × latency + 2 per target,
	// every conversation at once when nothing limits the rate; with
	// Offline, the tool's default); -1 leaves run.concurrency unset, i.e.
	// the tool's default, auto.
	Concurrency int `json:"concurrency"`
	// MaxConcurrency is written as every model's max_concurrency. 0 sets it
	// only when the automatic Concurrency needs more calls in flight per
	// pool than the limiter's default cap (256); -1 never sets it.
	MaxConcurrency int `json:"max_concurrency"`
	// MaxRetries is every model's max_retries (0: the tool's default, 4).
	MaxRetries int `json:"max_retries,omitempty"`
	// ConfigureLimits writes RPM/TPM into config.yaml; otherwise the tool
	// learns them from the fake's x-ratelimit-* headers.
	ConfigureLimits bool `json:"configure_limits"`
	// IndependentOpenings writes generation.independent_openings: true, so
	// every target's conversation pays for its own first user turn, the
	// workload before openings were shared (the study preset then sends
	// 25,920 user calls instead of 19,440, against a 40.5 s bound).
	IndependentOpenings bool `json:"independent_openings,omitempty"`
	// Offline uses the built-in offline model (offline.latency = Latency)
	// instead of the HTTP fake: the load generator for memory runs.
	Offline bool `json:"offline"`

	// Pipeline measures a whole `run`, generation included: the benchmark
	// has no metrics and there is no scenarios.json, and a generator model
	// on the fake writes Metrics metrics, ScenariosPerMetric base scenarios
	// each and one demographic rewrite per variant. Conversations is then
	// Metrics × ScenariosPerMetric × variants × Samples × Targets, and
	// Concurrency (K) sets run.concurrency.simulate only: the generation
	// phases and evaluate keep the tool's defaults (auto). Generator calls
	// take Latency plus PerOutputToken × TargetTokens. Not with Offline
	// or SharedPool.
	Pipeline bool `json:"pipeline,omitempty"`
	// Study runs a study shaped as ImpactBench's published one (study.go)
	// as one `run all`: the published data directory, or "auto" to look
	// for it (FindStudyData). Its ScenariosPerMetric base scenarios per
	// metric (default 3) come in two age variants, pre-generated.
	Study              string `json:"study,omitempty"`
	Metrics            int    `json:"metrics,omitempty"`              // default 6
	ScenariosPerMetric int    `json:"scenarios_per_metric,omitempty"` // default 9
	// Demographics is the number of values of each demographic axis
	// (default [2, 2]: 4 variants per base scenario); every axis needs one.
	Demographics []int `json:"demographics,omitempty"`

	// Workers > 0 runs the multi-worker benchmark (workers.go) instead:
	// that many worker processes at once, each driving its share of
	// Conversations (of Turns × 2 + 1 sequential calls to one model)
	// through the limiter against one fake limit pool (RPM, TPM,
	// MaxInFlight), shared as Share says (ShareNone, ShareDivide,
	// ShareRedis). Callers is each worker's conversations at once
	// (default 256). RestartRedisAfter kills the Redis of ShareRedis that
	// long into the run and restarts it, empty, a second later.
	// Uneven gives worker 0 half the conversations and the others the
	// rest (shards finishing at different times).
	Uneven            bool          `json:"uneven,omitempty"`
	Workers           int           `json:"workers,omitempty"`
	Share             string        `json:"share,omitempty"`
	Callers           int           `json:"callers,omitempty"`
	RestartRedisAfter time.Duration `json:"restart_redis_after_ns,omitempty"`

	// Cluster runs the many-workers benchmark with real impactbench
	// worker processes (cluster.go): StoreDir or StoreS3. Workers is the
	// processes running at once, Indexes the shards they take in turn
	// (default 4 × Workers), Benchmarks the project's benchmarks (default
	// 3), sharing Conversations. Kill kills two workers a third of the way
	// in and starts a duplicate of a third; ClusterRedis shares the limit
	// through a redis-server the harness starts (rate_backend) instead of
	// dividing it.
	Cluster      string `json:"cluster,omitempty"`
	Indexes      int    `json:"indexes,omitempty"`
	Benchmarks   int    `json:"benchmarks,omitempty"`
	Kill         bool   `json:"kill,omitempty"`
	ClusterRedis bool   `json:"cluster_redis,omitempty"`

	// Harness is impactbench-bench's own executable, run as the workers
	// presets' worker processes; empty builds it.
	Harness string `json:"-"`
	// Binary is the impactbench executable run as the child; empty builds
	// it with `go build` into the run's temp directory.
	Binary string `json:"-"`
	// Dir is where the temp project is created (default os.TempDir()).
	Dir string `json:"-"`
	// KeepDir keeps the temp project (its path is in Result.Dir).
	KeepDir bool `json:"-"`
	// TracePools, when set, is a file the fake's requests in flight per
	// pool go to every 100 ms while the child runs (occupancy.go).
	TracePools string `json:"-"`
	// Stderr, when set, receives the child's progress lines and logs
	// (otherwise the child runs with -q and only its last errors are kept).
	Stderr io.Writer `json:"-"`
}

// Defaults for zero Options fields.
const (
	DefaultConversations = 2000
	DefaultTurns         = 6
	DefaultLatency       = 200 * time.Millisecond
	DefaultUserTokens    = 60
	DefaultTargetTokens  = 400
	DefaultJudgeTokens   = 150
	DefaultBurst         = time.Second
	// limiterDefaultCap is ratelimit.Options.MaxConcurrency's default: the
	// AIMD ceiling of a pool whose model sets no max_concurrency.
	limiterDefaultCap = 256
)

// Preset returns the named option set: small (CI: 40 conversations × 3
// turns, 5ms latency), full (2,000 × 6, 200ms, no limits), rpm (full with
// 3,000 RPM per pool learned from headers), inflight (full with no rate
// limit but 64 calls in flight per model, as a self-hosted server with 64
// slots: the concurrency term of T_min binds), memory (100,000 × 2 on the
// offline model, no latency), and the two concurrency auto presets, both
// with run.concurrency and max_concurrency unset and nothing the tool could
// learn from headers: auto-inflight (3,000 × 6, 200ms, a server that
// answers 429 above 48 calls in flight per model) and auto-rpm (1,250 × 6,
// 200ms, 6,000 RPM per model in per-second quanta, no rate-limit headers).
// workers, workers-redis and workers-none are the multi-worker benchmark:
// 4 worker processes, 600 conversations of 9 calls, 200ms, one fake pool
// of 6,000 RPM (per-second quanta, learned from headers) and 48 calls in
// flight for all of them, the limit divided by 4, shared through Redis, or
// not shared; workers-redis-restart kills and restarts the Redis 20 s in;
// workers-uneven and workers-redis-uneven give worker 0 half the work.
// cluster-dir and cluster-s3 are the same with real `impactbench run all`
// workers (cluster.go): 3 benchmarks of 120 conversations × 3 turns, 16
// indexes run by 4 workers at a time, every model behind one fake pool of
// 6,000 RPM (learned) and 48 calls in flight (max_concurrency), on one
// shared directory or on an S3 store; -kill kills two workers and starts
// a duplicate, -redis shares the limit through Redis.
// pipeline is a whole run from metrics to results (issue 15's shape): 6
// metrics × 9 base scenarios × 4 demographic variants = 216 conversations
// × 6 turns, 200ms, no limits, 64 conversations in flight.
func Preset(name string) (Options, error) {
	switch name {
	case "small":
		return Options{Conversations: 40, Turns: 3, Latency: 5 * time.Millisecond}, nil
	case "full":
		return Options{Conversations: 2000, Turns: 6, Latency: DefaultLatency}, nil
	case "rpm":
		return Options{Conversations: 2000, Turns: 6, Latency: DefaultLatency, RPM: 3000}, nil
	case "inflight":
		return Options{Conversations: 2000, Turns: 6, Latency: DefaultLatency, MaxInFlight: 64, MaxConcurrency: 64}, nil
	case "memory":
		return Options{Conversations: 100000, Turns: 2, Offline: true, Latency: -1}, nil
	case "auto-inflight":
		return Options{Conversations: 3000, Turns: 6, Latency: DefaultLatency, MaxInFlight: 48, Concurrency: -1, MaxConcurrency: -1}, nil
	case "auto-rpm":
		return Options{Conversations: 1250, Turns: 6, Latency: DefaultLatency, RPM: 6000, HideLimits: true, Concurrency: -1, MaxConcurrency: -1}, nil
	case "pipeline":
		return Options{Pipeline: true, Metrics: 6, ScenariosPerMetric: 9, Demographics: []int{2, 2}, Turns: 6,
			Latency: DefaultLatency, Concurrency: 64}, nil
	case "auto-shared":
		return Options{Conversations: 1250, Turns: 6, Latency: DefaultLatency, MaxInFlight: 48, SharedPool: true, Concurrency: -1, MaxConcurrency: -1}, nil
	case "workers", "workers-redis", "workers-none", "workers-redis-restart", "workers-uneven", "workers-redis-uneven":
		share := map[string]string{"workers": ShareDivide, "workers-none": ShareNone, "workers-uneven": ShareDivide}[name]
		o := Options{Workers: 4, Share: share, Conversations: 600, Turns: 4, Latency: DefaultLatency,
			RPM: 6000, MaxInFlight: 48, TargetTokens: 64}
		if share == "" {
			o.Share = ShareRedis
		}
		o.Uneven = strings.HasSuffix(name, "-uneven")
		if name == "workers-redis-restart" {
			o.RestartRedisAfter = 20 * time.Second
		}
		return o, nil
	case "cluster-dir", "cluster-s3", "cluster-dir-kill", "cluster-s3-kill", "cluster-dir-redis", "cluster-s3-redis":
		store, variant, _ := strings.Cut(strings.TrimPrefix(name, "cluster-"), "-")
		return Options{Cluster: store, Kill: variant == "kill", ClusterRedis: variant == "redis",
			Workers: 4, Indexes: 16, Benchmarks: 3, Conversations: 360, Turns: 3, Latency: DefaultLatency,
			RPM: 6000, MaxInFlight: 48, MaxConcurrency: 48, Concurrency: -1, MaxRetries: 12, TargetTokens: 64}, nil
	case "study":
		return Options{Study: "auto", ScenariosPerMetric: 3, Targets: 4, Turns: 3, Latency: 100 * time.Millisecond,
			MaxInFlight: 64, MaxConcurrency: 64, Concurrency: -1}, nil
	}
	return Options{}, fmt.Errorf("unknown preset %q (%s)", name, strings.Join(Presets(), ", "))
}

// Presets lists the preset names.
func Presets() []string {
	return []string{"small", "full", "rpm", "inflight", "memory", "auto-inflight", "auto-rpm", "auto-shared", "pipeline", "study",
		"workers", "workers-redis", "workers-none", "workers-redis-restart", "workers-uneven", "workers-redis-uneven",
		"cluster-dir", "cluster-s3", "cluster-dir-kill", "cluster-s3-kill", "cluster-dir-redis", "cluster-s3-redis"}
}

func (o Options) withDefaults() Options {
	o.Targets, o.Samples = max(o.Targets, 1), max(o.Samples, 1)
	if o.Pipeline {
		o = o.pipelineDefaults()
	}
	if o.Conversations <= 0 {
		o.Conversations = DefaultConversations
	}
	if o.Turns <= 0 {
		o.Turns = DefaultTurns
	}
	switch {
	case o.Latency < 0: // explicit zero (presets)
		o.Latency = 0
	case o.Latency == 0 && !o.Offline:
		o.Latency = DefaultLatency
	}
	if o.UserTokens <= 0 {
		o.UserTokens = DefaultUserTokens
	}
	if o.TargetTokens <= 0 {
		o.TargetTokens = DefaultTargetTokens
	}
	if o.JudgeTokens <= 0 {
		o.JudgeTokens = DefaultJudgeTokens
	}
	if o.Burst <= 0 {
		o.Burst = DefaultBurst
	}
	if o.SharedPool {
		o.UserTokens, o.JudgeTokens = o.TargetTokens, o.TargetTokens
	}
	if o.Cluster != "" {
		o.SharedPool = true
		o.UserTokens, o.JudgeTokens = o.TargetTokens, o.TargetTokens
		o.Benchmarks = max(o.Benchmarks, 1)
		if o.Indexes <= 0 {
			o.Indexes = 4 * o.Workers
		}
	}
	if o.Workers > 0 && o.Callers <= 0 && o.Cluster == "" {
		o.Callers = 256
	}
	return o
}

// Result is what one run measured. Times are in seconds.
type Result struct {
	Options Options `json:"options"`
	Dir     string  `json:"dir,omitempty"`

	// Settings the child ran with.
	SimulateConcurrency int `json:"simulate_concurrency"` // 0: tool default
	EvaluateConcurrency int `json:"evaluate_concurrency"`
	MaxConcurrency      int `json:"max_concurrency,omitempty"`

	Conversations int `json:"conversations"` // expected rows
	Completed     int `json:"completed"`     // status completed or user_terminated
	Failed        int `json:"failed"`        // status error
	Scored        int `json:"scored"`        // score rows with a verdict
	// ResultsWritten: aggregate wrote results.json.
	ResultsWritten bool `json:"results_written"`

	// Binary is the impactbench executable measured; " (built now from DIR)"
	// when the harness built it, so a copied harness that measured the
	// current source tree instead of its own build says so.
	Binary string `json:"binary,omitempty"`

	Wall          float64 `json:"wall_s"`
	TMin          float64 `json:"tmin_s"`
	Binding       string  `json:"binding"`
	Ratio         float64 `json:"ratio"` // wall / T_min; 0 when T_min is 0
	CriticalPath  float64 `json:"critical_path_s"`
	InFlightNeed  float64 `json:"in_flight_needed"` // Little's law: Σ rate × latency
	Pools         []Pool  `json:"pools,omitempty"`
	ChildExitCode int     `json:"child_exit_code"`
	ChildError    string  `json:"child_error,omitempty"`

	Requests         int64   `json:"requests"` // every request the fake saw
	Accepted         int64   `json:"accepted"`
	RateLimited      int64   `json:"rate_limited"` // answered 429
	RateLimitedShare float64 `json:"rate_limited_share"`
	// After the first minute of the run (0 requests when it was shorter).
	RequestsAfter1m    int64   `json:"requests_after_1m"`
	RateLimitedAfter1m int64   `json:"rate_limited_after_1m"`
	ShareAfter1m       float64 `json:"rate_limited_share_after_1m"`
	InputTokens        int64   `json:"input_tokens"`
	OutputTokens       int64   `json:"output_tokens"`
	// ToolRequests is the child's own count (its --json summary).
	ToolRequests int64 `json:"tool_requests"`
	// ToolLimits is each of the tool's limit pools as the run left it (its
	// --json limits): the concurrency it learned.
	ToolLimits []ToolLimit `json:"tool_limits,omitempty"`

	ChildUser  float64 `json:"child_user_cpu_s"`
	ChildSys   float64 `json:"child_sys_cpu_s"`
	CPUPerCall float64 `json:"cpu_per_call_us"` // child CPU / requests, µs
	PeakRSSMB  float64 `json:"peak_rss_mb"`
	// PeakPrivateMB is the peak of the child's private (anonymous) resident
	// memory, sampled every 50 ms (Linux; 0 elsewhere): RSS without the
	// executable's shared pages, i.e. what the run itself holds.
	PeakPrivateMB float64 `json:"peak_private_mb"`
	HarnessCPU    float64 `json:"harness_cpu_s"` // the fake server and harness, same interval
	// CPUBound is (child + harness CPU) / cores: when it nears Wall, this
	// machine's CPU, not the provider, bounds the run.
	CPUBound    float64 `json:"cpu_bound_s"`
	Cores       int     `json:"cores"`
	PeakReqRate int64   `json:"peak_requests_per_s"`

	// Pipeline is the generation and the bound of the pipeline preset.
	Pipeline *PipelineResult `json:"pipeline,omitempty"`
	// WorkerRun is each worker of a multi-worker run (Options.Workers).
	WorkerRun *WorkersResult `json:"worker_run,omitempty"`
	// Cluster is a run of the cluster presets (Options.Cluster).
	Cluster *ClusterResult `json:"cluster,omitempty"`
}

// Pool is one fake limit pool's counters and T_min bounds.
type Pool struct {
	Name         string  `json:"name"`
	Requests     int64   `json:"requests"`
	Accepted     int64   `json:"accepted"`
	RateLimited  int64   `json:"rate_limited"`
	InputTokens  int64   `json:"input_tokens"`
	OutputTokens int64   `json:"output_tokens"`
	PeakInFlight int     `json:"peak_in_flight"`
	Latency      float64 `json:"latency_s"`
	// FirstRequest and LastRequest are seconds since the fake started: the
	// window in which the pool was used (phases show up here).
	FirstRequest float64 `json:"first_request_s"`
	LastRequest  float64 `json:"last_request_s"`
	Bound        float64 `json:"bound_s"` // the largest rate bound of this pool
	Binding      string  `json:"binding"`
	RequestBound float64 `json:"request_bound_s,omitempty"`
	TokenBound   float64 `json:"token_bound_s,omitempty"`
	ConcBound    float64 `json:"concurrency_bound_s,omitempty"`
}

// Run performs one harness run. A child that exits non-zero is reported in
// the Result (ChildExitCode, ChildError) rather than as an error, so that
// partial runs can still be inspected; errors are for setup failures.
func Run(ctx context.Context, o Options) (*Result, error) {
	o = o.withDefaults()
	if o.Offline && (o.RPM > 0 || o.TPM > 0 || o.MaxInFlight > 0) {
		return nil, errors.New("benchharness: limits need the HTTP fake; Offline has none")
	}
	if err := o.checkPipeline(); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(o.Dir, "impactbench-bench-*")
	if err != nil {
		return nil, err
	}
	res := &Result{Options: o}
	if o.KeepDir {
		res.Dir = dir
	} else {
		defer os.RemoveAll(dir)
	}
	if o.Cluster != "" {
		return res, runCluster(ctx, o, res, dir)
	}
	if o.Workers > 0 {
		return res, runWorkers(ctx, o, res, dir)
	}
	bin := o.Binary
	res.Binary = bin
	if bin == "" {
		if bin, err = BuildBinary(ctx, dir); err != nil {
			return nil, err
		}
		from := moduleDir()
		if from == "" {
			from, _ = os.Getwd()
		}
		res.Binary = fmt.Sprintf("%s (built now from %s)", bin, from)
	}
	lay := planLayout(o)
	var study []studyBench
	if o.Study != "" {
		if study, lay, err = o.loadStudy(); err != nil {
			return nil, err
		}
	}
	res.Conversations = lay.scenarios * o.Samples * o.Targets

	pm := projectModels{offline: o.Offline, offlineLatency: o.Latency, maxRetries: o.MaxRetries}
	var fake *fakeServer
	if !o.Offline {
		var models []modelSpec
		if o.Pipeline { // first, so its pool is listed in the order the phases run
			models = append(models, modelSpec{generatorModel, roleGenerator, o.TargetTokens})
		}
		models = append(models, modelSpec{userModel, roleUser, o.UserTokens}, modelSpec{judgeModel, roleJudge, o.JudgeTokens})
		for i := range o.Targets {
			models = append(models, modelSpec{targetModel(i), roleTarget, o.TargetTokens})
		}
		fake = newFakeServer(models, fakeprovider.Config{
			RPM: o.RPM, TPM: o.TPM, MaxInFlight: o.MaxInFlight, Burst: o.Burst, HideLimits: o.HideLimits,
			Latency: o.Latency, PerOutputToken: o.PerOutputToken, OutputTokens: o.TargetTokens,
		}, o.SharedPool)
		fake.genMetrics = o.Metrics
		srv := httptest.NewServer(fake)
		defer srv.Close()
		pm.baseURL, pm.sharedURL = srv.URL, o.SharedPool
		if o.ConfigureLimits {
			pm.rpm, pm.tpm = o.RPM, o.TPM
		}
	}
	pm.simulate, pm.evals, pm.maxConcurrency = concurrencyFor(o, lay)
	res.SimulateConcurrency, res.EvaluateConcurrency, res.MaxConcurrency = pm.simulate, pm.evals, pm.maxConcurrency
	write := func() error { return writeProject(dir, o, lay, pm) }
	if o.Pipeline {
		write = func() error { return writePipelineProject(dir, o, pm) }
	}
	if study != nil {
		write = func() error { return writeStudyProject(dir, o, pm, study) }
	}
	if err := write(); err != nil {
		return nil, err
	}

	stopTrace, err := traceFake(fake, o.TracePools)
	if err != nil {
		return nil, err
	}
	ch, err := runChild(ctx, bin, dir, o.benchArg(), o.Stderr)
	if err := errors.Join(err, stopTrace()); err != nil {
		return nil, err
	}
	res.Wall = ch.wall.Seconds()
	res.ChildExitCode, res.ChildError = ch.exitCode, ch.errText
	res.ChildUser, res.ChildSys, res.PeakRSSMB, res.PeakPrivateMB = ch.user.Seconds(), ch.sys.Seconds(), ch.maxRSSMB, ch.privateMB
	res.HarnessCPU = ch.harnessCPU.Seconds()
	res.Cores = runtime.GOMAXPROCS(0)
	res.CPUBound = (res.ChildUser + res.ChildSys + res.HarnessCPU) / float64(res.Cores)
	res.ToolRequests = int64(ch.summary.Spent.Requests)
	res.ToolLimits = ch.summary.Limits
	if ctx.Err() != nil {
		return res, ctx.Err()
	}

	if err := countRows(res, dir, o); err != nil {
		return res, err
	}
	if fake != nil {
		fillFromFake(res, fake, o)
		if o.Pipeline {
			fillPipeline(res, fake, o)
		}
	} else {
		res.Requests, res.Accepted = res.ToolRequests, res.ToolRequests
		res.InputTokens, res.OutputTokens = int64(ch.summary.Spent.InputTokens), int64(ch.summary.Spent.OutputTokens)
		fillOfflineTMin(res, o)
	}
	if res.Requests > 0 {
		res.CPUPerCall = (res.ChildUser + res.ChildSys) / float64(res.Requests) * 1e6
		res.RateLimitedShare = float64(res.RateLimited) / float64(res.Requests)
	}
	if res.RequestsAfter1m > 0 {
		res.ShareAfter1m = float64(res.RateLimitedAfter1m) / float64(res.RequestsAfter1m)
	}
	if res.TMin > 0 {
		res.Ratio = res.Wall / res.TMin
	}
	return res, nil
}

// concurrencyFor sizes run.concurrency by Little's law (see Options).
func concurrencyFor(o Options, lay sizing) (sim, eval, maxConc int) {
	perTarget := lay.scenarios * o.Samples
	switch {
	case o.Concurrency > 0:
		sim, eval = o.Concurrency, o.Concurrency
	case o.Concurrency < 0 || o.Offline:
		sim, eval = 0, 0 // the tool's defaults
	default:
		lu, lt, lj := roleLatency(o, o.UserTokens), roleLatency(o, o.TargetTokens), roleLatency(o, o.JudgeTokens)
		xu, xt, xj := poolRate(o, lu), poolRate(o, lt), poolRate(o, lj)
		nt := float64(o.Targets)
		var simRate, evalRate float64 // calls per second per role, per target
		if o.SharedPool {
			x := poolRate(o, (lu+lt+lj)/3)
			simRate, evalRate = x/(2*nt), x/nt
		} else {
			simRate, evalRate = math.Min(xu/nt, xt), xj/nt
		}
		size := func(rate float64, lat time.Duration) int {
			if math.IsInf(rate, 1) {
				return perTarget
			}
			return min(perTarget, int(math.Ceil(2*rate*lat.Seconds()))+2)
		}
		sim, eval = size(simRate, lu+lt), size(evalRate, lj)
	}
	if o.Pipeline {
		eval = 0 // see pipeline.go: only the conversations in flight are set
	}
	switch {
	case o.MaxConcurrency > 0:
		maxConc = o.MaxConcurrency
	case o.MaxConcurrency == 0 && o.Concurrency == 0 && !o.Offline:
		// Every target's conversations may wait on the one user pool.
		if need := max(sim, eval) * o.Targets; need > limiterDefaultCap {
			maxConc = need
		}
	}
	return sim, eval, maxConc
}

func roleLatency(o Options, outTokens int) time.Duration {
	return o.Latency + time.Duration(outTokens)*o.PerOutputToken
}

// tokensPerCallGuess sizes TPM-bound concurrency before the run; the fake
// charges max(prompt, max_tokens) on admission, and max_tokens is 2048.
const tokensPerCallGuess = 2048

// poolRate is the sustainable calls per second of one pool (+Inf: none).
func poolRate(o Options, lat time.Duration) float64 {
	x := math.Inf(1)
	if o.RPM > 0 {
		x = math.Min(x, float64(o.RPM)/60)
	}
	if o.TPM > 0 {
		x = math.Min(x, float64(o.TPM)/60/tokensPerCallGuess)
	}
	if o.MaxInFlight > 0 && lat > 0 {
		x = math.Min(x, float64(o.MaxInFlight)/lat.Seconds())
	}
	return x
}

// countRows reads conversations.json and scores.json of every target.
func countRows(res *Result, dir string, o Options) error {
	benches := []string{layout.BenchDir(dir, benchName)}
	if o.Study != "" {
		names, err := layout.Benchmarks(dir)
		if err != nil {
			return err
		}
		benches = benches[:0]
		for _, name := range names {
			benches = append(benches, layout.BenchDir(dir, name))
		}
	}
	res.ResultsWritten = true
	for _, b := range benches {
		if _, err := os.Stat(layout.Bench{Dir: b}.Results()); err != nil {
			res.ResultsWritten = false
		}
		if err := countBenchRows(res, b, o); err != nil {
			return err
		}
	}
	return nil
}

// countBenchRows adds one benchmark's conversations and verdicts.
func countBenchRows(res *Result, bench string, o Options) error {
	for i := range o.Targets {
		run := layout.Bench{Dir: bench}.Run(targetID(i))
		convs := run.Conversations()
		if _, err := os.Stat(convs); err != nil {
			continue // the child failed before writing it: counts stay 0
		}
		err := artifacts.EachConversation(convs, func(_ int, c artifacts.Conversation) error {
			switch c.Status {
			case artifacts.StatusCompleted, artifacts.StatusUserTerminated:
				res.Completed++
			case artifacts.StatusError:
				res.Failed++
			}
			return nil
		})
		if err != nil {
			return err
		}
		scores := run.Scores()
		if _, err := os.Stat(scores); err != nil {
			continue
		}
		err = artifacts.EachScore(scores, func(_ int, s artifacts.Score) error {
			if s.Present != nil {
				res.Scored++
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// fillFromFake takes the counters from the fake and computes T_min: the
// critical path of one conversation, and per pool the request, token and
// concurrency bounds of the calls that pool actually accepted.
func fillFromFake(res *Result, f *fakeServer, o Options) {
	c := f.Counts()
	res.Requests, res.Accepted, res.RateLimited = c.Requests, c.Accepted, c.RateLimited
	res.InputTokens, res.OutputTokens = c.InputTokens, c.OutputTokens
	for i, s := range f.Timeline() {
		res.PeakReqRate = max(res.PeakReqRate, s.Requests)
		if i >= 60 {
			res.RequestsAfter1m += s.Requests
			res.RateLimitedAfter1m += s.RateLimited
		}
	}
	lu, lt, lj := roleLatency(o, o.UserTokens), roleLatency(o, o.TargetTokens), roleLatency(o, o.JudgeTokens)
	_, cp := ratelimit.TMin(ratelimit.Workload{
		Conversations: res.Conversations, Turns: o.Turns, JudgeCalls: 1,
		UserLatency: lu, TargetLatency: lt, JudgeLatency: lj,
	}, ratelimit.Limits{}, o.Latency)
	res.CriticalPath = cp.CriticalPath.Seconds()
	res.TMin, res.Binding = res.CriticalPath, "critical path"
	lim := ratelimit.Limits{RPM: o.RPM, TPM: o.TPM, MaxInFlight: o.MaxInFlight}
	for _, fp := range f.order {
		pc := f.poolCounts(fp)
		lat := lt
		switch f.roles[fp.name] {
		case roleUser:
			lat = lu
		case roleJudge:
			lat = lj
		}
		if fp == f.shared && pc.Accepted > 0 {
			// Call-weighted mean latency of the mixed pool.
			calls := float64(o.Turns*2 + 1)
			lat = time.Duration((float64(o.Turns)*float64(lu+lt) + float64(lj)) / calls)
		}
		// One "conversation" of one call per accepted request: TMin's rate
		// bounds for exactly the calls this pool served.
		_, b := ratelimit.TMin(ratelimit.Workload{
			Conversations: int(pc.Accepted), JudgeCalls: 1,
			InputTokens: pc.InputTokens, OutputTokens: pc.OutputTokens, JudgeLatency: lat,
		}, lim, lat)
		first, last := f.active(fp)
		p := Pool{
			Name: fp.name, Requests: pc.Requests, Accepted: pc.Accepted, RateLimited: pc.RateLimited,
			FirstRequest: first.Seconds(), LastRequest: last.Seconds(),
			InputTokens: pc.InputTokens, OutputTokens: pc.OutputTokens, PeakInFlight: pc.PeakInFlight,
			Latency:      lat.Seconds(),
			RequestBound: b.RequestBound.Seconds(), TokenBound: b.TokenBound.Seconds(), ConcBound: b.ConcurrencyBound.Seconds(),
		}
		p.Bound = max(p.RequestBound, p.TokenBound, p.ConcBound)
		switch p.Bound {
		case 0:
			p.Binding = "none"
		case p.RequestBound:
			p.Binding = "requests"
		case p.TokenBound:
			p.Binding = "tokens"
		default:
			p.Binding = "concurrency"
		}
		if p.Bound > res.TMin {
			res.TMin, res.Binding = p.Bound, p.Binding+" ("+p.Name+")"
		}
		rate := math.Inf(1)
		if p.Bound > 0 {
			rate = float64(pc.Accepted) / p.Bound
		}
		if math.IsInf(rate, 1) {
			res.InFlightNeed = math.Inf(1)
		} else {
			res.InFlightNeed += rate * lat.Seconds()
		}
		res.Pools = append(res.Pools, p)
	}
	// A conversation has one call in flight at a time.
	res.InFlightNeed = math.Min(res.InFlightNeed, float64(res.Conversations))
}

// fillOfflineTMin: the offline model has no limits, so T_min is the
// critical path (0 without latency).
func fillOfflineTMin(res *Result, o Options) {
	_, b := ratelimit.TMin(ratelimit.Workload{Conversations: res.Conversations, Turns: o.Turns, JudgeCalls: 1}, ratelimit.Limits{}, o.Latency)
	res.CriticalPath = b.CriticalPath.Seconds()
	res.TMin, res.Binding = res.CriticalPath, "critical path"
}

// WriteText prints a readable block.
func (r *Result) WriteText(w io.Writer) error {
	var b bytes.Buffer
	o := r.Options
	src := fmt.Sprintf("HTTP fake, latency %s", o.Latency)
	if o.PerOutputToken > 0 {
		src += fmt.Sprintf(" + %s/token", o.PerOutputToken)
	}
	if o.Offline {
		src = fmt.Sprintf("offline model, latency %s", o.Latency)
	}
	limits := "no limits"
	if o.RPM > 0 || o.TPM > 0 || o.MaxInFlight > 0 {
		var parts []string
		if o.RPM > 0 {
			parts = append(parts, fmt.Sprintf("%d RPM", o.RPM))
		}
		if o.TPM > 0 {
			parts = append(parts, fmt.Sprintf("%d TPM", o.TPM))
		}
		if o.MaxInFlight > 0 {
			parts = append(parts, fmt.Sprintf("%d in flight", o.MaxInFlight))
		}
		how := "learned from headers"
		switch {
		case o.ConfigureLimits:
			how = "configured"
		case o.HideLimits || (o.RPM == 0 && o.TPM == 0):
			how = "not configured, no headers"
		}
		scope := "per model"
		if o.SharedPool {
			scope = "one pool for all models"
		}
		limits = strings.Join(parts, ", ") + " " + scope + ", " + how
	}
	conc := func(n int) string {
		if n == 0 {
			return "auto (tool default)"
		}
		return fmt.Sprint(n)
	}
	if r.Binary != "" {
		fmt.Fprintf(&b, "binary        %s\n", r.Binary)
	}
	if r.Cluster != nil {
		limits = strings.Replace(limits, "one pool for all models", "one pool for every model and worker", 1)
		fmt.Fprintf(&b, "workload      %s; %s\n", src, limits)
		clusterText(&b, r)
		_, err := w.Write(b.Bytes())
		return err
	}
	if r.WorkerRun != nil {
		limits = strings.Replace(limits, "per model", "for all workers", 1)
		fmt.Fprintf(&b, "workload      %s; %s\n", src, limits)
		var wb strings.Builder
		workersText(&wb, r)
		b.WriteString(wb.String())
	} else {
		fmt.Fprintf(&b, "workload      %d conversations × %d turns (%d target(s), %d sample(s)); %s; %s\n",
			r.Conversations, o.Turns, o.Targets, o.Samples, src, limits)
	}
	if r.WorkerRun == nil {
		fmt.Fprintf(&b, "concurrency   simulate %s, evaluate %s", conc(r.SimulateConcurrency), conc(r.EvaluateConcurrency))
		if r.MaxConcurrency > 0 {
			fmt.Fprintf(&b, ", max_concurrency %d", r.MaxConcurrency)
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "done          %d completed, %d failed, %d scored", r.Completed, r.Failed, r.Scored)
	if !r.ResultsWritten && r.WorkerRun == nil {
		b.WriteString("; no results.json")
	}
	if r.ChildExitCode != 0 {
		fmt.Fprintf(&b, "; child exit %d: %s", r.ChildExitCode, r.ChildError)
	}
	b.WriteString("\n")
	if r.Pipeline != nil {
		r.writePipelineText(&b)
	}
	fmt.Fprintf(&b, "wall          %s\n", secs(r.Wall))
	fmt.Fprintf(&b, "T_min         %s (binding: %s; critical path %s)\n", secs(r.TMin), r.Binding, secs(r.CriticalPath))
	if r.Ratio > 0 {
		fmt.Fprintf(&b, "wall / T_min  %.3f\n", r.Ratio)
	} else {
		b.WriteString("wall / T_min  n/a (T_min is 0)\n")
	}
	if r.InFlightNeed > 0 {
		fmt.Fprintf(&b, "in flight     %.1f calls needed to reach T_min (Little's law)\n", r.InFlightNeed)
	}
	fmt.Fprintf(&b, "requests      %d (%d accepted; tool counted %d); peak %d/s\n", r.Requests, r.Accepted, r.ToolRequests, r.PeakReqRate)
	fmt.Fprintf(&b, "429s          %d (%.2f%%); after the first minute %d of %d (%.2f%%)\n",
		r.RateLimited, 100*r.RateLimitedShare, r.RateLimitedAfter1m, r.RequestsAfter1m, 100*r.ShareAfter1m)
	fmt.Fprintf(&b, "tokens        %d in, %d out\n", r.InputTokens, r.OutputTokens)
	fmt.Fprintf(&b, "tool CPU      %.2fs user + %.2fs sys = %.0f µs per request\n", r.ChildUser, r.ChildSys, r.CPUPerCall)
	fmt.Fprintf(&b, "CPU bound     %s (tool %.1fs + fake/harness %.1fs CPU over %d cores)\n",
		secs(r.CPUBound), r.ChildUser+r.ChildSys, r.HarnessCPU, r.Cores)
	fmt.Fprintf(&b, "peak RSS      %.1f MB", r.PeakRSSMB)
	if r.PeakPrivateMB > 0 {
		fmt.Fprintf(&b, " (private %.1f MB; the rest is file-backed, mostly the executable)", r.PeakPrivateMB)
	}
	b.WriteString("\n")
	if len(r.ToolLimits) > 0 {
		b.WriteString("learned       ")
		for i, l := range r.ToolLimits {
			if i > 0 {
				b.WriteString("; ")
			}
			fmt.Fprintf(&b, "%s %d (peak %d, %d back-offs)", l.Pool, l.Concurrency, l.PeakInFlight, l.BackOffs)
		}
		b.WriteString("\n")
	}
	if len(r.Pools) > 0 {
		b.WriteString("pools\n")
		for _, p := range r.Pools {
			fmt.Fprintf(&b, "  %-16s %7d req %6d 429  %10d in %9d out  peak %4d in flight  used %s–%s  bound %s (%s)\n",
				p.Name, p.Requests, p.RateLimited, p.InputTokens, p.OutputTokens, p.PeakInFlight,
				secs(p.FirstRequest), secs(p.LastRequest), secs(p.Bound), p.Binding)
		}
	}
	if r.Dir != "" {
		fmt.Fprintf(&b, "project       %s\n", r.Dir)
	}
	_, err := w.Write(b.Bytes())
	return err
}

func secs(s float64) string {
	return (time.Duration(s * float64(time.Second))).Round(time.Millisecond).String()
}
