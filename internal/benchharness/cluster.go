package benchharness

// The cluster presets are issue 33's many-workers benchmark with real
// impactbench worker processes: one project whose every model sits behind
// ONE limit at the fake (one pool of RPM and calls in flight, as one API
// key's limit), run once by one process for the reference outputs and the
// calls they need, then by `impactbench run all` workers that take their
// index from a scheduler's variables (JOB_COMPLETION_INDEX and
// IMPACTBENCH_SHARDS, as a Kubernetes Indexed Job sets them) and divide
// the limit by IMPACTBENCH_WORKERS. The harness is the scheduler: Indexes
// indexes, Workers running at once, a new one started when one exits. The
// workers share either one project directory (then `merge all`) or only
// an S3 store in this process (each index on a fresh directory of its own,
// as a pod with its own disk; then `merge all --from-store` on a fresh
// directory). The merged outputs are compared byte for byte with the
// reference's, and the fake's ledger of answered request bodies counts the
// calls paid twice. With Kill, two running workers get SIGKILL a third of
// the way in, a duplicate of a third running index starts at the same
// moment (a duplicate pod), and the killed indexes run again.

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/layout"
	"github.com/impactbench/impactbench/internal/llm/ratelimit"
	"github.com/impactbench/impactbench/internal/llm/ratelimit/fakeprovider"
	"github.com/impactbench/impactbench/internal/redisserver"
)

// Where the cluster presets' workers keep their calls (Options.Cluster).
const (
	StoreDir = "dir" // one shared project directory
	StoreS3  = "s3"  // a directory per worker, one S3 store
)

// ClusterResult is one cluster run.
type ClusterResult struct {
	Store      string `json:"store"`
	Workers    int    `json:"workers"`
	Indexes    int    `json:"indexes"`
	Benchmarks int    `json:"benchmarks"`
	// RateBackend is "redis" when the workers shared the limit through
	// the harness's redis-server, "" when each took 1/Workers of it.
	RateBackend string `json:"rate_backend,omitempty"`

	// Calls is the requests one process's run had answered: the calls
	// the study needs. Bound is the shared limit's bound for them.
	Calls   int64   `json:"calls"`
	Bound   float64 `json:"bound_s"`
	Binding string  `json:"binding"`

	// Reference is the one process's run, with the limit lifted (its
	// calls in flight still capped by max_concurrency).
	Reference ClusterRef `json:"reference"`

	// Wall is from the first worker's start to the last one's exit;
	// Merge is the merge after it. Ratio is (Wall + Merge) / Bound.
	Wall     float64 `json:"wall_s"`
	Merge    float64 `json:"merge_s"`
	Ratio    float64 `json:"ratio"`
	RunRatio float64 `json:"run_ratio"` // Wall / Bound

	Requests         int64   `json:"requests"`
	RateLimited      int64   `json:"rate_limited"`
	RateLimitedShare float64 `json:"rate_limited_share"`
	// RateLimitedAt is the 429s per second of the workers' run (whole
	// seconds since the first worker started, those with any), to tell
	// start-up bursts from steady state.
	RateLimitedAt map[int]int64 `json:"rate_limited_at,omitempty"`
	// RequestsAt is the requests per second of the workers' run (429s
	// included), to see where the shared limit went unused: a worker's
	// start-up and last files, a tail of few workers.
	RequestsAt []int64 `json:"requests_at,omitempty"`
	// PaidTwice is the answers to request bodies beyond as many as the
	// one process had answered; Missing, those it never got.
	PaidTwice int64 `json:"paid_twice"`
	Missing   int64 `json:"missing"`
	// Why is why each of PaidTwice was paid again.
	Why PaidTwice `json:"paid_twice_why"`

	Kill     *ClusterKill `json:"kill,omitempty"`
	Compared Comparison   `json:"compared"`
	Runs     []IndexRun   `json:"runs"`
}

// ClusterRef is the one process's run.
type ClusterRef struct {
	Wall        float64 `json:"wall_s"`
	Requests    int64   `json:"requests"`
	RateLimited int64   `json:"rate_limited"`
}

// ClusterKill is what the kill variant did.
type ClusterKill struct {
	At        float64 `json:"at_s"` // since the first worker started
	Killed    []int   `json:"killed"`
	Duplicate int     `json:"duplicate"` // -1: none was running
	// InFlightKilled is the killed workers' requests in flight at the fake
	// when they were killed (their sockets' ports; -1 off Linux);
	// InFlightAll every worker's.
	InFlightKilled int `json:"in_flight_killed"`
	InFlightAll    int `json:"in_flight_all"`
}

// IndexRun is one worker process.
type IndexRun struct {
	Index      int     `json:"index"`
	Start      float64 `json:"start_s"`
	End        float64 `json:"end_s"`
	ExitCode   int     `json:"exit_code"`
	Killed     bool    `json:"killed,omitempty"`
	Duplicate  bool    `json:"duplicate,omitempty"`
	StderrTail string  `json:"stderr_tail,omitempty"`
}

func (o Options) checkCluster() error {
	switch {
	case o.Cluster != StoreDir && o.Cluster != StoreS3:
		return fmt.Errorf("benchharness: cluster store %q (want %s or %s)", o.Cluster, StoreDir, StoreS3)
	case o.Workers < 1 || o.Indexes < o.Workers:
		return fmt.Errorf("benchharness: %d workers for %d indexes (want 1 ≤ workers ≤ indexes)", o.Workers, o.Indexes)
	case o.Kill && o.Workers < 3:
		return fmt.Errorf("benchharness: the kill variant needs 3 workers at once (two killed, one duplicated), not %d", o.Workers)
	case o.Offline || o.Pipeline || o.Study != "":
		return errors.New("benchharness: the cluster presets run their own project on the HTTP fake")
	}
	return nil
}

// cluster is one cluster run in progress.
type cluster struct {
	o     Options
	bin   string
	dir   string
	tmpl  string   // the project every worker directory is copied from
	env   []string // every process's environment
	store *objectStore
	work  *fakeServer
	res   *ClusterResult
	// killedPorts are the killed workers' client ports, at killTime.
	killedPorts map[int]bool
	killTime    time.Time
	workStart   time.Time // the first worker's start
	// owners names the worker of each client port, sampled while the
	// workers run (guarded by ownMu).
	ownMu  sync.Mutex
	owners map[int]string
	// seen is every client port sampled from each worker process, by pid
	// (guarded by ownMu): a victim's earlier connections count as its own.
	seen map[int]map[int]bool
}

func runCluster(ctx context.Context, o Options, res *Result, dir string) error {
	if err := o.checkCluster(); err != nil {
		return err
	}
	c := &cluster{o: o, bin: o.Binary, dir: dir, tmpl: filepath.Join(dir, "template"), env: clusterEnv()}
	if c.bin == "" {
		var err error
		if c.bin, err = BuildBinary(ctx, dir); err != nil {
			return err
		}
	}
	// The workers run in the project directories: a relative path would not
	// name the binary there.
	if abs, err := filepath.Abs(c.bin); err == nil {
		c.bin = abs
	}
	c.res = &ClusterResult{Store: o.Cluster, Workers: o.Workers, Indexes: o.Indexes, Benchmarks: o.Benchmarks}
	res.Cluster = c.res
	// One URL for both runs (the targets' base_url is in results.json's
	// fingerprint), two fakes behind it: each run's limit and ledger.
	ref, work := c.newFake(false), c.newFake(true)
	c.work = work
	var cur atomic.Pointer[fakeServer]
	cur.Store(ref)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { cur.Load().ServeHTTP(w, r) }))
	defer srv.Close()
	stop, err := c.setup(ctx, srv.URL)
	defer stop()
	if err != nil {
		return err
	}
	refDir := filepath.Join(dir, "reference")
	if err := c.reference(ctx, refDir, ref); err != nil {
		return err
	}
	cur.Store(work)
	if err := c.runWorkers(ctx); err != nil {
		return err
	}
	merged, err := c.merge(ctx)
	if err != nil {
		return err
	}
	if c.res.Compared, err = compareOutputs(refDir, merged); err != nil {
		return err
	}
	c.fill(res, ref)
	return nil
}

// setup writes the template project and starts the store and Redis.
func (c *cluster) setup(ctx context.Context, url string) (stop func(), err error) {
	var stops []func()
	stop = func() {
		for _, s := range stops {
			s()
		}
	}
	if err := writeClusterProject(c.tmpl, c.o, url); err != nil {
		return stop, err
	}
	if c.o.Cluster == StoreS3 {
		if c.store, err = startObjectStore("study"); err != nil {
			return stop, err
		}
		stops = append(stops, c.store.Close)
	}
	if c.o.ClusterRedis {
		rdir := filepath.Join(c.dir, "redis")
		if err := os.MkdirAll(rdir, 0o700); err != nil {
			return stop, err
		}
		rs, err := redisserver.Start(ctx, rdir)
		if err != nil {
			return stop, err
		}
		stops = append(stops, rs.Stop)
		c.env = append(c.env, "IMPACTBENCH_RATE_BACKEND="+rs.URL())
		c.res.RateBackend = "redis"
	}
	return stop, nil
}

// newFake is the fake with the one limit pool every model shares; the
// reference's has no limit (limited false). A call's record counts its
// attempts, 429s included (llm.WithRetry), so one process's outputs are
// the workers' to match only when neither was answered 429: the
// reference's limit is lifted, and the workers' 429s show up as
// differences in request counts alone (Comparison.RequestsOnly).
func (c *cluster) newFake(limited bool) *fakeServer {
	o := c.o
	if !limited {
		o.RPM, o.TPM, o.MaxInFlight = 0, 0, 0
	}
	models := []modelSpec{{userModel, roleUser, o.TargetTokens}, {judgeModel, roleJudge, o.TargetTokens}}
	for i := range o.Targets {
		models = append(models, modelSpec{targetModel(i), roleTarget, o.TargetTokens})
	}
	f := newFakeServer(models, fakeprovider.Config{
		RPM: o.RPM, TPM: o.TPM, MaxInFlight: o.MaxInFlight, Burst: o.Burst, HideLimits: o.HideLimits,
		Latency: o.Latency, PerOutputToken: o.PerOutputToken, OutputTokens: o.TargetTokens,
	}, true)
	f.calls = newCallLedger()
	return f
}

// clusterEnv is the harness's environment without anything that would
// place a worker or share a limit other than as the harness says.
func clusterEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "IMPACTBENCH_") || strings.HasPrefix(k, "SLURM_") || strings.HasPrefix(k, "AWS_") ||
			k == "JOB_COMPLETION_INDEX" {
			continue
		}
		env = append(env, kv)
	}
	return env
}

// writeClusterProject writes Benchmarks copies of the harness's benchmark
// (bench, bench-2, …), each with Conversations / Benchmarks conversations,
// every model on one base_url: the tool keeps one limit pool, as the fake.
func writeClusterProject(dir string, o Options, url string) error {
	per := o
	per.Conversations = max(o.Conversations/o.Benchmarks, 1)
	lay := planLayout(per)
	pm := projectModels{baseURL: url, sharedURL: true, maxRetries: o.MaxRetries}
	if o.ConfigureLimits {
		pm.rpm, pm.tpm = o.RPM, o.TPM
	}
	pm.simulate, pm.evals, pm.maxConcurrency = concurrencyFor(per, lay)
	if err := writeProject(dir, per, lay, pm); err != nil {
		return err
	}
	perMetric := (lay.scenarios + lay.metrics - 1) / lay.metrics
	if o.Benchmarks*perMetric > 999 {
		return fmt.Errorf("benchharness: %d benchmarks of %d scenarios per metric: ids stop at s999", o.Benchmarks, perMetric)
	}
	for i := 2; i <= o.Benchmarks; i++ {
		// Another benchmark's own base scenario ids (a study's benchmarks
		// share none), so that its rows fall in other shards.
		bdir := layout.BenchDir(dir, fmt.Sprintf("%s-%d", benchName, i))
		if err := copyTree(layout.BenchDir(dir, benchName), bdir); err != nil {
			return err
		}
		scs := scenariosFrom(lay, o.Turns, (i-1)*perMetric)
		if err := artifacts.WriteScenarios(layout.Bench{Dir: bdir}.Scenarios(), scs); err != nil {
			return err
		}
	}
	return nil
}

// reference runs the study as one process on its own copy of the project.
func (c *cluster) reference(ctx context.Context, dir string, f *fakeServer) error {
	if err := copyTree(c.tmpl, dir); err != nil {
		return err
	}
	start := time.Now()
	code, tail, err := c.runTool(ctx, dir, c.env, "run", "all", "--no-report")
	if err != nil {
		return err
	}
	if code != 0 {
		return fmt.Errorf("benchharness: the one-process reference run failed (exit %d): %s", code, tail)
	}
	c.res.Reference.Wall = time.Since(start).Seconds()
	c.res.Calls = f.calls.total()
	cnt := f.Counts()
	c.res.Reference.Requests, c.res.Reference.RateLimited = cnt.Requests, cnt.RateLimited
	c.res.Bound, c.res.Binding = clusterBound(c.res.Calls, c.o)
	return nil
}

// clusterBound is the one shared limit's bound for calls: ratelimit.TMin's
// request and concurrency bounds, as fillFromFake takes them per pool.
func clusterBound(calls int64, o Options) (float64, string) {
	lat := roleLatency(o, o.TargetTokens) // a shared pool answers every role alike
	_, b := ratelimit.TMin(ratelimit.Workload{Conversations: int(calls), JudgeCalls: 1, JudgeLatency: lat},
		ratelimit.Limits{RPM: o.RPM, MaxInFlight: o.MaxInFlight}, lat)
	// A conversation's calls come one after another (critical path).
	cp := time.Duration(2*o.Turns+1) * lat
	bound, binding := b.RequestBound, "requests"
	if b.ConcurrencyBound > bound {
		bound, binding = b.ConcurrencyBound, "calls in flight"
	}
	if cp > bound {
		bound, binding = cp, "critical path"
	}
	return bound.Seconds(), binding
}

// merge merges the workers' outputs and returns the merged project.
func (c *cluster) merge(ctx context.Context) (string, error) {
	dir := filepath.Join(c.dir, "shared")
	args := []string{"merge", "all"}
	env := c.env
	if c.o.Cluster == StoreS3 {
		dir = filepath.Join(c.dir, "merged")
		if err := copyTree(c.tmpl, dir); err != nil {
			return "", err
		}
		args = append(args, "--from-store")
		env = append(append([]string(nil), env...), c.store.env(dir, layout.CallsDirName)...)
	}
	start := time.Now()
	code, tail, err := c.runTool(ctx, dir, env, args...)
	if err != nil {
		return "", err
	}
	c.res.Merge = time.Since(start).Seconds()
	if code != 0 {
		return "", fmt.Errorf("benchharness: %s failed (exit %d): %s", strings.Join(args, " "), code, tail)
	}
	return dir, nil
}

// runTool runs impactbench in dir and waits for it.
func (c *cluster) runTool(ctx context.Context, dir string, env []string, args ...string) (code int, tail string, err error) {
	cmd := c.command(ctx, dir, env, args...)
	t := &tailBuffer{max: 8 << 10}
	cmd.Stderr = t
	err = cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, "", nil
	case errors.As(err, &ee):
		return ee.ExitCode(), lastLines(t.String(), 5), nil
	}
	return -1, "", fmt.Errorf("benchharness: impactbench %s: %w", strings.Join(args, " "), err)
}

// fill puts the cluster run's figures into res.
func (c *cluster) fill(res *Result, ref *fakeServer) {
	r := c.res
	cnt := c.work.Counts()
	r.Requests, r.RateLimited = cnt.Requests, cnt.RateLimited
	if r.Requests > 0 {
		r.RateLimitedShare = float64(r.RateLimited) / float64(r.Requests)
	}
	r.PaidTwice, r.Missing = paidBeyond(ref.calls, c.work.calls)
	c.ownMu.Lock()
	r.Why = explainPaidTwice(ref.calls, c.work.calls, c.killedPorts, c.owners, c.killTime)
	c.ownMu.Unlock()
	skip := int(c.workStart.Sub(c.work.start) / time.Second)
	for sec, n := range c.work.Timeline() {
		if sec >= skip {
			r.RequestsAt = append(r.RequestsAt, n.Requests)
		}
		if n.RateLimited > 0 && sec >= skip {
			sec -= skip
			if r.RateLimitedAt == nil {
				r.RateLimitedAt = map[int]int64{}
			}
			r.RateLimitedAt[sec] = n.RateLimited
		}
	}
	if r.Bound > 0 {
		r.Ratio, r.RunRatio = (r.Wall+r.Merge)/r.Bound, r.Wall/r.Bound
	}
	res.Wall, res.TMin, res.Ratio, res.Binding = r.Wall+r.Merge, r.Bound, r.Ratio, r.Binding+" (one limit for all workers)"
	res.Requests, res.Accepted, res.RateLimited, res.RateLimitedShare = cnt.Requests, cnt.Accepted, cnt.RateLimited, r.RateLimitedShare
	res.Conversations = c.o.Conversations
	res.ResultsWritten = r.Compared.Files > 0 && len(r.Compared.Differ) == 0
	for _, run := range r.Runs {
		if run.ExitCode != 0 && !run.Killed && res.ChildExitCode == 0 {
			res.ChildExitCode, res.ChildError = run.ExitCode, fmt.Sprintf("index %d: %s", run.Index, run.StderrTail)
		}
	}
}
